/* SPDX-License-Identifier: MIT */
#include <sys/stat.h>

#include "file-policy.h"
#include "tap.h"
#include "util.h"

static char root[PATH_MAX];

static char *at(const char *rel)
{
	static char buf[4][PATH_MAX + NAME_MAX + 2];
	static unsigned n;
	char *b = buf[n++ % 4];

	snprintf(b, sizeof(buf[0]), "%s/%s", root, rel);
	return b;
}

static void touch(const char *rel)
{
	FILE *f = fopen(at(rel), "w");

	if (f)
		fclose(f);
}

static const char *resolve(const char *path, bool follow)
{
	static char out[PATH_MAX];

	if (sb_path_resolve(path, root, follow, out) < 0)
		return "(error)";
	return out + strlen(root);
}

static enum sb_fp_verdict decide(const struct sb_file_policy *p, const char *rel, bool write)
{
	char abs[PATH_MAX], res[PATH_MAX];
	const struct sb_fp_grant *g;
	const struct sb_fp_ignore *ig;

	if (sb_path_absolute(rel, root, abs) < 0 || sb_path_resolve(rel, root, true, res) < 0)
		return (enum sb_fp_verdict) - 1;
	return sb_file_policy_decide(p, rel, abs, res, write, &g, &ig);
}

static void test_resolve(void)
{
	char out[PATH_MAX];

	TAP_IS_INT(sb_path_absolute("a/./b/../c//", "/x/y", out), 0, "absolute");
	tap_ok(streq(out, "/x/y/a/c"), "absolute folds . and .. (%s)", out);
	sb_path_absolute("../../../..", "/x", out);
	tap_ok(streq(out, "/"), "absolute stops at / (%s)", out);
	/* Absolute paths already in that form are copied as they are; every
	 * other one is folded. */
	{
		static const char *const cases[][2] = {
		    {"/", "/"},		{"/a/b.c/.d/..e", "/a/b.c/.d/..e"},
		    {"/a//b", "/a/b"},	{"//a", "/a"},
		    {"/a/./b", "/a/b"}, {"/a/b/.", "/a/b"},
		    {"/a/b/..", "/a"},	{"/a/../b", "/b"},
		    {"/a/b/", "/a/b"},	{"/.", "/"},
		    {"/..", "/"},	{"/...", "/..."},
		};

		for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
			int r = sb_path_absolute(cases[i][0], "/base", out);

			tap_ok(r == 0 && streq(out, cases[i][1]), "absolute '%s' -> '%s' (%s)",
			       cases[i][0], cases[i][1], r == 0 ? out : "error");
		}
	}
	{
		char longp[PATH_MAX + 8];

		memset(longp, 'a', sizeof(longp) - 1);
		longp[sizeof(longp) - 1] = '\0';
		for (size_t i = 0; i < sizeof(longp) - 1; i += 200)
			longp[i] = '/';
		TAP_IS_INT(sb_path_absolute(longp, "/base", out), -ENAMETOOLONG,
			   "a clean absolute path longer than PATH_MAX");
	}

	tap_ok(streq(resolve("ro/f", true), "/ro/f"), "plain file");
	tap_ok(streq(resolve("rw/new/deeper", true), "/rw/new/deeper"), "missing tail appended");
	tap_ok(streq(resolve("rw/out", true), "/out/secret"), "symlink followed");
	tap_ok(streq(resolve("rw/out", false), "/rw/out"), "last link not followed");
	tap_ok(streq(resolve("rw/dangling", true), "/out/created"), "dangling link followed");
	tap_ok(streq(resolve("rw/rel/f", true), "/ro/f"), "relative link to a directory");
	tap_ok(streq(resolve("rw/rel/../rw", true), "/rw"), ".. after a link is physical");
	TAP_IS_INT(sb_path_resolve("rw/loop", root, true, out), -ELOOP, "link loop");
}

static void test_decide(void)
{
	struct sb_profile prof = {0};
	struct sb_expose_rule ex[2] = {
	    {.path = "ro", .resolved = at("ro"), .writable = false, .origin = {"p", 1}},
	    {.path = "rw", .resolved = at("rw"), .writable = true, .origin = {"p", 2}},
	};
	struct sb_name_rule ig[2] = {{.name = ".env", .origin = {"p", 3}},
				     {.name = "*.key", .origin = {"p", 4}}};
	struct sb_file_policy p;
	const struct sb_fp_ignore *hit;

	prof.exposes = ex;
	prof.n_exposes = 2;
	prof.ignores = ig;
	prof.n_ignores = 2;
	TAP_IS_INT(sb_file_policy_init(&p, &prof), 0, "init");
	TAP_IS_INT(decide(&p, "ro/f", false), SB_FP_ALLOW, "read under ro");
	TAP_IS_INT(decide(&p, "ro/f", true), SB_FP_READ_ONLY, "write under ro");
	TAP_IS_INT(decide(&p, "rw/x", true), SB_FP_ALLOW, "write under rw");
	TAP_IS_INT(decide(&p, "out/secret", false), SB_FP_NOT_EXPOSED, "outside");
	TAP_IS_INT(decide(&p, "rw/out", false), SB_FP_NOT_EXPOSED, "symlink out");
	TAP_IS_INT(decide(&p, "rw/dangling", true), SB_FP_NOT_EXPOSED, "dangling link out");
	TAP_IS_INT(decide(&p, "ro/.env", false), SB_FP_IGNORED, "ignored basename");
	TAP_IS_INT(decide(&p, "ro/.env/inner", false), SB_FP_IGNORED, "under an ignored dir");
	TAP_IS_INT(decide(&p, "rw/a.key", false), SB_FP_IGNORED, "ignored glob");
	TAP_IS_INT(decide(&p, "ro/.", false), SB_FP_ALLOW, "'.' is no name of its own");
	TAP_IS_INT(decide(&p, "ro", false), SB_FP_ALLOW, "the grant's root itself");
	TAP_IS_INT(decide(&p, "rox", false), SB_FP_NOT_EXPOSED, "a sibling sharing the prefix");
	TAP_IS_INT(decide(&p, "r", false), SB_FP_NOT_EXPOSED, "a prefix of the grant");
	tap_ok(sb_file_policy_entry_ignored(&p, at("rw"), ".env", &hit) && hit == &p.ignores[0],
	       "listing hides .env");
	tap_ok(!sb_file_policy_entry_ignored(&p, at("rw"), "env", &hit), "listing keeps env");
	TAP_IS_INT(sb_file_policy_add_implicit(&p, at("out"), false, false, "test"), 0, "implicit");
	TAP_IS_INT(decide(&p, "out/secret", false), SB_FP_ALLOW, "implicit read");
	TAP_IS_INT(decide(&p, "out/secret", true), SB_FP_READ_ONLY, "implicit is read-only");
	sb_file_policy_done(&p);

	/* A relative pattern never hides a whole root: a grant named like it. */
	ex[0] =
	    (struct sb_expose_rule){.path = ".env", .resolved = at("ro/.env"), .origin = {"p", 1}};
	prof.n_exposes = 1;
	prof.n_ignores = 1;
	TAP_IS_INT(sb_file_policy_init(&p, &prof), 0, "init 2");
	TAP_IS_INT(decide(&p, "ro/.env/inner", false), SB_FP_ALLOW, "root named like a pattern");
	sb_file_policy_done(&p);
}

/* A move of a directory renames what is below it: which ignore= rules may
 * hide something there by its path. */
static void test_ignore_below(void)
{
	struct sb_profile prof = {0};
	struct sb_expose_rule ex = {
	    .path = "rw", .resolved = at("rw"), .writable = true, .origin = {"p", 1}};
	char abs_rule[PATH_MAX], glob_rule[PATH_MAX];
	struct sb_name_rule ig[7] = {
	    {.name = abs_rule, .origin = {"p", 2}}, {.name = glob_rule, .origin = {"p", 3}},
	    {.name = "*.key", .origin = {"p", 4}},  {.name = "*secret*", .origin = {"p", 5}},
	    {.name = ".env", .origin = {"p", 6}},   {.name = "id_*.p[eu]?", .origin = {"p", 7}},
	    {.name = "*b*c", .origin = {"p", 8}}};
	struct sb_file_policy p;
	const struct sb_fp_ignore *hit;

	snprintf(abs_rule, sizeof(abs_rule), "%s", at("rw/private/key.txt"));
	snprintf(glob_rule, sizeof(glob_rule), "%s", at("rw/[t]op/*/key.txt"));
	prof.exposes = &ex;
	prof.n_exposes = 1;
	prof.ignores = ig;
	prof.n_ignores = 6;
	TAP_IS_INT(sb_file_policy_init(&p, &prof), 0, "init");
	hit = sb_file_policy_ignore_below(&p, at("rw/private"));
	tap_ok(hit == &p.ignores[0], "the parent of an absolute rule's path");
	tap_ok(sb_file_policy_ignore_below(&p, at("rw")) == &p.ignores[0], "a grandparent");
	tap_ok(sb_file_policy_ignore_below(&p, at("rw/top")) == &p.ignores[1],
	       "a directory a bracket and a star lead below");
	tap_ok(!sb_file_policy_ignore_below(&p, at("rw/privat")), "a prefix of a name is not it");
	tap_ok(!sb_file_policy_ignore_below(&p, at("rw/other")),
	       "name patterns (*.key, *secret*, .env, id_*.p[eu]?) keep what a move keeps");
	tap_ok(!sb_file_policy_ignore_below(&p, at("rw/private/key.txt")),
	       "nothing below the hidden path itself");
	sb_file_policy_done(&p);

	/* A relative pattern whose star can span names: the path matters. */
	prof.ignores = ig + 6;
	prof.n_ignores = 1;
	TAP_IS_INT(sb_file_policy_init(&p, &prof), 0, "init 2");
	tap_ok(sb_file_policy_ignore_below(&p, at("rw/b")) == &p.ignores[0],
	       "*b*c matches rw/b/c as a whole path");
	sb_file_policy_done(&p);
}

/* Implicit grants resolve below directories earlier grants showed to be
 * canonical: that shortcut must still follow links, and skip what is missing. */
static void test_implicit_resolution(void)
{
	struct sb_profile prof = {0};
	struct sb_file_policy p;

	TAP_IS_INT(sb_file_policy_init(&p, &prof), 0, "init for implicit grants");
	TAP_IS_INT(sb_file_policy_add_implicit(&p, root, false, false, "t"), 0, "canonical root");
	TAP_IS_INT(sb_file_policy_add_implicit(&p, at("rw/rel"), false, false, "t"), 0,
		   "a link below it");
	TAP_IS_INT(sb_file_policy_add_implicit(&p, at("rw/out"), false, false, "t"), 0,
		   "a file link below it");
	TAP_IS_INT(sb_file_policy_add_implicit(&p, at("rw/missing/x"), false, false, "t"), 0,
		   "a missing path");
	TAP_IS_INT(sb_file_policy_add_implicit(&p, at("rw/loop"), false, false, "t"), 0, "a loop");
	TAP_IS_INT((int)p.n_implicit, 3, "missing and looping paths grant nothing");
	tap_ok(p.n_implicit == 3 && streq(p.implicit[1].dir, at("ro")) && !p.implicit[1].file,
	       "rw/rel resolved to ro, a directory");
	tap_ok(p.n_implicit == 3 && streq(p.implicit[2].dir, at("out/secret")) &&
		   p.implicit[2].file,
	       "rw/out resolved to out/secret, a file");
	sb_file_policy_done(&p);
}

static bool has_canonical(const struct sb_file_policy *p, const char *dir)
{
	for (size_t i = 0; i < p->n_canonical; i++)
		if (streq(p->canonical[i], dir))
			return true;
	return false;
}

/* A file that resolves to itself makes its directory canonical (/dev for
 * /dev/null), once; one reached through a link does not, nor does a link's
 * directory; a canonical directory granted again is known to be one. */
static void test_implicit_canonical(void)
{
	struct sb_profile prof = {0};
	struct sb_file_policy p;

	TAP_IS_INT(sb_file_policy_init(&p, &prof), 0, "init for canonical directories");
	TAP_IS_INT(sb_file_policy_add_implicit(&p, at("ro/f"), true, false, "t"), 0, "a file");
	tap_ok(p.n_canonical == 1 && has_canonical(&p, at("ro")),
	       "its directory is canonical (%zu)", p.n_canonical);
	TAP_IS_INT(sb_file_policy_add_implicit(&p, at("ro/f"), true, false, "t"), 0, "again");
	TAP_IS_INT((int)p.n_canonical, 1, "remembered once");
	TAP_IS_INT((int)p.n_implicit, 1, "granted once");
	TAP_IS_INT(sb_file_policy_add_implicit(&p, at("rw/out"), true, false, "t"), 0,
		   "a file through a link");
	tap_ok(!has_canonical(&p, at("rw")) && !has_canonical(&p, at("out")),
	       "neither the link's directory nor the target's is taken as canonical");
	tap_ok(p.n_implicit == 2 && streq(p.implicit[1].dir, at("out/secret")) &&
		   p.implicit[1].file,
	       "the link's target is granted, as a file");
	TAP_IS_INT(sb_file_policy_add_implicit(&p, at("ro"), false, false, "t"), 0,
		   "the canonical directory itself");
	tap_ok(p.n_implicit == 3 && streq(p.implicit[2].dir, at("ro")) && !p.implicit[2].file,
	       "granted as a directory without a new look at it");
	TAP_IS_INT(sb_file_policy_add_implicit(&p, at("ro/.env"), false, false, "t"), 0,
		   "a directory below it");
	tap_ok(p.n_implicit == 4 && !p.implicit[3].file && has_canonical(&p, at("ro/.env")),
	       "a directory (mode from the resolver's lstat), canonical");
	sb_file_policy_done(&p);
}

/* The files python-sb takes rules from: no write to them, to a missing
 * include, to any .py-sandboxes, or to a directory on their way, whatever
 * the grants; reading stays the grants' business. */
static void test_rule_files(void)
{
	struct sb_profile prof = {0};
	_cleanup_free_ char *rw = NULL, *profile = NULL, *inc = NULL, *missing = NULL;
	struct sb_expose_rule ex = {.path = "rw", .writable = true, .origin = {"p", 1}};
	char *files[3] = {NULL}, *absent[2] = {NULL};
	struct sb_file_policy p;

	mkdir(at("rw/rules"), 0755);
	touch("rw/rules/.py-sandboxes");
	touch("rw/inc.profile");
	/* at() hands out four buffers in turn: copies outlive it. */
	rw = strdup(at("rw"));
	profile = strdup(at("rw/rules/.py-sandboxes"));
	inc = strdup(at("rw/inc.profile"));
	missing = strdup(at("rw/later/absent.profile"));
	if (!rw || !profile || !inc || !missing) {
		tap_ok(false, "memory");
		return;
	}
	ex.resolved = rw;
	files[0] = profile;
	files[1] = inc;
	absent[0] = missing;
	prof.exposes = &ex;
	prof.n_exposes = 1;
	prof.files = files;
	prof.missing_files = absent;
	prof.root_file = files[0];
	TAP_IS_INT(sb_file_policy_init(&p, &prof), 0, "init with rule files");
	TAP_IS_INT(decide(&p, "rw/rules/.py-sandboxes", true), SB_FP_RULE_FILE, "the profile");
	TAP_IS_INT(decide(&p, "rw/rules/.py-sandboxes", false), SB_FP_ALLOW, "read as granted");
	TAP_IS_INT(decide(&p, "rw/inc.profile", true), SB_FP_RULE_FILE, "an include");
	TAP_IS_INT(decide(&p, "rw/later/absent.profile", true), SB_FP_RULE_FILE,
		   "a missing include");
	TAP_IS_INT(decide(&p, "rw/later", true), SB_FP_RULE_FILE, "a missing include's directory");
	TAP_IS_INT(decide(&p, "rw/rules", true), SB_FP_RULE_FILE, "the profile's directory");
	TAP_IS_INT(decide(&p, "rw/other/.py-sandboxes", true), SB_FP_RULE_FILE,
		   "any .py-sandboxes");
	TAP_IS_INT(decide(&p, "rw/rules/x", true), SB_FP_ALLOW, "a file beside it");
	TAP_IS_INT(decide(&p, "rw/rules.old", true), SB_FP_ALLOW, "a sibling sharing the prefix");
	sb_file_policy_done(&p);
}

/* What site runs at the next start, before the guard: never writable. */
static void test_startup_code(void)
{
	struct sb_file_policy p = {0};
	char site[PATH_MAX + 64];

	snprintf(site, sizeof(site), "%s/home/.local/lib/python3.11/site-packages", root);
	TAP_IS_INT(sb_file_policy_add_startup_dir(&p, site), 0, "a user site that does not exist");
	tap_ok(p.n_startup_dirs == 1 && streq(p.startup_dirs[0], site), "kept as its path");
	tap_ok(sb_file_policy_startup_code(
		   &p, at("home/.local/lib/python3.11/site-packages/x.pth")) != NULL,
	       "a .pth file of a site directory");
	tap_ok(sb_file_policy_startup_code(&p, site) != NULL, "the site directory itself");
	tap_ok(sb_file_policy_startup_code(&p, at("home/.local")) != NULL,
	       "a directory on its way");
	tap_ok(sb_file_policy_startup_code(&p, at("anywhere/usercustomize.py")) != NULL &&
		   sb_file_policy_startup_code(&p, at("sitecustomize")) != NULL &&
		   sb_file_policy_startup_code(
		       &p, at("d/__pycache__/sitecustomize.cpython-311.pyc")) != NULL,
	       "sitecustomize and usercustomize anywhere, their bytecode too");
	tap_ok(sb_file_policy_startup_code(
		   &p, at("home/.local/lib/python3.11/site-packages/certifi/__init__.py")) != NULL,
	       "a module a .pth file may import at start-up");
	tap_ok(sb_file_policy_startup_code(&p, at("home/model.pth")) == NULL &&
		   sb_file_policy_startup_code(&p, at("home/.local/share/x")) == NULL &&
		   sb_file_policy_startup_code(
		       &p, at("home/.local/lib/python3.11/site-packagesX")) == NULL &&
		   sb_file_policy_startup_code(&p, at("sitecustomizer.py")) == NULL,
	       "a .pth elsewhere, a sibling tree, another name: ordinary files");
	sb_file_policy_done(&p);
}

int main(void)
{
	char tmpl[] = "/tmp/sb-fp-XXXXXX";

	if (!mkdtemp(tmpl))
		return tap_skip_all("no temporary directory");
	if (!realpath(tmpl, root))
		return tap_skip_all("cannot resolve the temporary directory");
	mkdir(at("ro"), 0755);
	mkdir(at("rw"), 0755);
	mkdir(at("out"), 0755);
	mkdir(at("ro/.env"), 0755);
	touch("ro/f");
	touch("out/secret");
	if (symlink(at("out/secret"), at("rw/out")) < 0 ||
	    symlink(at("out/created"), at("rw/dangling")) < 0 ||
	    symlink("../ro", at("rw/rel")) < 0 || symlink("loop", at("rw/loop")) < 0)
		return tap_skip_all("cannot create symbolic links");

	test_resolve();
	test_decide();
	test_ignore_below();
	test_implicit_resolution();
	test_implicit_canonical();
	test_rule_files();
	test_startup_code();

	{
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd) != 0)
			tap_diag("cannot remove %s", root);
	}
	return tap_done();
}
