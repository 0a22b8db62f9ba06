/* SPDX-License-Identifier: MIT */
#include "result-guard.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>

#include "util.h"

const struct sb_prescan_limits sb_prescan_default_limits = {
    .max_bytes = 512u << 10,
    .max_opcodes = 1u << 20,
    /* Every str is memoized: 512 KiB of one-letter strings is ~131k entries. */
    .max_memo = 1u << 18,
    .max_marks = 1000,
    .max_stack = 1u << 20,
    .max_depth = 1000,
    .max_same_hash = 64,
};

/* The value types of remote-result-mode=data-only, beyond those pickle writes
 * with opcodes of their own (None, bool, int, float, str, bytes, bytearray,
 * list, tuple, dict, set, frozenset). */
static const struct {
	const char *module;
	const char *names[8];
} data_types[] = {
    {"builtins", {"complex", "bytearray", "set", "frozenset"}},
    {"pathlib",
     {"PurePath", "PurePosixPath", "PureWindowsPath", "Path", "PosixPath", "WindowsPath"}},
    {"datetime", {"datetime", "date", "time", "timedelta", "timezone"}},
    {"decimal", {"Decimal"}},
    {"fractions", {"Fraction"}},
    /* Not uuid.SafeUUID: SafeUUID(0) is the shared member SafeUUID.safe, and
     * a BUILD after NEWOBJ would write into it. A UUID pickles is_safe as
     * its value. */
    {"uuid", {"UUID"}},
    {"ipaddress",
     {"IPv4Address", "IPv6Address", "IPv4Network", "IPv6Network", "IPv4Interface",
      "IPv6Interface"}},
};

bool sb_result_data_type(const char *module, const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(data_types); i++) {
		if (!streq(module, data_types[i].module))
			continue;
		for (size_t k = 0; k < ELEMENTSOF(data_types[i].names) && data_types[i].names[k];
		     k++)
			if (streq(name, data_types[i].names[k]))
				return true;
	}
	return false;
}

bool sb_result_checked_constructor(const char *module, const char *name)
{
	return (streq(module, "fractions") && streq(name, "Fraction")) ||
	       (streq(module, "decimal") && streq(name, "Decimal")) ||
	       (streq(module, "builtins") && streq(name, "bytearray"));
}

/* Whole modules (and their submodules) whose every global is a gadget: process
 * and privilege control, interpreter internals, native memory, callables that
 * turn data into calls. Fail-open by nature (spec section 9): anything else
 * is admitted in objects mode. */
static const char *const denied_modules[] = {
    "os",
    "posix",
    "nt",
    "subprocess",
    "_posixsubprocess",
    "pty",
    "sys",
    "_imp",
    "importlib",
    "runpy",
    "socket",
    "_socket",
    "ctypes",
    "_ctypes",
    "_thread",
    "threading",
    "mmap",
    "operator",
    "_operator",
    "functools",
    "_functools",
    "pickle",
    "_pickle",
    "marshal",
    "shutil",
    "code",
    "codeop",
    "pdb",
    "signal",
    "_signal",
    "multiprocessing",
    "_multiprocessing",
    "types",
    "gc",
    "inspect",
    "webbrowser",
    "_io",
    "io",
    "asyncio.subprocess",
};

static const char *const denied_builtins[] = {
    "eval",    "exec",	     "compile", "__import__", "__build_class__", "getattr",	 "setattr",
    "delattr", "type",	     "open",	"breakpoint", "input",		 "globals",	 "locals",
    "vars",    "memoryview", "super",	"object",     "classmethod",	 "staticmethod", "property",
};

bool sb_result_denied_global(const char *module, const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(denied_modules); i++) {
		size_t n = strlen(denied_modules[i]);

		if (strncmp(module, denied_modules[i], n) == 0 &&
		    (module[n] == '\0' || module[n] == '.'))
			return true;
	}
	if (streq(module, "builtins") || streq(module, "__builtin__"))
		for (size_t i = 0; i < ELEMENTSOF(denied_builtins); i++)
			if (streq(name, denied_builtins[i]))
				return true;
	return false;
}

enum kind {
	K_MARK,
	K_VALUE,  /* data built by data opcodes */
	K_STR,	  /* a str, whose text the scan knows (for STACK_GLOBAL) */
	K_GLOBAL, /* a global admitted by the channel */
	/* In the exception channel, a constructor the unpickler hands out checked
	 * (sb_result_checked_constructor()): only ever called, never a value. */
	K_CONSTRUCTOR,
	K_OBJ,	  /* what REDUCE built */
	K_NEWOBJ, /* what NEWOBJ built (BUILD may follow) */
};

/* What the scan knows of an item's hash, for the collision check (count_key()). */
enum hash_kind {
	H_OPAQUE,  /* an object the scan does not hash, or no hash (a list) */
	H_KNOWN,   /* computed (str and bytes: a stand-in for their keyed hash) */
	H_SUSPECT, /* a number the scan cannot hash (protocol-0 text): counted together */
	H_UNIQUE,  /* NaN: hashed by identity, never collides */
};

enum ctor {
	C_OTHER,
	C_COMPLEX,
	C_SET,
	C_FRACTION,
	C_DECIMAL,
	C_UUID,
	C_IPV6_ADDRESS,
	C_IPV4_NETWORK,
	C_IPV4_INTERFACE,
	C_IPV6_NETWORK,
	C_IPV6_INTERFACE,
};

struct item {
	enum kind kind;
	const char *str; /* K_STR: into the stream */
	size_t str_len;
	/* How deep containers nest in it: 0 for a scalar, 1 for an empty
	 * container. A mutable one's is its object's (obj). */
	size_t depth;
	size_t obj; /* 1 + index in scan.objs: a list, dict, set or object; 0: none */
	/* Its hash as a dict key or set element, as CPython computes it. */
	enum hash_kind hash_kind;
	uint64_t hash;
	/* A tuple of one or two numbers, or a number: its values as floats
	 * (complex()'s arguments). */
	unsigned n_nums;
	double nums[2];
	/* The same for ints, as magnitude mod 2**61 - 1 and sign (Fraction()'s
	 * arguments). A tuple of one str keeps it in str (Decimal()'s). */
	unsigned n_ints;
	uint64_t imod[2];
	bool ineg[2];
	/* K_GLOBAL: builtins.complex, set or frozenset. */
	enum ctor ctor;
	/* As a key itself (not inside a tuple), it shares its hash with at most
	 * one other key of its sort, so count_key() need not count it: an int
	 * of magnitude below 2**61 - 1 hashes to itself (-1 and -2 share), and
	 * the real hash of a str or bytes is keyed per process (the stand-in
	 * above would not see its collisions anyway). The common keys of large
	 * replies, counted, cost a cache miss each in the table. */
	bool lone_key;
};

/* A container later opcodes can add to (APPEND, SETITEM, ADDITEMS, BUILD):
 * shared by its copies on the stack and in the memo, so a GET of it sees
 * what was added since. */
struct obj {
	size_t depth;
	size_t on_stack; /* copies of it on the stack */
	/* Put into another container while no copy of it was on the stack: it
	 * was complete. The container it went into counted its depth then, so
	 * it may not grow any more (CPython's pickler never adds to a container
	 * after it used it: growing it would hide how deep the data nests). A
	 * reference to a container still on the stack (a cycle: a list holding
	 * itself) does not count. */
	bool placed;
	/* A uuid.UUID made by NEWOBJ: its hash is its int's, which BUILD sets
	 * (hash_kind, hash). For a dict: those of its "int" entry (a UUID's
	 * state). */
	enum ctor ctor;
	enum hash_kind hash_kind;
	uint64_t hash;
};

struct scan {
	const unsigned char *p, *end, *start;
	enum sb_result_channel channel;
	const struct sb_prescan_limits *lim;
	struct item *stack;
	size_t n_stack, cap_stack;
	struct item *memo;
	bool *memo_set;
	struct obj *objs;
	size_t n_objs, cap_objs;
	/* (container, hash) -> keys inserted, open addressing. */
	struct hash_count *counts;
	size_t n_counts, cap_counts;
	size_t n_frozensets; /* ids of frozensets, counted down from UINT32_MAX */
	size_t cap_memo;
	size_t memo_count; /* distinct indices stored: where MEMOIZE stores */
	size_t marks;
	char *err;
	size_t errlen;
	char *global; /* the global data-only refused, for learning; NULL: not wanted */
	size_t globallen;
	unsigned char op;
	size_t op_offset;
	/* The end of the FRAME being read; NULL outside a frame. CPython's
	 * unpickler (reading a file) loads a frame into a buffer; an argument
	 * that continues past the frame's end is read from the file with the
	 * unread rest of the buffer dropped, so it would run bytes this scan
	 * reads as data. CPython's pickler ends frames between opcodes and opens
	 * one only after the last ends: anything else is refused. */
	const unsigned char *frame_end;
};

static int refuse(struct scan *s, const char *fmt, ...) _printf_(2, 3);
static int refuse(struct scan *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(s->err, s->errlen, "opcode 0x%02x at byte %zu: ", s->op, s->op_offset);
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < s->errlen)
		vsnprintf(s->err + n, s->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EPERM;
}

/* CPython's numeric hash (Python/pyhash.c, Objects/longobject.c,
 * floatobject.c, complexobject.c, tupleobject.c, setobject.c), 64-bit. The
 * worker can choose ints of one hash value (k * (2**61 - 1)), floats,
 * complex numbers and tuples of them: a dict or set of 40,000 such keys
 * takes quadratic time to build, with the GIL held. */
#define HASH_BITS    61
#define HASH_MODULUS ((UINT64_C(1) << HASH_BITS) - 1)
#define HASH_INF     UINT64_C(314159)
#define HASH_IMAG    UINT64_C(1000003)
#define NONE_HASH    UINT64_C(0x5bd1e9955bd1e995) /* per process in CPython: any constant */

static uint64_t hash_fix(uint64_t h)
{
	return h == (uint64_t)-1 ? (uint64_t)-2 : h;
}

/* value = sign * magnitude, magnitude given mod HASH_MODULUS. */
static uint64_t hash_signed(uint64_t mag_mod, bool negative)
{
	return hash_fix(negative ? (uint64_t)0 - mag_mod : mag_mod);
}

/* r * 256 + b mod HASH_MODULUS, r < HASH_MODULUS: multiplying by 2**8 is a
 * rotation of the 61 bits. */
static uint64_t mod_shift_add(uint64_t r, uint64_t b)
{
	r = ((r << 8) & HASH_MODULUS) | r >> (HASH_BITS - 8);
	r += b;
	return r >= HASH_MODULUS ? r - HASH_MODULUS : r;
}

/* A little-endian two's complement integer of n bytes (LONG1, LONG4): its
 * magnitude mod HASH_MODULUS, and its sign. */
static uint64_t long_mod(const unsigned char *p, size_t n, bool *ret_negative)
{
	bool negative = n > 0 && (p[n - 1] & 0x80);
	uint64_t r = 0, pow256 = 1;

	/* magnitude = value for >= 0; 2**(8n) - unsigned value for < 0. */
	for (size_t i = n; i-- > 0;)
		r = mod_shift_add(r, p[i]);
	if (negative) {
		for (size_t i = 0; i < n; i++)
			pow256 = mod_shift_add(pow256, 0);
		r = pow256 >= r ? pow256 - r : pow256 + HASH_MODULUS - r;
		r = r >= HASH_MODULUS ? r - HASH_MODULUS : r;
	}
	*ret_negative = negative;
	return r;
}

static uint64_t mulmod(uint64_t a, uint64_t b)
{
	return (uint64_t)((unsigned __int128)a * b % HASH_MODULUS);
}

static uint64_t powmod(uint64_t b, uint64_t e)
{
	uint64_t r = 1;

	for (b %= HASH_MODULUS; e; e >>= 1, b = mulmod(b, b))
		if (e & 1)
			r = mulmod(r, b);
	return r;
}

/* fractions.Fraction.__hash__ of n/d (before reduction: the residue of n/d
 * is the same unless both are multiples of the modulus, and then this says
 * infinity for all of them, which only counts more keys as colliding). */
static uint64_t hash_ratio(uint64_t n, bool n_negative, uint64_t d, bool d_negative)
{
	uint64_t h = d == 0 ? HASH_INF : mulmod(n, powmod(d, HASH_MODULUS - 2));

	return hash_signed(h, n != 0 && n_negative != d_negative);
}

/* decimal.Decimal.__hash__ of the text str(Decimal) writes: [-]digits[.digits]
 * [E[+-]digits], Infinity, NaN, sNaN. false when it is some other text (the
 * constructor also takes spaces, underscores, other digits...). */
static bool hash_decimal(const char *t, size_t n, enum hash_kind *ret_kind, uint64_t *ret)
{
	const char *end = t + n;
	bool negative = false, digits = false;
	uint64_t coef = 0;
	int64_t exp = 0, e = 0;

	if (t < end && (*t == '-' || *t == '+'))
		negative = *t++ == '-';
	if ((size_t)(end - t) == 8 && strncasecmp(t, "Infinity", 8) == 0) {
		*ret_kind = H_KNOWN;
		*ret = hash_signed(HASH_INF, negative);
		return true;
	}
	if (((size_t)(end - t) >= 3 && strncasecmp(t, "NaN", 3) == 0) ||
	    ((size_t)(end - t) >= 4 && strncasecmp(t, "sNaN", 4) == 0)) {
		/* Hashed by identity; a signaling NaN cannot be hashed. */
		*ret_kind = H_UNIQUE;
		return true;
	}
	for (; t < end && *t >= '0' && *t <= '9'; t++, digits = true)
		coef = mulmod(coef, 10) + (uint64_t)(*t - '0');
	if (t < end && *t == '.')
		for (t++; t < end && *t >= '0' && *t <= '9'; t++, digits = true, exp--)
			coef = mulmod(coef, 10) + (uint64_t)(*t - '0');
	if (!digits)
		return false;
	if (t < end && (*t == 'e' || *t == 'E')) {
		bool e_negative = false, e_digits = false;

		if (++t < end && (*t == '-' || *t == '+'))
			e_negative = *t++ == '-';
		for (; t < end && *t >= '0' && *t <= '9'; t++, e_digits = true) {
			if (e > INT64_MAX / 20)
				return false;
			e = e * 10 + (*t - '0');
		}
		if (!e_digits)
			return false;
		exp += e_negative ? -e : e;
	}
	if (t != end)
		return false;
	coef %= HASH_MODULUS;
	/* 10 ** exp, for a negative exp the inverse of 10 to its power. */
	coef = mulmod(coef, exp >= 0 ? powmod(10, (uint64_t)exp % (HASH_MODULUS - 1))
				     : powmod(powmod(10, HASH_MODULUS - 2),
					      (uint64_t)(-exp) % (HASH_MODULUS - 1)));
	*ret_kind = H_KNOWN;
	*ret = hash_signed(coef, negative);
	return true;
}

/* _Py_HashDouble; false for NaN (hashed by identity). */
static bool hash_double(double v, uint64_t *ret)
{
	uint64_t x = 0, y;
	int e, sign = 1;
	double m;

	if (isinf(v)) {
		*ret = v > 0 ? HASH_INF : (uint64_t)0 - HASH_INF;
		return true;
	}
	if (isnan(v))
		return false;
	m = frexp(v, &e);
	if (m < 0) {
		sign = -1;
		m = -m;
	}
	while (m) {
		x = ((x << 28) & HASH_MODULUS) | x >> (HASH_BITS - 28);
		m *= 268435456.0;
		e -= 28;
		y = (uint64_t)m;
		m -= (double)y;
		x += y;
		if (x >= HASH_MODULUS)
			x -= HASH_MODULUS;
	}
	e = e >= 0 ? e % HASH_BITS : HASH_BITS - 1 - ((-1 - e) % HASH_BITS);
	x = ((x << e) & HASH_MODULUS) | x >> (HASH_BITS - e);
	*ret = hash_fix(sign < 0 ? (uint64_t)0 - x : x);
	return true;
}

static uint64_t hash_bytes(const void *p, size_t n)
{
	/* FNV-1a: str and bytes hash with a per-process key the worker does
	 * not know; equal contents still share it. */
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * UINT64_C(0x100000001b3);
	return hash_fix(h);
}

#define XXPRIME_1 UINT64_C(11400714785074694791)
#define XXPRIME_2 UINT64_C(14029467366897019727)
#define XXPRIME_5 UINT64_C(2870177450012600261)

/* An item's hash: a UUID's is its object's, set by BUILD. */
static void key_hash(const struct scan *s, const struct item *it, enum hash_kind *ret_kind,
		     uint64_t *ret)
{
	const struct obj *o = s && it->obj ? &s->objs[it->obj - 1] : NULL;

	*ret_kind = o && o->ctor == C_UUID ? o->hash_kind : it->hash_kind;
	*ret = o && o->ctor == C_UUID ? o->hash : it->hash;
}

/* The hash of a tuple, frozenset (frozen) of items, or why there is none. */
static enum hash_kind hash_items(const struct scan *s, const struct item *items, size_t n,
				 bool frozen, uint64_t *ret)
{
	enum hash_kind k = H_KNOWN;
	uint64_t acc = frozen ? 0 : XXPRIME_5;

	for (size_t i = 0; i < n; i++) {
		struct item eff = items[i];
		const struct item *it = &eff;

		key_hash(s, &items[i], &eff.hash_kind, &eff.hash);

		if (it->hash_kind == H_OPAQUE)
			return H_OPAQUE;
		if (it->hash_kind == H_UNIQUE)
			k = k == H_KNOWN ? H_UNIQUE : k;
		else if (it->hash_kind == H_SUSPECT)
			k = H_SUSPECT;
		if (frozen) {
			acc ^= ((it->hash ^ UINT64_C(89869747)) ^ (it->hash << 16)) *
			       UINT64_C(3644798167);
		} else {
			acc += it->hash * XXPRIME_2;
			acc = (acc << 31) | (acc >> 33);
			acc *= XXPRIME_1;
		}
	}
	if (frozen) {
		acc ^= ((uint64_t)n + 1) * UINT64_C(1927868237);
		acc ^= (acc >> 11) ^ (acc >> 25);
		acc = acc * 69069U + UINT64_C(907133923);
		*ret = acc == (uint64_t)-1 ? UINT64_C(590923713) : acc;
	} else {
		acc += n ^ (XXPRIME_5 ^ UINT64_C(3527539));
		*ret = acc == (uint64_t)-1 ? UINT64_C(1546275796) : acc;
	}
	return k;
}

struct hash_count {
	uint64_t hash;
	uint32_t container; /* 0: empty */
	uint32_t count;
};

/* Where (hash, container) starts in a table of cap (a power of two)
 * entries: the high bits of a multiplicative hash. */
static uint64_t count_slot(uint64_t hash, size_t container, size_t cap)
{
	/* splitmix64's finalizer: keys differing in any bit spread. */
	uint64_t x = hash ^ (uint64_t)container * XXPRIME_1;

	x = (x ^ x >> 30) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ x >> 27) * UINT64_C(0x94d049bb133111eb);
	return (x ^ x >> 31) & (cap - 1);
}

/* One more key of hash h in container: more than max_same_hash keys of one
 * hash value in one dict or set is refused (CPython's pickler never writes
 * a key twice, so these are distinct keys, compared with each other).
 * *shared (optional) is set when the key's hash was already there. */
static int count_key(struct scan *s, size_t container, const struct item *key, bool *shared)
{
	enum hash_kind kind;
	uint64_t h, slot;

	if (key->lone_key)
		return 0;
	key_hash(s, key, &kind, &h);
	if (kind == H_OPAQUE || kind == H_UNIQUE)
		return 0;
	/* Numbers the scan cannot hash are counted as if they shared one. */
	if (kind == H_SUSPECT)
		h = UINT64_C(0x5555555555555555);
	if (2 * (s->n_counts + 1) > s->cap_counts) {
		size_t cap = s->cap_counts ? s->cap_counts * 2 : 1024;
		struct hash_count *n = calloc(cap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap_counts; i++) {
			struct hash_count *c = &s->counts[i];

			if (!c->container)
				continue;
			slot = count_slot(c->hash, c->container, cap);
			while (n[slot].container)
				slot = (slot + 1) & (cap - 1);
			n[slot] = *c;
		}
		free(s->counts);
		s->counts = n;
		s->cap_counts = cap;
	}
	slot = count_slot(h, container, s->cap_counts);
	while (s->counts[slot].container &&
	       (s->counts[slot].container != container || s->counts[slot].hash != h))
		slot = (slot + 1) & (s->cap_counts - 1);
	if (!s->counts[slot].container) {
		s->counts[slot] = (struct hash_count){h, (uint32_t)container, 0};
		s->n_counts++;
	}
	if (shared && s->counts[slot].count > 0)
		*shared = true;
	if (++s->counts[slot].count > s->lim->max_same_hash)
		return refuse(
		    s,
		    "more than %zu keys of one dict or set share one hash value (building "
		    "it would take quadratic time in the caller)",
		    s->lim->max_same_hash);
	return 0;
}

/* The keys of items[0..n) (every other one from the first for a dict) go
 * into container. */
static int count_keys(struct scan *s, size_t container, const struct item *items, size_t n,
		      size_t stride, bool *shared)
{
	int r;

	for (size_t i = 0; i < n; i += stride)
		if ((r = count_key(s, container, &items[i], shared)) < 0)
			return r;
	return 0;
}

/* A dict's "int" entry, the state of a UUID: its hash, kept on the dict. */
static void note_entries(struct scan *s, size_t dict, const struct item *items, size_t n)
{
	for (size_t i = 0; dict && i + 1 < n; i += 2)
		if (items[i].kind == K_STR && items[i].str_len == 3 &&
		    memcmp(items[i].str, "int", 3) == 0) {
			s->objs[dict - 1].hash_kind =
			    items[i + 1].n_ints == 1 ? H_KNOWN : H_SUSPECT;
			s->objs[dict - 1].hash =
			    hash_signed(items[i + 1].imod[0], items[i + 1].ineg[0]);
		}
}

/* Where the last MARK is (the items above it start one higher). */
static size_t mark_index(const struct scan *s)
{
	size_t i = s->n_stack;

	while (i > 0 && s->stack[i - 1].kind != K_MARK)
		i--;
	return i; /* 0: no mark (pop_mark refuses) */
}

static int push_item(struct scan *s, struct item it)
{
	if (s->n_stack == s->cap_stack) {
		size_t cap = s->cap_stack ? s->cap_stack * 2 : 64;
		struct item *n;

		if (s->n_stack >= s->lim->max_stack)
			return refuse(s, "stack deeper than %zu", s->lim->max_stack);
		n = realloc(s->stack, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->stack = n;
		s->cap_stack = cap;
	}
	s->stack[s->n_stack++] = it;
	if (it.obj)
		s->objs[it.obj - 1].on_stack++;
	if (it.kind == K_MARK && ++s->marks > s->lim->max_marks)
		return refuse(s, "MARK nesting deeper than %zu", s->lim->max_marks);
	return 0;
}

/* The hash of the tuple CPython hashes for an ipaddress value, from ints
 * given mod the modulus. */
static uint64_t hash_int_tuple(const uint64_t *mods, const bool *none, size_t n)
{
	struct item items[3] = {{0}};
	uint64_t h = 0;

	for (size_t i = 0; i < n; i++) {
		items[i].hash_kind = H_KNOWN;
		items[i].hash = none[i] ? NONE_HASH : hash_signed(mods[i], false);
	}
	hash_items(NULL, items, n, false, &h);
	return h;
}

static uint64_t mod128(unsigned __int128 v)
{
	return (uint64_t)(v % HASH_MODULUS);
}

/* Decimal digits, no sign, no leading zero, at most max. */
static bool parse_small(const char *t, size_t n, unsigned max, unsigned *ret)
{
	unsigned v = 0;

	if (n == 0 || n > 3 || (n > 1 && t[0] == '0'))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (t[i] < '0' || t[i] > '9')
			return false;
		v = v * 10 + (unsigned)(t[i] - '0');
	}
	*ret = v;
	return v <= max;
}

/* a.b.c.d as str() writes it. */
static bool parse_ipv4(const char *t, size_t n, unsigned __int128 *ret)
{
	uint32_t v = 0;

	for (int part = 0; part < 4; part++) {
		const char *dot = part < 3 ? memchr(t, '.', n) : t + n;
		unsigned b;

		if (!dot || !parse_small(t, (size_t)(dot - t), 255, &b))
			return false;
		v = v << 8 | b;
		if (part < 3) {
			n -= (size_t)(dot - t) + 1;
			t = dot + 1;
		}
	}
	*ret = v;
	return true;
}

/* Hex groups with at most one "::", as str() writes it (no scope, no
 * dotted tail). */
static bool parse_ipv6(const char *t, size_t n, unsigned __int128 *ret)
{
	unsigned head[8], tail[8];
	int n_head = 0, n_tail = 0;
	unsigned __int128 v = 0;
	bool gap = false;
	size_t i = 0;

	if (n >= 2 && t[0] == ':' && t[1] == ':') {
		gap = true;
		i = 2;
	}
	while (i < n) {
		unsigned g = 0, digits = 0;

		for (; i < n && isxdigit((unsigned char)t[i]); i++) {
			if (++digits > 4)
				return false;
			g = g * 16 + (unsigned)(isdigit((unsigned char)t[i])
						    ? t[i] - '0'
						    : tolower((unsigned char)t[i]) - 'a' + 10);
		}
		if (digits == 0 || n_head + n_tail >= 8)
			return false;
		if (gap)
			tail[n_tail++] = g;
		else
			head[n_head++] = g;
		if (i == n)
			break;
		if (t[i++] != ':' || i == n)
			return false;
		if (t[i] == ':') {
			if (gap)
				return false;
			gap = true;
			i++;
		}
	}
	if (gap ? n_head + n_tail > 7 : n_head != 8)
		return false;
	for (int k = 0; k < n_head; k++)
		v = v << 16 | head[k];
	for (int k = n_head + n_tail; k < 8; k++)
		v <<= 16;
	for (int k = 0; k < n_tail; k++)
		v = v << 16 | tail[k];
	*ret = v;
	return true;
}

/* The hash of ipaddress.IPv4Network("a.b.c.d/p") and the like, from the
 * text their pickling writes: hash(int(network) ^ int(netmask)) for a
 * network, hash((ip, prefixlen, int(network))) for an interface. */
static bool hash_ip(enum ctor ctor, const char *t, size_t n, uint64_t *ret)
{
	bool v6 = ctor == C_IPV6_NETWORK || ctor == C_IPV6_INTERFACE;
	unsigned bits = v6 ? 128 : 32, prefix;
	const char *slash = memchr(t, '/', n);
	unsigned __int128 ip, mask;

	if (!slash || !parse_small(slash + 1, (size_t)(t + n - slash - 1), bits, &prefix) ||
	    !(v6 ? parse_ipv6(t, (size_t)(slash - t), &ip)
		 : parse_ipv4(t, (size_t)(slash - t), &ip)))
		return false;
	mask = prefix == 0 ? 0 : (~(unsigned __int128)0 << (128 - prefix)) >> (128 - bits);
	if (ctor == C_IPV4_NETWORK || ctor == C_IPV6_NETWORK) {
		*ret = hash_signed(mod128((ip & mask) ^ mask), false);
	} else {
		uint64_t mods[3] = {mod128(ip), prefix, mod128(ip & mask)};
		bool none[3] = {false, false, false};

		*ret = hash_int_tuple(mods, none, 3);
	}
	return true;
}

/* An int: its magnitude mod 2**61 - 1, its sign, and as a float when it
 * fits in 64 bits. */
static int push_int(struct scan *s, uint64_t mod, bool negative, bool fits, double num, bool small)
{
	return push_item(s, (struct item){.kind = K_VALUE,
					  .lone_key = small,
					  .hash_kind = H_KNOWN,
					  .hash = hash_signed(mod, negative),
					  .n_nums = fits,
					  .nums = {num, 0},
					  .n_ints = 1,
					  .imod = {mod, 0},
					  .ineg = {negative, false}});
}

static int push_hashed(struct scan *s, enum hash_kind k, uint64_t h, unsigned n_nums, double num)
{
	return push_item(
	    s, (struct item){
		   .kind = K_VALUE, .hash_kind = k, .hash = h, .n_nums = n_nums, .nums = {num, 0}});
}

/* A scalar, a mark or a global. */
static int push(struct scan *s, enum kind k, const char *str, size_t len)
{
	return push_item(s, (struct item){.kind = k, .str = str, .str_len = len});
}

static size_t depth_of(const struct scan *s, const struct item *it)
{
	return it->obj ? s->objs[it->obj - 1].depth : it->depth;
}

static int too_deep(struct scan *s, size_t depth)
{
	if (depth > s->lim->max_depth)
		return refuse(s,
			      "containers nested deeper than %zu levels (the caller would "
			      "recurse that deep to hash or compare them)",
			      s->lim->max_depth);
	return 0;
}

/* A container it.depth deep: a tuple or frozenset (never changes), or with
 * mutable set a new object. */
static int push_container(struct scan *s, struct item it, bool mutable)
{
	int r = too_deep(s, it.depth);

	if (r < 0)
		return r;
	if (mutable) {
		if (s->n_objs == s->cap_objs) {
			size_t cap = s->cap_objs ? s->cap_objs * 2 : 64;
			struct obj *n = realloc(s->objs, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			s->objs = n;
			s->cap_objs = cap;
		}
		s->objs[s->n_objs++] = (struct obj){.depth = it.depth};
		it.obj = s->n_objs;
	}
	return push_item(s, it);
}

/* child, just taken off the stack, goes into a container: the depth the
 * container gets from it. */
static size_t place(struct scan *s, const struct item *child)
{
	if (child->obj && s->objs[child->obj - 1].on_stack == 0)
		s->objs[child->obj - 1].placed = true;
	return depth_of(s, child) + 1;
}

/* The mutable container at the top of the stack gets an item of depth
 * child (from place()). */
static int grow(struct scan *s, size_t child)
{
	struct obj *o;
	int r;

	if (s->n_stack == 0 || s->stack[s->n_stack - 1].kind == K_MARK)
		return refuse(s, "items added to nothing");
	if (!s->stack[s->n_stack - 1].obj)
		return refuse(s, "items added to something that is not a list, dict, set or "
				 "object");
	o = &s->objs[s->stack[s->n_stack - 1].obj - 1];
	if (child <= o->depth)
		return 0;
	if (o->placed)
		return refuse(s, "items added to a container already put into another (CPython's "
				 "pickler never does that; it would hide how deep the data nests)");
	if ((r = too_deep(s, child)) < 0)
		return r;
	o->depth = child;
	return 0;
}

/* The item below the last mark, or a refusal for an empty stack. */
static int pop(struct scan *s, struct item *ret)
{
	if (s->n_stack == 0 || s->stack[s->n_stack - 1].kind == K_MARK)
		return refuse(s, "stack underflow");
	*ret = s->stack[--s->n_stack];
	if (ret->obj)
		s->objs[ret->obj - 1].on_stack--;
	return 0;
}

/* An item used as data: in data-only mode a class must never be a value.
 * *ret_depth (optional): the depth a container gets from it (place()). */
static int pop_value(struct scan *s, size_t *ret_depth)
{
	struct item it = {0};
	int r = pop(s, &it);

	if (r < 0)
		return r;
	if (it.kind == K_GLOBAL && s->channel == SB_CHANNEL_DATA_ONLY)
		return refuse(s,
			      "a class used as a value (refused by remote-result-mode=data-only)");
	if (it.kind == K_CONSTRUCTOR)
		return refuse(s, "a class whose calls are checked used as a value");
	if (ret_depth) {
		size_t d = place(s, &it);

		*ret_depth = d > *ret_depth ? d : *ret_depth;
	}
	return 0;
}

/* The items down to the last MARK, and the mark. *ret_depth (NULL: the
 * items are dropped, POP_MARK): the depth a container gets from them. */
static int pop_mark(struct scan *s, size_t *ret_depth)
{
	int r;

	while (s->n_stack > 0 && s->stack[s->n_stack - 1].kind != K_MARK)
		if ((r = pop_value(s, ret_depth)) < 0)
			return r;
	if (s->n_stack == 0)
		return refuse(s, "no MARK on the stack");
	s->n_stack--;
	s->marks--;
	return 0;
}

static int need(struct scan *s, size_t n)
{
	if ((size_t)(s->end - s->p) < n)
		return refuse(s, "truncated argument");
	return 0;
}

static uint64_t le(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* A newline-terminated argument (protocol 0). */
static int line(struct scan *s, const char **ret, size_t *ret_len)
{
	const unsigned char *nl = memchr(s->p, '\n', (size_t)(s->end - s->p));

	if (!nl)
		return refuse(s, "unterminated line argument");
	*ret = (const char *)s->p;
	*ret_len = (size_t)(nl - s->p);
	s->p = nl + 1;
	return 0;
}

/* A length-prefixed argument of lenbytes, skipped. */
static int counted(struct scan *s, size_t lenbytes, const char **ret, size_t *ret_len)
{
	uint64_t n;
	int r = need(s, lenbytes);

	if (r < 0)
		return r;
	n = le(s->p, lenbytes);
	s->p += lenbytes;
	if (n > (uint64_t)(s->end - s->p))
		return refuse(s, "length %llu past the end of the stream", (unsigned long long)n);
	*ret = (const char *)s->p;
	*ret_len = (size_t)n;
	s->p += n;
	return 0;
}

static int memo_put(struct scan *s, uint64_t idx)
{
	if (s->n_stack == 0 || s->stack[s->n_stack - 1].kind == K_MARK)
		return refuse(s, "memo store with an empty stack");
	if (idx >= s->lim->max_memo)
		return refuse(s, "memo index %llu over the budget of %zu entries",
			      (unsigned long long)idx, s->lim->max_memo);
	if (idx >= s->cap_memo) {
		size_t cap = s->cap_memo ? s->cap_memo : 64;
		struct item *m;
		bool *set;

		while (cap <= idx)
			cap *= 2;
		m = realloc(s->memo, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		s->memo = m;
		set = realloc(s->memo_set, cap * sizeof(*set));
		if (!set)
			return -ENOMEM;
		memset(set + s->cap_memo, 0, (cap - s->cap_memo) * sizeof(*set));
		s->memo_set = set;
		s->cap_memo = cap;
	}
	s->memo[idx] = s->stack[s->n_stack - 1];
	if (!s->memo_set[idx])
		s->memo_count++;
	s->memo_set[idx] = true;
	return 0;
}

static int memo_get(struct scan *s, uint64_t idx)
{
	if (idx >= s->cap_memo || !s->memo_set[idx])
		return refuse(s, "memo index %llu was never stored", (unsigned long long)idx);
	return push_item(s, s->memo[idx]);
}

static int parse_index(struct scan *s, uint64_t *ret)
{
	const char *txt = NULL;
	size_t len = 0;
	uint64_t v = 0;
	int r = line(s, &txt, &len);

	if (r < 0)
		return r;
	if (len == 0 || len > 10)
		return refuse(s, "bad memo index");
	for (size_t i = 0; i < len; i++) {
		if (txt[i] < '0' || txt[i] > '9')
			return refuse(s, "bad memo index");
		v = v * 10 + (uint64_t)(txt[i] - '0');
	}
	*ret = v;
	return 0;
}

/* The classes whose instances the collision check hashes. */
static enum ctor ctor_of(const char *m, const char *n)
{
	static const struct {
		const char *module, *name;
		enum ctor ctor;
	} table[] = {
	    {"builtins", "complex", C_COMPLEX},
	    {"builtins", "set", C_SET},
	    {"builtins", "frozenset", C_SET},
	    {"fractions", "Fraction", C_FRACTION},
	    {"decimal", "Decimal", C_DECIMAL},
	    {"uuid", "UUID", C_UUID},
	    {"ipaddress", "IPv6Address", C_IPV6_ADDRESS},
	    {"ipaddress", "IPv4Network", C_IPV4_NETWORK},
	    {"ipaddress", "IPv4Interface", C_IPV4_INTERFACE},
	    {"ipaddress", "IPv6Network", C_IPV6_NETWORK},
	    {"ipaddress", "IPv6Interface", C_IPV6_INTERFACE},
	};

	for (size_t i = 0; i < ELEMENTSOF(table); i++)
		if (streq(m, table[i].module) && streq(n, table[i].name))
			return table[i].ctor;
	return C_OTHER;
}

static int stack_global(struct scan *s)
{
	struct item name = {0}, module = {0};
	char m[256], n[256];
	int r;

	if ((r = pop(s, &name)) < 0 || (r = pop(s, &module)) < 0)
		return r;
	if (name.kind != K_STR || module.kind != K_STR)
		return refuse(s, "STACK_GLOBAL whose module and name are not plain strings");
	if (module.str_len >= sizeof(m) || name.str_len >= sizeof(n) ||
	    memchr(module.str, '\0', module.str_len) || memchr(name.str, '\0', name.str_len))
		return refuse(s, "STACK_GLOBAL with an unusable name");
	memcpy(m, module.str, module.str_len);
	m[module.str_len] = '\0';
	memcpy(n, name.str, name.str_len);
	n[name.str_len] = '\0';
	switch (s->channel) {
	case SB_CHANNEL_DATA_ONLY:
		if (!sb_result_data_type(m, n)) {
			if (s->global && s->globallen)
				snprintf(s->global, s->globallen, "%s.%s", m, n);
			return refuse(s,
				      "global '%s.%s' is not a value type of "
				      "remote-result-mode=data-only",
				      m, n);
		}
		break;
	case SB_CHANNEL_EXCEPTION:
		if (sb_result_denied_global(m, n))
			return refuse(s, "global '%s.%s' is in the result guard's denylist", m, n);
		if (sb_result_checked_constructor(m, n))
			return push_item(
			    s, (struct item){.kind = K_CONSTRUCTOR, .ctor = ctor_of(m, n)});
		break;
	case SB_CHANNEL_OBJECTS:
		if (sb_result_denied_global(m, n))
			return refuse(s, "global '%s.%s' is in the result guard's denylist", m, n);
		break;
	case SB_CHANNEL_OBJECTS_NOGUARD:
		break;
	}
	return push_item(s, (struct item){.kind = K_GLOBAL, .ctor = ctor_of(m, n)});
}

/* A tuple of n items, as the arguments of complex(), Fraction() or
 * Decimal(). */
static void tuple_args(struct item *t, const struct item *items, size_t n)
{
	if (n == 0 || n > 2)
		return;
	if (items[0].n_nums == 1 && items[n - 1].n_nums == 1) {
		t->n_nums = (unsigned)n;
		t->nums[0] = items[0].nums[0];
		t->nums[1] = items[n - 1].nums[0];
	}
	if (items[0].n_ints == 1 && items[n - 1].n_ints == 1) {
		t->n_ints = (unsigned)n;
		t->imod[0] = items[0].imod[0];
		t->ineg[0] = items[0].ineg[0];
		t->imod[1] = items[n - 1].imod[0];
		t->ineg[1] = items[n - 1].ineg[0];
	}
	if (n == 1 && items[0].kind == K_STR) {
		t->str = items[0].str;
		t->str_len = items[0].str_len;
	}
}

/* REDUCE, NEWOBJ, NEWOBJ_EX: the callable must be a global the channel
 * admitted, never an object a previous call produced (that is how gadget
 * chains compose). */
static int build_call(struct scan *s, size_t n_args, enum kind result)
{
	struct item callable = {0}, args = {0}, made = {.kind = result, .depth = 1};
	uint64_t re, im;
	int r;

	if (s->n_stack > 0)
		args = s->stack[s->n_stack - 1];
	for (size_t i = 0; i < n_args; i++)
		if ((r = pop_value(s, &made.depth)) < 0)
			return r;
	if ((r = pop(s, &callable)) < 0)
		return r;
	if (callable.kind != K_GLOBAL && callable.kind != K_CONSTRUCTOR)
		return refuse(s, "a call whose callable is not a global");
	/* set(list) and frozenset(list) insert keys the scan does not see;
	 * CPython's pickler writes sets with EMPTY_SET/ADDITEMS and FROZENSET
	 * (protocol 4 and 5, the only ones with STACK_GLOBAL). */
	if (callable.ctor == C_SET &&
	    (s->channel == SB_CHANNEL_DATA_ONLY || s->channel == SB_CHANNEL_EXCEPTION))
		return refuse(
		    s, "a set made by calling builtins.set or frozenset (pickle writes "
		       "sets with EMPTY_SET/ADDITEMS and FROZENSET, whose keys are checked)");
	if (callable.ctor == C_COMPLEX) {
		made.hash_kind = H_SUSPECT;
		if (n_args == 1 && args.kind == K_VALUE && args.n_nums > 0 &&
		    args.hash_kind != H_OPAQUE) {
			if (!hash_double(args.nums[0], &re) ||
			    !hash_double(args.n_nums > 1 ? args.nums[1] : 0.0, &im))
				made.hash_kind = H_UNIQUE;
			else {
				made.hash_kind = H_KNOWN;
				made.hash = hash_fix(re + HASH_IMAG * im);
			}
		}
	}
	/* Fraction and Decimal hash as the rational they are: n * (2**61 - 1)
	 * collide as ints do, and are compared in Python. */
	if (callable.ctor == C_FRACTION) {
		made.hash_kind = H_SUSPECT;
		if (n_args == 1 && args.kind == K_VALUE && args.n_ints == 1) {
			made.hash_kind = H_KNOWN;
			made.hash = hash_signed(args.imod[0], args.ineg[0]);
		} else if (n_args == 1 && args.kind == K_VALUE && args.n_ints == 2) {
			made.hash_kind = H_KNOWN;
			made.hash =
			    hash_ratio(args.imod[0], args.ineg[0], args.imod[1], args.ineg[1]);
		}
	}
	if (callable.ctor == C_DECIMAL &&
	    !(n_args == 1 && args.kind == K_VALUE && args.str &&
	      hash_decimal(args.str, args.str_len, &made.hash_kind, &made.hash)))
		made.hash_kind = H_SUSPECT;
	/* hash((ip, scope_id)), the scope None: what its pickling keeps. */
	if (callable.ctor == C_IPV6_ADDRESS) {
		made.hash_kind = H_SUSPECT;
		if (n_args == 1 && args.kind == K_VALUE && args.n_ints == 1 && !args.ineg[0]) {
			uint64_t mods[2] = {args.imod[0], 0};
			bool none[2] = {false, true};

			made.hash_kind = H_KNOWN;
			made.hash = hash_int_tuple(mods, none, 2);
		}
	}
	if (callable.ctor >= C_IPV4_NETWORK && callable.ctor <= C_IPV6_INTERFACE) {
		made.hash_kind = H_SUSPECT;
		if (n_args == 1 && args.kind == K_VALUE && args.str &&
		    hash_ip(callable.ctor, args.str, args.str_len, &made.hash))
			made.hash_kind = H_KNOWN;
	}
	/* What a call makes may hold its arguments: as deep, and more. */
	if ((r = push_container(s, made, true)) < 0)
		return r;
	/* A UUID gets its hash with its state (BUILD). */
	if (callable.ctor == C_UUID) {
		s->objs[s->n_objs - 1].ctor = C_UUID;
		s->objs[s->n_objs - 1].hash_kind = H_SUSPECT;
	}
	return 0;
}

static int step_op(struct scan *s)
{
	const char *arg = NULL;
	size_t arglen = 0, depth;
	uint64_t idx;
	int r;

	s->op_offset = (size_t)(s->p - s->start);
	s->op = *s->p++;
	switch (s->op) {
	case '(': /* MARK */
		return push(s, K_MARK, NULL, 0);
	case '.': /* STOP */
		return 1;
	case '0': /* POP */
		if (s->n_stack > 0 && s->stack[s->n_stack - 1].kind == K_MARK) {
			s->n_stack--;
			s->marks--;
			return 0;
		}
		return pop_value(s, NULL);
	case '1': /* POP_MARK */
		return pop_mark(s, NULL);
	case '2': /* DUP */
		if (s->n_stack == 0 || s->stack[s->n_stack - 1].kind == K_MARK)
			return refuse(s, "DUP of nothing");
		return push_item(s, s->stack[s->n_stack - 1]);
	case 'F': /* FLOAT */
	case 'I': /* INT */
	case 'L': /* LONG */
	case 'S': /* STRING */
	case 'V': /* UNICODE (raw-unicode-escape: the text is not known here) */
		/* Protocol 0 text, which the worker never writes: not hashed. */
		if ((r = line(s, &arg, &arglen)) < 0)
			return r;
		return push_hashed(s, H_SUSPECT, 0, 0, 0);
	case 'J': /* BININT */
	case 'M': /* BININT2 */
	case 'K': /* BININT1 */
		arglen = s->op == 'J' ? 4 : s->op == 'M' ? 2 : 1;
		if ((r = need(s, arglen)) < 0)
			return r;
		idx = le(s->p, arglen);
		s->p += arglen;
		{
			int64_t v = s->op == 'J' ? (int64_t)(int32_t)(uint32_t)idx : (int64_t)idx;
			uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

			/* |v| < 2**31: already below the modulus. */
			return push_int(s, mag, v < 0, true, (double)v, true);
		}
	case 'G': /* BINFLOAT (big-endian) */
		if ((r = need(s, 8)) < 0)
			return r;
		{
			uint64_t bits = 0, h = 0;
			enum hash_kind k;
			double v;

			for (int i = 0; i < 8; i++)
				bits = bits << 8 | s->p[i];
			s->p += 8;
			memcpy(&v, &bits, sizeof(v));
			k = hash_double(v, &h) ? H_KNOWN : H_UNIQUE;
			return push_hashed(s, k, h, 1, v);
		}
	case 'N': /* NONE */
		return push_hashed(s, H_KNOWN, NONE_HASH, 0, 0);
	case 0x88: /* NEWTRUE */
	case 0x89: /* NEWFALSE */
		return push_int(s, s->op == 0x88, false, true, s->op == 0x88, true);
	case ')': /* EMPTY_TUPLE */
	{
		struct item t = {.kind = K_VALUE, .depth = 1};

		t.hash_kind = hash_items(s, NULL, 0, false, &t.hash);
		return push_container(s, t, false);
	}
	case '}':  /* EMPTY_DICT */
	case ']':  /* EMPTY_LIST */
	case 0x8f: /* EMPTY_SET */
		return push_container(s, (struct item){.kind = K_VALUE, .depth = 1}, true);
	case 'T':  /* BINSTRING */
	case 'B':  /* BINBYTES */
	case 'U':  /* SHORT_BINSTRING */
	case 'C':  /* SHORT_BINBYTES */
	case 0x8e: /* BINBYTES8 */
	case 0x96: /* BYTEARRAY8 */
	case 0x8a: /* LONG1 */
	case 0x8b: /* LONG4 */
		arglen = (s->op == 'U' || s->op == 'C' || s->op == 0x8a)   ? 1
			 : (s->op == 'T' || s->op == 'B' || s->op == 0x8b) ? 4
									   : 8;
		if ((r = counted(s, arglen, &arg, &arglen)) < 0)
			return r;
		if (s->op == 0x96)
			return push(s, K_VALUE, NULL, 0); /* bytearray: no hash */
		if (s->op == 0x8a || s->op == 0x8b) {
			int64_t v = 0;

			if (arglen > 0 && arglen <= 8) {
				uint64_t u = le((const unsigned char *)arg, arglen);

				if (arglen < 8 && (u >> (8 * arglen - 1)))
					u |= ~UINT64_C(0) << (8 * arglen);
				v = (int64_t)u;
			}
			bool negative = false;
			uint64_t mod = long_mod((const unsigned char *)arg, arglen, &negative);
			/* Below 2**61 - 1 in magnitude: INT64_MIN is not. */
			bool small = arglen <= 8 && v != INT64_MIN &&
				     (uint64_t)(v < 0 ? -v : v) < HASH_MODULUS;

			return push_int(s, mod, negative, arglen <= 8, (double)v, small);
		}
		return push_item(s, (struct item){.kind = K_VALUE,
						  .lone_key = true,
						  .hash_kind = H_KNOWN,
						  .hash = hash_bytes(arg, arglen)});
	case 'X':  /* BINUNICODE */
	case 0x8c: /* SHORT_BINUNICODE */
	case 0x8d: /* BINUNICODE8 */
		if ((r = counted(s, s->op == 'X' ? 4 : s->op == 0x8c ? 1 : 8, &arg, &arglen)) < 0)
			return r;
		return push_item(s, (struct item){.kind = K_STR,
						  .str = arg,
						  .str_len = arglen,
						  .lone_key = true,
						  .hash_kind = H_KNOWN,
						  .hash = hash_bytes(arg, arglen)});
	case 'a': /* APPEND */
		depth = 1;
		if ((r = pop_value(s, &depth)) < 0)
			return r;
		return grow(s, depth);
	case 'e':  /* APPENDS */
	case 'u':  /* SETITEMS */
	case 0x90: /* ADDITEMS */
		idx = mark_index(s);
		if (s->op != 'e' && idx >= 2 && s->stack[idx - 2].obj &&
		    (r = count_keys(s, s->stack[idx - 2].obj, s->stack + idx, s->n_stack - idx,
				    s->op == 'u' ? 2 : 1, NULL)) < 0)
			return r;
		if (s->op == 'u' && idx >= 2)
			note_entries(s, s->stack[idx - 2].obj, s->stack + idx, s->n_stack - idx);
		depth = 1;
		if ((r = pop_mark(s, &depth)) < 0)
			return r;
		return grow(s, depth);
	case 's': /* SETITEM */
		if (s->n_stack >= 3 && s->stack[s->n_stack - 3].obj &&
		    (r = count_key(s, s->stack[s->n_stack - 3].obj, &s->stack[s->n_stack - 2],
				   NULL)) < 0)
			return r;
		if (s->n_stack >= 3)
			note_entries(s, s->stack[s->n_stack - 3].obj, s->stack + s->n_stack - 2, 2);
		depth = 1;
		if ((r = pop_value(s, &depth)) < 0 || (r = pop_value(s, &depth)) < 0)
			return r;
		return grow(s, depth);
	case 'd':  /* DICT */
	case 'l':  /* LIST */
	case 't':  /* TUPLE */
	case 0x91: /* FROZENSET */
	{
		struct item c = {.kind = K_VALUE, .depth = 1};
		bool shared = false;
		size_t n;

		idx = mark_index(s);
		if (idx == 0) /* no mark: pop_mark() refuses the stream */
			return pop_mark(s, &c.depth);
		n = s->n_stack - idx;
		if (s->op == 'd')
			/* The object push_container() makes. */
			r = count_keys(s, s->n_objs + 1, s->stack + idx, n, 2, NULL);
		else if (s->op == 0x91)
			r = count_keys(s, UINT32_MAX - s->n_frozensets++, s->stack + idx, n, 1,
				       &shared);
		else
			r = 0;
		if (r < 0)
			return r;
		if (s->op == 't' || s->op == 0x91)
			c.hash_kind = hash_items(s, s->stack + idx, n, s->op == 0x91, &c.hash);
		/* Equal items are one element of a frozenset: its hash would be
		 * another. */
		if (shared && c.hash_kind == H_KNOWN)
			c.hash_kind = H_SUSPECT;
		if (s->op == 't')
			tuple_args(&c, s->stack + idx, n);
		if ((r = pop_mark(s, &c.depth)) < 0)
			return r;
		if ((r = push_container(s, c, s->op == 'd' || s->op == 'l')) < 0)
			return r;
		/* pop_mark() left the items where they were. */
		if (s->op == 'd')
			note_entries(s, s->n_objs, s->stack + idx, n);
		return 0;
	}
	case 0x85: /* TUPLE1 */
	case 0x86: /* TUPLE2 */
	case 0x87: /* TUPLE3 */
	{
		struct item c = {.kind = K_VALUE, .depth = 1};
		size_t n = (size_t)(s->op - 0x85) + 1;

		if (s->n_stack >= n) {
			const struct item *items = s->stack + s->n_stack - n;

			c.hash_kind = hash_items(s, items, n, false, &c.hash);
			tuple_args(&c, items, n);
		}
		for (size_t i = 0; i < n; i++)
			if ((r = pop_value(s, &c.depth)) < 0)
				return r;
		return push_container(s, c, false);
	}
	case 'g': /* GET */
		if ((r = parse_index(s, &idx)) < 0)
			return r;
		return memo_get(s, idx);
	case 'h': /* BINGET */
	case 'j': /* LONG_BINGET */
		arglen = s->op == 'h' ? 1 : 4;
		if ((r = need(s, arglen)) < 0)
			return r;
		idx = le(s->p, arglen);
		s->p += arglen;
		return memo_get(s, idx);
	case 'p': /* PUT */
		if ((r = parse_index(s, &idx)) < 0)
			return r;
		return memo_put(s, idx);
	case 'q': /* BINPUT */
	case 'r': /* LONG_BINPUT */
		arglen = s->op == 'q' ? 1 : 4;
		if ((r = need(s, arglen)) < 0)
			return r;
		idx = le(s->p, arglen);
		s->p += arglen;
		return memo_put(s, idx);
	case 0x94: /* MEMOIZE */
		/* The unpickler stores at len(memo). */
		return memo_put(s, s->memo_count);
	case 0x80: /* PROTO */
		if ((r = need(s, 1)) < 0)
			return r;
		if (*s->p > 5)
			return refuse(s, "unsupported pickle protocol %u", *s->p);
		s->p++;
		return 0;
	case 0x95: /* FRAME */
		if (s->frame_end)
			return refuse(s, "a FRAME before the end of the previous one");
		if ((r = need(s, 8)) < 0)
			return r;
		if (le(s->p, 8) > (uint64_t)(s->end - s->p - 8))
			return refuse(s, "FRAME longer than the stream");
		s->frame_end = s->p + 8 + le(s->p, 8);
		s->p += 8;
		return 0;
	case 0x93: /* STACK_GLOBAL */
		return stack_global(s);
	case 'R': /* REDUCE */
		return build_call(s, 1, K_OBJ);
	case 0x81: /* NEWOBJ */
		return build_call(s, 1, K_NEWOBJ);
	case 0x92: /* NEWOBJ_EX */
		return build_call(s, 2, K_NEWOBJ);
	case 'b': /* BUILD */
		depth = 1;
		if (s->n_stack >= 2 && s->stack[s->n_stack - 2].obj &&
		    s->objs[s->stack[s->n_stack - 2].obj - 1].ctor == C_UUID) {
			struct obj *u = &s->objs[s->stack[s->n_stack - 2].obj - 1];
			const struct item *state = &s->stack[s->n_stack - 1];

			u->hash_kind = state->obj && s->objs[state->obj - 1].hash_kind != H_OPAQUE
					   ? s->objs[state->obj - 1].hash_kind
					   : H_SUSPECT;
			u->hash = state->obj ? s->objs[state->obj - 1].hash : 0;
		}
		if ((r = pop_value(s, &depth)) < 0)
			return r;
		if (s->n_stack == 0)
			return refuse(s, "BUILD of nothing");
		if (s->channel == SB_CHANNEL_DATA_ONLY && s->stack[s->n_stack - 1].kind != K_NEWOBJ)
			return refuse(s, "BUILD on something NEWOBJ did not make (refused by "
					 "remote-result-mode=data-only)");
		if (s->stack[s->n_stack - 1].kind != K_NEWOBJ &&
		    s->stack[s->n_stack - 1].kind != K_OBJ)
			return refuse(s, "BUILD on plain data");
		/* The state goes into the object. */
		return grow(s, depth);
	case 'c':
		return refuse(s, "GLOBAL (protocol 0) is refused: names a global by text lines");
	case 'i':
		return refuse(s, "INST is refused");
	case 'o':
		return refuse(s, "OBJ is refused");
	case 'P':
	case 'Q':
		return refuse(s, "persistent ids (PERSID/BINPERSID) are refused");
	case 0x82:
	case 0x83:
	case 0x84:
		return refuse(s, "extension codes (EXT1/EXT2/EXT4) are refused");
	case 0x97:
	case 0x98:
		return refuse(s, "out-of-band buffers are refused");
	default:
		return refuse(s, "unknown opcode");
	}
}

static int step(struct scan *s)
{
	int r;

	if (s->frame_end == s->p)
		s->frame_end = NULL; /* read whole: the next opcode is outside */
	r = step_op(s);
	if (r >= 0 && s->frame_end && s->p > s->frame_end)
		return refuse(s, "an opcode that crosses the end of its FRAME (CPython's "
				 "unpickler would read what follows differently)");
	return r;
}

static int prescan(const void *data, size_t len, enum sb_result_channel channel,
		   const struct sb_prescan_limits *limits, char *err, size_t errlen, char *global,
		   size_t globallen)
{
	struct scan s = {
	    .p = data,
	    .start = data,
	    .end = (const unsigned char *)data + len,
	    .channel = channel,
	    .lim = limits ? limits : &sb_prescan_default_limits,
	    .err = err,
	    .errlen = errlen,
	    .global = global,
	    .globallen = globallen,
	};
	size_t ops = 0;
	int r = 0;

	if (errlen)
		err[0] = '\0';
	if (len > s.lim->max_bytes) {
		snprintf(err, errlen, "%zu bytes, over the limit of %zu bytes", len,
			 s.lim->max_bytes);
		return -EPERM;
	}
	while (r == 0) {
		if (s.p >= s.end) {
			snprintf(err, errlen, "the stream ends without STOP");
			r = -EPERM;
			break;
		}
		if (++ops > s.lim->max_opcodes) {
			snprintf(err, errlen, "more than %zu opcodes", s.lim->max_opcodes);
			r = -EPERM;
			break;
		}
		r = step(&s);
	}
	if (r == 1) {
		r = 0;
		if (s.n_stack != 1 || s.stack[0].kind == K_MARK)
			r = refuse(&s, "STOP with %zu items on the stack", s.n_stack);
		else if (s.stack[0].kind == K_GLOBAL && channel == SB_CHANNEL_DATA_ONLY)
			r = refuse(&s, "a class as the result (refused by "
				       "remote-result-mode=data-only)");
		else if (s.stack[0].kind == K_CONSTRUCTOR)
			r = refuse(&s, "a class whose calls are checked as the result");
		else if (s.p != s.end)
			r = refuse(&s, "%zu bytes after STOP", (size_t)(s.end - s.p));
	}
	free(s.stack);
	free(s.memo);
	free(s.memo_set);
	free(s.objs);
	free(s.counts);
	return r;
}

int sb_result_prescan(const void *data, size_t len, enum sb_result_channel channel,
		      const struct sb_prescan_limits *limits, char *err, size_t errlen)
{
	return prescan(data, len, channel, limits, err, errlen, NULL, 0);
}

int sb_result_data_only_check(const void *data, size_t len, char *what, size_t whatlen)
{
	char err[256];
	int r;

	if (whatlen)
		what[0] = '\0';
	r = prescan(data, len, SB_CHANNEL_DATA_ONLY, NULL, err, sizeof(err), what, whatlen);
	/* No refused global: the refusal itself says what needs objects (a
	 * REDUCE of an allowed global, a BUILD...). */
	if (r == -EPERM && whatlen && !what[0])
		snprintf(what, whatlen, "%s", err);
	return r;
}
