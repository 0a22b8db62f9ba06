/* SPDX-License-Identifier: MIT */
#include "expand.h"

#include <ctype.h>

/* Deep enough for any real nesting such as ${TMPDIR:-${TEMP:-${TMP:-/tmp}}},
 * small enough that a hostile profile cannot exhaust the stack. */
#define SB_EXPAND_MAX_DEPTH 16

struct sb_expander {
	sb_getenv_fn getenv;
	void *userdata;
	const char *start;
	char *error;
	char *unset; /* the first ${NAME} without a default that was unset or empty */
};

static bool is_name_start(char c)
{
	return c == '_' || isalpha((unsigned char)c);
}

static bool is_name_char(char c)
{
	return c == '_' || isalnum((unsigned char)c);
}

/* Reports the offending reference as written, up to its closing brace. */
static int expand_fail(struct sb_expander *e, const char *ref, const char *what)
{
	const char *end = strchr(ref, '}');
	int len = end ? (int)(end - ref + 1) : (int)strlen(ref);

	if (asprintf(&e->error, "%s '%.*s'", what, len, ref) < 0) {
		e->error = NULL;
		return -ENOMEM;
	}
	return -EINVAL;
}

/* Expands from *pos up to the end of the string, or, inside a default, up to
 * the '}' that closes it. */
static int expand_text(struct sb_expander *e, const char **pos, bool in_default, unsigned depth,
		       struct sb_buf *out)
{
	const char *p = *pos;
	int r;

	if (depth > SB_EXPAND_MAX_DEPTH)
		return expand_fail(e, p, "variable expansion nested too deeply at");

	while (*p) {
		const char *ref, *name;
		size_t name_len;

		if (in_default && *p == '}')
			break;
		if (p[0] != '$' || p[1] != '{') {
			r = sb_buf_putc(out, *p++);
			if (r < 0)
				return r;
			continue;
		}
		ref = p;
		p += 2;
		name = p;
		if (!is_name_start(*p))
			return expand_fail(e, ref, "invalid variable expansion");
		while (is_name_char(*p))
			p++;
		name_len = (size_t)(p - name);

		if (*p == '}') {
			_cleanup_free_ char *n = strndup(name, name_len);
			const char *v;

			if (!n)
				return -ENOMEM;
			v = e->getenv(n, e->userdata);
			if (v) {
				r = sb_buf_puts(out, v);
				if (r < 0)
					return r;
			}
			if ((!v || !*v) && !e->unset)
				e->unset = TAKE_PTR(n);
			p++;
		} else if (p[0] == ':' && p[1] == '-') {
			_cleanup_free_ char *n = strndup(name, name_len);
			struct sb_buf dflt = {0};
			const char *v;

			if (!n)
				return -ENOMEM;
			p += 2;
			r = expand_text(e, &p, true, depth + 1, &dflt);
			if (r < 0) {
				sb_buf_reset(&dflt);
				return r;
			}
			if (*p != '}') {
				sb_buf_reset(&dflt);
				return expand_fail(e, ref, "unterminated variable expansion");
			}
			p++;
			/* ${X:-d}: the default applies when X is unset or empty, as in the shell.
			 */
			v = e->getenv(n, e->userdata);
			r = sb_buf_puts(out, (v && *v) ? v : (dflt.data ? dflt.data : ""));
			sb_buf_reset(&dflt);
			if (r < 0)
				return r;
		} else if (*p == '\0') {
			return expand_fail(e, ref, "unterminated variable expansion");
		} else {
			return expand_fail(e, ref, "invalid variable expansion");
		}
	}
	*pos = p;
	return 0;
}

int sb_expand_ex(const char *text, sb_getenv_fn getenv, void *userdata, char **ret, char **reterr,
		 char **ret_unset)
{
	struct sb_expander e = {.getenv = getenv, .userdata = userdata, .start = text};
	struct sb_buf out = {0};
	const char *p = text;
	int r;

	r = expand_text(&e, &p, false, 0, &out);
	if (r < 0) {
		sb_buf_reset(&out);
		free(e.unset);
		if (reterr)
			*reterr = e.error;
		else
			free(e.error);
		return r;
	}
	if (ret_unset)
		*ret_unset = e.unset;
	else
		free(e.unset);
	*ret = sb_buf_steal(&out);
	return *ret ? 0 : -ENOMEM;
}

int sb_expand(const char *text, sb_getenv_fn getenv, void *userdata, char **ret, char **reterr)
{
	return sb_expand_ex(text, getenv, userdata, ret, reterr, NULL);
}

int sb_expand_single_reference(const char *text, bool allow_star, char **ret_name,
			       char **ret_default)
{
	const char *p = text, *name, *dflt = NULL;
	size_t name_len, dflt_len = 0;
	int depth = 0;

	if (p[0] != '$' || p[1] != '{')
		return 0;
	p += 2;
	name = p;
	while (is_name_char(*p) || (allow_star && *p == '*'))
		p++;
	name_len = (size_t)(p - name);
	if (name_len == 0 || !(is_name_start(*name) || (allow_star && *name == '*')))
		return 0;
	if (p[0] == ':' && p[1] == '-') {
		p += 2;
		dflt = p;
		/* The default ends at the brace that balances ours. */
		for (; *p; p++) {
			if (p[0] == '$' && p[1] == '{') {
				depth++;
				p++;
			} else if (*p == '}') {
				if (depth == 0)
					break;
				depth--;
			}
		}
		dflt_len = (size_t)(p - dflt);
	}
	if (*p != '}' || p[1] != '\0')
		return 0;

	*ret_name = strndup(name, name_len);
	if (!*ret_name)
		return -ENOMEM;
	*ret_default = NULL;
	if (dflt) {
		*ret_default = strndup(dflt, dflt_len);
		if (!*ret_default) {
			free(*ret_name);
			*ret_name = NULL;
			return -ENOMEM;
		}
	}
	return 1;
}

char *sb_expand_tilde(const char *path, const char *home)
{
	if (home && path[0] == '~' && (path[1] == '\0' || path[1] == '/')) {
		char *r;

		if (asprintf(&r, "%s%s", home, path + 1) < 0)
			return NULL;
		return r;
	}
	return strdup(path);
}
