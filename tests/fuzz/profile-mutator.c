/* SPDX-License-Identifier: MIT */
/* A structure-aware mutator for the rule-file targets (fuzz-profile,
 * fuzz-explain): the text before the first NUL byte is a profile, cut into
 * lines; a mutation inserts a line of the grammar (a key of the key table
 * with a value of its kind: paths, ${} references, net rules, units, API
 * names, eval groups; includes; comments, quotes, CRLF), deletes, copies or
 * swaps lines, or rewrites one line's value. What follows the NUL (the
 * explain target's arguments and environment) is kept, or gets a
 * command-line rule. A quarter of the time libFuzzer's byte mutator does
 * the work. Linked into the libFuzzer binaries only. */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"

#define ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

static const char *const keys[] = {
    "os-sandbox",
    "py-sandbox",
    "learn",
    "env",
    "unenv",
    "expose-ro",
    "expose-rw",
    "ignore",
    "net",
    "python-import",
    "python-api",
    "eval-syntax",
    "eval-call",
    "eval-attribute",
    "eval-import",
    "eval-magic",
    "eval-namespace",
    "eval-timeout",
    "eval-max-iterations",
    "eval-max-call-depth",
    "eval-max-depth",
    "eval-max-nodes",
    "eval-max-alloc",
    "eval-max-leaked-threads",
    "remote-result-mode",
    "remote-result-guard",
    "port",
    "limit-cpu",
    "limit-memory",
    "limit-processes",
    "limit-file-size",
    "limit-open-files",
    "timeout",
    "bwrap.args",
    "unshare.net",
    "eval-call:calc",
    "include",
    "EXPOSE-RO",
    "",
    "expose_ro",
};

static const char *const values[] = {
    "true",
    "false",
    "landlock",
    "subprocess",
    "none",
    "unshare",
    "bwrap",
    "firejail",
    "qemu",
    "auto",
    "data-only",
    "objects",
    "/",
    "/tmp",
    "./data",
    "~/x",
    "~",
    "${HOME}",
    "${TMPDIR:-/tmp}",
    "${A:-${B:-/c}}",
    "${",
    "${A:B}",
    "/proc/self",
    "/etc/passwd",
    "../..",
    "*",
    "os",
    "json, os",
    "os.path",
    "ALLOW:os.system",
    "DENY:os.system",
    "ALLOW:deserialization",
    "ALLOW:*",
    "DENY:*",
    "ALLOW|tcp|127.0.0.1|80,443|OUT",
    "ALLOW|udp|::1/64|0-65535|IN,OUT",
    "DENY|*|*|*|*",
    "ALLOW|tcp|example.org.|443-|OUT",
    "ALLOW|TCP|10.0.0.0/33|1|IN",
    "ALLOW|tcp|host|70000|OUT",
    "A=${A}",
    "A=literal",
    "A=${B:-x}",
    "API_*=${API_*}",
    "PATH",
    "1_000",
    "10MB",
    "1.5s",
    "250ms",
    "2m",
    "0",
    "-1",
    "18446744073709551616",
    "closed",
    "caller",
    "adaptive",
    "literals, comprehensions",
    "DENY:lambda",
    "\"quoted\"",
    "'single'",
    "\"/a b\"",
    "",
    " ",
    "x # comment",
    "8080",
};

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dULL;
}

static size_t below(struct rng *r, size_t n)
{
	return n ? (size_t)(rng_next(r) % n) : 0;
}

struct out {
	uint8_t *p;
	size_t len, cap;
	bool full;
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

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* One line of the grammar, without its newline. */
static void gen_line(struct out *o, struct rng *r)
{
	const char *key = keys[below(r, ELEMENTS(keys))];
	const char *value = values[below(r, ELEMENTS(values))];

	switch (below(r, 12)) {
	case 0:
		puts_(o, "# a comment");
		return;
	case 1:
		puts_(o, "include \"");
		puts_(o, below(r, 2) ? "missing" : value);
		puts_(o, "\"");
		return;
	case 2:
		puts_(o, "{template}");
		return;
	default:
		break;
	}
	if (below(r, 8) == 0)
		puts_(o, "  ");
	puts_(o, key);
	puts_(o, below(r, 6) ? "=" : " = ");
	puts_(o, value);
	if (below(r, 10) == 0)
		puts_(o, "\r");
}

#define MAX_LINES 4096

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	static uint8_t buf[1 << 17];
	static size_t start[MAX_LINES + 1];
	struct rng r = {.s = (uint64_t)seed * 0x9e3779b97f4a7c15ULL + 1};
	struct out o = {.p = buf, .cap = max_size < sizeof(buf) ? max_size : sizeof(buf)};
	const uint8_t *nul = memchr(data, '\0', size);
	size_t text = nul ? (size_t)(nul - data) : size, n_lines = 0, at, k;
	unsigned choice = (unsigned)below(&r, 12);

	if (choice < 3)
		return LLVMFuzzerMutate(data, size, max_size);
	for (size_t p = 0; p < text && n_lines < MAX_LINES;) {
		const uint8_t *nl = memchr(data + p, '\n', text - p);

		start[n_lines++] = p;
		p = nl ? (size_t)(nl - data) + 1 : text;
	}
	start[n_lines] = text;
	at = below(&r, n_lines + 1);

	switch (choice) {
	case 3:
	case 4:
	case 5: /* a line of the grammar inserted */
		put(&o, data, start[at]);
		if (at > 0 && data[start[at] - 1] != '\n')
			puts_(&o, "\n");
		gen_line(&o, &r);
		puts_(&o, "\n");
		put(&o, data + start[at], text - start[at]);
		break;
	case 6: /* a line deleted */
		if (at == n_lines)
			return LLVMFuzzerMutate(data, size, max_size);
		put(&o, data, start[at]);
		put(&o, data + start[at + 1], text - start[at + 1]);
		break;
	case 7: /* a line copied elsewhere */
		if (n_lines == 0)
			return LLVMFuzzerMutate(data, size, max_size);
		k = below(&r, n_lines);
		put(&o, data, start[at]);
		put(&o, data + start[k], start[k + 1] - start[k]);
		if (data[start[k + 1] - 1] != '\n')
			puts_(&o, "\n");
		put(&o, data + start[at], text - start[at]);
		break;
	case 8: /* a line's value replaced */
		if (at == n_lines)
			return LLVMFuzzerMutate(data, size, max_size);
		{
			const uint8_t *eq =
			    memchr(data + start[at], '=', start[at + 1] - start[at]);

			if (!eq)
				return LLVMFuzzerMutate(data, size, max_size);
			put(&o, data, (size_t)(eq - data) + 1);
			puts_(&o, values[below(&r, ELEMENTS(values))]);
			puts_(&o, "\n");
			put(&o, data + start[at + 1], text - start[at + 1]);
		}
		break;
	case 9: /* a new file of a few lines */
		for (size_t i = 1 + below(&r, 6); i > 0; i--) {
			gen_line(&o, &r);
			puts_(&o, "\n");
		}
		break;
	default: /* a command-line rule for the explain target */
		put(&o, data, text);
		put(&o, "\0", 1);
		puts_(&o, "--");
		puts_(&o, keys[below(&r, ELEMENTS(keys))]);
		puts_(&o, "=");
		puts_(&o, values[below(&r, ELEMENTS(values))]);
		puts_(&o, "\n");
		if (nul)
			put(&o, nul + 1, size - text - 1);
		nul = NULL;
		break;
	}
	if (nul)
		put(&o, nul, size - text);
	if (o.full || o.len == 0)
		return LLVMFuzzerMutate(data, size, max_size);
	memcpy(data, o.p, o.len);
	return o.len;
}
