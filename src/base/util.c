/* SPDX-License-Identifier: MIT */
#include "util.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>

void sb_strv_free(char **v)
{
	if (!v)
		return;
	for (char **i = v; *i; i++)
		free(*i);
	free(v);
}

size_t sb_strv_length(char *const *v)
{
	size_t n = 0;

	if (v)
		while (v[n])
			n++;
	return n;
}

int sb_strv_consume(char ***v, char *s)
{
	size_t n = sb_strv_length(*v);
	char **nv;

	if (!s)
		return -ENOMEM;
	nv = realloc(*v, (n + 2) * sizeof(char *));
	if (!nv) {
		free(s);
		return -ENOMEM;
	}
	nv[n] = s;
	nv[n + 1] = NULL;
	*v = nv;
	return 0;
}

int sb_strv_push(char ***v, const char *s)
{
	return sb_strv_consume(v, strdup(s));
}

/* vasprintf()'s string, or NULL, which the *_consume() functions take as
 * -ENOMEM. */
static char *format_va(const char *fmt, va_list ap) _printf_(1, 0);
static char *format_va(const char *fmt, va_list ap)
{
	char *s;

	return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

int sb_strv_vpushf(char ***v, const char *fmt, va_list ap)
{
	return sb_strv_consume(v, format_va(fmt, ap));
}

int sb_strv_pushf(char ***v, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = sb_strv_vpushf(v, fmt, ap);
	va_end(ap);
	return r;
}

int sb_strvb_consume(struct sb_strv_builder *b, char *s)
{
	if (!s)
		return -ENOMEM;
	if (b->n + 2 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		char **nv = realloc(b->v, cap * sizeof(char *));

		if (!nv) {
			free(s);
			return -ENOMEM;
		}
		b->v = nv;
		b->cap = cap;
	}
	b->v[b->n++] = s;
	b->v[b->n] = NULL;
	return 0;
}

int sb_strvb_push(struct sb_strv_builder *b, const char *s)
{
	return sb_strvb_consume(b, strdup(s));
}

int sb_strvb_pushf(struct sb_strv_builder *b, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = format_va(fmt, ap);
	va_end(ap);
	return sb_strvb_consume(b, s);
}

int sb_strvb_add(struct sb_strv_builder *b, ...)
{
	va_list ap;
	int r = 0;

	va_start(ap, b);
	for (const char *s; r >= 0 && (s = va_arg(ap, const char *));)
		r = sb_strvb_push(b, s);
	va_end(ap);
	return r;
}

bool sb_strv_contains(char *const *v, const char *s)
{
	if (v)
		for (; *v; v++)
			if (streq(*v, s))
				return true;
	return false;
}

const char *sb_strv_env_get(char *const *env, const char *name)
{
	size_t len = strlen(name);

	for (char *const *e = env; e && *e; e++)
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			return *e + len + 1;
	return NULL;
}

bool sb_path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int sb_buf_reserve(struct sb_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	char *n;

	if (need <= b->cap)
		return 0;
	if (need < b->cap * 2)
		need = b->cap * 2;
	if (need < 64)
		need = 64;
	n = realloc(b->data, need);
	if (!n)
		return -ENOMEM;
	b->data = n;
	b->cap = need;
	return 0;
}

int sb_buf_putn(struct sb_buf *b, const char *s, size_t n)
{
	int r = sb_buf_reserve(b, n);

	if (r < 0)
		return r;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int sb_buf_puts(struct sb_buf *b, const char *s)
{
	return sb_buf_putn(b, s, strlen(s));
}

int sb_buf_putc(struct sb_buf *b, char c)
{
	return sb_buf_putn(b, &c, 1);
}

int sb_buf_printf(struct sb_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	r = sb_buf_reserve(b, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

char *sb_buf_steal(struct sb_buf *b)
{
	char *s = b->data;

	if (!s)
		s = strdup("");
	b->data = NULL;
	b->len = b->cap = 0;
	return s;
}

void sb_buf_reset(struct sb_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int sb_error(char **reterr, int r, const char *fmt, ...)
{
	va_list ap;

	if (!reterr)
		return r;
	va_start(ap, fmt);
	if (vasprintf(reterr, fmt, ap) < 0) {
		*reterr = NULL;
		r = -ENOMEM;
	}
	va_end(ap);
	return r;
}

char *sb_strstrip(char *s)
{
	char *end;

	while (*s && isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	return s;
}

char *sb_str_one_line(const char *s)
{
	struct sb_buf b = {0};
	int r = 0;

	for (const unsigned char *p = (const unsigned char *)s; r >= 0 && *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			r = sb_buf_printf(&b, "\\x%02x", *p);
		else if (*p == '\\')
			r = sb_buf_puts(&b, "\\\\");
		else
			r = sb_buf_printf(&b, "%c", *p);
	if (r < 0) {
		sb_buf_reset(&b);
		return NULL;
	}
	return b.data ? sb_buf_steal(&b) : strdup("");
}

bool sb_glob_star_match(const char *pattern, const char *text)
{
	/* Classic two-pointer wildcard matching: on a mismatch we only ever
	 * backtrack to the last '*', so the cost stays linear in practice and no
	 * pattern can make it exponential. */
	const char *star = NULL, *resume = NULL;

	while (*text) {
		if (*pattern == '*') {
			star = pattern++;
			resume = text;
		} else if (*pattern == *text) {
			pattern++;
			text++;
		} else if (star) {
			pattern = star + 1;
			text = ++resume;
		} else {
			return false;
		}
	}
	while (*pattern == '*')
		pattern++;
	return *pattern == '\0';
}

int sb_safe_atou64(const char *s, unsigned long long *ret)
{
	unsigned long long v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (~0ULL - (unsigned)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (unsigned)(*s - '0');
	}
	*ret = v;
	return 0;
}

int sb_read_file(const char *path, size_t max_size, char **ret, size_t *ret_size)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *data = NULL;
	size_t len = 0, cap = 0;
	struct stat st;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	for (;;) {
		ssize_t n;

		if (len + 4096 + 1 > cap) {
			size_t ncap = cap ? cap * 2 : 8192;
			char *nd = realloc(data, ncap);

			if (!nd)
				return -ENOMEM;
			data = nd;
			cap = ncap;
		}
		n = read(fd, data + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max_size)
			return -EFBIG;
	}
	if (!data) {
		data = strdup("");
		if (!data)
			return -ENOMEM;
	}
	data[len] = '\0';
	*ret = TAKE_PTR(data);
	if (ret_size)
		*ret_size = len;
	return 0;
}

char *sb_path_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir);
	char *r;

	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	if (asprintf(&r, "%.*s%s%s", (int)dl, dir, (dl == 1 && dir[0] == '/') ? "" : "/", name) < 0)
		return NULL;
	return r;
}

char *sb_path_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	while (slash > path && slash[-1] == '/')
		slash--;
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

char *sb_path_normalize(const char *path)
{
	size_t n = strlen(path);
	char *out = malloc(n + 2);
	size_t o = 0;
	const char *p = path;

	if (!out)
		return NULL;
	if (*p == '/')
		out[o++] = '/';
	while (*p) {
		const char *seg;
		size_t len;

		while (*p == '/')
			p++;
		seg = p;
		while (*p && *p != '/')
			p++;
		len = (size_t)(p - seg);
		if (len == 0 || (len == 1 && seg[0] == '.'))
			continue;
		if (len == 2 && seg[0] == '.' && seg[1] == '.') {
			if (o > 1) {
				o--; /* drop trailing '/' */
				while (o > 0 && out[o - 1] != '/')
					o--;
			}
			continue;
		}
		if (o > 0 && out[o - 1] != '/')
			out[o++] = '/';
		memcpy(out + o, seg, len);
		o += len;
	}
	if (o == 0)
		out[o++] = '.';
	out[o] = '\0';
	return out;
}

static size_t sb_levenshtein(const char *a, const char *b, size_t *row)
{
	size_t lb = strlen(b);

	/* One row of the DP table suffices: row[j] is the distance between the
	 * prefix of a read so far and the first j characters of b. */
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; a[i - 1]; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] == b[j - 1] ? 0 : 1);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

const char *sb_closest_name(const char *word, const char *const *candidates, size_t n,
			    size_t max_distance)
{
	_cleanup_free_ size_t *row = NULL;
	size_t longest = 0, best_distance = max_distance + 1;
	const char *best = NULL;

	for (size_t i = 0; i < n; i++)
		if (strlen(candidates[i]) > longest)
			longest = strlen(candidates[i]);
	row = malloc((longest + 1) * sizeof(*row));
	if (!row)
		return NULL; /* only a hint: no suggestion rather than a failure */
	for (size_t i = 0; i < n; i++) {
		size_t d = sb_levenshtein(word, candidates[i], row);

		if (d < best_distance) {
			best_distance = d;
			best = candidates[i];
		}
	}
	return best;
}

int sb_memfd_with(const char *name, const void *data, size_t len)
{
	return sb_memfd_with_flags(name, data, len, 0);
}

int sb_memfd_with_flags(const char *name, const void *data, size_t len, unsigned flags)
{
	_cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC | flags);
	const char *p = data;

	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	return TAKE_FD(fd);
}

int sb_strv_push_split(char ***v, const char *list)
{
	_cleanup_free_ char *copy = list ? strdup(list) : NULL;
	char *save = NULL;
	int r = 0;

	if (list && !copy)
		return -ENOMEM;
	for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; r >= 0 && d;
	     d = strtok_r(NULL, ":", &save))
		r = sb_strv_push(v, d);
	return r;
}
