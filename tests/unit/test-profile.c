/* SPDX-License-Identifier: MIT */
/* Loader behaviour that needs several files or the command line: includes,
 * overrides, the learn=false lock, error collection and ordering. */
#include <sys/stat.h>

#include "profile.h"
#include "profile-keys.h"
#include "landlock.h"
#include "provider.h"
#include "fake-env.h"
#include "tap.h"

static char root[] = "/tmp/sb-profile-test-XXXXXX";
static char *host_env[] = {"HOME=/home/tester", "OS_SANDBOX=none", "FOO=foo", NULL};

static void put(const char *name, const char *text)
{
	_cleanup_free_ char *path = sb_path_join(root, name);
	_cleanup_free_ char *dir = sb_path_dirname(path);
	FILE *f;

	mkdir(dir, 0755);
	f = fopen(path, "we");
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

struct result {
	struct sb_profile *p;
	struct sb_diags d;
	int r;
	struct sb_load_options opts;
	char *path;
};

static void load(struct result *res, const char *name, char **cli)
{
	memset(res, 0, sizeof(*res));
	res->path = name ? sb_path_join(root, name) : NULL;
	res->opts = (struct sb_load_options){
	    .path = res->path,
	    .cli_rules = cli,
	    .getenv = fake_getenv,
	    .getenv_userdata = host_env,
	    .cwd = root,
	    .home = "/home/tester",
	    .learn_default = "/tmp/learned.py-sandboxes",
	};
	res->r = sb_profile_load(&res->opts, &res->p, &res->d);
	if (res->r >= 0 || res->r == -EINVAL) {
		int c = sb_profile_check(res->p, &res->opts, &res->d);

		if (res->r == 0)
			res->r = c;
	}
	sb_diags_sort(&res->d);
}

static void done(struct result *res)
{
	sb_profile_free(res->p);
	sb_diags_done(&res->d);
	free(res->path);
}

static bool has_diag(const struct result *res, bool warning, const char *file, unsigned line,
		     const char *text)
{
	for (size_t i = 0; i < res->d.n; i++) {
		const struct sb_diag *d = &res->d.items[i];
		size_t fl = strlen(d->file), nl = strlen(file);

		if (d->warning == warning && d->line == line && fl >= nl &&
		    streq(d->file + fl - nl, file) && strstr(d->message, text))
			return true;
	}
	return false;
}

/* True when some error (not warning) at line `line` of a file whose name ends
 * with `file` contains `text`. */
static bool has_error(const struct result *res, const char *file, unsigned line, const char *text)
{
	return has_diag(res, false, file, line, text);
}

static bool has_warning(const struct result *res, const char *file, unsigned line, const char *text)
{
	return has_diag(res, true, file, line, text);
}

static void test_includes(void)
{
	struct result res;

	put("inc/main.prof", "include \"sibling.inc\"\ninclude \"./top.inc\"\n"
			     "include \"missing.inc\"\ninclude \"main.prof\"\npython-import=a\n");
	put("inc/sibling.inc", "python-import=b\ninclude \"main.prof\"\n");
	put("top.inc", "python-import=c\n");
	load(&res, "inc/main.prof", NULL);
	TAP_IS_INT(res.r, 0, "includes load");
	TAP_IS_INT(res.p->n_imports, 3, "each file read once despite the loops");
	TAP_IS_STR(res.p->imports[0].name, "b", "bare include is next to the includer");
	TAP_IS_STR(res.p->imports[1].name, "c", "./ include is relative to the cwd");
	TAP_IS_INT(sb_strv_length(res.p->files), 3, "three files read (missing one skipped)");
	done(&res);

	put("unreadable/main.prof", "include \"secret.inc\"\n");
	put("unreadable/secret.inc", "python-import=x\n");
	{
		_cleanup_free_ char *secret = sb_path_join(root, "unreadable/secret.inc");

		chmod(secret, 0);
		load(&res, "unreadable/main.prof", NULL);
		/* root reads anything: the check only means something unprivileged. */
		if (geteuid() != 0) {
			TAP_IS_INT(res.r, -EINVAL, "unreadable include is an error");
			tap_ok(has_error(&res, "main.prof", 1, "cannot read include"),
			       "error names the include line");
		}
		done(&res);
	}
}

static void test_scalars_and_cli(void)
{
	struct result res;
	char *cli_os[] = {"os-sandbox=subprocess", "python-import=cli", NULL};
	char *cli_twice[] = {"port=1", "port=2", NULL};

	put("scalar/main.prof", "os-sandbox=${OS_SANDBOX:-auto}\ninclude \"other.inc\"\n"
				"python-import=file\n");
	put("scalar/other.inc", "\n\nos-sandbox=bwrap\n");
	load(&res, "scalar/main.prof", NULL);
	TAP_IS_INT(res.r, -EINVAL, "two os-sandbox lines across includes");
	tap_ok(has_error(&res, "other.inc", 3, "Multiple os-sandbox parameters"),
	       "Multiple os-sandbox parameters at the second line");
	done(&res);

	put("cli/main.prof", "os-sandbox=${OS_SANDBOX:-auto}\npython-import=file\n");
	load(&res, "cli/main.prof", NULL);
	TAP_IS_INT(res.p->os_sandbox, SB_OS_NONE, "${OS_SANDBOX:-auto} reads the host variable");
	done(&res);
	load(&res, "cli/main.prof", cli_os);
	TAP_IS_INT(res.r, 0, "command-line override loads");
	TAP_IS_INT(res.p->os_sandbox, SB_OS_SUBPROCESS, "command line overrides a scalar");
	TAP_IS_STR(res.p->scalar_origin[SB_KEY_OS_SANDBOX].file, SB_ORIGIN_CLI,
		   "origin of the override is the command line");
	TAP_IS_INT(res.p->n_imports, 2, "list keys accumulate file and command line");
	tap_ok(res.p->has_cli_rules, "command-line rules are recorded");
	done(&res);
	load(&res, "cli/main.prof", cli_twice);
	tap_ok(has_error(&res, SB_ORIGIN_CLI, 2, "Multiple port parameters"),
	       "a scalar twice on the command line is an error");
	done(&res);
}

/* Every scalar key has a name (limit-* and timeout had none), and the name
 * finds the key's own row of the key table, as a scalar (once per file). */
static void test_scalar_key_names(void)
{
	struct result res;
	char *cli_limits[] = {"limit-cpu=2s", "timeout=1m", NULL};

	for (int k = 0; k < SB_SCALAR__N; k++) {
		const char *name = sb_scalar_key_name((enum sb_scalar_key)k);
		const struct sb_key_def *def = name ? sb_key_lookup(name) : NULL;

		tap_ok(def && def->scalar == k, "scalar key %d is named (%s) and its row says so",
		       k, name ? name : "NULL");
	}
	TAP_IS_STR(sb_scalar_key_name(SB_KEY_LIMIT_OPEN_FILES), "limit-open-files",
		   "a limit key's name");
	TAP_IS_STR(sb_scalar_key_name(SB_KEY_TIMEOUT), "timeout", "timeout's name");
	tap_ok(sb_scalar_key_name(SB_SCALAR__N) == NULL, "past the end: NULL");

	put("limits/main.prof", "limit-cpu=1s\ntimeout=5s\n");
	load(&res, "limits/main.prof", cli_limits);
	TAP_IS_INT(res.r, 0, "limits overridden on the command line");
	TAP_IS_INT(res.p->limits.cpu_ms, 2000, "limit-cpu from the command line");
	TAP_IS_INT(res.p->limits.timeout_ms, 60000, "timeout from the command line");
	TAP_IS_STR(res.p->scalar_origin[SB_KEY_TIMEOUT].file, SB_ORIGIN_CLI,
		   "a limit's origin is recorded");
	done(&res);
}

static void test_learn(void)
{
	struct result res;
	char *cli_learn[] = {"learn", NULL};
	char *cli_rule[] = {"expose-ro=/etc", NULL};
	char *cli_false[] = {"learn=false", NULL};

	put("learn/main.prof", "learn=out.prof\n");
	load(&res, "learn/main.prof", NULL);
	TAP_IS_INT(res.p->learn, SB_LEARN_FILE, "learn=<file>");
	tap_ok(res.p->learn_file && strstr(res.p->learn_file, "/learn/out.prof"),
	       "a relative learn file is next to the rule file (%s)", res.p->learn_file);
	done(&res);

	put("learn/nodir.prof", "learn=no/such/dir/out.prof\n");
	load(&res, "learn/nodir.prof", NULL);
	tap_ok(has_error(&res, "nodir.prof", 1, "must exist"), "learn= parent must exist");
	done(&res);

	put("lock/main.prof", "learn=false\npython-import=json\n");
	load(&res, "lock/main.prof", NULL);
	TAP_IS_INT(res.r, 0, "learn=false alone is fine");
	tap_ok(res.p->learn_locked && res.p->learn == SB_LEARN_OFF, "lock recorded");
	done(&res);
	load(&res, "lock/main.prof", cli_learn);
	tap_ok(
	    has_error(&res, "main.prof", 1, "learning mode is forbidden, but requested by --learn"),
	    "learn=false + --learn refused");
	done(&res);
	load(&res, "lock/main.prof", cli_rule);
	tap_ok(has_error(&res, "main.prof", 1, "learning mode is forbidden"),
	       "learn=false + a command-line rule refused");
	done(&res);
	load(&res, "lock/main.prof", cli_false);
	tap_ok(has_error(&res, SB_ORIGIN_CLI, 1, "only a rule file"),
	       "learn=false on the command line is refused");
	done(&res);

	put("plain/main.prof", "python-import=json\n");
	load(&res, "plain/main.prof", cli_learn);
	TAP_IS_STR(res.p->learn_file, "/tmp/learned.py-sandboxes",
		   "--learn alone writes into the chosen rule file");
	tap_ok(res.p->learn_requested_by_cli, "--learn recorded as from the command line");
	done(&res);
}

static void test_errors_collected(void)
{
	struct result res;

	put("errs/main.prof", "nope\nos-sandbox=foo\ninclude \"b.inc\"\nport=x\nexpose-ro=/etc\n"
			      "expose-rw=/etc\n");
	put("errs/b.inc", "bogus-key=1\nenv=A=${X:Y}\n");
	load(&res, "errs/main.prof", NULL);
	TAP_IS_INT(res.r, -EINVAL, "errors reported");
	TAP_IS_INT(res.d.n_errors, 6, "every error collected");
	tap_ok(has_error(&res, "b.inc", 1, "Invalid rule 'bogus-key=1'"), "unknown key");
	tap_ok(has_error(&res, "b.inc", 2, "invalid variable expansion '${X:Y}'"), "bad ${}");
	tap_ok(has_error(&res, "main.prof", 1, "Invalid rule 'nope'"), "line without =");
	tap_ok(has_error(&res, "main.prof", 2, "Invalid os-sandbox 'foo'"), "bad provider");
	tap_ok(has_error(&res, "main.prof", 4, "Invalid port 'x'"), "bad port");
	tap_ok(has_error(&res, "main.prof", 6, "both read-only and read-write"), "ro and rw");
	tap_ok(res.d.n >= 2 && strcmp(res.d.items[0].file, res.d.items[res.d.n - 1].file) <= 0,
	       "sorted by file");
	done(&res);

	load(&res, "does-not-exist.prof", NULL);
	TAP_IS_INT(res.r, 0, "a missing root file is not an error");
	tap_ok(res.p->root_missing, "it is reported as missing (learning trigger)");
	done(&res);
}

/* Fail-open shapes the spec's rules would allow: a link to nothing taken for
 * a missing file (learning: no confinement), an unset variable turning
 * ${DATA}/ into /. */
static void test_fail_closed(void)
{
	struct result res;
	_cleanup_free_ char *link = sb_path_join(root, "dangling.prof");
	_cleanup_free_ char *inc_link = sb_path_join(root, "fc/dangling.inc");

	tap_ok(symlink("/nonexistent/share/.py-sandboxes", link) == 0, "a link to nothing");
	load(&res, "dangling.prof", NULL);
	TAP_IS_INT(res.r, -EINVAL, "a root file linked to nothing is an error");
	tap_ok(!res.p || !res.p->root_missing, "not a missing file (no learning)");
	tap_ok(has_error(&res, "dangling.prof", 0, "symbolic link to a file that does not exist"),
	       "the error says so");
	done(&res);

	put("fc/main.prof", "include \"dangling.inc\"\n");
	tap_ok(symlink("/nonexistent/site.inc", inc_link) == 0, "an include linking to nothing");
	load(&res, "fc/main.prof", NULL);
	TAP_IS_INT(res.r, -EINVAL, "an include linked to nothing is an error");
	tap_ok(has_error(&res, "main.prof", 1, "symbolic link to a file that does not exist"),
	       "named at the include line");
	done(&res);

	{
		_cleanup_free_ char *text = NULL;

		put("foo/keep", "");
		tap_ok(asprintf(&text,
				"expose-ro=${UNSET_DATA}/\nexpose-ro=%s/${FOO}\n"
				"expose-ro=${UNSET_DATA:-/tmp}\nignore=${UNSET_DATA}/*.key\n"
				"include \"${UNSET_CONF}/site.inc\"\nenv=X=${UNSET_DATA}\n",
				root) > 0,
		       "a profile with unset variables");
		put("fc/vars.prof", text ? text : "");
	}
	load(&res, "fc/vars.prof", NULL);
	TAP_IS_INT(res.r, -EINVAL, "an unset variable in a path is an error");
	TAP_IS_INT(res.d.n_errors, 3,
		   "expose-ro, ignore and include; not the set one, "
		   "the default, env=");
	tap_ok(has_error(&res, "vars.prof", 1, "${UNSET_DATA} is not set (or empty)"),
	       "expose-ro=${UNSET_DATA}/ names the variable");
	tap_ok(has_error(&res, "vars.prof", 1, "name '/'"), "and the path it would grant");
	tap_ok(has_error(&res, "vars.prof", 4, "${UNSET_DATA} is not set"), "ignore=");
	tap_ok(has_error(&res, "vars.prof", 5, "${UNSET_CONF} is not set"), "include");
	done(&res);
}

static void test_provider_select(void)
{
	const struct sb_provider *p = NULL;
	_cleanup_free_ char *note = NULL, *err = NULL;
	bool warn = true, have_landlock = sb_landlock_abi() >= 0;
	char *path;

	TAP_IS_INT(sb_provider_select(SB_OS_UNSET, SB_MODE_ENFORCE, &p, &note, &warn, &err), 0,
		   "auto resolves");
	TAP_IS_STR(p ? p->name : NULL, have_landlock ? "landlock" : "subprocess",
		   "auto is landlock where the kernel has it, else subprocess");
	tap_ok(have_landlock ? note == NULL : (note && strstr(note, "landlock") && warn),
	       "a fallback says why, with a warning (the kernel is the reason)");
	free(note);
	note = NULL;
	/* unshare: where user namespaces exist (its probe is that cheap; the
	 * sysctls are diagnosed when creating the namespaces fails). */
	free(err);
	err = NULL;
	TAP_IS_INT(sb_provider_select(SB_OS_UNSHARE, SB_MODE_ENFORCE, &p, &note, &warn, &err),
		   access("/proc/self/ns/user", F_OK) == 0 ? 0 : -EOPNOTSUPP,
		   "unshare named: selected where the kernel has user namespaces");
	/* The wrappers' binaries are looked up on PATH: none there. */
	path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	setenv("PATH", "/nonexistent", 1);
	for (int id = SB_OS_BWRAP; id <= SB_OS_QEMU; id++) {
		const char *package = id == SB_OS_BWRAP	     ? "package bubblewrap"
				      : id == SB_OS_FIREJAIL ? "package firejail"
							     : "will not fall back";

		free(err);
		err = NULL;
		p = NULL;
		tap_ok(sb_provider_select((enum sb_os_sandbox)id, SB_MODE_ENFORCE, &p, &note, &warn,
					  &err) < 0 &&
			   !p && err && strstr(err, "will not fall back") && strstr(err, package),
		       "a named provider that is not available fails closed (%s)%s",
		       sb_os_sandbox_name((enum sb_os_sandbox)id),
		       strstr(package, "package") ? ", naming the Debian package" : "");
	}
	if (path)
		setenv("PATH", path, 1);
	else
		unsetenv("PATH");
	free(path);
	free(err);
	err = NULL;
	TAP_IS_INT(sb_provider_select(SB_OS_LANDLOCK, SB_MODE_ENFORCE, &p, &note, &warn, &err),
		   have_landlock ? 0 : -ENOSYS, "landlock named: runs where the kernel has it");
	TAP_IS_INT(sb_provider_select(SB_OS_NONE, SB_MODE_ENFORCE, &p, &note, &warn, &err), 0,
		   "none runs");
	TAP_IS_INT(sb_provider_select(SB_OS_SUBPROCESS, SB_MODE_ENFORCE, &p, &note, &warn, &err), 0,
		   "subprocess runs");

	/* Learning runs under subprocess whatever was asked, even a provider this
	 * version does not have, and says so for --explain. */
	free(note);
	note = NULL;
	free(err);
	err = NULL;
	p = NULL;
	TAP_IS_INT(sb_provider_select(SB_OS_BWRAP, SB_MODE_LEARN, &p, &note, &warn, &err), 0,
		   "learning: a named provider is not applied");
	TAP_IS_STR(p ? p->name : NULL, "subprocess", "learning runs under subprocess");
	tap_ok(note && strstr(note, "os-sandbox=bwrap does not apply while learning") && !warn,
	       "learning: the note names what was asked, without a warning");
	free(note);
	note = NULL;
	TAP_IS_INT(sb_provider_select(SB_OS_SUBPROCESS, SB_MODE_LEARN, &p, &note, &warn, &err), 0,
		   "learning under subprocess");
	tap_ok(note == NULL, "learning under the provider asked: no note");
}

/* The table: one provider per name of os-sandbox-list.h, in-process providers
 * never wrap, a wrapper either builds its command line or is not in this
 * version (then it must fail closed). */
static void test_provider_table(void)
{
	tap_ok(sb_provider_get(SB_OS_UNSET) == NULL && sb_provider_get(SB_OS_AUTO) == NULL &&
		   sb_provider_get(SB_OS__N) == NULL,
	       "auto is not a provider");
	for (int id = SB_OS_AUTO + 1; id < SB_OS__N; id++) {
		const struct sb_provider *p = sb_provider_get((enum sb_os_sandbox)id);
		_cleanup_free_ char *err = NULL;

		tap_ok(p && streq(p->name, sb_os_sandbox_name((enum sb_os_sandbox)id)),
		       "provider %d has the name of its line (%s)", id,
		       sb_os_sandbox_name((enum sb_os_sandbox)id));
		if (!p)
			continue;
		tap_ok(p->summary && p->probe, "%s: a summary and a probe", p->name);
		if ((p->flags & SB_PROVIDER_WRAPS_EXEC) && p->probe == sb_provider_probe_not_built)
			tap_ok(!p->prepare && !p->enter && p->probe(&err) == -EOPNOTSUPP,
			       "%s: a wrapper, not in this version: fails closed", p->name);
		else if (p->flags & SB_PROVIDER_WRAPS_EXEC)
			/* Its enter(), if any, runs in the python-sb re-entered
			 * under the tool (sb_boundary_enter() refuses it outside). */
			tap_ok(p->build_argv, "%s: a wrapper builds a command line", p->name);
		else
			tap_ok(!p->build_argv, "%s: in-process, no command line", p->name);
	}
}

/* <provider>.<key>: each provider checks its own, whichever is in use. */
static void test_provider_params(void)
{
	struct result res;

	put("params/ok.prof", "os-sandbox=subprocess\nqemu.memory=2G\nqemu.virtfs=off\n"
			      "bwrap.share-net=yes\nbwrap.hostname=box\nunshare.map-root-user=yes\n"
			      "firejail.rlimit-as=600m\n");
	load(&res, "params/ok.prof", NULL);
	TAP_IS_INT(sb_provider_check_params(res.p, &res.d), 0,
		   "documented and passed-through keys");
	TAP_IS_INT(res.d.n, 0, "no diagnostic");
	TAP_IS_INT(res.p->n_params, 6, "all stored");
	TAP_IS_INT(res.p->params[0].os_sandbox, SB_OS_QEMU, "stored with their provider");
	done(&res);

	put("params/bad.prof", "qemu.memry=2048\nqemu.use_kvm=maybe\nqemu.memory=2GB\n"
			       "bwrap.share_net=yes\nbwrap.--x=1\nlandlock.abi=3\nauto.x=1\n"
			       "qemu.nothing-like-it=1\nqemu.virtfs=sometimes\n");
	load(&res, "params/bad.prof", NULL);
	TAP_IS_INT(sb_provider_check_params(res.p, &res.d), -EINVAL, "errors reported");
	sb_diags_sort(&res.d);
	tap_ok(has_error(&res, "bad.prof", 1,
			 "Unknown qemu parameter 'memry', closest known parameter is 'memory'"),
	       "qemu takes no unknown key: the closest known one is named");
	tap_ok(has_error(&res, "bad.prof", 2,
			 "Invalid qemu.use_kvm 'maybe': expected true, false, yes, no, on, off, 1 "
			 "or 0"),
	       "a boolean parameter");
	tap_ok(has_warning(&res, "bad.prof", 3, "Invalid qemu.memory '2GB'") &&
		   has_warning(&res, "bad.prof", 3, "the default 2048 applies") &&
		   !has_error(&res, "bad.prof", 3, ""),
	       "qemu.memory=2GB falls back to the default with a warning (spec section 8)");
	tap_ok(has_warning(&res, "bad.prof", 4, "did you mean bwrap.share-net?") &&
		   !has_error(&res, "bad.prof", 4, ""),
	       "bwrap passes unknown keys through: a near miss is a warning");
	tap_ok(has_error(&res, "bad.prof", 5, "Invalid bwrap parameter '--x'"),
	       "a passed-through key must be an option name");
	tap_ok(has_error(&res, "bad.prof", 6,
			 "The landlock provider takes no parameters ('landlock.abi')"),
	       "landlock takes none");
	tap_ok(has_error(&res, "bad.prof", 7, "The auto provider takes no parameters"),
	       "auto takes none");
	tap_ok(has_error(&res, "bad.prof", 8, "Unknown qemu parameter 'nothing-like-it'"),
	       "no close key: no suggestion");
	tap_ok(has_error(&res, "bad.prof", 9,
			 "Invalid qemu.virtfs 'sometimes': expected auto, on or off"),
	       "a choice");
	done(&res);

	put("params/unshare.prof", "unshare.uts=\nunshare.bogus=1\nunshare.tmp-size=64\n");
	load(&res, "params/unshare.prof", NULL);
	TAP_IS_INT(sb_provider_check_params(res.p, &res.d), -EINVAL, "unshare: errors reported");
	sb_diags_sort(&res.d);
	tap_ok(has_error(&res, "unshare.prof", 1,
			 "unshare.uts is not supported: python-sb always creates"),
	       "unshare: an option of unshare(1) it cannot honour is refused, saying why");
	tap_ok(has_error(&res, "unshare.prof", 2, "Unknown unshare parameter 'bogus'"),
	       "unshare: nothing passes through (no unshare(1) runs)");
	tap_ok(!has_error(&res, "unshare.prof", 3, ""), "unshare: its own parameter");
	done(&res);
}

int main(void)
{
	if (!mkdtemp(root))
		return tap_skip_all("cannot create a temporary directory");
	test_includes();
	test_scalars_and_cli();
	test_scalar_key_names();
	test_learn();
	test_errors_collected();
	test_fail_closed();
	test_provider_select();
	test_provider_table();
	test_provider_params();
	{
		_cleanup_free_ char *cmd = NULL;

		if (asprintf(&cmd, "rm -rf '%s'", root) > 0 && system(cmd) != 0)
			tap_diag("could not remove %s", root);
	}
	return tap_done();
}
