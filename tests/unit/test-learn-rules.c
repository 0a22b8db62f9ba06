/* SPDX-License-Identifier: MIT */
/* learn-rules: from what a learning run observed to the missing profile lines. */
#include <limits.h>
#include <sys/stat.h>

#include "fake-env.h"
#include "learn-file.h"
#include "learn-rules.h"
#include "net-rule.h"
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

static void touch(const char *rel)
{
	FILE *f = fopen(at(rel), "w");

	if (f)
		fclose(f);
}

/* A profile from text, loaded as the launcher would (cwd = root). */
static struct sb_profile *profile_from(const char *text, char **env, char *ret_path)
{
	struct sb_profile *p = NULL;
	struct sb_diags diags = {0};
	struct sb_load_options opts = {
	    .getenv = fake_getenv, .getenv_userdata = env, .cwd = root, .home = root};
	FILE *f;

	snprintf(ret_path, PATH_MAX, "%s/profile", root);
	f = fopen(ret_path, "w");
	if (!f)
		return NULL;
	fputs(text, f);
	fclose(f);
	opts.path = ret_path;
	if (sb_profile_load(&opts, &p, &diags) < 0 || sb_profile_check(p, &opts, &diags) < 0) {
		for (size_t i = 0; i < diags.n; i++)
			tap_diag("%u: %s", diags.items[i].line, diags.items[i].message);
	}
	sb_diags_done(&diags);
	return p;
}

/* The lines of one section joined with '\n'. */
static char *section(const struct sb_learn_rules *r, enum sb_learn_section s)
{
	struct sb_buf b = {0};

	for (char **l = r->lines[s]; l && *l; l++)
		sb_buf_printf(&b, "%s%s", l == r->lines[s] ? "" : "\n", *l);
	return b.data ? sb_buf_steal(&b) : strdup("");
}

static void is_section(const struct sb_learn_rules *r, enum sb_learn_section s, const char *want,
		       const char *name)
{
	_cleanup_free_ char *got = section(r, s);

	if (!tap_ok(got && streq(got, want), "%s", name))
		tap_diag("got:\n%s\nwant:\n%s", got ? got : "(null)", want);
}

static void test_rewrite(void)
{
	char *env[] = {"VIRTUAL_ENV=/opt/venv", "HF_HOME=/srv/hf", "HF_DATASETS_CACHE=/srv/hfd",
		       NULL};
	struct sb_learn_context ctx = {
	    .cwd = "/home/u/proj", .home = "/home/u", .tmpdir = "/var/tmp", .env = env};
	static const struct {
		const char *path, *want;
	} cases[] = {
	    {"/home/u/proj", "."},
	    {"/home/u/proj/data", "./data"},
	    {"/home/u/other", "~/other"},
	    {"/home/u", "~"},
	    {"/var/tmp/x", "${TMPDIR:-/tmp}/x"},
	    {"/tmp/x", "/tmp/x"},
	    {"/opt/venv/lib", "${VIRTUAL_ENV}/lib"},
	    {"/srv/hf/hub", "${HF_HOME}/hub"},
	    {"/srv/hfd/x", "${HF_DATASETS_CACHE}/x"},
	    {"/home/u/projects", "~/projects"},
	    {"/etc", "/etc"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *got = sb_learn_rewrite_path(cases[i].path, &ctx);

		if (!tap_ok(got && streq(got, cases[i].want), "rewrite %s -> %s", cases[i].path,
			    cases[i].want))
			tap_diag("got %s", got ? got : "(null)");
	}
	ctx.cwd = "/";
	ctx.home = "/";
	{
		_cleanup_free_ char *got = sb_learn_rewrite_path("/srv/data", &ctx);

		tap_ok(got && streq(got, "/srv/data"), "a cwd or home of / rewrites nothing");
	}
}

static void test_files(void)
{
	char *env[] = {NULL};
	char path[PATH_MAX], want[2 * PATH_MAX];
	_cleanup_(sb_profile_freep) struct sb_profile *p = profile_from("", env, path);
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_set s = {0};
	char *skip[] = {at("interp"), NULL};
	struct sb_learn_context ctx = {.cwd = root, .env = env, .skip_dirs = skip};

	mkdir(at("data"), 0755);
	mkdir(at("data/sub"), 0755);
	mkdir(at("out"), 0755);
	mkdir(at("out/deep"), 0755);
	mkdir(at("interp"), 0755);
	mkdir(at("native"), 0755);
	touch("data/in.txt");
	touch("data/sub/more.txt");
	touch("out/result.json");
	touch("native/lib.dat");
	/* A real directory whose name no rule can carry ('#' starts a comment):
	 * a missing one would be dropped as a probe before it got that far. */
	mkdir(at("bad#name"), 0755);
	touch("bad#name/x");
	sb_learn_set_add_path(&s, at("data/in.txt"), false, false);
	sb_learn_set_add_path(&s, at("data/sub/more.txt"), false, false); /* nested: dropped */
	sb_learn_set_add_path(&s, at("out/result.json"), false, false);
	sb_learn_set_add_path(&s, at("out/result.json"), true, false);	/* merged: rw */
	sb_learn_set_add_path(&s, at("out/deep/x"), true, false);	/* nested rw: dropped */
	sb_learn_set_add_path(&s, at("gone/tmpdir/file"), true, false); /* walks up to root */
	sb_learn_set_add_path(&s, at("interp/os.py"), false, false);	/* interpreter: never */
	sb_learn_set_add_path(&s, "/proc/self/status", false, false);
	sb_learn_set_add_path(&s, "/dev/null", true, false);
	sb_learn_set_add_path(&s, at("native/lib.dat"), false, true);
	sb_learn_set_add_path(&s, "/etc/ld.so.cache", false, true); /* the loader's: not native */
	sb_learn_set_add_path(&s, at("bad#name/x"), false, false);  /* under ".": dropped */
	p->py_sandbox = true;
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, p, &r), 0, "build");
	/* The root itself is written (gone/...), so "." is rw and covers all
	 * the rest but the native record's comment line. */
	is_section(&r, SB_LEARN_FILES, "expose-rw=.", "a write at the top covers everything below");
	sb_learn_set_done(&s);
	sb_learn_rules_done(&r);

	sb_learn_set_add_path(&s, at("data/in.txt"), false, false);
	sb_learn_set_add_path(&s, at("data/sub/more.txt"), false, false);
	sb_learn_set_add_path(&s, at("out/result.json"), true, false);
	sb_learn_set_add_path(&s, at("out/deep/x"), true, false);
	sb_learn_set_add_path(&s, at("data/sub/new.txt"), true, false); /* rw under ro: kept */
	sb_learn_set_add_path(&s, at("native/lib.dat"), false, true);
	sb_learn_set_add_path(&s, "/etc/ld.so.cache", false, true);
	sb_learn_set_add_path(&s, at("interp/os.py"), false, false);
	sb_learn_set_add_path(&s, "/proc/self/status", false, false);
	sb_learn_set_add_path(&s, at("bad#name/x"), false, false);
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, p, &r), 0, "build");
	snprintf(want, sizeof(want),
		 "# '%s' was used, but its name cannot be written in a rule\n"
		 "expose-ro=./data\n"
		 "expose-rw=./data/sub\n"
		 "expose-rw=./out\n"
		 "# seen from native code (not the Python guard):\n"
		 "expose-ro=./native",
		 at("bad#name"));
	is_section(&r, SB_LEARN_FILES, want,
		   "parent dirs, rw where written, nested duplicates removed, native apart, an "
		   "unwritable name as a comment");
	TAP_IS_INT(r.n_rules, 4, "four rules (the unwritable name is not one)");
	sb_learn_set_done(&s);
}

static void test_probes(void)
{
	char *env[] = {NULL};
	char path[PATH_MAX];
	_cleanup_(sb_profile_freep) struct sb_profile *p = profile_from("", env, path);
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_set s = {0};
	struct sb_learn_context ctx = {.cwd = root, .env = env};

	mkdir(at("probe"), 0755);
	sb_learn_set_add_path(&s, at("probe/missing.ini"), false, false); /* parent exists */
	sb_learn_set_add_path(&s, at("nodir/sub/x.db"), false, false);	  /* nothing there */
	sb_learn_set_add_path(&s, at("newdir/sub/out.txt"), true, false); /* write: walks up */
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, p, &r), 0, "build");
	is_section(&r, SB_LEARN_FILES, "expose-rw=.",
		   "a write into a missing directory names the nearest existing one");
	sb_learn_rules_done(&r);
	sb_learn_set_done(&s);
	sb_learn_set_add_path(&s, at("probe/missing.ini"), false, false);
	sb_learn_set_add_path(&s, at("nodir/sub/x.db"), false, false);
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, p, &r), 0, "build");
	/* Issue 17: the replay gets the same "not found" without a grant. */
	is_section(&r, SB_LEARN_FILES, "",
		   "a read of a missing file names nothing, a probe into nothing names nothing");
	sb_learn_set_done(&s);
}

static void test_files_against_profile(void)
{
	char *env[] = {NULL};
	char path[PATH_MAX], text[3 * PATH_MAX];
	_cleanup_(sb_profile_freep) struct sb_profile *p = NULL;
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_set s = {0};
	struct sb_learn_context ctx = {.cwd = root, .env = env};

	mkdir(at("ro"), 0755);
	mkdir(at("rw"), 0755);
	snprintf(text, sizeof(text), "expose-ro=%s\nexpose-rw=%s\n", at("ro"), at("rw"));
	p = profile_from(text, env, path);
	ctx.learn_file = path;
	sb_learn_set_add_path(&s, at("ro/x"), true, false); /* ro -> rw: replaces line 1 */
	sb_learn_set_add_path(&s, at("rw/y"), true, false); /* granted */
	sb_learn_set_add_path(&s, at("ro/z"), false, true); /* native, granted */
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, p, &r), 0, "build");
	is_section(&r, SB_LEARN_FILES, "expose-rw=./ro", "what the profile grants is not added");
	TAP_IS_INT(r.n_replaced, 1, "the expose-ro line of the same directory is replaced");
	TAP_IS_INT(r.n_replaced ? r.replaced_lines[0] : 0, 1, "line 1");
	sb_learn_rules_done(&r);

	ctx.learn_file = "/elsewhere/profile";
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, p, &r), 0, "build");
	TAP_IS_INT(r.n_replaced, 0, "a line of another file is not edited");
	tap_ok(r.lines[SB_LEARN_FILES] && startswith(r.lines[SB_LEARN_FILES][0], "# '") &&
		   strstr(r.lines[SB_LEARN_FILES][0], "change that line"),
	       "it is named in a comment instead");
	TAP_IS_INT(r.n_rules, 0, "and no conflicting rule is written");
	sb_learn_set_done(&s);
}

static void test_net(void)
{
	char *env[] = {NULL};
	char path[PATH_MAX];
	_cleanup_(sb_profile_freep) struct sb_profile *p =
	    profile_from("net=ALLOW|tcp|10.0.0.1|22|OUT\n", env, path);
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_set s = {0};
	struct sb_learn_context ctx = {.cwd = root, .env = env};

	sb_learn_set_add_net(&s, "example.org", SB_NET_TCP, 443, SB_NET_OUT, false);
	sb_learn_set_add_net(&s, "example.org", SB_NET_TCP, 80, SB_NET_OUT, false);
	sb_learn_set_add_net(&s, "example.org", SB_NET_TCP, 80, SB_NET_OUT, false);
	sb_learn_set_add_net(&s, "127.0.0.1", SB_NET_TCP, 8080, SB_NET_IN, false);
	sb_learn_set_add_net(&s, "::1", SB_NET_UDP, 5353, SB_NET_OUT, false);
	sb_learn_set_add_net(&s, "10.0.0.1", SB_NET_TCP, 22, SB_NET_OUT, true);	 /* granted */
	sb_learn_set_add_net(&s, "192.0.2.1", SB_NET_UDP, 53, SB_NET_OUT, true); /* resolver */
	sb_learn_set_add_net(&s, "192.0.2.7", SB_NET_TCP, 5432, SB_NET_OUT, true);
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, p, &r), 0, "build");
	is_section(&r, SB_LEARN_SOCKET,
		   "net=ALLOW|tcp|127.0.0.1|8080|IN\n"
		   "net=ALLOW|udp|::1|5353|OUT\n"
		   "net=ALLOW|tcp|example.org|80,443|OUT\n"
		   "# seen from native code (not the Python guard):\n"
		   "net=ALLOW|tcp|192.0.2.7|5432|OUT",
		   "5-field lines, ports merged, resolver traffic and granted ones left out");
	for (char **l = r.lines[SB_LEARN_SOCKET]; l && *l; l++) {
		struct sb_net_rule rule;
		_cleanup_free_ char *err = NULL;

		if ((*l)[0] == '#')
			continue;
		if (tap_ok(sb_net_rule_parse(*l + 4, &rule, &err) == 0, "'%s' parses", *l))
			sb_net_rule_done(&rule);
	}
	sb_learn_set_done(&s);
}

static void test_imports(void)
{
	char *env[] = {NULL};
	char *stdlib[] = {"json", "os", "subprocess", "asyncore", "colorsys", NULL};
	char path[PATH_MAX];
	_cleanup_(sb_profile_freep) struct sb_profile *p =
	    profile_from("python-import=os\n", env, path);
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_set s = {0};
	struct sb_learn_context ctx = {.cwd = root, .env = env, .stdlib_modules = stdlib};
	const char *names[] = {"json",	   "mylib",	  "subprocess", "os",  "asyncore",
			       "colorsys", "pysandboxes", "requests",	"json"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		sb_learn_set_add_import(&s, names[i]);
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, p, &r), 0, "build");
	is_section(&r, SB_LEARN_IMPORT,
		   "# Dangerous\npython-import=subprocess\n"
		   "# Standard Python\npython-import=colorsys, json\n"
		   "# External\npython-import=mylib, requests\n"
		   "# Deprecated\npython-import=asyncore",
		   "grouped, sorted, allowed ones and pysandboxes left out");
	TAP_IS_INT(sb_learn_import_group("ctypes", stdlib), SB_LEARN_IMPORT_DANGEROUS, "ctypes");
	TAP_IS_INT(sb_learn_import_group("numpy", NULL), SB_LEARN_IMPORT_EXTERNAL, "numpy");
	sb_learn_set_done(&s);
}

static void test_env(void)
{
	char *env[] = {NULL};
	char path[PATH_MAX];
	_cleanup_(sb_profile_freep) struct sb_profile *p =
	    profile_from("env=LC_*=${LC_*}\nenv=A=1\nunenv=SECRET\n", env, path);
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_set s = {0};
	struct sb_learn_context ctx = {.cwd = root, .env = env};
	const char *names[] = {"TERM", "LC_ALL", "A", "SECRET", "HOME", "API_KEY", "bad-name"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		sb_learn_set_add_env(&s, names[i]);
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, p, &r), 0, "build");
	is_section(&r, SB_LEARN_ENVS, "env=API_KEY=${API_KEY}\nenv=HOME=${HOME}",
		   "env=K=${K} for what no rule passes; TERM, unenv= and odd names left out");
	sb_learn_set_done(&s);
}

static void test_api(void)
{
	char *env[] = {NULL};
	char path[PATH_MAX];
	_cleanup_(sb_profile_freep) struct sb_profile *p =
	    profile_from("python-api=DENY:posix.fork\n", env, path);
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_set s = {0};
	struct sb_learn_context ctx = {.cwd = root, .env = env};

	sb_learn_set_add_api(&s, sb_api_lookup("os.system"));
	sb_learn_set_add_api(&s, sb_api_lookup("os.fork"));
	/* The whole deserialization category. */
	for (size_t i = 0; i < sb_api_registry_size; i++)
		if (sb_api_registry[i].category == SB_API_DESERIALIZATION)
			sb_learn_set_add_api(&s, &sb_api_registry[i]);
	sb_learn_set_add_api_category(&s, SB_API_INTROSPECTION);
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, p, &r), 0, "build");
	is_section(&r, SB_LEARN_API,
		   "python-api=ALLOW:os.system\n"
		   "python-api=ALLOW:posix.system\n"
		   "python-api=ALLOW:os.fork\n"
		   "python-api=ALLOW:introspection\n"
		   "python-api=ALLOW:deserialization",
		   "functions with their twin (not an explicitly denied one); a category only "
		   "when whole or needed as such");
	sb_learn_set_done(&s);
}

/* remote-result-mode (spec section 6): one line, only where no profile has
 * one. */
static void result_case(const char *profile_text, const char *learn_text, const char *needs,
			size_t n_results, const char *want, bool want_warning, const char *name)
{
	char *env[] = {NULL};
	char path[PATH_MAX], other[PATH_MAX + 8];
	_cleanup_(sb_profile_freep) struct sb_profile *p = profile_from(profile_text, env, path);
	_cleanup_(sb_profile_freep) struct sb_profile *lp = NULL;
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_set s = {0};
	struct sb_learn_context ctx = {.cwd = root, .env = env};

	if (learn_text) {
		/* profile_from writes <root>/profile: keep the first one apart. */
		snprintf(other, sizeof(other), "%s.main", path);
		rename(path, other);
		lp = profile_from(learn_text, env, path);
		ctx.learn_profile = lp;
	}
	for (size_t i = 0; i < n_results; i++)
		sb_learn_set_add_result(&s, i == n_results / 2 ? needs : NULL);
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, p, &r), 0, name);
	is_section(&r, SB_LEARN_RESULT, want, name);
	if (!tap_ok(!!r.warning == want_warning, "%s: %s", name,
		    want_warning ? "a warning for the report" : "no warning"))
		tap_diag("warning: %s", r.warning ? r.warning : "(none)");
	if (want_warning && r.warning && needs)
		tap_ok(strstr(r.warning, needs) != NULL, "%s: the warning names %s", name, needs);
	sb_learn_set_done(&s);
}

static void test_result(void)
{
	result_case("", NULL, NULL, 0, "", false, "no result observed: nothing");
	result_case("", NULL, NULL, 3, "remote-result-mode=data-only", false,
		    "only data results: data-only");
	result_case("", NULL, "mod.Point", 3,
		    "# objects: a result needed mod.Point; check that this is wanted\n"
		    "remote-result-mode=objects",
		    true, "one object among data results: objects, under a comment naming it");
	result_case("remote-result-mode=objects\n", NULL, NULL, 2, "", false,
		    "profile says objects, only data seen: never tightened");
	result_case("remote-result-mode=objects\n", NULL, "mod.Point", 2, "", false,
		    "profile says objects and objects needed: not written twice");
	result_case("remote-result-mode=data-only\n", NULL, NULL, 2, "", false,
		    "profile says data-only, data seen: not written twice");
	/* Our choice: the user's data-only is neither duplicated (a second
	 * line is a configuration error) nor loosened; the report warns. */
	result_case("remote-result-mode=data_only\n", NULL, "mod.Point", 2, "", true,
		    "profile says data-only and objects needed: no line, a warning");
	result_case("", "remote-result-mode=objects\n", NULL, 2, "", false,
		    "the learn file (another file) says objects: never tightened");
	{
		FILE *f = fopen(at("inc"), "w");

		if (f) {
			fputs("remote-result-mode=objects\n", f);
			fclose(f);
		}
	}
	result_case("include \"./inc\"\n", NULL, NULL, 1, "", false,
		    "an include that says objects counts too: never tightened");
}

/* The learned line lands in the template's remote-result block. */
static void test_result_merge(void)
{
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	_cleanup_free_ char *text = NULL;
	struct sb_learn_set s = {0};
	struct sb_learn_context ctx = {.cwd = root};
	size_t added = 0;

	sb_learn_set_add_result(&s, "mod.Point");
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, NULL, &r), 0, "build without a profile");
	TAP_IS_STR(sb_learn_section_marker(SB_LEARN_RESULT), "learning_remote_result",
		   "the block's marker");
	TAP_IS_INT(sb_learn_file_merge(NULL, &r, 0, &text, &added), 0, "merge into the template");
	TAP_IS_INT(added, 1, "one rule line added");
	tap_ok(text &&
		   strstr(text, "# objects: a result needed mod.Point; check that this is "
				"wanted\nremote-result-mode=objects\n# </learning_remote_result>"),
	       "comment and line just before the closing marker");
	sb_learn_set_done(&s);
}

static void test_sets(void)
{
	struct sb_learn_strset set = {0};
	struct sb_learn_set s = {0};
	char key[64];
	bool all = true;

	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "/data/f%d", i);
		all = all && sb_learn_strset_add(&set, key) == 1;
		all = all && sb_learn_set_add_path(&s, key, i % 7 == 0, false) == 0;
	}
	tap_ok(all, "5000 distinct keys added");
	TAP_IS_INT(sb_learn_strset_add(&set, "/data/f4242"), 0, "a repeat is not added");
	tap_ok(sb_learn_strset_contains(&set, "/data/f0") &&
		   sb_learn_strset_contains(&set, "/data/f4999") &&
		   !sb_learn_strset_contains(&set, "/data/f5000"),
	       "lookups after growing");
	sb_learn_set_add_path(&s, "/data/f1", true, false);
	sb_learn_set_add_path(&s, "/data/f2", false, true);
	TAP_IS_INT(s.n_paths, 5000, "repeated paths merge");
	tap_ok(s.paths[1].write && !s.paths[2].write && !s.paths[2].native,
	       "write is kept from any access, native only if no guard record");
	sb_learn_strset_done(&set);
	sb_learn_set_done(&s);
}

/* What the program names is its choice: nothing it names may write a line of
 * its own, a pattern, or a grant wider than what it used. */
static void test_hostile_names(void)
{
	char *env[] = {NULL};
	char path[PATH_MAX], want[4 * PATH_MAX];
	_cleanup_(sb_profile_freep) struct sb_profile *p = profile_from("", env, path);
	_cleanup_(sb_learn_rules_done) struct sb_learn_rules r = {0};
	struct sb_learn_set s = {0};
	struct sb_learn_context ctx = {.cwd = root, .env = env};

	mkdir(at("h"), 0755);
	mkdir(at("h/x\nexpose-rw=~ #"), 0755);
	touch("h/x\nexpose-rw=~ #/f");
	mkdir(at("h/data "), 0755);
	touch("h/data /f");
	sb_learn_set_add_path(&s, at("h/x\nexpose-rw=~ #/f"), false, false);
	sb_learn_set_add_path(&s, at("h/data /f"), false, false);
	sb_learn_set_add_path(&s, "/etc/sb-learn-probe", true, false); /* a system tree */
	sb_learn_set_add_path(&s, "/tmp", true, false);		       /* a top-level dir */
	sb_learn_set_add_path(&s, "/tmp/gone/x", false, false);	       /* missing: a probe */
	sb_learn_set_add_import(&s, "*");
	sb_learn_set_add_import(&s, "a\nexpose-rw=~ #");
	sb_learn_set_add_import(&s, "json, os");
	sb_learn_set_add_net(&s, "*", SB_NET_TCP, 80, SB_NET_OUT, false);
	sb_learn_set_add_net(&s, "10.0.0.0/8", SB_NET_TCP, 80, SB_NET_OUT, false);
	sb_learn_set_add_net(&s, "a b", SB_NET_TCP, 80, SB_NET_OUT, false);
	sb_learn_set_add_result(&s, "m.C\nexpose-rw=~");
	p->py_sandbox = true;
	TAP_IS_INT(sb_learn_rules_build(&s, &ctx, p, &r), 0, "build");
	snprintf(want, sizeof(want),
		 "# '/etc' was written to: no rule should grant writing in a system or top-level "
		 "directory, write elsewhere\n"
		 "# '/tmp' was written to: no rule should grant writing in a system or top-level "
		 "directory, write elsewhere\n"
		 "# '%s' was used, but its name cannot be written in a rule\n"
		 "# '%s' was used, but its name cannot be written in a rule",
		 at("h/data "), at("h/x\\x0aexpose-rw=~ #"));
	is_section(&r, SB_LEARN_FILES, want,
		   "a newline escaped, an edge space and a system directory not written");
	is_section(&r, SB_LEARN_IMPORT, "", "no import the program could not spell");
	is_section(&r, SB_LEARN_SOCKET, "", "no host that is a pattern or no host name");
	is_section(&r, SB_LEARN_RESULT,
		   "# objects: a result needed m.C\\x0aexpose-rw=~; check that this is wanted\n"
		   "remote-result-mode=objects",
		   "a class name escaped");
	TAP_IS_INT(r.n_rules, 1, "one rule: the result mode");
	for (char **w = r.warnings; w && *w; w++)
		tap_ok(!strchr(*w, '\n'), "one-line warning: %s", *w);
	tap_ok(r.warning && !strchr(r.warning, '\n'), "one-line result warning");
	sb_learn_set_done(&s);
}

int main(void)
{
	char tmpl[] = "/tmp/sb-learn-rules-XXXXXX";

	char real[PATH_MAX];

	if (!mkdtemp(tmpl) || !realpath(tmpl, real) || strlen(real) >= sizeof(root))
		return tap_skip_all("no temporary directory");
	memcpy(root, real, strlen(real) + 1);
	test_rewrite();
	test_files();
	test_files_against_profile();
	test_probes();
	test_net();
	test_imports();
	test_env();
	test_api();
	test_result();
	test_result_merge();
	test_sets();
	test_hostile_names();
	{
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd) != 0)
			tap_diag("could not remove %s", root);
	}
	return tap_done();
}
