/* SPDX-License-Identifier: MIT */
/* Learning's rule file (src/learn/learn-file.c): the text of an existing rule
 * file, which may be anything, read back and merged with learned lines. The
 * input is the file's text, then after "\xff\xfe\xfd" the learned lines
 * ("<section digit><line>" each), then after another "\xff\xfe\xfd" the line
 * numbers to comment out (one byte each). The merge must keep every line of
 * the file in order (a replaced one commented out), contain each learned
 * rule, count the rules it added, and be stable: merging the same rules
 * again changes nothing. Written to a file, the text is read back and
 * rewritten by sb_learn_file_write(): the new file is the merge, the old one
 * its backup, nothing else is left; a file with a NUL byte is refused and
 * left alone. */
#include <dirent.h>
#include <sys/stat.h>
#include <string.h>

#include "fuzz.h"
#include "learn-file.h"
#include "util.h"

#define SEP "\xff\xfe\xfd"

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

/* The same, for the file once its replaced lines are commented out. */
static bool keeps_line(const char *text, const struct sb_learn_rules *rules, const char *line)
{
	unsigned number = 0;

	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		bool replaced = false;

		number++;
		for (size_t i = 0; i < rules->n_replaced && p[0] != '#'; i++)
			replaced |= rules->replaced_lines[i] == number;
		if (!replaced && trimmed_equal(p, n, line))
			return true;
		p += n + (nl ? 1 : 0);
	}
	return false;
}

static bool file_is(const char *path, const char *data, size_t len)
{
	_cleanup_free_ char *got = NULL;
	size_t n = 0;

	return sb_read_file(path, 2 * 1024 * 1024, &got, &n) >= 0 && n == len &&
	       memcmp(got, data, len) == 0;
}

/* The text as a rule file, rewritten with the rules: merged (NULL: refused,
 * for a NUL byte). Whatever happens, the directory is emptied after. */
static void write_path(const char *text, size_t len, const struct sb_learn_rules *rules,
		       const char *merged)
{
	_cleanup_(sb_learn_write_result_done) struct sb_learn_write_result res = {0};
	_cleanup_free_ char *path = fuzz_write_file("rules", text, len), *old = NULL, *err = NULL;
	const char *dir = fuzz_tmpdir();
	struct stat st;
	DIR *d;
	struct dirent *de;
	size_t entries = 0;
	int r;

	if (!path || asprintf(&old, "%s.old", path) < 0)
		return;
	chmod(path, 0640);
	r = sb_learn_file_write(path, rules, 1764428640, &res, &err);
	if (!merged) {
		FUZZ_ASSERT(r == -EBADMSG && err, "a file with a NUL byte: r=%d", r);
		FUZZ_ASSERT(file_is(path, text, len), "a refused file was changed");
	} else {
		FUZZ_ASSERT(r == 0, "write: %d %s", r, err ? err : "");
		FUZZ_ASSERT(res.changed == (res.added > 0 || rules->n_replaced > 0),
			    "changed %d with %zu added", res.changed, res.added);
		FUZZ_ASSERT(
		    file_is(path, res.changed ? merged : text, res.changed ? strlen(merged) : len),
		    "the file is not the merge");
		FUZZ_ASSERT(!res.changed ||
				(res.backup && streq(res.backup, old) && file_is(old, text, len)),
			    "the backup is not the old text");
		FUZZ_ASSERT(stat(path, &st) == 0 && (st.st_mode & 07777) == 0640,
			    "the mode was not kept");
	}
	d = opendir(dir);
	FUZZ_ASSERT(d, "the directory");
	while ((de = readdir(d)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			entries++;
	closedir(d);
	FUZZ_ASSERT(entries == 1 + (res.changed ? 1 : 0), "%zu files left", entries);
	unlink(path);
	unlink(old);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules rules = {0};
	_cleanup_free_ char *text = NULL, *out = NULL, *again = NULL, *learned = NULL;
	const uint8_t *sep, *sep2, *lines_end;
	size_t added = 0, added_again = 0, new_rules = 0, n_lines = 0, text_len;
	const char *o;

	if (size > 64 * 1024)
		return 0;
	sep = memmem(data, size, SEP, 3);
	text_len = sep ? (size_t)(sep - data) : size;
	if (memchr(data, '\0', text_len)) {
		write_path((const char *)data, text_len, &rules, NULL);
		return 0;
	}
	text = strndup((const char *)data, text_len);
	if (!text)
		return 0;
	if (sep) {
		sep2 = memmem(sep + 3, size - (size_t)(sep + 3 - data), SEP, 3);
		lines_end = sep2 ? sep2 : data + size;
		learned = strndup((const char *)sep + 3, (size_t)(lines_end - sep - 3));
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
		for (const uint8_t *p = sep2 ? sep2 + 3 : data + size; p < data + size; p++) {
			unsigned *v = realloc(rules.replaced_lines,
					      (rules.n_replaced + 1) * sizeof(unsigned));

			if (!v)
				return 0;
			rules.replaced_lines = v;
			rules.replaced_lines[rules.n_replaced++] = *p;
		}
	}
	/* The rules that are new: not in the file (a replaced line is commented
	 * out first), counted once. */
	for (size_t s = 0; s < SB_LEARN__N; s++)
		for (size_t i = 0; rules.lines[s] && rules.lines[s][i]; i++) {
			const char *l = rules.lines[s][i];
			bool seen = keeps_line(text, &rules, l);

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

	write_path(text, text_len, &rules, out);

	rules.n_replaced = 0;
	FUZZ_ASSERT(sb_learn_file_merge(out, &rules, 1764428640, &again, &added_again) == 0,
		    "merge again");
	FUZZ_ASSERT(added_again == 0, "%zu rules added twice", added_again);
	FUZZ_ASSERT(streq(again, out), "a second merge changed the text");
	return 0;
}
