/* SPDX-License-Identifier: MIT */
/* os-sandbox=unshare (spec section 8), native: python-sb itself creates the
 * user, mount, PID, network, IPC, UTS and cgroup namespaces and runs the
 * program in a new root built from an explicit list (kernel/namespaces.c,
 * kernel/new-root.c); net= rules get slirp4netns and an nftables filter
 * (kernel/netns.c). No unshare(1) runs, so its options do not pass through:
 * the ones python-sb can honour are parameters of its own, the others are
 * refused with the reason. */
#include "provider.h"

#include <fts.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <strings.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include "boundary.h"
#include "file-policy.h"
#include "namespaces.h"
#include "netns.h"
#include "new-root.h"
#include "path0-modules.h"
#include "privileges.h"
#include "rule-files.h"

/* Private /tmp and /dev/shm: their size by default (a tmpfs without one may
 * take half the host's memory). */
#define SB_DEFAULT_TMP_MIB 128ULL

struct unshare_data {
	struct sb_root_plan root;
	struct sb_netns_plan net;   /* symbolic: host names pinned at enter */
	uid_t outer_uid, inner_uid; /* the program's uid on the host and inside */
	gid_t outer_gid, inner_gid;
	bool map_root;
	unsigned long long tmp_bytes;
	/* The profile's net= rules (the profile outlives the boundary). */
	const struct sb_net_rule *nets;
	size_t n_nets;
	/* Already inside an os-sandbox=unshare sandbox (a program it started
	 * through sys.executable): enter stops, saying so. */
	bool nested;
};

static const char *const NAMESPACES_ALWAYS =
    "python-sb always creates the user, mount, PID, network, IPC, UTS and cgroup namespaces";
static const char *const ONE_ID =
    "one uid and one gid are mapped: the caller's own (unshare.map-current-user, the "
    "default) or 0 (unshare.map-root-user=true)";

static const struct sb_provider_param_def params[] = {
    {.key = "map-root-user", .kind = SB_PARAM_BOOL},
    {.key = "map-current-user", .kind = SB_PARAM_BOOL},
    {.key = "tmp-size", .kind = SB_PARAM_MIB},
    /* unshare(1)'s other options: what python-sb does instead. */
    {.key = "user", .kind = SB_PARAM_REFUSED, .refused = NAMESPACES_ALWAYS},
    {.key = "mount", .kind = SB_PARAM_REFUSED, .refused = NAMESPACES_ALWAYS},
    {.key = "pid", .kind = SB_PARAM_REFUSED, .refused = NAMESPACES_ALWAYS},
    {.key = "net", .kind = SB_PARAM_REFUSED, .refused = NAMESPACES_ALWAYS},
    {.key = "ipc", .kind = SB_PARAM_REFUSED, .refused = NAMESPACES_ALWAYS},
    {.key = "uts", .kind = SB_PARAM_REFUSED, .refused = NAMESPACES_ALWAYS},
    {.key = "cgroup", .kind = SB_PARAM_REFUSED, .refused = NAMESPACES_ALWAYS},
    {.key = "time",
     .kind = SB_PARAM_REFUSED,
     .refused = "no time namespace: the program's clocks are the host's"},
    {.key = "monotonic",
     .kind = SB_PARAM_REFUSED,
     .refused = "no time namespace: the program's clocks are the host's"},
    {.key = "boottime",
     .kind = SB_PARAM_REFUSED,
     .refused = "no time namespace: the program's clocks are the host's"},
    {.key = "fork",
     .kind = SB_PARAM_REFUSED,
     .refused = "always done: the program runs as PID 2 under python-sb's own init"},
    {.key = "kill-child",
     .kind = SB_PARAM_REFUSED,
     .refused = "always done: when the program ends, everything it started ends with the "
		"PID namespace"},
    {.key = "mount-proc",
     .kind = SB_PARAM_REFUSED,
     .refused = "always done: the new root has a /proc of the PID namespace's own"},
    {.key = "propagation",
     .kind = SB_PARAM_REFUSED,
     .refused = "the program's root is a new tree detached from the host's mounts: nothing "
		"propagates either way"},
    {.key = "setgroups",
     .kind = SB_PARAM_REFUSED,
     .refused = "always deny: an unprivileged user can map its gid only so"},
    {.key = "map-user", .kind = SB_PARAM_REFUSED, .refused = ONE_ID},
    {.key = "map-group", .kind = SB_PARAM_REFUSED, .refused = ONE_ID},
    {.key = "map-users", .kind = SB_PARAM_REFUSED, .refused = ONE_ID},
    {.key = "map-groups", .kind = SB_PARAM_REFUSED, .refused = ONE_ID},
    {.key = "map-auto", .kind = SB_PARAM_REFUSED, .refused = ONE_ID},
    {.key = "setuid", .kind = SB_PARAM_REFUSED, .refused = ONE_ID},
    {.key = "setgid", .kind = SB_PARAM_REFUSED, .refused = ONE_ID},
    {.key = "root",
     .kind = SB_PARAM_REFUSED,
     .refused = "the root is built from the profile (expose-ro, expose-rw)"},
    {.key = "wd",
     .kind = SB_PARAM_REFUSED,
     .refused = "the program starts in the caller's working directory"},
    {.key = "keep-caps",
     .kind = SB_PARAM_REFUSED,
     .refused = "the program never keeps a capability"},
    {0},
};

static bool truthy(const char *v)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};

	for (size_t i = 0; i < ELEMENTSOF(yes); i++)
		if (strcasecmp(v, yes[i]) == 0)
			return true;
	return false;
}

/* SB_PARAM_MIB: MiB, or a number with one suffix (checked already). */
static unsigned long long mib_bytes(const char *v)
{
	static const char suffixes[] = "kmgtpe";
	char *end;
	unsigned long long n = strtoull(v, &end, 10);
	const char *s = *end ? strchr(suffixes, (char)(*end | 0x20)) : NULL;
	int shift = s ? 10 * (int)(s - suffixes) : 20;

	if (shift >= 64 || n > (~0ULL >> shift))
		return ~0ULL;
	return n << shift;
}

static void read_params(const struct sb_profile *p, struct unshare_data *d)
{
	for (size_t i = 0; i < p->n_params; i++) {
		const struct sb_provider_param *param = &p->params[i];

		if (param->os_sandbox != SB_OS_UNSHARE)
			continue;
		if (streq(param->key, "map-root-user"))
			d->map_root = truthy(param->value);
		else if (streq(param->key, "map-current-user"))
			d->map_root = d->map_root && !truthy(param->value);
		else if (streq(param->key, "tmp-size"))
			d->tmp_bytes = mib_bytes(param->value);
	}
	d->outer_uid = geteuid();
	d->outer_gid = getegid();
	/* user= from root: the identity the launcher takes before the
	 * namespaces (enter). */
	if (p->user.set && d->outer_uid == 0) {
		d->outer_uid = p->user.uid;
		d->outer_gid = p->user.gid;
	}
	d->inner_uid = d->map_root ? 0 : d->outer_uid;
	d->inner_gid = d->map_root ? 0 : d->outer_gid;
}

/* ------------------------------------------------------------------------ */
/* The plan of the new root */

/* What any program needs besides the interpreter's own tree, read-only.
 * Not /etc as a whole: it holds other programs' secrets. */
static const struct {
	const char *path;
	const char *why;
} system_paths[] = {
    {"/usr", "system programs and libraries"},
    {"/bin", "merged /usr"},
    {"/sbin", "merged /usr"},
    {"/lib", "merged /usr"},
    {"/lib32", "merged /usr"},
    {"/lib64", "merged /usr"},
    {"/libx32", "merged /usr"},
    {"/etc/ld.so.cache", "dynamic loader"},
    {"/etc/nsswitch.conf", "name services"},
    {"/etc/localtime", "time zone"},
    {"/etc/ssl", "CA store"},
    {"/etc/pki", "CA store"},
    {"/etc/ca-certificates", "CA store"},
    {"/etc/os-release", "platform.freedesktop_os_release()"},
    {"/sys/devices/system/cpu", "os.cpu_count()"},
};

/* What Landlock grants too. */
static const char *const devices[] = {"null", "zero", "random", "urandom"};

static int reason(char **ret, const char *fmt, ...) _printf_(2, 3);
static int reason(char **ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	free(*ret);
	va_start(ap, fmt);
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* /etc/passwd and /etc/group with the program's own ids only (and the
 * overflow ids unmapped owners show as): what getpwuid() needs, no list of
 * the host's users. */
static int plan_identity(struct sb_root_plan *plan, const struct unshare_data *d)
{
	const struct passwd *pw = getpwuid(d->outer_uid);
	const struct group *gr = getgrgid(d->outer_gid);
	_cleanup_free_ char *passwd = NULL, *group = NULL;
	const char *home = pw && pw->pw_dir ? pw->pw_dir : "/";
	const char *user = d->inner_uid == 0 ? "root" : pw ? pw->pw_name : "user";
	const char *grp = d->inner_gid == 0 ? "root" : gr ? gr->gr_name : "group";
	int r;

	if (asprintf(&passwd, "%s:x:%u:%u:%s:%s:/bin/sh\n%s", user, (unsigned)d->inner_uid,
		     (unsigned)d->inner_gid, user, home,
		     d->inner_uid == 65534
			 ? ""
			 : "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n") < 0) {
		passwd = NULL;
		return -ENOMEM;
	}
	if (asprintf(&group, "%s:x:%u:\n%s", grp, (unsigned)d->inner_gid,
		     d->inner_gid == 65534 ? "" : "nogroup:x:65534:\n") < 0) {
		group = NULL;
		return -ENOMEM;
	}
	r = sb_root_plan_file(plan, "/etc/passwd", passwd, 0644, "the program's own user");
	if (r >= 0)
		r = sb_root_plan_file(plan, "/etc/group", group, 0644, "the program's own group");
	return r;
}

/* Debian's sitecustomize.py is a link into /etc/pythonX.Y, named after the
 * interpreter's library directory. */
static int plan_python_etc(struct sb_root_plan *plan)
{
	const char *stdlib = SB_PYTHON_STDLIB_DIRS;
	size_t len = strcspn(stdlib, ":");
	_cleanup_free_ char *first = strndup(stdlib, len), *etc = NULL;
	const char *base;

	if (!first)
		return -ENOMEM;
	base = strrchr(first, '/');
	if (!base || !startswith(base + 1, "python"))
		return 0;
	etc = sb_path_join("/etc", base + 1);
	if (!etc)
		return -ENOMEM;
	return sb_root_plan_bind(plan, etc, false, true, "the interpreter's site configuration");
}

static int plan_system(struct sb_root_plan *plan, const struct unshare_data *d)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(system_paths); i++)
		r = sb_root_plan_bind(plan, system_paths[i].path, false, true, system_paths[i].why);
	if (r >= 0)
		r = plan_python_etc(plan);
	if (r >= 0)
		r = sb_root_plan_file(plan, "/etc/hosts", d->net.hosts, 0644,
				      "localhost and the names net= rules pin");
	if (r >= 0)
		r = plan_identity(plan, d);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(devices); i++) {
		char path[32];

		snprintf(path, sizeof(path), "/dev/%s", devices[i]);
		r = sb_root_plan_device(plan, path, "device");
	}
	if (r >= 0)
		r = sb_root_plan_symlink(plan, "/dev/fd", "/proc/self/fd", "descriptors");
	if (r >= 0)
		r = sb_root_plan_symlink(plan, "/dev/stdin", "/proc/self/fd/0", "descriptors");
	if (r >= 0)
		r = sb_root_plan_symlink(plan, "/dev/stdout", "/proc/self/fd/1", "descriptors");
	if (r >= 0)
		r = sb_root_plan_symlink(plan, "/dev/stderr", "/proc/self/fd/2", "descriptors");
	if (r >= 0)
		r = sb_root_plan_tmpfs(plan, "/tmp", d->tmp_bytes, 01777, "temporary files");
	if (r >= 0)
		r = sb_root_plan_proc(plan, "/proc", "this sandbox's processes only");
	return r;
}

/* ignore=: every entry of an exposed tree that a rule hides gets a
 * placeholder. Found now, by walking the trees: what is created later is the
 * Python guard's alone (documented). */
static int plan_ignores(struct sb_root_plan *plan, const struct sb_profile *p)
{
	struct sb_file_policy fp = {0};
	int r = 0;

	if (!p->n_ignores || !p->n_exposes)
		return 0;
	r = sb_file_policy_init(&fp, p);
	for (size_t i = 0; r >= 0 && i < p->n_exposes; i++) {
		char *roots[] = {
		    p->exposes[i].resolved ? p->exposes[i].resolved : p->exposes[i].path, NULL};
		FTS *fts = fts_open(roots, FTS_PHYSICAL | FTS_NOCHDIR | FTS_NOSTAT, NULL);

		if (!fts)
			continue;
		for (FTSENT *e; r >= 0 && (e = fts_read(fts));) {
			const struct sb_fp_ignore *ig = NULL;
			_cleanup_free_ char *dir = NULL, *why = NULL;

			if (e->fts_level == 0 || e->fts_info == FTS_DP)
				continue;
			dir = strndup(e->fts_path, (size_t)(e->fts_pathlen - e->fts_namelen - 1));
			if (!dir) {
				r = -ENOMEM;
				break;
			}
			if (!sb_file_policy_entry_ignored(&fp, dir[0] ? dir : "/", e->fts_name,
							  &ig))
				continue;
			/* A link's target is judged on its own; a link cannot
			 * carry a mount. */
			if (e->fts_info == FTS_SL || e->fts_info == FTS_SLNONE)
				continue;
			r = reason(&why, "ignore=%s at %s", ig->pattern, ig->origin);
			if (r >= 0)
				r = sb_root_plan_hide(
				    plan, e->fts_path,
				    e->fts_info == FTS_D || e->fts_info == FTS_DNR, why);
			if (e->fts_info == FTS_D)
				fts_set(fts, e, FTS_SKIP);
		}
		fts_close(fts);
	}
	sb_file_policy_done(&fp);
	return r;
}

static int plan_root(struct sb_root_plan *plan, const struct sb_profile *p,
		     const struct sb_interp_paths *interp, const struct unshare_data *d)
{
	_cleanup_free_ char *why = NULL;
	char cwd[PATH_MAX];
	int r;

	r = plan_system(plan, d);
	for (char **dir = interp ? interp->dirs : NULL; r >= 0 && dir && *dir; dir++)
		r = sb_root_plan_bind(plan, *dir, false, true, "interpreter");
	for (char **f = interp ? interp->files : NULL; r >= 0 && f && *f; f++)
		r = sb_root_plan_bind(plan, *f, false, true, "interpreter and program");
	for (char **m = interp ? interp->path0_modules : NULL; r >= 0 && m && *m; m++)
		r = sb_root_plan_bind(plan, *m, false, true, SB_PATH0_MODULE_WHY);
	for (char **f = p->files; r >= 0 && f && *f; f++)
		r = sb_root_plan_bind(plan, *f, false, true, "rule file");
	for (size_t i = 0; r >= 0 && i < p->n_exposes; i++) {
		const struct sb_expose_rule *e = &p->exposes[i];

		r = reason(&why, "expose-%s at %s:%u", e->writable ? "rw" : "ro", e->origin.file,
			   e->origin.line);
		/* As written: its links lead to the resolved path as on the host. */
		if (r >= 0)
			r = sb_root_plan_bind(plan, e->path, e->writable, false, why);
	}
	if (r >= 0)
		r = plan_ignores(plan, p);
	if (r >= 0 && getcwd(cwd, sizeof(cwd)))
		r = sb_root_plan_cwd(plan, cwd);
	if (r >= 0)
		r = sb_root_plan_finish(plan);
	return r;
}

/* ------------------------------------------------------------------------ */
/* The provider */

static int probe(char **reterr)
{
	if (access("/proc/self/ns/user", F_OK) < 0 && errno == ENOENT)
		return sb_error(reterr, -EOPNOTSUPP,
				"the kernel has no user namespaces (CONFIG_USER_NS)");
	return 0;
}

static void done(struct sb_boundary *b)
{
	struct unshare_data *d = b->provider_data;

	if (!d)
		return;
	sb_root_plan_done(&d->root);
	sb_netns_plan_done(&d->net);
	free(d);
	b->provider_data = NULL;
}

/* Inside a sandbox of ours: the root is a read-only tmpfs and PID 1 is our
 * init. A python-sb the sandboxed program starts (sys.executable) cannot build
 * another one (the filter refuses namespaces, mounts and seccomp itself):
 * enter says so rather than fail on the first refused call. Nothing outside a
 * sandbox looks like this but the root user's own doing. */
static bool inside_unshare_sandbox(void)
{
	struct statfs st;
	char comm[32] = "";
	_cleanup_close_ int fd = -1;
	ssize_t n;

	if (statfs("/", &st) < 0 || st.f_type != TMPFS_MAGIC || !(st.f_flags & ST_RDONLY))
		return false;
	fd = open("/proc/1/comm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, comm, sizeof(comm) - 1);
	return n > 0 && streq(comm, "python-sb-init\n");
}

static int prepare(struct sb_boundary *b, const struct sb_profile *p,
		   const struct sb_interp_paths *interp)
{
	struct unshare_data *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	b->provider_data = d;
	d->tmp_bytes = SB_DEFAULT_TMP_MIB << 20;
	d->nets = p->nets;
	d->n_nets = p->n_nets;
	read_params(p, d);
	d->nested = inside_unshare_sandbox();
	if (d->nested)
		return 0;
	r = sb_netns_plan_build(p->nets, p->n_nets, NULL, &d->net);
	if (r >= 0)
		r = plan_root(&d->root, p, interp, d);
	/* An existing rule file is bound read-only over any grant, but a
	 * missing one (an include, the lookup's earlier candidates) could be
	 * created in an expose-rw tree for the next run. */
	if (r >= 0)
		r = sb_rule_files_check(p, &b->rule_file_conflict);
	return r;
}

/* The pin the Python guard uses; with py-sandbox=false, one of our own,
 * resolved now (before the namespaces hide the host's resolver). */
static int pinned_net(const struct sb_boundary *b, const struct unshare_data *d,
		      struct sb_net_policy **ret_own, struct sb_netns_plan *ret, char ***warnings,
		      char **reterr)
{
	const struct sb_net_policy *pins = b->net_policy;
	int r;

	if (!pins) {
		r = sb_net_policy_build(d->nets, d->n_nets, NULL, ret_own, warnings, reterr);
		if (r < 0)
			return r;
		pins = *ret_own;
	}
	return sb_netns_plan_build(d->nets, d->n_nets, pins, ret);
}

static int enter(const struct sb_boundary *b, char ***warnings, int *ret_status, char **reterr)
{
	struct unshare_data *d = b->provider_data;
	_cleanup_(sb_net_policy_freep) struct sb_net_policy *own = NULL;
	struct sb_netns_plan net = {0};
	struct sb_ns_config c;
	int r;

	if (d->nested)
		return sb_error(
		    reterr, -EPERM,
		    "python-sb is already running inside an os-sandbox=unshare sandbox, "
		    "whose seccomp filter refuses building another one (namespaces, "
		    "mounts, seccomp)");
	/* user= (python-sb started as root): the identity changes before the
	 * namespaces, whose map then gives the program that uid and gid. The
	 * capabilities go with it; the program's process drops the rest. */
	if (b->user.set) {
		struct sb_privileges_report report;

		r = sb_privileges_drop(&b->user, false, &report, reterr);
		if (r < 0)
			return r;
		if (geteuid() != d->outer_uid || getegid() != d->outer_gid)
			return sb_error(reterr, -EPERM, "user=%u:%u was not applied", b->user.uid,
					b->user.gid);
	}
	r = pinned_net(b, d, &own, &net, warnings, reterr);
	if (r >= 0)
		r = sb_root_plan_set_file(&d->root, "/etc/hosts", net.hosts);
	if (r == -ENOENT)
		r = 0; /* an expose rule shows the host's /etc */
	if (r >= 0) {
		c = (struct sb_ns_config){.inner_uid = d->inner_uid,
					  .inner_gid = d->inner_gid,
					  .root = &d->root,
					  .net = &net,
					  .supervisor_exe = b->supervisor_exe};
		r = sb_ns_run(&c, ret_status, reterr);
	}
	sb_netns_plan_done(&net);
	if (r < 0 && !*reterr)
		return sb_error(reterr, r, "%s", strerror(-r));
	return r;
}

static int explain(const struct sb_boundary *b, struct sb_buf *out)
{
	const struct unshare_data *d = b->provider_data;
	int r;

	if (d->nested)
		return sb_buf_puts(out, "#   already inside an os-sandbox=unshare sandbox, whose "
					"seccomp filter refuses building another one: this run "
					"stops\n");
	r = sb_buf_printf(out,
			  "#   namespaces: user, mount, PID, network, IPC, UTS, cgroup (created by "
			  "python-sb; no unshare(1))\n"
			  "#   ids inside: uid %u, gid %u (%s); no capability\n"
			  "#   processes: python-sb outside (waits, forwards signals; as "
			  "python-sb-supervise where it can), its init as "
			  "PID 1, the program as PID 2\n"
			  "#   signals: %s\n"
			  "#   files: %s\n",
			  (unsigned)d->inner_uid, (unsigned)d->inner_gid,
			  d->map_root		      ? "unshare.map-root-user"
			  : d->outer_uid != geteuid() ? "user=, taken before the namespaces"
						      : "the caller's own",
			  sb_ns_signal_scope_available()
			      ? "limited to the sandbox's processes (Landlock scope)"
			      : "a session of its own (no Landlock scope in this kernel)",
			  sb_ns_files_scope_available()
			      ? "nothing outside the new root, also not through /proc/self/fd "
				"(Landlock)"
			      : "the new root; an inherited descriptor's file can be reopened "
				"through /proc/self/fd with what its mode allows (no Landlock in "
				"this kernel)");
	if (r >= 0)
		r = sb_root_explain(&d->root, out);
	if (r >= 0)
		r = sb_netns_explain(&d->net, out);
	return r;
}

const struct sb_provider sb_provider_unshare = {
    .name = "unshare",
    .flags = SB_PROVIDER_FILES | SB_PROVIDER_SECCOMP | SB_PROVIDER_LIMITS | SB_PROVIDER_PRIVILEGES |
	     SB_PROVIDER_CHILD_PROCESS,
    .ignore = SB_IGNORE_REFUSED,
    .params = params,
    .summary = "user, mount, PID, network, IPC, UTS and cgroup namespaces; a new root",
    .files_layer = {"Python guard + kernel: the new root",
		    "kernel: the new root (py-sandbox=false)"},
    .net_layer = {"Python guard + kernel: network namespace, nftables",
		  "kernel: network namespace, nftables (py-sandbox=false)"},
    .probe = probe,
    .prepare = prepare,
    .enter = enter,
    .explain = explain,
    .done = done,
};
