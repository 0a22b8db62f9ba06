/* SPDX-License-Identifier: MIT */
#include "diag.h"

#include <stdarg.h>

__attribute__((format(printf, 4, 0))) static int sb_diags_addv(struct sb_diags *d,
							       struct sb_origin origin,
							       bool warning, const char *fmt,
							       va_list ap)
{
	_cleanup_free_ char *msg = NULL;
	_cleanup_free_ char *file = NULL;

	if (vasprintf(&msg, fmt, ap) < 0) {
		msg = NULL;
		return -ENOMEM;
	}
	file = strdup(origin.file ? origin.file : "");
	if (!file)
		return -ENOMEM;
	if (d->n == d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 8;
		struct sb_diag *n = realloc(d->items, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		d->items = n;
		d->cap = ncap;
	}
	d->items[d->n++] = (struct sb_diag){
	    .file = TAKE_PTR(file),
	    .line = origin.line,
	    .warning = warning,
	    .message = TAKE_PTR(msg),
	};
	if (!warning)
		d->n_errors++;
	return 0;
}

int sb_diags_error(struct sb_diags *d, struct sb_origin origin, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = sb_diags_addv(d, origin, false, fmt, ap);
	va_end(ap);
	return r;
}

int sb_diags_warning(struct sb_diags *d, struct sb_origin origin, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = sb_diags_addv(d, origin, true, fmt, ap);
	va_end(ap);
	return r;
}

static int sb_diag_cmp(const void *a, const void *b)
{
	const struct sb_diag *x = a, *y = b;
	int c = strcmp(x->file, y->file);

	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->warning != y->warning)
		return x->warning ? 1 : -1;
	return strcmp(x->message, y->message);
}

void sb_diags_sort(struct sb_diags *d)
{
	size_t w = 0;

	if (d->n == 0)
		return;
	qsort(d->items, d->n, sizeof(*d->items), sb_diag_cmp);
	/* An include reached twice through different paths must not report the
	 * same problem twice. */
	for (size_t i = 0; i < d->n; i++) {
		if (w > 0 && sb_diag_cmp(&d->items[w - 1], &d->items[i]) == 0) {
			if (!d->items[i].warning)
				d->n_errors--;
			free(d->items[i].file);
			free(d->items[i].message);
			continue;
		}
		d->items[w++] = d->items[i];
	}
	d->n = w;
}

void sb_diags_done(struct sb_diags *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->items[i].file);
		free(d->items[i].message);
	}
	free(d->items);
	*d = (struct sb_diags){0};
}
