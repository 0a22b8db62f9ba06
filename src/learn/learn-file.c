/* SPDX-License-Identifier: MIT */
#include "learn-file.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "util.h"

/* A rule file larger than this is not ours to rewrite (the loader's limit). */
#define SB_LEARN_MAX_FILE (1024 * 1024)

static char **split_lines(const char *text)
{
	char **lines = NULL;
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char *line = strndup(p, n);

		if (!line || sb_strv_consume(&lines, line) < 0) {
			sb_strv_free(lines);
			return NULL;
		}
		p += n + (nl ? 1 : 0);
	}
	if (!lines)
		lines = calloc(1, sizeof(*lines));
	return lines;
}

static bool same_trimmed(const char *a, const char *b)
{
	while (*a == ' ' || *a == '\t')
		a++;
	while (*b == ' ' || *b == '\t')
		b++;
	size_t na = strlen(a), nb = strlen(b);
	while (na && (a[na - 1] == ' ' || a[na - 1] == '\t' || a[na - 1] == '\r'))
		na--;
	while (nb && (b[nb - 1] == ' ' || b[nb - 1] == '\t' || b[nb - 1] == '\r'))
		nb--;
	return na == nb && strncmp(a, b, na) == 0;
}

static bool has_line(char *const *lines, const char *line)
{
	for (char *const *l = lines; l && *l; l++)
		if (same_trimmed(*l, line))
			return true;
	return false;
}

/* Index of the line "# </marker>", or -1. */
static ssize_t find_close_marker(char *const *lines, const char *marker)
{
	char want[128];

	snprintf(want, sizeof(want), "# </%s>", marker);
	for (size_t i = 0; lines && lines[i]; i++)
		if (same_trimmed(lines[i], want))
			return (ssize_t)i;
	return -1;
}

/* The lines of one section worth adding: rules not in the file yet, the
 * header comments of the rules that remain, and notes not written before. */
static int select_new(char *const *lines, char *const *candidates, char ***ret, size_t *ret_rules)
{
	_cleanup_strv_free_ char **out = NULL, **pending = NULL;
	size_t rules = 0;
	int r = 0;

	for (char *const *c = candidates; r >= 0 && c && *c; c++) {
		bool comment = (*c)[0] == '#';

		if (comment && !startswith(*c, "# '")) {
			/* A header: kept only if a rule follows it. */
			sb_strv_free(pending);
			pending = NULL;
			r = sb_strv_push(&pending, *c);
			continue;
		}
		if (has_line(lines, *c) || has_line(out, *c))
			continue;
		for (char **p = pending; r >= 0 && p && *p; p++)
			r = sb_strv_push(&out, *p);
		sb_strv_free(pending);
		pending = NULL;
		if (r >= 0)
			r = sb_strv_push(&out, *c);
		if (!comment)
			rules++;
	}
	if (r < 0)
		return r;
	*ret = TAKE_PTR(out);
	*ret_rules = rules;
	return 0;
}

static int insert_at(char ***lines, size_t at, char **batch)
{
	size_t n = sb_strv_length(*lines), k = sb_strv_length(batch);
	char **v = realloc(*lines, (n + k + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	memmove(v + at + k, v + at, (n - at + 1) * sizeof(*v));
	for (size_t i = 0; i < k; i++)
		v[at + i] = batch[i];
	batch[0] = NULL; /* ownership moved */
	*lines = v;
	return 0;
}

int sb_learn_file_merge(const char *text, const struct sb_learn_rules *rules, time_t now,
			char **ret_text, size_t *ret_added)
{
	_cleanup_strv_free_ char **lines = split_lines(text ? text : sb_learn_template);
	struct sb_buf out = {0};
	char header[64], date[32];
	struct tm tm;
	size_t added = 0;
	int r = 0;

	if (!lines)
		return -ENOMEM;
	localtime_r(&now, &tm);
	strftime(header, sizeof(header), "# Add rules (%Y/%m/%d at %H:%M)", &tm);
	strftime(date, sizeof(date), "%Y/%m/%d", &tm);

	/* Line numbers refer to the file as it was: comment out first. */
	for (size_t i = 0; i < rules->n_replaced; i++) {
		unsigned line = rules->replaced_lines[i];
		char *commented;

		if (line == 0 || line > sb_strv_length(lines) || lines[line - 1][0] == '#')
			continue;
		if (asprintf(&commented,
			     "# %s  (replaced by learning on %s: the program writes there)",
			     lines[line - 1], date) < 0)
			return -ENOMEM;
		free(lines[line - 1]);
		lines[line - 1] = commented;
	}

	for (size_t s = 0; s < SB_LEARN__N; s++) {
		_cleanup_strv_free_ char **batch = NULL;
		size_t n_rules = 0;
		ssize_t at;

		r = select_new(lines, rules->lines[s], &batch, &n_rules);
		if (r < 0)
			return r;
		if (!batch || !batch[0])
			continue;
		/* The dated header goes first. */
		{
			size_t k = sb_strv_length(batch);
			char **v = realloc(batch, (k + 2) * sizeof(*v));
			char *h = strdup(header);

			if (v)
				batch = v;
			if (!v || !h) {
				free(h);
				return -ENOMEM;
			}
			memmove(v + 1, v, (k + 1) * sizeof(*v));
			v[0] = h;
		}
		at = find_close_marker(lines, sb_learn_section_marker((enum sb_learn_section)s));
		r = insert_at(&lines, at >= 0 ? (size_t)at : sb_strv_length(lines), batch);
		if (r < 0)
			return r;
		/* insert_at took the strings; only the array is left to free. */
		free(TAKE_PTR(batch));
		added += n_rules;
	}

	for (char **l = lines; r >= 0 && *l; l++)
		r = sb_buf_printf(&out, "%s\n", *l);
	if (r < 0) {
		sb_buf_reset(&out);
		return -ENOMEM;
	}
	*ret_text = sb_buf_steal(&out);
	if (!*ret_text)
		*ret_text = strdup("");
	if (!*ret_text)
		return -ENOMEM;
	*ret_added = added;
	return 0;
}

/* Reads path without following a link at its last component; -EBADMSG for
 * a file with a NUL byte. */
static int read_nofollow(const char *path, char **ret, struct stat *ret_st)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	struct sb_buf b = {0};
	char chunk[8192];
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (fstat(fd, ret_st) < 0)
		return -errno;
	if (!S_ISREG(ret_st->st_mode))
		return -EINVAL;
	if (ret_st->st_size > SB_LEARN_MAX_FILE)
		return -EFBIG;
	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			sb_buf_reset(&b);
			return -errno;
		}
		if (sb_buf_putn(&b, chunk, (size_t)n) < 0 || b.len > SB_LEARN_MAX_FILE) {
			/* Decided before the reset, which sets len to 0: a file that grew
			 * past the limit during the read is too big, not out of memory. */
			int r = b.len > SB_LEARN_MAX_FILE ? -EFBIG : -ENOMEM;

			sb_buf_reset(&b);
			return r;
		}
	}
	/* The merge reads a C string: it would cut the file at the NUL and
	 * write back what precedes it. The loader refuses such a file too. */
	if (b.data && memchr(b.data, '\0', b.len)) {
		sb_buf_reset(&b);
		return -EBADMSG;
	}
	*ret = b.data ? sb_buf_steal(&b) : strdup("");
	return *ret ? 0 : -ENOMEM;
}

static int write_all(int fd, const char *data, size_t n)
{
	while (n) {
		ssize_t w = write(fd, data, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		data += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Creates name exclusively (never through an existing file or link) with
 * data; mode exactly when keep_mode (a copy of an existing file's), else as
 * the umask makes it. 0 or -errno. */
static int create_exclusive(const char *name, const char *data, mode_t mode, bool keep_mode)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	int r;

	if (fd < 0)
		return -errno;
	r = write_all(fd, data, strlen(data));
	if (r >= 0 && keep_mode && fchmod(fd, mode) < 0)
		r = -errno;
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	if (r < 0)
		unlink(name);
	return r;
}

/* Saves the previous text as the first free <path>.old, .old_1, .old_2... */
static int write_backup(const char *path, const char *old, mode_t mode, char **ret_name)
{
	for (unsigned k = 0; k < 10000; k++) {
		_cleanup_free_ char *name = NULL;
		int r;

		if ((k == 0 ? asprintf(&name, "%s.old", path)
			    : asprintf(&name, "%s.old_%u", path, k)) < 0)
			return -ENOMEM;
		r = create_exclusive(name, old, mode, true);
		if (r == -EEXIST)
			continue;
		if (r < 0)
			return r;
		*ret_name = TAKE_PTR(name);
		return 0;
	}
	return -EEXIST;
}

int sb_learn_file_write(const char *path, const struct sb_learn_rules *rules, time_t now,
			struct sb_learn_write_result *ret, char **reterr)
{
	_cleanup_free_ char *old = NULL, *text = NULL, *tmp = NULL, *backup = NULL;
	struct stat st;
	mode_t mode = 0644;
	size_t added = 0;
	bool exists;
	int r;

	*ret = (struct sb_learn_write_result){0};
	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return sb_error(reterr, -ELOOP,
					"'%s' is a symbolic link: learning does not write through "
					"links (a planted link could redirect the write)",
					path);
		exists = true;
	} else if (errno == ENOENT) {
		exists = false;
	} else {
		return sb_error(reterr, -errno, "cannot inspect '%s': %s", path, strerror(errno));
	}
	if (exists) {
		r = read_nofollow(path, &old, &st);
		if (r < 0)
			return sb_error(reterr, r, "cannot read '%s': %s", path,
					r == -ELOOP	? "it became a symbolic link"
					: r == -EINVAL	? "not a regular file"
					: r == -EBADMSG ? "it contains a NUL byte: not a rule file"
							: strerror(-r));
		mode = st.st_mode & 07777;
	}
	r = sb_learn_file_merge(old, rules, now, &text, &added);
	if (r < 0)
		return sb_error(reterr, r, "cannot prepare '%s': %s", path, strerror(-r));
	if (exists && added == 0 && rules->n_replaced == 0)
		return 0;

	if (asprintf(&tmp, "%s.%ld.tmp", path, (long)getpid()) < 0)
		return -ENOMEM;
	r = create_exclusive(tmp, text, mode, exists);
	if (r < 0)
		return sb_error(reterr, r,
				r == -EEXIST ? "cannot write '%s': '%s' exists already (a planted "
					       "file or link is not followed)"
					     : "cannot write '%s' through '%s': %s",
				path, tmp, strerror(-r));
	if (exists) {
		r = write_backup(path, old, mode, &backup);
		if (r < 0) {
			unlink(tmp);
			return sb_error(reterr, r, "cannot keep a backup of '%s': %s", path,
					strerror(-r));
		}
	}
	/* rename() replaces whatever is at path, a link included, without
	 * following it: the write lands in path itself. */
	if (rename(tmp, path) < 0) {
		r = -errno;
		unlink(tmp);
		return sb_error(reterr, r, "cannot replace '%s': %s", path, strerror(-r));
	}
	ret->backup = TAKE_PTR(backup);
	ret->added = added;
	ret->created = !exists;
	ret->changed = true;
	return 0;
}

void sb_learn_write_result_done(struct sb_learn_write_result *r)
{
	free(r->backup);
	*r = (struct sb_learn_write_result){0};
}
