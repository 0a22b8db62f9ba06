/* SPDX-License-Identifier: MIT */
/* A structure-aware mutator for the pickle targets (fuzz-result-guard,
 * fuzz-unpickle). Byte mutation rarely gets a pickle past the prescan's first
 * checks (a counted length, a STACK_GLOBAL of two known strings, a balanced
 * stack, STOP at the end). This mutator cuts the input into opcodes and
 * inserts, deletes, copies, swaps or rewrites whole opcodes; it generates
 * whole values as CPython writes them (containers, memo references, the
 * data-only types with plausible arguments), exception frames' payloads,
 * and calls of globals that every channel must refuse, allowed ones with
 * hostile arguments, and classes of other modules. A quarter of the time it leaves the work to
 * libFuzzer's byte mutator. Linked into the libFuzzer binaries only (not the replay). */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"

#define ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

enum arg {
	A_NONE,
	A_FIX1,
	A_FIX2,
	A_FIX4,
	A_FIX8,
	A_LINE,	 /* one newline-terminated argument */
	A_LINE2, /* two (GLOBAL, INST) */
	A_CNT1,	 /* a 1-byte length and that many bytes */
	A_CNT4,
	A_CNT8,
};

static const struct {
	uint8_t op;
	enum arg arg;
} opcodes[] = {
    {'(', A_NONE},  {'.', A_NONE},  {'0', A_NONE},  {'1', A_NONE},  {'2', A_NONE},  {'F', A_LINE},
    {'I', A_LINE},  {'J', A_FIX4},  {'K', A_FIX1},  {'L', A_LINE},  {'M', A_FIX2},  {'N', A_NONE},
    {'P', A_LINE},  {'Q', A_NONE},  {'R', A_NONE},  {'S', A_LINE},  {'T', A_CNT4},  {'U', A_CNT1},
    {'V', A_LINE},  {'X', A_CNT4},  {'a', A_NONE},  {'b', A_NONE},  {'c', A_LINE2}, {'d', A_NONE},
    {'}', A_NONE},  {'e', A_NONE},  {'g', A_LINE},  {'h', A_FIX1},  {'i', A_LINE2}, {'j', A_FIX4},
    {'l', A_NONE},  {']', A_NONE},  {'o', A_NONE},  {'p', A_LINE},  {'q', A_FIX1},  {'r', A_FIX4},
    {'s', A_NONE},  {'t', A_NONE},  {')', A_NONE},  {'u', A_NONE},  {'G', A_FIX8},  {0x80, A_FIX1},
    {0x81, A_NONE}, {0x82, A_FIX1}, {0x83, A_FIX2}, {0x84, A_FIX4}, {0x85, A_NONE}, {0x86, A_NONE},
    {0x87, A_NONE}, {0x88, A_NONE}, {0x89, A_NONE}, {0x8a, A_CNT1}, {0x8b, A_CNT4}, {'B', A_CNT4},
    {'C', A_CNT1},  {0x8c, A_CNT1}, {0x8d, A_CNT8}, {0x8e, A_CNT8}, {0x8f, A_NONE}, {0x90, A_NONE},
    {0x91, A_NONE}, {0x92, A_NONE}, {0x93, A_NONE}, {0x94, A_NONE}, {0x95, A_FIX8}, {0x96, A_CNT8},
    {0x97, A_NONE}, {0x98, A_NONE},
};

/* The closed list of data-only, as (module, name). */
static const char *const data_globals[][2] = {
    {"builtins", "complex"},
    {"builtins", "bytearray"},
    {"builtins", "set"},
    {"builtins", "frozenset"},
    {"pathlib", "PurePath"},
    {"pathlib", "PurePosixPath"},
    {"pathlib", "PureWindowsPath"},
    {"pathlib", "Path"},
    {"pathlib", "PosixPath"},
    {"pathlib", "WindowsPath"},
    {"datetime", "datetime"},
    {"datetime", "date"},
    {"datetime", "time"},
    {"datetime", "timedelta"},
    {"datetime", "timezone"},
    {"decimal", "Decimal"},
    {"fractions", "Fraction"},
    {"uuid", "UUID"},
    {"ipaddress", "IPv4Address"},
    {"ipaddress", "IPv6Address"},
    {"ipaddress", "IPv4Network"},
    {"ipaddress", "IPv6Network"},
    {"ipaddress", "IPv4Interface"},
    {"ipaddress", "IPv6Interface"},
};

/* Names every data-only decoder must refuse: gadgets, look-alikes (a data
 * type's name in another module, a dotted walk from a data type), other
 * classes, exception classes (the exception channel's), spellings of
 * builtins that pickle itself never writes. Nothing here is called by the
 * targets: the unpickling target rebuilds only in the fail-closed channels. */
static const char *const other_globals[][2] = {
    {"posix", "system"},
    {"os", "system"},
    {"builtins", "eval"},
    {"builtins", "getattr"},
    {"builtins", "__import__"},
    {"builtins", "object"},
    {"builtins", "type"},
    {"builtins", "str"},
    {"builtins", "int"},
    {"builtins", "list"},
    {"builtins", "dict"},
    {"builtins", "tuple"},
    {"builtins", "bytes"},
    {"uuid", "SafeUUID"},
    {"builtins", "ValueError"},
    {"builtins", "KeyError"},
    {"builtins", "OSError"},
    {"builtins", "SystemExit"},
    {"builtins", "BaseException"},
    {"builtins", "Exception"},
    {"__builtin__", "set"},
    {"__builtin__", "complex"},
    {"collections", "OrderedDict"},
    {"copyreg", "_reconstructor"},
    {"decimal", "Context"},
    {"decimal", "Fraction"},
    {"fractions", "Decimal"},
    {"evil", "Decimal"},
    {"datetime", "tzinfo"},
    {"datetime", "datetime.fromisoformat"},
    {"datetime", "timezone.utc"},
    {"decimal", "Decimal.from_float"},
    {"uuid", "UUID.__init__"},
    {"pathlib", "Path.home"},
    {"ipaddress", "ip_address"},
    {"pysandboxes", "SandBoxError"},
    {"_pickle", "UnpicklingError"},
    {"pickle", "loads"},
    {"", "complex"},
    {"builtins", ""},
    {"builtins.complex", "real"},
};

static const char *const strings[] = {
    "",		  "a",		 "int",		 "is_safe",
    "/",	  "/etc/passwd", "x\0y",	 "..",
    "1.5",	  "-0",		 "NaN",		 "sNaN",
    "Infinity",	  "1e999999999", "1/3",		 "1e-999999999",
    "0x10",	  "::1",	 "10.0.0.1",	 "fe80::/64",
    "10.0.0.0/8", "\xff",	 "\xed\xa0\x80", "é",
    "utf-8",	  "latin-1",	 "_numerator",	 "__class__",
    "__dict__",	  "_ip",	 "real",	 "123",
    "-5",	  "1_000",	 "2024-01-01",
};

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	/* xorshift64* */
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dULL;
}

static size_t below(struct rng *r, size_t n)
{
	return n ? (size_t)(rng_next(r) % n) : 0;
}

static bool one_in(struct rng *r, size_t n)
{
	return below(r, n) == 0;
}

struct out {
	uint8_t *p;
	size_t len, cap;
	bool full;
	unsigned memo;	/* memo entries so far, for BINGET */
	unsigned depth; /* of the value being generated */
};

static void put(struct out *o, const void *d, size_t n)
{
	if (o->full || n > o->cap - o->len) {
		o->full = true;
		return;
	}
	memcpy(o->p + o->len, d, n);
	o->len += n;
}

static void put1(struct out *o, uint8_t b)
{
	put(o, &b, 1);
}

static void put_le(struct out *o, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put1(o, (uint8_t)(v >> (8 * i)));
}

static const char *pick_string(struct rng *r, size_t *len)
{
	const char *s = strings[below(r, ELEMENTS(strings))];

	/* "x\0y" keeps its NUL. */
	*len = s[0] == 'x' && s[1] == '\0' ? 3 : strlen(s);
	return s;
}

static void gen_str_bytes(struct out *o, struct rng *r, const char *s, size_t n)
{
	switch (below(r, 6)) {
	case 0:
		put1(o, 'X');
		put_le(o, n, 4);
		break;
	case 1:
		put1(o, 0x8d);
		put_le(o, n, 8);
		break;
	default:
		if (n > 255)
			n = 255;
		put1(o, 0x8c);
		put1(o, (uint8_t)n);
		break;
	}
	put(o, s, n);
}

static void gen_str(struct out *o, struct rng *r)
{
	size_t n;
	const char *s = pick_string(r, &n);
	char random[16];

	if (one_in(r, 4)) {
		n = below(r, sizeof(random) + 1);
		for (size_t i = 0; i < n; i++)
			random[i] = (char)(one_in(r, 4) ? rng_next(r) : 'a' + below(r, 26));
		s = random;
	}
	gen_str_bytes(o, r, s, n);
}

static void gen_memoize(struct out *o, struct rng *r)
{
	if (one_in(r, 2)) {
		put1(o, 0x94);
		o->memo++;
	} else if (one_in(r, 4)) {
		put1(o, 'q');
		put1(o, (uint8_t)o->memo);
		o->memo++;
	}
}

static void gen_int(struct out *o, struct rng *r)
{
	static const int64_t edges[] = {0,	   1,	      -1,	    255,	256,
					65535,	   65536,     INT32_MAX,    INT32_MIN,	INT64_MAX,
					INT64_MIN, 1LL << 32, 4294967295LL, 1700000000, 86400};
	int64_t v = one_in(r, 2) ? edges[below(r, ELEMENTS(edges))] : (int64_t)rng_next(r);

	switch (below(r, 6)) {
	case 0:
		put1(o, 'K');
		put1(o, (uint8_t)v);
		break;
	case 1:
		put1(o, 'M');
		put_le(o, (uint64_t)v, 2);
		break;
	case 2:
		put1(o, 'J');
		put_le(o, (uint64_t)v, 4);
		break;
	case 3: {
		/* Large: the cost of what a constructor does with it
		 * (Decimal(int), Fraction's gcd, bytearray(n)). */
		size_t n = one_in(r, 8) ? 1 + below(r, 4096) : 1 + below(r, 16);

		put1(o, n < 256 ? 0x8a : 0x8b);
		put_le(o, n, n < 256 ? 1 : 4);
		for (size_t i = 0; i < n; i++)
			put1(o, (uint8_t)rng_next(r));
		break;
	}
	default:
		put1(o, 0x8a);
		put1(o, 8);
		put_le(o, (uint64_t)v, 8);
		break;
	}
}

static void gen_float(struct out *o, struct rng *r)
{
	static const uint64_t bits[] = {
	    0x0000000000000000ULL, 0x8000000000000000ULL, 0x3ff8000000000000ULL,
	    0x7ff0000000000000ULL, 0xfff0000000000000ULL, 0x7ff8000000000000ULL,
	    0x7ff0000000000001ULL, 0x0000000000000001ULL, 0x41d954fc40000000ULL,
	};
	uint64_t v = one_in(r, 3) ? rng_next(r) : bits[below(r, ELEMENTS(bits))];

	put1(o, 'G');
	for (int i = 7; i >= 0; i--) /* big-endian */
		put1(o, (uint8_t)(v >> (8 * i)));
}

static void gen_global(struct out *o, struct rng *r, const char *module, const char *name)
{
	gen_str_bytes(o, r, module, strlen(module));
	gen_memoize(o, r);
	gen_str_bytes(o, r, name, strlen(name));
	gen_memoize(o, r);
	put1(o, 0x93);
	gen_memoize(o, r);
}

static void gen_value(struct out *o, struct rng *r);

/* MARK, items, then the opcode that makes the container. */
static void gen_items(struct out *o, struct rng *r, uint8_t build, bool pairs)
{
	size_t n = below(r, 4);

	put1(o, '(');
	for (size_t i = 0; i < n * (pairs ? 2 : 1); i++)
		gen_value(o, r);
	put1(o, build);
}

/* The arguments CPython's reduce gives each data type, and hostile ones. */
static void gen_call(struct out *o, struct rng *r, bool data)
{
	const char *module, *name;

	if (data) {
		size_t i = below(r, ELEMENTS(data_globals));

		module = data_globals[i][0];
		name = data_globals[i][1];
	} else {
		size_t i = below(r, ELEMENTS(other_globals));

		module = other_globals[i][0];
		name = other_globals[i][1];
	}
	gen_global(o, r, module, name);
	if (data && !one_in(r, 4) && strcmp(module, "datetime") == 0 && strcmp(name, "timedelta") &&
	    strcmp(name, "timezone")) {
		/* date: 4 bytes, time: 6, datetime: 10, then an optional tzinfo. */
		size_t n = name[0] == 'd' && name[4] == '\0' ? 4 : name[0] == 't' ? 6 : 10;
		static const uint8_t state[10] = {0x07, 0xe8, 2, 29, 23, 59, 59, 0, 0, 1};

		put1(o, '(');
		put1(o, 'C');
		put1(o, (uint8_t)n);
		put(o, state + (n == 6 ? 4 : 0), n);
		if (one_in(r, 3))
			gen_call(o, r, true);
		put1(o, 't');
	} else if (data && strcmp(module, "uuid") == 0 && strcmp(name, "UUID") == 0 &&
		   !one_in(r, 4)) {
		/* copyreg.__newobj__: NEWOBJ, then BUILD with the state. */
		put1(o, ')');
		put1(o, 0x81);
		put1(o, '}');
		put1(o, '(');
		gen_str_bytes(o, r, "int", 3);
		gen_int(o, r);
		if (one_in(r, 2)) {
			gen_str_bytes(o, r, "is_safe", 7);
			gen_value(o, r);
		}
		put1(o, 'u');
		put1(o, 'b');
		return;
	} else {
		size_t n = below(r, 4);

		put1(o, '(');
		for (size_t i = 0; i < n; i++) {
			switch (below(r, 4)) {
			case 0:
				gen_int(o, r);
				break;
			case 1:
				gen_str(o, r);
				break;
			default:
				gen_value(o, r);
				break;
			}
		}
		put1(o, 't');
	}
	switch (below(r, 8)) {
	case 0:
		put1(o, 0x81); /* NEWOBJ */
		break;
	case 1:
		put1(o, '}');
		put1(o, 0x92); /* NEWOBJ_EX */
		break;
	default:
		put1(o, 'R'); /* REDUCE */
		break;
	}
	if (one_in(r, 8)) {
		gen_value(o, r);
		put1(o, 'b'); /* BUILD */
	}
}

static void gen_value(struct out *o, struct rng *r)
{
	if (o->depth > 5) {
		put1(o, 'N');
		return;
	}
	o->depth++;
	switch (below(r, 20)) {
	case 0:
		put1(o, 'N');
		break;
	case 1:
		put1(o, one_in(r, 2) ? 0x88 : 0x89);
		break;
	case 2:
	case 3:
		gen_int(o, r);
		break;
	case 4:
		gen_float(o, r);
		break;
	case 5:
	case 6:
		gen_str(o, r);
		break;
	case 7: {
		size_t n = below(r, 8);
		bool short_bytes = one_in(r, 2);

		put1(o, short_bytes ? 'C' : 0x96);
		put_le(o, n, short_bytes ? 1 : 8);
		for (size_t i = 0; i < n; i++)
			put1(o, (uint8_t)rng_next(r));
		break;
	}
	case 8:
		put1(o, ']');
		gen_memoize(o, r);
		gen_items(o, r, 'e', false);
		break;
	case 9:
		put1(o, '}');
		gen_memoize(o, r);
		gen_items(o, r, 'u', true);
		break;
	case 10:
		gen_items(o, r, 't', false);
		break;
	case 11: {
		size_t n = below(r, 3);

		for (size_t i = 0; i <= n; i++)
			gen_value(o, r);
		put1(o, (uint8_t)(0x85 + n));
		break;
	}
	case 12:
		put1(o, 0x8f);
		gen_memoize(o, r);
		gen_items(o, r, 0x90, false);
		break;
	case 13:
		gen_items(o, r, 0x91, false);
		break;
	case 14:
		if (o->memo) {
			put1(o, 'h');
			put1(o, (uint8_t)below(r, o->memo));
		} else {
			put1(o, ')');
		}
		break;
	case 15:
	case 16:
	case 17:
		gen_call(o, r, true);
		break;
	case 18:
		gen_call(o, r, one_in(r, 2));
		break;
	default:
		put1(o, ')');
		break;
	}
	gen_memoize(o, r);
	o->depth--;
}

/* Classes an exception frame may name: exceptions of builtins and of
 * pysandboxes, one of a module the caller never loaded, things that are not
 * exceptions. */
static const char *const exception_classes[][2] = {
    {"builtins", "ValueError"},
    {"builtins", "KeyError"},
    {"builtins", "OSError"},
    {"builtins", "FileNotFoundError"},
    {"builtins", "Exception"},
    {"builtins", "SystemExit"},
    {"builtins", "KeyboardInterrupt"},
    {"builtins", "BaseException"},
    {"builtins", "UnicodeDecodeError"},
    {"pysandboxes", "SandBoxError"},
    {"pysandboxes", "RuleFileNotFoundError"},
    {"mod", "MyError"},
    {"builtins", "list"},
    {"builtins", "ValueError.__init__"},
    {"collections", "OrderedDict"},
};

/* An exception frame's payload as the worker writes it: (module, qualname,
 * message, denials, traceback, the pickled exception), the last one a call
 * of an exception class, any value, or garbage. */
static void gen_descriptor(struct out *o, struct rng *r)
{
	uint8_t buf[4096];
	struct out rich = {.p = buf, .cap = sizeof(buf)};
	size_t i = below(r, ELEMENTS(exception_classes));
	const char *module = exception_classes[i][0], *name = exception_classes[i][1];

	put1(&rich, 0x80);
	put1(&rich, 5);
	switch (below(r, 4)) {
	case 0:
		gen_value(&rich, r);
		break;
	case 1:
		for (size_t k = below(r, 16); k > 0; k--)
			put1(&rich, (uint8_t)rng_next(r));
		break;
	default:
		/* Usually the class the descriptor names, sometimes another. */
		if (one_in(r, 4))
			i = below(r, ELEMENTS(exception_classes));
		gen_global(&rich, r, exception_classes[i][0], exception_classes[i][1]);
		put1(&rich, '(');
		for (size_t k = below(r, 3); k > 0; k--)
			gen_value(&rich, r);
		put1(&rich, 't');
		put1(&rich, 'R');
		if (one_in(r, 4)) {
			put1(&rich, '}');
			gen_str(&rich, r);
			gen_value(&rich, r);
			put1(&rich, 's');
			put1(&rich, 'b');
		}
		break;
	}
	put1(&rich, '.');

	put1(o, '(');
	gen_str_bytes(o, r, module, strlen(module));
	gen_str_bytes(o, r, name, strlen(name));
	gen_str(o, r);
	put1(o, ']');
	if (one_in(r, 2)) {
		gen_str_bytes(o, r, "RuleFileNotFoundError: Access", 29);
		put1(o, 'a');
	}
	gen_str(o, r);
	put1(o, 'B');
	put_le(o, rich.len, 4);
	put(o, rich.p, rich.len);
	put1(o, 't');
}

/* The length of the opcode at p (with its argument), 0 when it is unknown or
 * cut short. */
static size_t op_length(const uint8_t *p, size_t left)
{
	size_t need = 1;

	for (size_t i = 0; i < ELEMENTS(opcodes); i++) {
		const uint8_t *nl;
		uint64_t n = 0;

		if (opcodes[i].op != p[0])
			continue;
		switch (opcodes[i].arg) {
		case A_NONE:
			return 1;
		case A_FIX1:
			need = 2;
			break;
		case A_FIX2:
			need = 3;
			break;
		case A_FIX4:
			need = 5;
			break;
		case A_FIX8:
			need = 9;
			break;
		case A_LINE:
		case A_LINE2:
			nl = memchr(p + 1, '\n', left - 1);
			if (nl && opcodes[i].arg == A_LINE2)
				nl = memchr(nl + 1, '\n', left - (size_t)(nl + 1 - p));
			return nl ? (size_t)(nl - p) + 1 : 0;
		case A_CNT1:
		case A_CNT4:
		case A_CNT8: {
			size_t w = opcodes[i].arg == A_CNT1 ? 1 : opcodes[i].arg == A_CNT4 ? 4 : 8;

			if (left < 1 + w)
				return 0;
			for (size_t k = 0; k < w; k++)
				n |= (uint64_t)p[1 + k] << (8 * k);
			if (n > left - 1 - w)
				return 0;
			return 1 + w + (size_t)n;
		}
		}
		return need <= left ? need : 0;
	}
	return 0;
}

/* Any opcode of the table, with an argument that fits it. */
static void gen_op(struct out *o, struct rng *r)
{
	size_t i = below(r, ELEMENTS(opcodes));

	switch (opcodes[i].op) {
	case 0x8c:
	case 'X':
	case 0x8d:
		gen_str(o, r);
		return;
	case 'K':
	case 'M':
	case 'J':
	case 0x8a:
	case 0x8b:
		gen_int(o, r);
		return;
	case 'G':
		gen_float(o, r);
		return;
	case 'h':
	case 'j':
	case 'q':
	case 'r':
		put1(o, opcodes[i].op);
		put_le(o, below(r, o->memo + 2),
		       opcodes[i].op == 'h' || opcodes[i].op == 'q' ? 1 : 4);
		return;
	case 0x80:
		put1(o, 0x80);
		put1(o, (uint8_t)below(r, 7));
		return;
	default:
		break;
	}
	put1(o, opcodes[i].op);
	switch (opcodes[i].arg) {
	case A_NONE:
		break;
	case A_FIX1:
	case A_FIX2:
	case A_FIX4:
	case A_FIX8:
		put_le(o, rng_next(r),
		       opcodes[i].arg == A_FIX1	  ? 1
		       : opcodes[i].arg == A_FIX2 ? 2
		       : opcodes[i].arg == A_FIX4 ? 4
						  : 8);
		break;
	case A_LINE: {
		static const char *const lines[] = {
		    "0",  "1", "-1", "01", "1.5", "nan", "'a'", "S'x'", "999999999999999999999",
		    "3L", ""};
		const char *l = lines[below(r, ELEMENTS(lines))];

		put(o, l, strlen(l));
		put1(o, '\n');
		break;
	}
	case A_LINE2:
		put(o, "posix\nsystem\n", 13);
		break;
	case A_CNT1:
	case A_CNT4:
	case A_CNT8: {
		size_t w = opcodes[i].arg == A_CNT1 ? 1 : opcodes[i].arg == A_CNT4 ? 4 : 8;
		size_t n = below(r, 6);

		put_le(o, n, w);
		for (size_t k = 0; k < n; k++)
			put1(o, (uint8_t)('a' + below(r, 26)));
		break;
	}
	}
}

#define MAX_OPS 8192

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	static uint8_t buf[1 << 20];
	static size_t start[MAX_OPS + 1];
	struct rng r = {.s = (uint64_t)seed * 0x9e3779b97f4a7c15ULL + 1};
	struct out o = {.p = buf, .cap = max_size < sizeof(buf) ? max_size : sizeof(buf)};
	size_t n_ops = 0, at, k, len;
	unsigned choice = (unsigned)below(&r, 16);

	if (choice < 4)
		return LLVMFuzzerMutate(data, size, max_size);

	/* Opcode boundaries; an unknown or cut opcode makes the rest one piece. */
	for (size_t p = 0; p < size && n_ops < MAX_OPS;) {
		size_t l = op_length(data + p, size - p);

		start[n_ops++] = p;
		p = l ? p + l : size;
	}
	start[n_ops] = size;
	at = below(&r, n_ops + 1);
	/* Memo entries made before the insertion point, roughly. */
	for (size_t i = 0; i < at; i++)
		if (data[start[i]] == 0x94 || data[start[i]] == 'q' || data[start[i]] == 'r')
			o.memo++;

	switch (choice) {
	case 4: /* a new pickle: a value, or an exception frame's payload */
		o.memo = 0;
		put1(&o, 0x80);
		put1(&o, one_in(&r, 8) ? (uint8_t)below(&r, 6) : 5);
		if (one_in(&r, 3))
			gen_descriptor(&o, &r);
		else
			gen_value(&o, &r);
		put1(&o, '.');
		break;
	case 5:
	case 6:
	case 7: /* a value inserted */
		put(&o, data, start[at]);
		gen_value(&o, &r);
		if (one_in(&r, 2))
			put1(&o, "a0s\x85\x86"[below(&r, 5)]);
		put(&o, data + start[at], size - start[at]);
		break;
	case 8: /* a call of a global */
		put(&o, data, start[at]);
		gen_call(&o, &r, !one_in(&r, 3));
		put(&o, data + start[at], size - start[at]);
		break;
	case 9: /* an opcode inserted */
		put(&o, data, start[at]);
		gen_op(&o, &r);
		put(&o, data + start[at], size - start[at]);
		break;
	case 10: /* opcodes deleted */
		if (at == n_ops)
			return LLVMFuzzerMutate(data, size, max_size);
		k = at + 1 + below(&r, 3);
		k = k > n_ops ? n_ops : k;
		put(&o, data, start[at]);
		put(&o, data + start[k], size - start[k]);
		break;
	case 11: /* opcodes copied elsewhere */
		if (n_ops == 0)
			return LLVMFuzzerMutate(data, size, max_size);
		k = below(&r, n_ops);
		len = 1 + below(&r, 4);
		len = k + len > n_ops ? n_ops - k : len;
		put(&o, data, start[at]);
		put(&o, data + start[k], start[k + len] - start[k]);
		put(&o, data + start[at], size - start[at]);
		break;
	case 12: /* an opcode replaced by another, or its argument rewritten */
		if (at == n_ops)
			return LLVMFuzzerMutate(data, size, max_size);
		put(&o, data, start[at]);
		gen_op(&o, &r);
		put(&o, data + start[at + 1], size - start[at + 1]);
		break;
	case 13: /* two opcodes swapped */
		k = below(&r, n_ops + 1);
		if (at == n_ops || k == n_ops || k == at)
			return LLVMFuzzerMutate(data, size, max_size);
		if (k < at) {
			size_t t = k;

			k = at;
			at = t;
		}
		put(&o, data, start[at]);
		put(&o, data + start[k], start[k + 1] - start[k]);
		put(&o, data + start[at + 1], start[k] - start[at + 1]);
		put(&o, data + start[at], start[at + 1] - start[at]);
		put(&o, data + start[k + 1], size - start[k + 1]);
		break;
	case 14: /* cut at an opcode */
		put(&o, data, start[at]);
		break;
	default: /* a memo store or fetch */
		put(&o, data, start[at]);
		switch (below(&r, 4)) {
		case 0:
			put1(&o, 0x94);
			break;
		case 1:
			put1(&o, 'h');
			put1(&o, (uint8_t)below(&r, o.memo + 1));
			break;
		case 2:
			put1(&o, 'q');
			put1(&o, (uint8_t)below(&r, o.memo + 2));
			break;
		default:
			put1(&o, '2'); /* DUP */
			break;
		}
		put(&o, data + start[at], size - start[at]);
		break;
	}

	/* The frame of protocol 4+ and STOP, as CPython writes them, most of the
	 * time: the checks after those are the interesting ones. */
	if (!o.full && o.len && o.p[o.len - 1] != '.' && !one_in(&r, 4))
		put1(&o, '.');
	if (!o.full && o.len >= 2 && o.p[0] == 0x80 && o.p[1] >= 4 && one_in(&r, 4) &&
	    o.len + 9 <= o.cap) {
		size_t body = o.len - 2;

		memmove(o.p + 11, o.p + 2, body);
		o.p[2] = 0x95;
		for (int i = 0; i < 8; i++)
			o.p[3 + i] = (uint8_t)((uint64_t)body >> (8 * i));
		o.len += 9;
	}
	if (o.full || o.len == 0)
		return LLVMFuzzerMutate(data, size, max_size);
	memcpy(data, o.p, o.len);
	return o.len;
}
