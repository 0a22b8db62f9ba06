/* SPDX-License-Identifier: MIT */
/* The result guard's opcode prescan (src/wire/result-guard.c): a valid
 * data-only stream of every allowed type passes; every refused opcode, class
 * and budget is refused before anything is rebuilt. The streams were written
 * by CPython 3.11's pickle (protocol 5) or by hand for what pickle never
 * writes. */
#include <errno.h>
#include <string.h>

#include "result-guard.h"
#include "tap.h"
#include "util.h"

static const struct {
	const char *name;
	const char *data;
	size_t len;
} valid[] = {
    {"none", "\x80\x05\x4e\x2e", 4},
    {"bool", "\x80\x05\x88\x2e", 4},
    {"int",
     "\x80\x05\x95\x0c\x00\x00\x00\x00\x00\x00\x00\x8a\x09\xd2\x0a\x1f\xeb\x8c\xa9\x54\xab\x00\x2e",
     23},
    {"float",
     "\x80\x05\x95\x0a\x00\x00\x00\x00\x00\x00\x00\x47\x40\x04\x00\x00\x00\x00\x00\x00\x2e", 21},
    {"complex",
     "\x80\x05\x95\x2e\x00\x00\x00\x00\x00\x00\x00\x8c\x08\x62\x75\x69\x6c\x74\x69\x6e\x73\x94\x8c"
     "\x07\x63\x6f\x6d\x70\x6c\x65\x78\x94\x93\x94\x47\x00\x00\x00\x00\x00\x00\x00\x00\x47\x40\x08"
     "\x00\x00\x00\x00\x00\x00\x86\x94\x52\x94\x2e",
     57},
    {"str", "\x80\x05\x95\x0a\x00\x00\x00\x00\x00\x00\x00\x8c\x06\x68\xc3\xa9\x6c\x6c\x6f\x94\x2e",
     21},
    {"bytes", "\x80\x05\x95\x06\x00\x00\x00\x00\x00\x00\x00\x43\x02\x00\xff\x94\x2e", 17},
    {"bytearray",
     "\x80\x05\x95\x0d\x00\x00\x00\x00\x00\x00\x00\x96\x02\x00\x00\x00\x00\x00\x00\x00\x61\x62\x94"
     "\x2e",
     24},
    {"list",
     "\x80\x05\x95\x12\x00\x00\x00\x00\x00\x00\x00\x5d\x94\x28\x4b\x01\x5d\x94\x28\x4b\x02\x5d\x94"
     "\x4b\x03\x61\x65\x65\x2e",
     29},
    {"tuple",
     "\x80\x05\x95\x0c\x00\x00\x00\x00\x00\x00\x00\x28\x4b\x01\x4b\x02\x4b\x03\x4b\x04\x74\x94\x2e",
     23},
    {"dict",
     "\x80\x05\x95\x11\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x01\x61\x94\x4b\x01\x4b\x02\x5d"
     "\x94\x4e\x61\x75\x2e",
     28},
    {"set", "\x80\x05\x95\x09\x00\x00\x00\x00\x00\x00\x00\x8f\x94\x28\x4b\x01\x4b\x02\x90\x2e", 20},
    {"frozenset", "\x80\x05\x95\x08\x00\x00\x00\x00\x00\x00\x00\x28\x8c\x01\x78\x94\x91\x94\x2e",
     19},
    {"path",
     "\x80\x05\x95\x2d\x00\x00\x00\x00\x00\x00\x00\x8c\x07\x70\x61\x74\x68\x6c\x69\x62\x94\x8c\x0d"
     "\x50\x75\x72\x65\x50\x6f\x73\x69\x78\x50\x61\x74\x68\x94\x93\x94\x8c\x01\x2f\x94\x8c\x01\x61"
     "\x94\x8c\x01\x62\x94\x87\x94\x52\x94\x2e",
     56},
    {"datetime",
     "\x80\x05\x95\x57\x00\x00\x00\x00\x00\x00\x00\x8c\x08\x64\x61\x74\x65\x74\x69\x6d\x65\x94\x8c"
     "\x08\x64\x61\x74\x65\x74\x69\x6d\x65\x94\x93\x94\x43\x0a\x07\xe4\x01\x02\x03\x04\x05\x00\x00"
     "\x00\x94\x68\x00\x8c\x08\x74\x69\x6d\x65\x7a\x6f\x6e\x65\x94\x93\x94\x68\x00\x8c\x09\x74\x69"
     "\x6d\x65\x64\x65\x6c\x74\x61\x94\x93\x94\x4b\x00\x4b\x00\x4b\x00\x87\x94\x52\x94\x85\x94\x52"
     "\x94\x86\x94\x52\x94\x2e",
     98},
    {"date",
     "\x80\x05\x95\x20\x00\x00\x00\x00\x00\x00\x00\x8c\x08\x64\x61\x74\x65\x74\x69\x6d\x65\x94\x8c"
     "\x04\x64\x61\x74\x65\x94\x93\x94\x43\x04\x07\xe5\x05\x06\x94\x85\x94\x52\x94\x2e",
     43},
    {"time",
     "\x80\x05\x95\x22\x00\x00\x00\x00\x00\x00\x00\x8c\x08\x64\x61\x74\x65\x74\x69\x6d\x65\x94\x8c"
     "\x04\x74\x69\x6d\x65\x94\x93\x94\x43\x06\x01\x02\x00\x00\x00\x00\x94\x85\x94\x52\x94\x2e",
     45},
    {"timedelta",
     "\x80\x05\x95\x24\x00\x00\x00\x00\x00\x00\x00\x8c\x08\x64\x61\x74\x65\x74\x69\x6d\x65\x94\x8c"
     "\x09\x74\x69\x6d\x65\x64\x65\x6c\x74\x61\x94\x93\x94\x4b\x01\x4b\x02\x4b\x00\x87\x94\x52\x94"
     "\x2e",
     47},
    {"decimal",
     "\x80\x05\x95\x22\x00\x00\x00\x00\x00\x00\x00\x8c\x07\x64\x65\x63\x69\x6d\x61\x6c\x94\x8c\x07"
     "\x44\x65\x63\x69\x6d\x61\x6c\x94\x93\x94\x8c\x04\x31\x2e\x32\x35\x94\x85\x94\x52\x94\x2e",
     45},
    {"fraction",
     "\x80\x05\x95\x22\x00\x00\x00\x00\x00\x00\x00\x8c\x09\x66\x72\x61\x63\x74\x69\x6f\x6e\x73\x94"
     "\x8c\x08\x46\x72\x61\x63\x74\x69\x6f\x6e\x94\x93\x94\x4b\x01\x4b\x03\x86\x94\x52\x94\x2e",
     45},
    {"uuid",
     "\x80\x05\x95\x20\x00\x00\x00\x00\x00\x00\x00\x8c\x04\x75\x75\x69\x64\x94\x8c\x04\x55\x55\x49"
     "\x44\x94\x93\x94\x29\x81\x94\x7d\x94\x8c\x03\x69\x6e\x74\x94\x4b\x07\x73\x62\x2e",
     43},
    {"ipv4",
     "\x80\x05\x95\x26\x00\x00\x00\x00\x00\x00\x00\x8c\x09\x69\x70\x61\x64\x64\x72\x65\x73\x73\x94"
     "\x8c\x0b\x49\x50\x76\x34\x41\x64\x64\x72\x65\x73\x73\x94\x93\x94\x4a\x03\x02\x01\x0a\x85\x94"
     "\x52\x94\x2e",
     49},
    {"ipv6net",
     "\x80\x05\x95\x2d\x00\x00\x00\x00\x00\x00\x00\x8c\x09\x69\x70\x61\x64\x64\x72\x65\x73\x73\x94"
     "\x8c\x0b\x49\x50\x76\x36\x4e\x65\x74\x77\x6f\x72\x6b\x94\x93\x94\x8c\x09\x66\x65\x38\x30\x3a"
     "\x3a\x2f\x36\x34\x94\x85\x94\x52\x94\x2e",
     56},
    {"shared",
     "\x80\x05\x95\x0d\x00\x00\x00\x00\x00\x00\x00\x5d\x94\x28\x8c\x01\x73\x94\x68\x01\x68\x01\x65"
     "\x2e",
     24},
};
static const struct {
	const char *name;
	const char *data;
	size_t len;
	const char *reason; /* what the message says: several checks could refuse */
} refused[] = {
    {"os.system reduce",
     "\x80\x05\x95\x1f\x00\x00\x00\x00\x00\x00\x00\x8c\x05\x70\x6f\x73\x69\x78\x94\x8c\x06\x73\x79"
     "\x73\x74\x65\x6d\x94\x93\x94\x8c\x04\x74\x72\x75\x65\x94\x85\x94\x52\x94\x2e",
     42, "global 'posix.system' is not a value type"},
    {"class instance",
     "\x80\x05\x8c\x05\x6d\x79\x6d\x6f\x64\x94\x8c\x03\x4f\x62\x6a\x94\x93\x94\x29\x81\x94\x2e", 22,
     "global 'mymod.Obj' is not a value type"},
    {"protocol 0 GLOBAL",
     "\x63\x70\x6f\x73\x69\x78\x0a\x73\x79\x73\x74\x65\x6d\x0a\x70\x30\x0a\x28\x56\x74\x72\x75\x65"
     "\x0a\x70\x31\x0a\x74\x70\x32\x0a\x52\x70\x33\x0a\x2e",
     36, "GLOBAL (protocol 0) is refused"},
    {"protocol 0 INST",
     "\x28\x69\x6f\x73\x0a\x73\x79\x73\x74\x65\x6d\x0a\x53\x27\x74\x72\x75\x65\x27\x0a\x70\x30\x0a"
     "\x2e",
     24, "INST is refused"},
    {"OBJ", "\x80\x05(No.", 6, "OBJ is refused"},
    {"PERSID", "\x50\x66\x6f\x6f\x0a\x2e", 6, "persistent ids"},
    {"BINPERSID", "\x80\x02\x58\x01\x00\x00\x00\x61\x51\x2e", 10, "persistent ids"},
    {"EXT1", "\x80\x02\x82\x01\x2e", 5, "extension codes"},
    {"EXT2", "\x80\x02\x83\x01\x00\x2e", 6, "extension codes"},
    {"EXT4", "\x80\x02\x84\x01\x00\x00\x00\x2e", 8, "extension codes"},
    {"NEXT_BUFFER", "\x80\x05\x97\x2e", 4, "out-of-band buffers are refused"},
    {"class as value",
     "\x80\x05\x95\x15\x00\x00\x00\x00\x00\x00\x00\x8c\x08\x64\x61\x74\x65\x74\x69\x6d\x65\x94\x8c"
     "\x04\x64\x61\x74\x65\x94\x93\x94\x2e",
     32, "a class as the result"},
    {"getattr",
     "\x80\x05\x95\x25\x00\x00\x00\x00\x00\x00\x00\x8c\x08\x62\x75\x69\x6c\x74\x69\x6e\x73\x94\x8c"
     "\x07\x67\x65\x74\x61\x74\x74\x72\x94\x93\x94\x4b\x01\x8c\x04\x72\x65\x61\x6c\x94\x86\x94\x52"
     "\x94\x2e",
     48, "global 'builtins.getattr' is not a value type"},
    {"no STOP", "\x80\x05\x95\x08\x00\x00\x00\x00\x00\x00\x00\x5d\x94\x28\x4b\x01\x4b\x02\x65", 19,
     "the stream ends without STOP"},
    {"trailing", "\x80\x05\x4b\x01\x2e\x4e", 6, "1 bytes after STOP"},
    {"memo never stored", "\x80\x05\x68\x07\x2e", 5, "memo index 7 was never stored"},
    {"huge memo index", "\x80\x05\x4e\x72\xff\xff\xff\x7f\x2e", 9,
     "memo index 2147483647 over the budget"},
    {"callable from a call",
     "\x80\x05\x8c\x08\x62\x75\x69\x6c\x74\x69\x6e\x73\x8c\x07\x63\x6f\x6d\x70\x6c\x65\x78\x93\x29"
     "\x52\x29\x52\x2e",
     27, "a call whose callable is not a global"},
    {"unknown opcode", "\x80\x05\xff\x2e", 4, "unknown opcode"},
    {"truncated", "\x80\x05\x58\xff\x00\x00\x00\x61\x62", 9,
     "length 255 past the end of the stream"},
};

static int scan(const char *data, size_t len, enum sb_result_channel ch,
		const struct sb_prescan_limits *lim, char *err, size_t errlen)
{
	return sb_result_prescan(data, len, ch, lim, err, errlen);
}

/* A data type's name is data only in its own module: the prescan and
 * find_class share sb_result_data_type(), so a check that ignored the module
 * would let any class named like one through both. */
static void test_module_checked(void)
{
	static const char *const lookalikes[][2] = {
	    {"evil", "Decimal"},     {"fractions", "Decimal"}, {"decimal", "Fraction"},
	    {"builtins", "Decimal"}, {"datetime", "Path"},     {"pathlib", "date"},
	    {"mymod", "UUID"},	     {"uuid", "IPv4Address"},  {"uuid", "SafeUUID"},
	    {"", "complex"},	     {"builtins.x", "set"},    {"decimal.sub", "Decimal"},
	};
	/* \x80\x05, STACK_GLOBAL of evil.Decimal, a call with ("1",), STOP. */
	static const char evil_decimal[] = "\x80\x05\x8c\x04"
					   "evil"
					   "\x8c\x07"
					   "Decimal"
					   "\x93\x8c\x01"
					   "1"
					   "\x85R.";
	char err[512], what[256];
	int r;

	for (size_t i = 0; i < ELEMENTSOF(lookalikes); i++)
		tap_ok(!sb_result_data_type(lookalikes[i][0], lookalikes[i][1]),
		       "%s.%s is not a data type", lookalikes[i][0], lookalikes[i][1]);
	tap_ok(sb_result_data_type("decimal", "Decimal") && sb_result_data_type("uuid", "UUID"),
	       "decimal.Decimal and uuid.UUID are");
	r = scan(evil_decimal, sizeof(evil_decimal) - 1, SB_CHANNEL_DATA_ONLY, NULL, err,
		 sizeof(err));
	tap_ok(r == -EPERM && strstr(err, "global 'evil.Decimal' is not a value type"),
	       "data-only refuses evil.Decimal by its module: %s", err);
	r = sb_result_data_only_check(evil_decimal, sizeof(evil_decimal) - 1, what, sizeof(what));
	tap_ok(r == -EPERM && streq(what, "evil.Decimal"), "learning records evil.Decimal (%s)",
	       what);
}

/* Every length-prefixed argument that claims more than the stream holds is
 * refused for that reason, before anything reads past the end (a truncated
 * stream would also end without STOP: the message tells which check
 * refused). */
static void test_lengths(void)
{
	static const struct {
		unsigned char op;
		size_t width;
		const char *name;
	} counted[] = {
	    {'T', 4, "BINSTRING"},    {'U', 1, "SHORT_BINSTRING"},
	    {'B', 4, "BINBYTES"},     {'C', 1, "SHORT_BINBYTES"},
	    {0x8e, 8, "BINBYTES8"},   {0x96, 8, "BYTEARRAY8"},
	    {0x8a, 1, "LONG1"},	      {0x8b, 4, "LONG4"},
	    {'X', 4, "BINUNICODE"},   {0x8c, 1, "SHORT_BINUNICODE"},
	    {0x8d, 8, "BINUNICODE8"},
	};
	char err[512], want[64];
	int r;

	for (size_t i = 0; i < ELEMENTSOF(counted); i++) {
		/* PROTO 5, the opcode, a length of 3 with two bytes left, STOP. */
		unsigned char s[16] = {0x80, 5, counted[i].op, 3};
		size_t len = 3 + counted[i].width;

		s[len++] = 'a';
		s[len++] = '.';
		r = scan((const char *)s, len, SB_CHANNEL_DATA_ONLY, NULL, err, sizeof(err));
		tap_ok(r == -EPERM && strstr(err, "length 3 past the end of the stream"),
		       "%s with a length past the end: %s", counted[i].name, err);
		if (counted[i].width == 8) {
			/* A length that wraps the pointer around. */
			memset(s + 3, 0xff, 8);
			r = scan((const char *)s, len, SB_CHANNEL_OBJECTS_NOGUARD, NULL, err,
				 sizeof(err));
			snprintf(want, sizeof(want), "length %llu past the end",
				 (unsigned long long)~0ULL);
			tap_ok(r == -EPERM && strstr(err, want), "%s with a length of 2^64 - 1: %s",
			       counted[i].name, err);
		}
	}
}

/* In the exception channel the unpickler hands out a check for the three
 * constructors a few bytes can make unbounded: a class used as a value there
 * would be that check, so the prescan refuses it; objects mode keeps it. */
static void test_checked_constructors(void)
{
	static const char fraction_class[] = "\x80\x05\x8c\x09"
					     "fractions"
					     "\x8c\x08"
					     "Fraction"
					     "\x93.";
	static const char decimal_in_tuple[] = "\x80\x05\x8c\x07"
					       "decimal"
					       "\x8c\x07"
					       "Decimal"
					       "\x93\x85.";
	static const char decimal_call[] = "\x80\x05\x8c\x07"
					   "decimal"
					   "\x8c\x07"
					   "Decimal"
					   "\x93\x8c\x01"
					   "1"
					   "\x85R.";
	char err[512];
	int r;

	tap_ok(sb_result_checked_constructor("fractions", "Fraction") &&
		   sb_result_checked_constructor("decimal", "Decimal") &&
		   sb_result_checked_constructor("builtins", "bytearray") &&
		   !sb_result_checked_constructor("builtins", "complex") &&
		   !sb_result_checked_constructor("evil", "Fraction"),
	       "the checked constructors: Fraction, Decimal, bytearray");
	r = scan(fraction_class, sizeof(fraction_class) - 1, SB_CHANNEL_EXCEPTION, NULL, err,
		 sizeof(err));
	tap_ok(r == -EPERM && strstr(err, "a class whose calls are checked as the result"),
	       "the exception channel refuses fractions.Fraction as the result: %s", err);
	r = scan(decimal_in_tuple, sizeof(decimal_in_tuple) - 1, SB_CHANNEL_EXCEPTION, NULL, err,
		 sizeof(err));
	tap_ok(r == -EPERM && strstr(err, "a class whose calls are checked used as a value"),
	       "and decimal.Decimal in a tuple: %s", err);
	r = scan(decimal_call, sizeof(decimal_call) - 1, SB_CHANNEL_EXCEPTION, NULL, err,
		 sizeof(err));
	tap_ok(r == 0, "a call of decimal.Decimal passes the exception channel's scan");
	r = scan(fraction_class, sizeof(fraction_class) - 1, SB_CHANNEL_OBJECTS, NULL, err,
		 sizeof(err));
	tap_ok(r == 0, "objects mode admits fractions.Fraction as a value");
}

/* CPython's unpickler reads a FRAME into a buffer; an argument that runs past
 * its end is read from the file with the rest of the buffer dropped, so
 * CPython would run bytes the scan read as data (here a call of
 * collections.OrderedDict hidden in a bytes argument). Frames must end
 * between opcodes, as CPython's pickler writes them. */
static void test_frames(void)
{
	static const struct {
		const char *name;
		const char *data;
		size_t len;
		const char *reason; /* NULL: admitted */
	} cases[] = {
	    {"two frames ending between opcodes",
	     "\x80\x05\x95\x02\x00\x00\x00\x00\x00\x00\x00N\x94\x95\x01\x00\x00\x00\x00\x00\x00\x00"
	     ".",
	     23, NULL},
	    {"an argument running past its frame",
	     "\x80\x05\x95\x04\x00\x00\x00\x00\x00\x00\x00\x8c\x04\x78\x79\x61\x62\x43\x1e\x8c\x0b"
	     "\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f\x6e\x73\x8c\x0b\x4f\x72\x64\x65\x72\x65\x64\x44"
	     "\x69\x63\x74\x93\x29\x52\x30\x30\x2e",
	     51, "an opcode that crosses the end of its FRAME"},
	    {"an opcode at a frame's end, its argument after",
	     "\x80\x05\x95\x01\x00\x00\x00\x00\x00\x00\x00K\x05.", 14,
	     "an opcode that crosses the end of its FRAME"},
	    {"a FRAME inside a frame",
	     "\x80\x05\x95\x0a\x00\x00\x00\x00\x00\x00\x00\x95\x01\x00\x00\x00\x00\x00\x00\x00N.",
	     22, "a FRAME before the end of the previous one"},
	};
	char err[512];

	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		for (int ch = 0; ch < 4; ch++) {
			int r = scan(cases[i].data, cases[i].len, (enum sb_result_channel)ch, NULL,
				     err, sizeof(err));

			if (cases[i].reason)
				tap_ok(r == -EPERM && strstr(err, cases[i].reason),
				       "channel %d refuses %s: %s", ch, cases[i].name, err);
			else
				tap_ok(r == 0, "channel %d admits %s: %s", ch, cases[i].name, err);
		}
}

int main(void)
{
	char err[512];
	int r;

	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		r = scan(valid[i].data, valid[i].len, SB_CHANNEL_DATA_ONLY, NULL, err, sizeof(err));
		if (!tap_ok(r == 0, "data-only admits %s", valid[i].name))
			tap_diag("%s", err);
		r = scan(valid[i].data, valid[i].len, SB_CHANNEL_OBJECTS, NULL, err, sizeof(err));
		tap_ok(r == 0, "objects admits %s", valid[i].name);
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		r = scan(refused[i].data, refused[i].len, SB_CHANNEL_DATA_ONLY, NULL, err,
			 sizeof(err));
		if (!tap_ok(r == -EPERM && strstr(err, refused[i].reason),
			    "data-only refuses %s: %s", refused[i].name, refused[i].reason))
			tap_diag("r=%d: %s", r, err);
	}

	/* Messages name what was refused. */
	r = scan(refused[0].data, refused[0].len, SB_CHANNEL_DATA_ONLY, NULL, err, sizeof(err));
	/* pickle names os.system by its C twin. */
	tap_ok(r == -EPERM && strstr(err, "'posix.system'") && strstr(err, "data-only"),
	       "the message names posix.system: %s", err);
	r = scan(refused[0].data, refused[0].len, SB_CHANNEL_OBJECTS, NULL, err, sizeof(err));
	tap_ok(r == -EPERM && strstr(err, "denylist"),
	       "objects mode: os.system is in the denylist");
	r = scan(refused[0].data, refused[0].len, SB_CHANNEL_EXCEPTION, NULL, err, sizeof(err));
	tap_ok(r == -EPERM, "the exception channel refuses os.system");
	r = scan(refused[0].data, refused[0].len, SB_CHANNEL_OBJECTS_NOGUARD, NULL, err,
		 sizeof(err));
	tap_ok(r == 0, "remote-result-guard=false removes only the denylist (os.system passes "
		       "the scan)");
	r = scan(refused[1].data, refused[1].len, SB_CHANNEL_OBJECTS, NULL, err, sizeof(err));
	tap_ok(r == 0, "objects mode admits a class instance");
	r = scan(refused[12].data, refused[12].len, SB_CHANNEL_OBJECTS, NULL, err, sizeof(err));
	tap_ok(r == -EPERM && strstr(err, "builtins.getattr"), "getattr is a denied builtin");
	for (size_t i = 2; i <= 10; i++) {
		r = scan(refused[i].data, refused[i].len, SB_CHANNEL_OBJECTS_NOGUARD, NULL, err,
			 sizeof(err));
		tap_ok(r == -EPERM, "%s is refused in every mode", refused[i].name);
	}

	/* The denylist covers the C twins. */
	tap_ok(sb_result_denied_global("posix", "system"), "posix.system denied");
	tap_ok(sb_result_denied_global("nt", "system"), "nt.system denied");
	tap_ok(sb_result_denied_global("_posixsubprocess", "fork_exec"), "fork_exec denied");
	tap_ok(sb_result_denied_global("importlib.util", "x"), "submodules of importlib denied");
	tap_ok(sb_result_denied_global("_operator", "attrgetter"), "_operator denied");
	tap_ok(sb_result_denied_global("builtins", "__import__"), "builtins.__import__ denied");
	tap_ok(!sb_result_denied_global("osx", "thing"), "a module named like os is not os");
	tap_ok(!sb_result_denied_global("collections", "OrderedDict"), "collections admitted");
	tap_ok(sb_result_data_type("datetime", "timezone"), "datetime.timezone is data");
	tap_ok(!sb_result_data_type("datetime", "tzinfo"), "datetime.tzinfo is not data");

	test_module_checked();
	test_lengths();
	test_checked_constructors();
	test_frames();

	/* Budgets. */
	{
		struct sb_prescan_limits lim = sb_prescan_default_limits;
		const char *list = valid[8].data; /* [1, [2, [3]]] */

		lim.max_bytes = 3;
		r = scan(list, valid[8].len, SB_CHANNEL_DATA_ONLY, &lim, err, sizeof(err));
		tap_ok(r == -EPERM && strstr(err, "over the limit"), "byte budget: %s", err);
		lim = sb_prescan_default_limits;
		lim.max_opcodes = 4;
		r = scan(list, valid[8].len, SB_CHANNEL_DATA_ONLY, &lim, err, sizeof(err));
		tap_ok(r == -EPERM && strstr(err, "opcodes"), "opcode budget: %s", err);
		lim = sb_prescan_default_limits;
		lim.max_memo = 1;
		r = scan(list, valid[8].len, SB_CHANNEL_DATA_ONLY, &lim, err, sizeof(err));
		tap_ok(r == -EPERM && strstr(err, "memo"), "memo budget: %s", err);
		lim = sb_prescan_default_limits;
		lim.max_marks = 2;
		{
			/* ((((( as nested MARKs */
			static const char marks[] = "\x80\x05((((N\x74\x74\x74\x74.";

			r = scan(marks, sizeof(marks) - 1, SB_CHANNEL_DATA_ONLY, &lim, err,
				 sizeof(err));
			tap_ok(r == -EPERM && strstr(err, "MARK"), "MARK depth budget: %s", err);
			r = scan(marks, sizeof(marks) - 1, SB_CHANNEL_DATA_ONLY, NULL, err,
				 sizeof(err));
			tap_ok(r == 0, "the same stream within the default budget");
		}
	}
	return tap_done();
}
