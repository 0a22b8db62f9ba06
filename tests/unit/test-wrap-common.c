/* SPDX-License-Identifier: MIT */
/* The wrapper providers' command lines, built without running them: what
 * ignore= hides in a real tree (the guard's own decision), its limits, the
 * tools' arguments for grants, masks, the network and the pass-through keys.
 * The integration suite (test_kernel_wrappers.py) runs them. */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "boundary.h"
#include "provider.h"
#include "wrap-common.h"
#include "wrap-net.h"
#include "fake-env.h"
#include "tap.h"

static char *host[] = {"HOME=/home/tester", NULL};
static char root[] = "/tmp/sb-wrap-test-XXXXXX";

static struct sb_profile *load(const char *text)
{
	char path[PATH_MAX];
	int fd;
	struct sb_profile *p = NULL;
	struct sb_diags d = {0};
	struct sb_load_options o = {
	    .path = path, .getenv = fake_getenv, .getenv_userdata = host, .cwd = root};
	int r;

	snprintf(path, sizeof(path), "%s/.py-sandboxes", root);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		return NULL;
	close(fd);
	r = sb_profile_load(&o, &p, &d);
	if (r == 0)
		r = sb_profile_check(p, &o, &d);
	if (r == 0)
		r = sb_provider_check_params(p, &d);
	for (size_t i = 0; i < d.n; i++)
		tap_diag("%u: %s", d.items[i].line, d.items[i].message);
	sb_diags_done(&d);
	if (r < 0)
		p = sb_profile_free(p);
	return p;
}

static void put(const char *rel)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
	if (path[strlen(path) - 1] == '/') {
		mkdir(path, 0755);
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
}

static bool has_ignored(const struct sb_wrap_ignored_set *s, const char *rel, bool dir,
			bool in_writable)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (size_t i = 0; i < s->n; i++)
		if (streq(s->items[i].path, path))
			return s->items[i].dir == dir && s->items[i].in_writable == in_writable;
	return false;
}

static void test_collect_ignored(void)
{
	_cleanup_(sb_profile_freep) struct sb_profile *p = NULL;
	_cleanup_(sb_wrap_ignored_done) struct sb_wrap_ignored_set set = {0};
	_cleanup_free_ char *err = NULL, *abs = NULL;
	struct sb_boundary b = {0};

	put("ro/a.key");
	put("ro/sub/b.key");
	put("ro/keys.d/c.txt");
	put("ro/plain.txt");
	put("rw/d.key");
	put("rw/secret-notes/e.txt");
	put("outside.key");
	if (asprintf(&abs,
		     "expose-ro=./ro\nexpose-rw=./rw\nignore=*.key\nignore=keys.d\n"
		     "ignore=%s/rw/secret-*\n",
		     root) < 0)
		abs = NULL;
	p = abs ? load(abs) : NULL;
	if (!tap_ok(p != NULL, "profile loads"))
		return;
	TAP_IS_INT(sb_boundary_build(p, &sb_provider_bwrap, NULL, SB_MODE_ENFORCE, &b), 0,
		   "bwrap's boundary");
	TAP_IS_INT(sb_wrap_collect_ignored(&b, p, &set, &err), 0, "collected");
	tap_ok(has_ignored(&set, "ro/a.key", false, false) &&
		   has_ignored(&set, "ro/sub/b.key", false, false),
	       "a relative pattern matches at any depth of an exposed tree");
	tap_ok(has_ignored(&set, "ro/keys.d", true, false), "a hidden directory, as a directory");
	tap_ok(has_ignored(&set, "rw/d.key", false, true),
	       "in the expose-rw tree: marked writable");
	tap_ok(has_ignored(&set, "rw/secret-notes", true, true), "an absolute pattern");
	TAP_IS_INT((int)set.n, 5, "nothing else: not below a hidden directory, not outside");
	sb_boundary_done(&b);
}

static void test_ignore_limits(void)
{
	_cleanup_(sb_profile_freep) struct sb_profile *p = NULL;
	_cleanup_(sb_wrap_ignored_done) struct sb_wrap_ignored_set set = {0};
	_cleanup_free_ char *err = NULL;
	struct sb_boundary b = {0};
	char rel[64];

	for (int i = 0; i <= SB_WRAP_MAX_IGNORED; i++) {
		snprintf(rel, sizeof(rel), "many/f%d.key", i);
		put(rel);
	}
	p = load("expose-ro=./many\nignore=*.key\n");
	if (!tap_ok(p != NULL, "profile loads"))
		return;
	TAP_IS_INT(sb_boundary_build(p, &sb_provider_bwrap, NULL, SB_MODE_ENFORCE, &b), 0,
		   "bwrap's boundary");
	TAP_IS_INT(sb_wrap_collect_ignored(&b, p, &set, &err), -E2BIG,
		   "more hidden paths than mounts worth making: the run stops");
	tap_ok(err && strstr(err, "narrow the patterns"), "and says what to do");
	sb_boundary_done(&b);
}

static bool has_args(char **argv, const char *a, const char *b)
{
	for (size_t i = 0; argv && argv[i]; i++)
		if (streq(argv[i], a) && (!b || (argv[i + 1] && streq(argv[i + 1], b))))
			return true;
	return false;
}

/* What the last build() handed the tool through its own descriptor. */
static struct tool_lists {
	int fd;
	size_t lines, includes;
	char **text; /* its lines, without the newline */
} tool_lists;

/* The last build's network (wrap-net.h), for its checks. */
static struct sb_wrap_net net;

static int build(const struct sb_provider *prov, const char *text, char ***ret, char **err)
{
	_cleanup_(sb_profile_freep) struct sb_profile *p = load(text);
	char *inner[] = {"/usr/bin/python-sb", "--pysandboxes-inside=5", "-c", "pass", NULL};
	char *env[] = {"PATH=/usr/bin:/bin", NULL};
	int keep[] = {5, 6};
	struct sb_boundary b;
	int r, tool_fd = -1;

	if (!p)
		return -EINVAL;
	sb_wrap_net_done(&net);
	net = SB_WRAP_NET_NULL;
	r = sb_boundary_build(p, prov, NULL, SB_MODE_ENFORCE, &b);
	if (r < 0)
		return r;
	r = prov->build_argv(&b, p,
			     &(struct sb_wrap_request){
				 .argv = inner,
				 .keep_fds = keep,
				 .n_keep_fds = 2,
				 .cwd = root,
				 .host_env = env,
				 .tool_fd = &tool_fd,
				 .net = &net,
			     },
			     ret, err);
	sb_boundary_done(&b);
	sb_strv_free(tool_lists.text);
	tool_lists = (struct tool_lists){0};
	if (tool_fd >= 0) {
		_cleanup_fclose_ FILE *f = fdopen(tool_fd, "r");
		_cleanup_free_ char *line = NULL;
		size_t cap = 0;

		tool_lists.fd = tool_fd;
		while (f && getline(&line, &cap, f) > 0) {
			tool_lists.lines++;
			line[strcspn(line, "\n")] = '\0';
			if (sb_strv_push(&tool_lists.text, line) < 0)
				abort();
			if (startswith(line + strspn(line, " \t"), "include"))
				tool_lists.includes++;
		}
		if (!f)
			close(tool_fd);
	}
	return r;
}

static void test_bwrap_argv(void)
{
	_cleanup_strv_free_ char **argv = NULL;
	_cleanup_free_ char *err = NULL, *ro = NULL, *rw = NULL, *key = NULL;
	size_t n;
	int r;

	if (access("/usr/bin/bwrap", X_OK) < 0) {
		tap_ok(true, "# SKIP bwrap is not installed");
		return;
	}
	put("ro/a.key");
	put("rw/");
	ro = sb_path_join(root, "ro");
	rw = sb_path_join(root, "rw");
	key = sb_path_join(root, "ro/a.key");
	TAP_IS_INT(build(&sb_provider_bwrap,
			 "expose-ro=./ro\nexpose-rw=./rw\nignore=*.key\n"
			 "bwrap.hostname=box one\n",
			 &argv, &err),
		   0, "bwrap's command line");
	n = sb_strv_length(argv);
	tap_ok(n > 4 && streq(argv[0], "/usr/bin/bwrap"), "the tool found on PATH");
	tap_ok(has_args(argv, "--ro-bind", ro) && has_args(argv, "--bind", rw),
	       "expose-ro read-only, expose-rw writable");
	tap_ok(has_args(argv, "--dev-bind", "/dev/null") && has_args(argv, "/dev/null", key),
	       "an ignored file masked");
	tap_ok(has_args(argv, "--unshare-net", NULL), "no net= rule: the sandbox's own network");
	tap_ok(has_args(argv, "--hostname", "box") && has_args(argv, "box", "one"),
	       "a pass-through key: --key and the value's words");
	tap_ok(n >= 5 && streq(argv[n - 4], "/usr/bin/python-sb") && streq(argv[n - 5], "--"),
	       "the inner python-sb last, after --");
	free(err);
	err = NULL;
	sb_strv_free(argv);
	argv = NULL;
	r = build(&sb_provider_bwrap, "net=ALLOW|tcp|127.0.0.1|80|OUT\n", &argv, &err);
	if (access("/usr/bin/slirp4netns", X_OK) == 0 && access("/usr/sbin/nft", X_OK) == 0) {
		char hosts[16];

		snprintf(hosts, sizeof(hosts), "%d", net.hosts_fd);
		TAP_IS_INT(r, 0, "net= ALLOW rules: a network set up from outside");
		tap_ok(has_args(argv, "--unshare-net", NULL), "a network namespace of its own");
		tap_ok(net.ready_inner > 2 && net.ready_ours > 2,
		       "a descriptor for the inner python-sb to wait on");
		tap_ok(has_args(argv, hosts, "/etc/hosts"), "the pinned names in /etc/hosts");
		tap_ok(net.plan.outside && net.plan.ruleset &&
			   strstr(net.plan.ruleset,
				  "ip daddr 127.0.0.1 meta l4proto tcp th dport 80 accept"),
		       "the filter of os-sandbox=unshare, from the same rules");
	} else {
		TAP_IS_INT(r, -ENOENT, "net= ALLOW rules without slirp4netns or nft: refused");
		tap_ok(err && strstr(err, "Debian package"), "naming the package");
	}
	free(err);
	err = NULL;
	sb_strv_free(argv);
	argv = NULL;
	TAP_IS_INT(build(&sb_provider_bwrap, "net=ALLOW|tcp|127.0.0.1|80|OUT\nbwrap.share-net=1\n",
			 &argv, &err),
		   0, "with share-net");
	tap_ok(!has_args(argv, "--unshare-net", NULL), "the host's network");
}

static void test_firejail_argv(void)
{
	_cleanup_strv_free_ char **argv = NULL;
	_cleanup_free_ char *err = NULL, *wl = NULL, *ro = NULL;
	int r;

	if (access("/usr/bin/firejail", X_OK) < 0) {
		tap_ok(true, "# SKIP firejail is not installed");
		return;
	}
	put("ro/x.txt");
	TAP_IS_INT(build(&sb_provider_firejail,
			 "expose-ro=./ro\nfirejail.rlimit-as=600m\nfirejail.nodbus=\n", &argv,
			 &err),
		   0, "firejail's command line");
	tap_ok(has_args(argv, "--rlimit-as=600m", NULL) &&
		   !has_args(argv, "--rlimit-as=300m", NULL),
	       "a template option replaced by the profile's line of its name");
	tap_ok(has_args(argv, "--nodbus", NULL), "another key passed as --key");
	tap_ok(has_args(argv, "--net=none", NULL) && has_args(argv, "--keep-fd=5,6", NULL),
	       "no network; the inner python-sb's descriptors kept");
	if (asprintf(&wl, "whitelist %s/ro", root) < 0 ||
	    asprintf(&ro, "read-only %s/ro", root) < 0)
		wl = ro = NULL;
	tap_ok(wl && sb_strv_contains(tool_lists.text, wl) && sb_strv_contains(tool_lists.text, ro),
	       "expose-ro whitelisted, read-only: lines of the --include file");
	tap_ok(tool_lists.text && streq(tool_lists.text[0], "read-only /"),
	       "the file system's lines first, in the options' order");
	{
		bool none = true;

		for (char **a = argv; *a; a++)
			none = none && !startswith(*a, "--whitelist") &&
			       !startswith(*a, "--read-only") && !startswith(*a, "--blacklist");
		tap_ok(none && sb_strv_length(argv) < 128,
		       "none on the command line: firejail takes fewer than 128 arguments");
	}
	tap_ok(!has_args(argv, "--", NULL), "no '--' (firejail would run a shell)");
	{
		char inc[64];

		snprintf(inc, sizeof(inc), "--include=/proc/self/fd/%d", tool_lists.fd);
		tap_ok(tool_lists.fd > 2 && has_args(argv, inc, NULL),
		       "firejail's lists through a descriptor of the tool's own");
		for (char **a = argv; *a; a++)
			if (startswith(*a, "--include=/etc/"))
				tap_ok(false, "no list of /etc/firejail named: %s", *a);
	}
	if (access("/etc/firejail/disable-common.inc", R_OK) == 0)
		tap_ok(tool_lists.lines > 100 && tool_lists.includes == 0,
		       "the lists without their include lines (~/.config/firejail's .local "
		       "files never read): %zu lines, %zu includes",
		       tool_lists.lines, tool_lists.includes);
	free(err);
	err = NULL;
	sb_strv_free(argv);
	argv = NULL;
	r = build(&sb_provider_firejail, "net=ALLOW|tcp|127.0.0.1|80|OUT\n", &argv, &err);
	if (geteuid() != 0) {
		tap_ok(r == -EPERM, "net= ALLOW rules unprivileged: refused, never an "
				    "unfiltered network");
		tap_ok(err && strstr(err, "net=ALLOW|tcp|127.0.0.1|80|OUT"), "naming the rule");
	} else if (access("/usr/bin/slirp4netns", X_OK) == 0 &&
		   access("/usr/sbin/nft", X_OK) == 0) {
		char hosts[64];

		snprintf(hosts, sizeof(hosts), "--hosts-file=/proc/self/fd/%d", net.hosts_fd);
		TAP_IS_INT(r, 0, "net= ALLOW rules as root: a network set up from outside");
		tap_ok(has_args(argv, "--net=none", NULL) && has_args(argv, hosts, NULL),
		       "firejail's own namespace, the pinned names as its hosts file");
	} else {
		tap_ok(r == -ENOENT, "net= ALLOW rules without slirp4netns or nft: refused");
	}
	free(err);
	err = NULL;
	sb_strv_free(argv);
	argv = NULL;
	r = build(&sb_provider_firejail, "net=ALLOW|tcp|127.0.0.1|80|OUT\nfirejail.net=br0\n",
		  &argv, &err);
	tap_ok(r == -EOPNOTSUPP || r == -EPERM, "firejail.net=<bridge>: refused");
	tap_ok(err && strstr(err, "net=ALLOW|tcp|127.0.0.1|80|OUT"), "naming the rule");
}

static void test_missing_tool(void)
{
	_cleanup_free_ char *err = NULL, *path = NULL;

	TAP_IS_INT(
	    sb_wrap_find_binary("bwrap", "bubblewrap", "/nonexistent:relative", NULL, &path, &err),
	    -ENOENT, "not on PATH");
	tap_ok(err && strstr(err, "install the Debian package bubblewrap"), "names the package");
}

/* The probe and the command line look for the tool one after the other: the
 * second search is the first's answer, unless that binary went away. */
static void test_found_tool_remembered(void)
{
	_cleanup_free_ char *err = NULL, *first = NULL, *again = NULL, *after = NULL;
	char dirs[2 * PATH_MAX + 2], a[PATH_MAX], b[PATH_MAX];

	snprintf(a, sizeof(a), "%s/bin-a", root);
	snprintf(b, sizeof(b), "%s/bin-b", root);
	snprintf(dirs, sizeof(dirs), "%s:%s", a, b);
	mkdir(a, 0755);
	mkdir(b, 0755);
	put("bin-a/sb-tool");
	put("bin-b/sb-tool");
	snprintf(a, sizeof(a), "%s/bin-a/sb-tool", root);
	snprintf(b, sizeof(b), "%s/bin-b/sb-tool", root);
	chmod(a, 0755);
	chmod(b, 0755);
	TAP_IS_INT(sb_wrap_find_binary("sb-tool", "pkg", dirs, NULL, &first, &err), 0, "found");
	TAP_IS_STR(first, a, "the first on PATH");
	TAP_IS_INT(sb_wrap_find_binary("sb-tool", "pkg", dirs, NULL, &again, &err), 0,
		   "found again");
	TAP_IS_STR(again, a, "the same");
	unlink(a);
	TAP_IS_INT(sb_wrap_find_binary("sb-tool", "pkg", dirs, NULL, &after, &err), 0,
		   "found after");
	TAP_IS_STR(after, b, "a removed binary is searched again");
}

/* The tool runs outside the sandbox: not one the program could have put on
 * PATH (an expose-rw tree), nor one another user may replace. */
static void test_untrusted_tool_refused(void)
{
	_cleanup_free_ char *err = NULL, *err2 = NULL, *path = NULL, *path2 = NULL;
	char dir[PATH_MAX], tool[PATH_MAX];
	struct sb_expose_rule rw = {.writable = true, .origin = {.file = "prof", .line = 3}};
	struct sb_profile p = {.exposes = &rw, .n_exposes = 1};

	snprintf(dir, sizeof(dir), "%s/bin-rw", root);
	mkdir(dir, 0755);
	put("bin-rw/sb-planted");
	snprintf(tool, sizeof(tool), "%s/bin-rw/sb-planted", root);
	chmod(tool, 0755);
	rw.path = rw.resolved = dir;
	TAP_IS_INT(sb_wrap_find_binary("sb-planted", "pkg", dir, &p, &path, &err), -EPERM,
		   "a tool inside an expose-rw tree: refused");
	tap_ok(err && strstr(err, "inside expose-rw=") && strstr(err, "(prof:3)"),
	       "naming the rule");
	chmod(dir, 0777);
	TAP_IS_INT(sb_wrap_find_binary("sb-planted", "pkg", dir, NULL, &path2, &err2), -EPERM,
		   "a tool in a directory every user may write: refused");
	tap_ok(err2 && strstr(err2, "writable by every user"), "saying why");
	chmod(dir, 0755);
}

static void test_strv_builder(void)
{
	struct sb_strv_builder v = {0};
	int r = 0;

	for (int i = 0; r >= 0 && i < 1000; i++)
		r = i % 2 ? sb_strvb_pushf(&v, "w%d", i) : sb_strvb_add(&v, "x", NULL);
	TAP_IS_INT(r, 0, "1000 appends");
	TAP_IS_INT((int)sb_strv_length(v.v), 1000, "the vector's length");
	TAP_IS_STR(v.v[999], "w999", "in order");
	tap_ok(v.v[1000] == NULL, "NULL-terminated");
	sb_strv_free(v.v);
}

static void cleanup(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		tap_diag("could not remove %s", root);
}

int main(void)
{
	if (!mkdtemp(root))
		return tap_skip_all("cannot create a temporary directory");
	net = SB_WRAP_NET_NULL;
	test_collect_ignored();
	test_ignore_limits();
	test_bwrap_argv();
	test_firejail_argv();
	test_missing_tool();
	test_found_tool_remembered();
	test_untrusted_tool_refused();
	test_strv_builder();
	sb_wrap_net_done(&net);
	cleanup();
	return tap_done();
}
