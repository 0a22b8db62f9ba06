/* SPDX-License-Identifier: MIT */
/* ${NAME} and ${NAME:-default} expansion (src/base/expand.c), against a
 * reference expander written here from the grammar of spec section 3.3:
 * both must agree on success and on the text. The host environment of the
 * test holds values that look like references ("${A}"), which must come out
 * verbatim. sb_expand_single_reference() must describe the same expansion
 * when it says the text is one reference. */
#include <ctype.h>
#include <string.h>

#include "expand.h"
#include "fuzz.h"
#include "util.h"

/* U...: unset; E...: empty; I...: a value that looks like a reference; the
 * rest: <NAME>. Each value stays valid for the next 32 calls. */
static const char *fake_getenv(const char *name, void *userdata _unused_)
{
	static char values[32][64];
	static unsigned next;
	char *v = values[next++ % ELEMENTSOF(values)];

	if (name[0] == 'U')
		return NULL;
	if (name[0] == 'E')
		return "";
	if (name[0] == 'I')
		return "${A}$}{";
	snprintf(v, sizeof(values[0]), "<%.40s>", name);
	return v;
}

struct ref {
	const char *s;
	size_t i;
	struct sb_buf out;
};

static bool name_start(char c)
{
	return c == '_' || isalpha((unsigned char)c);
}

static bool name_char(char c)
{
	return c == '_' || isalnum((unsigned char)c);
}

/* Returns false on any error. In a default (depth > 0), stops at the '}'
 * that closes it, which is left for the caller. */
static bool ref_text(struct ref *x, struct sb_buf *out, unsigned depth)
{
	if (depth > 16)
		return false;
	for (;;) {
		char c = x->s[x->i];
		size_t name;
		char n[4096];
		const char *v;

		if (c == '\0' || (depth > 0 && c == '}'))
			return true;
		if (c != '$' || x->s[x->i + 1] != '{') {
			sb_buf_putc(out, c);
			x->i++;
			continue;
		}
		x->i += 2;
		name = x->i;
		if (!name_start(x->s[x->i]))
			return false;
		while (name_char(x->s[x->i]))
			x->i++;
		if (x->i - name >= sizeof(n))
			return false;
		memcpy(n, x->s + name, x->i - name);
		n[x->i - name] = '\0';
		if (x->s[x->i] == '}') {
			x->i++;
			v = fake_getenv(n, NULL);
			sb_buf_puts(out, v ? v : "");
		} else if (x->s[x->i] == ':' && x->s[x->i + 1] == '-') {
			struct sb_buf dflt = {0};
			bool ok;

			x->i += 2;
			ok = ref_text(x, &dflt, depth + 1) && x->s[x->i] == '}';
			if (ok) {
				x->i++;
				v = fake_getenv(n, NULL);
				sb_buf_puts(out, v && *v ? v : dflt.data ? dflt.data : "");
			}
			sb_buf_reset(&dflt);
			if (!ok)
				return false;
		} else {
			return false;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *text = NULL, *out = NULL, *err = NULL, *name = NULL, *dflt = NULL,
			    *tilde = NULL;
	struct ref x = {0};
	bool ok;
	int r;

	if (size > 4096)
		return 0;
	text = strndup((const char *)data, size);
	if (!text)
		return 0;
	r = sb_expand(text, fake_getenv, NULL, &out, &err);
	x.s = text;
	ok = ref_text(&x, &x.out, 0);
	FUZZ_ASSERT(r == 0 || r == -EINVAL, "r=%d", r);
	FUZZ_ASSERT((r == 0) == ok, "'%s': sb_expand %d, the reference %s", text, r,
		    ok ? "expands it" : "refuses it");
	FUZZ_ASSERT(r == 0 || (err && err[0]), "a refusal without a message");
	if (ok)
		FUZZ_ASSERT(streq(out, x.out.data ? x.out.data : ""),
			    "'%s': sb_expand '%s', the reference '%s'", text, out,
			    x.out.data ? x.out.data : "");
	sb_buf_reset(&x.out);

	for (int star = 0; star < 2; star++) {
		r = sb_expand_single_reference(text, star, &name, &dflt);
		FUZZ_ASSERT(r == 0 || r == 1, "single reference: r=%d", r);
		if (r == 1 && ok && !strchr(name, '*')) {
			_cleanup_free_ char *dout = NULL, *derr = NULL;
			const char *v;

			FUZZ_ASSERT(!dflt || sb_expand(dflt, fake_getenv, NULL, &dout, &derr) == 0,
				    "'%s' expands, its default '%s' alone does not", text, dflt);
			v = fake_getenv(name, NULL);
			FUZZ_ASSERT(streq(out, v && *v ? v
					       : dout  ? dout
					       : v     ? v
						       : ""),
				    "'%s' as one reference (%s, default %s) is not '%s'", text,
				    name, dflt ? dflt : "none", out);
		}
		if (r == 1)
			FUZZ_ASSERT(name[0] && (!dflt || strlen(dflt) < size),
				    "single reference: name '%s'", name);
		free(name);
		free(dflt);
		name = dflt = NULL;
	}

	tilde = sb_expand_tilde(text, "/home/fuzz");
	FUZZ_ASSERT(tilde, "out of memory");
	if (text[0] == '~' && (text[1] == '\0' || text[1] == '/'))
		FUZZ_ASSERT(startswith(tilde, "/home/fuzz") && streq(tilde + 10, text + 1),
			    "tilde");
	else
		FUZZ_ASSERT(streq(tilde, text), "tilde changed '%s'", text);
	return 0;
}
