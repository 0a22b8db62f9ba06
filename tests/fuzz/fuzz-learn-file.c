/* SPDX-License-Identifier: MIT */
/* Learning's rule-file edit (src/learn/learn-file.c): the text of an existing
 * rule file, which may be anything, with learned lines merged in. The input
 * is the file's text, then after a NUL byte the learned lines ("<section
 * digit><line>" each), then after another NUL the line numbers to comment
 * out (one byte each). The merge must keep every line of the file in order
 * (a replaced one commented out), contain each learned rule, count the rules
 * it added, and be stable: merging the same rules again changes nothing. */
#include <string.h>

#include "fuzz.h"
#include "learn-file.h"
#include "util.h"

static bool trimmed_equal(const char *a, size_t na, const char *b)
{
	size_t nb = strlen(b);

	while (na && (*a == ' ' || *a == '\t'))
		a++, na--;
	while (nb && (*b == ' ' || *b == '\t'))
		b++, nb--;
	while (na && (a[na - 1] == ' ' || a[na - 1] == '\t' || a[na - 1] == '\r'))
		na--;
	while (nb && (b[nb - 1] == ' ' || b[nb - 1] == '\t' || b[nb - 1] == '\r'))
		nb--;
	return na == nb && strncmp(a, b, na) == 0;
}

/* Whether text has a line equal (trimmed) to line. */
static bool has_line(const char *text, const char *line)
{
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (trimmed_equal(p, n, line))
			return true;
		p += n + (nl ? 1 : 0);
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules rules = {0};
	_cleanup_free_ char *text = NULL, *out = NULL, *again = NULL, *learned = NULL;
	const uint8_t *sep, *sep2, *lines_end;
	size_t added = 0, added_again = 0, new_rules = 0, n_lines = 0;
	const char *o;

	if (size > 64 * 1024)
		return 0;
	sep = memchr(data, '\0', size);
	text = strndup((const char *)data, sep ? (size_t)(sep - data) : size);
	if (!text)
		return 0;
	if (sep) {
		sep2 = memchr(sep + 1, '\0', size - (size_t)(sep + 1 - data));
		lines_end = sep2 ? sep2 : data + size;
		learned = strndup((const char *)sep + 1, (size_t)(lines_end - sep - 1));
		if (!learned)
			return 0;
		for (char *l = learned, *next; l && *l; l = next) {
			next = strchr(l, '\n');
			if (next)
				*next++ = '\0';
			/* A rule that reads as a comment once trimmed is no rule. */
			if (!l[0] || (l[1] != '#' && l[1 + strspn(l + 1, " \t")] == '#'))
				continue;
			if (sb_strv_push(&rules.lines[(unsigned char)l[0] % SB_LEARN__N], l + 1) <
			    0)
				return 0;
			if (l[1] != '#')
				rules.n_rules++;
		}
		for (const uint8_t *p = sep2 ? sep2 + 1 : data + size; p < data + size; p++) {
			unsigned *v = realloc(rules.replaced_lines,
					      (rules.n_replaced + 1) * sizeof(unsigned));

			if (!v)
				return 0;
			rules.replaced_lines = v;
			rules.replaced_lines[rules.n_replaced++] = *p;
		}
	}
	/* The rules that are new: not in the file, counted once. */
	for (size_t s = 0; s < SB_LEARN__N; s++)
		for (size_t i = 0; rules.lines[s] && rules.lines[s][i]; i++) {
			const char *l = rules.lines[s][i];
			bool seen = has_line(text, l);

			for (size_t t = 0; !seen && t <= s; t++)
				for (size_t j = 0; !seen && rules.lines[t] && rules.lines[t][j] &&
						   (t < s || j < i);
				     j++)
					seen = l[0] != '#' &&
					       trimmed_equal(l, strlen(l), rules.lines[t][j]);
			new_rules += l[0] != '#' && !seen;
		}

	FUZZ_ASSERT(sb_learn_file_merge(text, &rules, 1764428640, &out, &added) == 0, "merge");
	FUZZ_ASSERT(added == new_rules, "%zu rules added, %zu were new", added, new_rules);
	/* Every line of the file, in order. */
	o = out;
	for (const char *p = text; *p; n_lines++) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		bool replaced = false;

		for (size_t i = 0; i < rules.n_replaced; i++)
			replaced |= rules.replaced_lines[i] == n_lines + 1 && p[0] != '#';
		for (;;) {
			const char *onl = strchr(o, '\n');

			FUZZ_ASSERT(onl, "line %zu of the file is missing", n_lines + 1);
			if (replaced ? (startswith(o, "# ") && strncmp(o + 2, p, n) == 0 &&
					startswith(o + 2 + n, "  (replaced by learning"))
				     : ((size_t)(onl - o) == n && strncmp(o, p, n) == 0)) {
				o = onl + 1;
				break;
			}
			o = onl + 1;
		}
		p += n + (nl ? 1 : 0);
	}
	for (size_t s = 0; s < SB_LEARN__N; s++)
		for (size_t i = 0; rules.lines[s] && rules.lines[s][i]; i++)
			if (rules.lines[s][i][0] != '#')
				FUZZ_ASSERT(has_line(out, rules.lines[s][i]), "rule '%s' missing",
					    rules.lines[s][i]);

	rules.n_replaced = 0;
	FUZZ_ASSERT(sb_learn_file_merge(out, &rules, 1764428640, &again, &added_again) == 0,
		    "merge again");
	FUZZ_ASSERT(added_again == 0, "%zu rules added twice", added_again);
	FUZZ_ASSERT(streq(again, out), "a second merge changed the text");
	return 0;
}
