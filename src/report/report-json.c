/* SPDX-License-Identifier: MIT */
/* The report as JSON (report.h), with jansson. What comes from the region was
 * written by the sandboxed program: strings are checked UTF-8 (or replaced),
 * references are bounds-checked by sb_report_shm_str(), counts were clamped by
 * the snapshot. */
#include "report.h"

#include <patchlevel.h>
#include <signal.h>

#include "utf8.h"
#include "util.h"

static json_t *text_or_null(const char *s, size_t n)
{
	_cleanup_free_ char *clean = NULL;

	if (!s || n == 0)
		return json_null();
	if (sb_utf8_valid(s, n))
		return json_stringn(s, n);
	clean = sb_utf8_sanitize(s, n, &n);
	return clean ? json_stringn(clean, n) : NULL;
}

static json_t *region_text(const struct sb_report_shm *in, struct sb_report_str ref)
{
	size_t n = 0;
	const char *s = sb_report_shm_str(in, ref, &n);

	return text_or_null(s, n);
}

static json_t *ms(uint64_t ns)
{
	/* Microsecond resolution is all a run's figures need. */
	return json_real((double)(ns / 1000) / 1000.0);
}

/* json_object_set_new() fails (and frees the value) on a NULL value: one
 * check at the end of each builder is enough. */
static int set(json_t *o, const char *key, json_t *value)
{
	return json_object_set_new(o, key, value);
}

const char *sb_report_limit_exceeded(const struct sb_report_outside *out,
				     const struct sb_report_shm *inside)
{
	uint64_t cpu_us = out->cpu_user_us + out->cpu_sys_us;

	if (out->timed_out)
		return "timeout";
	/* RLIMIT_CPU is rounded up to seconds (resource-limits.c); soft = hard,
	 * so the kernel's SIGKILL comes without a SIGXCPU first. The kernel
	 * kills on the task's run time, of which the user and system times
	 * the children's rusage adds up can show less (a fifth less on a
	 * virtual machine that counts steal time): a SIGKILL after three
	 * quarters of the limit is the limit's. */
	if (!out->exited && (out->signal == SIGKILL || out->signal == SIGXCPU) && out->limits &&
	    out->limits->cpu_ms &&
	    cpu_us * 4 >= (out->limits->cpu_ms + 999) / 1000 * 1000000ULL * 3)
		return "cpu";
	if (!out->exited && out->signal == SIGXFSZ)
		return "file-size";
	if (out->output_truncated)
		return "output";
	if (out->memory_exceeded)
		return "memory";
	/* From inside: the program could hide it, but only to its own loss. */
	if (inside && inside->memory_errors > 0 && !(out->exited && out->exit_code == 0))
		return "memory";
	return NULL;
}

static json_t *build_denials(const struct sb_report_shm *in)
{
	static const char *const kinds[] = {
	    [SB_REPORT_DENIAL_IMPORT] = "import",   [SB_REPORT_DENIAL_FILE] = "file",
	    [SB_REPORT_DENIAL_NETWORK] = "network", [SB_REPORT_DENIAL_API] = "api",
	    [SB_REPORT_DENIAL_EVAL] = "eval",
	};
	json_t *list = json_array();

	for (uint32_t i = 0; list && i < in->n_denials; i++) {
		const struct sb_report_denial *d = &in->denials[i];
		const char *kind =
		    d->kind < ELEMENTSOF(kinds) && kinds[d->kind] ? kinds[d->kind] : "other";
		json_t *o = json_object();

		if (!o || set(o, "kind", json_string(kind)) < 0 ||
		    set(o, "subject", region_text(in, d->subject)) < 0 ||
		    set(o, "rule_to_add", region_text(in, d->rule)) < 0 ||
		    set(o, "message", region_text(in, d->message)) < 0 ||
		    json_array_append_new(list, o) < 0) {
			json_decref(list);
			return NULL;
		}
	}
	return list;
}

static int by_own_time(const void *a, const void *b)
{
	const struct sb_report_fn *x = *(const struct sb_report_fn *const *)a;
	const struct sb_report_fn *y = *(const struct sb_report_fn *const *)b;

	if (x->own_ns != y->own_ns)
		return x->own_ns < y->own_ns ? 1 : -1;
	return (x->calls < y->calls) - (x->calls > y->calls);
}

static json_t *build_functions(const struct sb_report_shm *in, size_t *ret_total)
{
	_cleanup_free_ const struct sb_report_fn **fns = calloc(SB_REPORT_FN_SLOTS, sizeof(*fns));
	json_t *list = json_array();
	size_t n = 0;

	if (!fns || !list) {
		json_decref(list);
		return NULL;
	}
	for (uint32_t i = 0; i < in->n_functions; i++)
		if (in->functions[in->fn_used[i]].calls)
			fns[n++] = &in->functions[in->fn_used[i]];
	qsort(fns, n, sizeof(*fns), by_own_time);
	*ret_total = n;
	for (size_t i = 0; i < n && i < SB_REPORT_FUNCTIONS_LISTED; i++) {
		const struct sb_report_fn *f = fns[i];
		json_t *o = json_object();

		if (!o || set(o, "name", region_text(in, f->name)) < 0 ||
		    set(o, "file", region_text(in, f->file)) < 0 ||
		    set(o, "line", json_integer(f->line)) < 0 ||
		    set(o, "calls", json_integer((json_int_t)f->calls)) < 0 ||
		    set(o, "own_ms", ms(f->own_ns)) < 0 || set(o, "cum_ms", ms(f->cum_ns)) < 0 ||
		    json_array_append_new(list, o) < 0) {
			json_decref(list);
			return NULL;
		}
	}
	return list;
}

static json_t *build_lines(const struct sb_report_shm *in)
{
	json_t *o = json_object();

	for (uint32_t line = 1; o && line <= in->lines_max; line++) {
		char key[16];

		if (!in->line_counts[line])
			continue;
		snprintf(key, sizeof(key), "%u", line);
		if (set(o, key, json_integer(in->line_counts[line])) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *build_notes(const struct sb_report_shm *in)
{
	static const struct {
		uint32_t flag;
		const char *note;
	} notes[] = {
	    {SB_REPORT_F_FUNCTIONS_FULL, "more functions than the profile can hold: later ones "
					 "are not listed"},
	    {SB_REPORT_F_STRINGS_FULL, "names were cut: the name space was full"},
	    {SB_REPORT_F_LINES_BEYOND, "lines past 65535 are not counted"},
	    {SB_REPORT_F_ALLOC_PARTIAL,
	     "peak_python_alloc_bytes is not measured: the "
	     "interpreter's allocators are not malloc's (PYTHONMALLOC, -X dev)"},
	    {SB_REPORT_F_STACK_PARTIAL, "calls nested too deep were counted but not timed"},
	};
	json_t *list = json_array();

	for (size_t i = 0; list && i < ELEMENTSOF(notes); i++)
		if ((in->flags & notes[i].flag) &&
		    json_array_append_new(list, json_string(notes[i].note)) < 0) {
			json_decref(list);
			return NULL;
		}
	return list;
}

static json_t *build_profile(const struct sb_report_shm *in)
{
	json_t *o = json_object();
	size_t total = 0;

	if (!o || set(o, "functions", build_functions(in, &total)) < 0 ||
	    set(o, "functions_total", json_integer((json_int_t)total)) < 0 ||
	    set(o, "file", region_text(in, in->program_file)) < 0 ||
	    set(o, "lines", build_lines(in)) < 0 ||
	    set(o, "calls_total", json_integer((json_int_t)in->calls_total)) < 0 ||
	    set(o, "exceptions_raised", json_integer((json_int_t)in->exceptions_raised)) < 0 ||
	    set(o, "notes", build_notes(in)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Which fields the program could have influenced: the docs' table, in the
 * report itself. */
static json_t *build_sources(void)
{
	return json_pack("{s:[s,s,s,s,s,s,s,s,s,s], s:[s,s,s,s]}", "outside", "exit_code", "signal",
			 "signal_name", "timed_out", "limit_exceeded", "time", "memory.peak_rss_kb",
			 "output", "python", "provider", "inside", "denials", "denials_total",
			 "profile", "memory.peak_python_alloc_bytes");
}

json_t *sb_report_build(const struct sb_report_outside *out, const struct sb_report_shm *in)
{
	const char *limit = sb_report_limit_exceeded(out, in);
	json_t *r = json_object();

	if (!r)
		return NULL;
	if (set(r, "version", json_integer(SB_REPORT_VERSION)) < 0 ||
	    set(r, "exit_code", out->exited ? json_integer(out->exit_code) : json_null()) < 0 ||
	    set(r, "signal", out->exited ? json_null() : json_integer(out->signal)) < 0 ||
	    set(r, "signal_name",
		out->exited || !sigabbrev_np(out->signal)
		    ? json_null()
		    : json_sprintf("SIG%s", sigabbrev_np(out->signal))) < 0 ||
	    set(r, "timed_out", json_boolean(out->timed_out)) < 0 ||
	    set(r, "limit_exceeded", limit ? json_string(limit) : json_null()) < 0 ||
	    set(r, "time",
		json_pack("{s:o, s:o, s:o}", "wall_ms", ms(out->wall_ns), "cpu_user_ms",
			  ms(out->cpu_user_us * 1000), "cpu_sys_ms", ms(out->cpu_sys_us * 1000))) <
		0 ||
	    set(r, "memory",
		json_pack("{s:I, s:o}", "peak_rss_kb", (json_int_t)out->peak_rss_kb,
			  "peak_python_alloc_bytes",
			  in ? json_integer((json_int_t)in->peak_python_alloc_bytes)
			     : json_null())) < 0 ||
	    set(r, "output",
		out->output_counted
		    ? json_pack("{s:I, s:I, s:b}", "stdout_bytes", (json_int_t)out->stdout_bytes,
				"stderr_bytes", (json_int_t)out->stderr_bytes, "truncated",
				out->output_truncated)
		    : json_pack("{s:n, s:n, s:b}", "stdout_bytes", "stderr_bytes", "truncated",
				false)) < 0 ||
	    set(r, "denials", in ? build_denials(in) : json_array()) < 0 ||
	    set(r, "denials_total", json_integer(in ? (json_int_t)in->denials_total : 0)) < 0 ||
	    set(r, "profile", in ? build_profile(in) : json_null()) < 0 ||
	    set(r, "python", json_string(PY_VERSION)) < 0 ||
	    set(r, "provider", out->provider ? json_string(out->provider) : json_null()) < 0 ||
	    set(r, "measured", build_sources()) < 0) {
		json_decref(r);
		return NULL;
	}
	return r;
}

int sb_report_write(int fd, const json_t *report)
{
	_cleanup_free_ char *text = json_dumps(report, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	size_t len, done = 0;

	if (!text)
		return -ENOMEM;
	len = strlen(text);
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	while (write(fd, "\n", 1) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}
