/* SPDX-License-Identifier: MIT */
/* learn-file: inserting learned lines into a rule file, backups, atomic and
 * link-safe writes. */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "fake-env.h"
#include "learn-file.h"
#include "tap.h"
#include "util.h"

static char root[1024];

/* A path under the test's directory; each call's string stays valid until the
 * end (the tests keep several at once). */
static char *at(const char *rel)
{
	static char **keep;
	char *b;

	if (asprintf(&b, "%s/%s", root, rel) < 0)
		abort();
	sb_strv_consume(&keep, b);
	return b;
}

static char *slurp(const char *path)
{
	char *text = NULL;
	size_t n;

	if (sb_read_file(path, 1 << 20, &text, &n) < 0)
		return NULL;
	return text;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void add(struct sb_learn_rules *r, enum sb_learn_section s, const char *line)
{
	sb_strv_push(&r->lines[s], line);
	if (line[0] != '#')
		r->n_rules++;
}

/* 2026/11/29 at 15:04 local time, whatever the zone. */
static time_t fixed_time(void)
{
	struct tm tm = {.tm_year = 126,
			.tm_mon = 10,
			.tm_mday = 29,
			.tm_hour = 15,
			.tm_min = 4,
			.tm_isdst = -1};

	return mktime(&tm);
}

static void test_template(void)
{
	for (size_t s = 0; s < SB_LEARN__N; s++) {
		char open_m[64], close_m[64];

		snprintf(open_m, sizeof(open_m), "# <%s>\n", sb_learn_section_marker(s));
		snprintf(close_m, sizeof(close_m), "# </%s>\n", sb_learn_section_marker(s));
		tap_ok(strstr(sb_learn_template, open_m) && strstr(sb_learn_template, close_m),
		       "the template has the %s block", sb_learn_section_marker(s));
	}
	/* Every key of §3.4 is explained. */
	static const char *const keys[] = {"os-sandbox=",
					   "py-sandbox=",
					   "learn=",
					   "env=",
					   "unenv=",
					   "expose-ro=",
					   "expose-rw=",
					   "ignore=",
					   "net=",
					   "python-import=",
					   "python-api=",
					   "eval-",
					   "remote-result-mode=",
					   "port=",
					   "limit-memory=",
					   "timeout="};
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		tap_ok(strstr(sb_learn_template, keys[i]) != NULL, "the template explains %s",
		       keys[i]);
}

/* Loads text as a profile (cwd = root): the number of errors. */
static size_t profile_errors(const char *text)
{
	char *env[] = {"HOME=/nonexistent-home", NULL};
	_cleanup_(sb_profile_freep) struct sb_profile *p = NULL;
	struct sb_diags diags = {0};
	struct sb_load_options opts = {.getenv = fake_getenv,
				       .getenv_userdata = env,
				       .cwd = root,
				       .home = "/nonexistent-home"};
	size_t n;

	put(at("loaded.prof"), text);
	opts.path = at("loaded.prof");
	if (sb_profile_load(&opts, &p, &diags) >= 0 || p)
		sb_profile_check(p, &opts, &diags);
	for (size_t i = 0; i < diags.n; i++)
		tap_diag("%u: %s", diags.items[i].line, diags.items[i].message);
	n = diags.n_errors;
	sb_diags_done(&diags);
	return n;
}

static void test_valid_profiles(void)
{
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	_cleanup_free_ char *out = NULL;
	size_t added = 0;

	TAP_IS_INT(profile_errors(sb_learn_template), 0, "the template is a valid profile");
	mkdir(at("data"), 0755);
	add(&r, SB_LEARN_ENVS, "env=LEARN_A=${LEARN_A}");
	add(&r, SB_LEARN_FILES, "expose-ro=./data");
	add(&r, SB_LEARN_FILES, "# seen from native code (not the Python guard):");
	add(&r, SB_LEARN_FILES, "expose-rw=${TMPDIR:-/tmp}");
	add(&r, SB_LEARN_SOCKET, "net=ALLOW|tcp|127.0.0.1|80,443|OUT");
	add(&r, SB_LEARN_SOCKET, "net=ALLOW|udp|::1|0|IN");
	add(&r, SB_LEARN_IMPORT, "# Standard Python");
	add(&r, SB_LEARN_IMPORT, "python-import=json, os");
	add(&r, SB_LEARN_API, "python-api=ALLOW:os.system");
	add(&r, SB_LEARN_API, "python-api=ALLOW:deserialization");
	TAP_IS_INT(sb_learn_file_merge(NULL, &r, fixed_time(), &out, &added), 0, "merge");
	TAP_IS_INT(profile_errors(out), 0, "a learned file is a valid profile");
}

static void test_merge(void)
{
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	_cleanup_free_ char *out = NULL, *again = NULL;
	size_t added = 0;
	const char *text = "expose-ro=/data\n"
			   "# <learning_guard_files>\n"
			   "expose-ro=/srv\n"
			   "# </learning_guard_files>\n"
			   "python-import=json\n";

	add(&r, SB_LEARN_FILES, "expose-ro=/srv"); /* present: not repeated */
	add(&r, SB_LEARN_FILES, "expose-rw=./out");
	add(&r, SB_LEARN_IMPORT, "# Standard Python");
	add(&r, SB_LEARN_IMPORT, "python-import=json"); /* present: header dropped too */
	add(&r, SB_LEARN_ENVS, "env=A=${A}");		/* no marker: appended */
	r.replaced_lines = calloc(1, sizeof(unsigned));
	r.replaced_lines[0] = 1;
	r.n_replaced = 1;
	TAP_IS_INT(sb_learn_file_merge(text, &r, fixed_time(), &out, &added), 0, "merge");
	TAP_IS_INT(added, 2, "two rule lines added");
	TAP_IS_STR(out,
		   "# expose-ro=/data  (replaced by learning on 2026/11/29: the program writes "
		   "there)\n"
		   "# <learning_guard_files>\n"
		   "expose-ro=/srv\n"
		   "# Add rules (2026/11/29 at 15:04)\n"
		   "expose-rw=./out\n"
		   "# </learning_guard_files>\n"
		   "python-import=json\n"
		   "# Add rules (2026/11/29 at 15:04)\n"
		   "env=A=${A}\n",
		   "inserted before the closing marker under a dated header, appended without "
		   "one, the replaced line commented out");
	sb_learn_rules_done(&r);
	add(&r, SB_LEARN_FILES, "expose-rw=./out");
	TAP_IS_INT(sb_learn_file_merge(out, &r, fixed_time(), &again, &added), 0, "merge again");
	TAP_IS_INT(added, 0, "nothing is added twice");
	TAP_IS_STR(again, out, "and the text is unchanged");
}

static void test_merge_template(void)
{
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	_cleanup_free_ char *out = NULL;
	const char *close_m, *line;
	size_t added = 0;

	add(&r, SB_LEARN_SOCKET, "net=ALLOW|tcp|example.org|443|OUT");
	TAP_IS_INT(sb_learn_file_merge(NULL, &r, fixed_time(), &out, &added), 0, "merge");
	close_m = strstr(out, "# </learning_guard_socket>");
	line =
	    strstr(out, "# Add rules (2026/11/29 at 15:04)\nnet=ALLOW|tcp|example.org|443|OUT\n");
	tap_ok(close_m && line && line < close_m && line > strstr(out, "# <learning_guard_socket>"),
	       "a new file is the template with the rules inside the marker block");
}

static void test_write(void)
{
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_write_result res = {0};
	_cleanup_free_ char *err = NULL;
	_cleanup_free_ char *first = NULL, *second = NULL, *old = NULL;
	const char *path = at("prof");
	struct stat st;

	add(&r, SB_LEARN_IMPORT, "python-import=json");
	TAP_IS_INT(sb_learn_file_write(path, &r, fixed_time(), &res, &err), 0, "new file");
	tap_ok(res.created && res.changed && res.added == 1 && !res.backup,
	       "created, one rule, no backup");
	sb_learn_write_result_done(&res);
	first = slurp(path);
	tap_ok(first && strstr(first, "python-import=json\n# </learning_guard_import>"),
	       "the rule is in the file");
	TAP_IS_INT(access(at("prof.old"), F_OK), -1, "no .old for a new file");

	TAP_IS_INT(sb_learn_file_write(path, &r, fixed_time(), &res, &err), 0, "same rules again");
	tap_ok(!res.changed && !res.backup, "an unchanged file is not rewritten");
	TAP_IS_INT(access(at("prof.old"), F_OK), -1, "and not backed up");
	sb_learn_write_result_done(&res);

	sb_learn_rules_done(&r);
	add(&r, SB_LEARN_IMPORT, "python-import=colorsys");
	chmod(path, 0640);
	TAP_IS_INT(sb_learn_file_write(path, &r, fixed_time(), &res, &err), 0, "relearn");
	TAP_IS_STR(res.backup ? res.backup : "", at("prof.old"), "backup as .old");
	sb_learn_write_result_done(&res);
	old = slurp(at("prof.old"));
	second = slurp(path);
	TAP_IS_STR(old, first, ".old holds the previous text");
	tap_ok(second && strstr(second, "python-import=json\n# Add rules (2026/11/29 at "
					"15:04)\npython-import=colorsys\n"),
	       "only the missing line was added");
	TAP_IS_INT(stat(path, &st) == 0 ? (long long)(st.st_mode & 0777) : -1, 0640,
		   "the file keeps its mode");

	sb_learn_rules_done(&r);
	add(&r, SB_LEARN_ENVS, "env=X=${X}");
	TAP_IS_INT(sb_learn_file_write(path, &r, fixed_time(), &res, &err), 0, "relearn again");
	TAP_IS_STR(res.backup ? res.backup : "", at("prof.old_1"), "then .old_1");
	sb_learn_write_result_done(&res);
	sb_learn_rules_done(&r);
	add(&r, SB_LEARN_ENVS, "env=Y=${Y}");
	TAP_IS_INT(sb_learn_file_write(path, &r, fixed_time(), &res, &err), 0, "and again");
	TAP_IS_STR(res.backup ? res.backup : "", at("prof.old_2"), "then .old_2");
	sb_learn_write_result_done(&res);
}

static void test_links(void)
{
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_write_result res = {0};
	_cleanup_free_ char *target_text = NULL, *tmp = NULL;
	char *err = NULL;
	const char *link_path = at("linked"), *target = at("victim");

	add(&r, SB_LEARN_IMPORT, "python-import=json");
	put(target, "precious\n");
	if (symlink(target, link_path) < 0)
		tap_diag("symlink: %s", strerror(errno));
	TAP_IS_INT(sb_learn_file_write(link_path, &r, fixed_time(), &res, &err), -ELOOP,
		   "a rule file that is a symbolic link is refused");
	tap_ok(err && strstr(err, "symbolic link"), "with a message saying so");
	free(err);
	err = NULL;
	target_text = slurp(target);
	TAP_IS_STR(target_text, "precious\n", "the link's target is untouched");

	/* A link planted at the temporary name. */
	if (asprintf(&tmp, "%s.%ld.tmp", at("prof2"), (long)getpid()) < 0)
		return;
	if (symlink(target, tmp) < 0)
		tap_diag("symlink: %s", strerror(errno));
	TAP_IS_INT(sb_learn_file_write(at("prof2"), &r, fixed_time(), &res, &err), -EEXIST,
		   "a link planted at <file>.<pid>.tmp is not followed");
	free(err);
	free(target_text);
	target_text = slurp(target);
	TAP_IS_STR(target_text, "precious\n", "its target is untouched");
	TAP_IS_INT(access(at("prof2"), F_OK), -1, "and nothing was written");
	unlink(tmp);
	/* A planted .old is skipped, not written through. */
	put(at("prof3"), "python-import=os\n");
	if (symlink(target, at("prof3.old")) < 0)
		tap_diag("symlink: %s", strerror(errno));
	TAP_IS_INT(sb_learn_file_write(at("prof3"), &r, fixed_time(), &res, &err), 0,
		   "relearn with a link at .old");
	TAP_IS_STR(res.backup ? res.backup : "", at("prof3.old_1"),
		   "the backup goes to the next free name");
	free(target_text);
	target_text = slurp(target);
	TAP_IS_STR(target_text, "precious\n", "the planted link's target is untouched");
	sb_learn_write_result_done(&res);
}

/* The learn file is read whole, up to 1 MiB: beyond that it is not a file
 * learning appends to. */
static void test_too_big(void)
{
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_write_result res = {0};
	_cleanup_free_ char *err = NULL, *err2 = NULL;
	char chunk[8192];
	size_t total = 0;
	ssize_t n;
	int fd;

	add(&r, SB_LEARN_IMPORT, "python-import=json");
	put(at("big"), "");
	if (truncate(at("big"), 2 * 1024 * 1024) < 0)
		tap_diag("truncate: %s", strerror(errno));
	TAP_IS_INT(sb_learn_file_write(at("big"), &r, fixed_time(), &res, &err), -EFBIG,
		   "a file over 1 MiB is refused");
	sb_learn_write_result_done(&res);

	/* A file whose size says nothing of its length: /proc's say 0, and
	 * kallsyms is longer than the limit, like a file that grows during the
	 * read. Measured first, as it may be absent or short where this runs. */
	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	while (fd >= 0 && total <= 1024 * 1024 && (n = read(fd, chunk, sizeof(chunk))) > 0)
		total += (size_t)n;
	if (fd >= 0)
		close(fd);
	if (total <= 1024 * 1024) {
		tap_ok(true, "# SKIP /proc/kallsyms is not over 1 MiB here");
		return;
	}
	TAP_IS_INT(sb_learn_file_write("/proc/kallsyms", &r, fixed_time(), &res, &err2), -EFBIG,
		   "a file that grows past 1 MiB during the read is too big, not out of memory");
	sb_learn_write_result_done(&res);
}

/* A file with a NUL byte is no rule file (the loader says so too): the merge
 * reads a C string and would write back only what precedes the NUL. */
static void test_nul_byte(void)
{
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_write_result res = {0};
	_cleanup_free_ char *err = NULL, *text = NULL;
	static const char content[] = "python-import=os\n\0python-import=json\n";
	const char *path = at("nul");
	size_t n = 0;
	FILE *f = fopen(path, "w");

	if (f) {
		fwrite(content, 1, sizeof(content) - 1, f);
		fclose(f);
	}
	add(&r, SB_LEARN_IMPORT, "python-import=colorsys");
	TAP_IS_INT(sb_learn_file_write(path, &r, fixed_time(), &res, &err), -EBADMSG,
		   "a rule file with a NUL byte is refused");
	tap_ok(err && strstr(err, "NUL byte"), "with a message saying so (%s)", err ? err : "");
	tap_ok(sb_read_file(path, 1 << 20, &text, &n) >= 0 && n == sizeof(content) - 1 &&
		   memcmp(text, content, n) == 0,
	       "the file is untouched");
	TAP_IS_INT(access(at("nul.old"), F_OK), -1, "and not backed up");
	sb_learn_write_result_done(&res);
}

int main(void)
{
	char tmpl[] = "/tmp/sb-learn-file-XXXXXX";

	char real[PATH_MAX];

	if (!mkdtemp(tmpl) || !realpath(tmpl, real) || strlen(real) >= sizeof(root))
		return tap_skip_all("no temporary directory");
	memcpy(root, real, strlen(real) + 1);
	test_template();
	test_valid_profiles();
	test_merge();
	test_merge_template();
	test_write();
	test_links();
	test_too_big();
	test_nul_byte();
	{
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd) != 0)
			tap_diag("could not remove %s", root);
	}
	return tap_done();
}
