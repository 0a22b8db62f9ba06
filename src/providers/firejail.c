/* SPDX-License-Identifier: MIT */
/* os-sandbox=firejail (spec section 8): firejail runs python-sb again with its
 * template of filters and limits (the original's: no capabilities, no new
 * privileges, its seccomp blacklist, namespaces for IPC, PID, mounts and UTS,
 * a private /dev, /etc cut down to a few files, rlimits...), no network, and
 * a file system cut down to the grants: every directory at the root that holds
 * no grant is blacklisted, one that does becomes a whitelist of its grants
 * (firejail's tmpfs with only them), /usr's directories likewise, and
 * expose-ro is read-only. Inside, python-sb loads its own seccomp filter on top
 * of firejail's, the limits, and runs the guard.
 *
 * ignore= makes the path vanish, as the spec says, where firejail can: in an
 * expose-ro tree the directories holding a hidden entry are rebuilt from
 * whitelists of their other entries. In an expose-rw tree rebuilding would
 * lose what the program writes there (a whitelisted directory's new files go
 * to firejail's tmpfs), so there firejail's blacklist refuses the path
 * instead (EACCES; root reads it as empty).
 *
 * net= ALLOW rules: as root, the sandbox's network namespace gets slirp4netns
 * and the nftables filter, set up from outside as for bwrap (build_net());
 * unprivileged, python-sb stops rather than run on an unfiltered network (the
 * original ran on the host's network when restricted-network was "yes"). */
#include "provider.h"

#include <dirent.h>
#include <limits.h>
#include <fcntl.h>
#include <pwd.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "boundary.h"
#include "grants.h"
#include "rule-files.h"
#include "wrap-common.h"
#include "wrap-net.h"

static const struct sb_provider_param_def params[] = {
    {"net", SB_PARAM_TEXT, NULL, NULL}, /* the host bridge net= rules use */
    {"seccomp", SB_PARAM_TEXT, NULL, NULL},
    {"seccomp.keep", SB_PARAM_TEXT, NULL, NULL},
    {"seccomp.block", SB_PARAM_TEXT, NULL, NULL},
    /* The template's limits, each of which a profile may override. */
    {"rlimit-as", SB_PARAM_TEXT, NULL, NULL},
    {"rlimit-fsize", SB_PARAM_TEXT, NULL, NULL},
    {"rlimit-nproc", SB_PARAM_TEXT, NULL, NULL},
    {"rlimit-nofile", SB_PARAM_TEXT, NULL, NULL},
    {"rlimit-sigpending", SB_PARAM_TEXT, NULL, NULL},
    {"nice", SB_PARAM_TEXT, NULL, NULL},
    {NULL},
};

#define USERS_FILE "/etc/firejail/firejail.users"

/* The template: firejail's option name and value (NULL: a flag). A profile's
 * firejail.<name> line replaces the option of that name (an empty value: the
 * flag alone); other firejail.<key> lines are added as --key=value. */
struct option {
	const char *name, *value;
};

static const struct option template_options[] = {
    {"quiet", NULL},
    {"noprofile", NULL},
    {"caps.drop", "all"},
    {"nonewprivs", NULL},
    {"nogroups", NULL},
    {"seccomp", NULL},
    {"restrict-namespaces", NULL},
    {"ipc-namespace", NULL},
    {"hostname", "firejail-sandbox"},
    {"deterministic-shutdown", NULL},
    {"private-dev", NULL},
    {"noexec", "/tmp"},
    {"noprinters", NULL},
    {"x11", "none"},
    {"nosound", NULL},
    {"notv", NULL},
    {"nou2f", NULL},
    {"novideo", NULL},
    {"nodvd", NULL},
    {"no3d", NULL},
    {"disable-mnt", NULL},
    {"rlimit-as", "300m"},
    {"rlimit-fsize", "102400"},
    {"rlimit-nproc", "20"},
    {"rlimit-nofile", "50"},
    {"rlimit-sigpending", "20"},
    {"nice", "5"},
};

/* Firejail's own lists of what to hide, in the template's order (the
 * python3 exception before the interpreters' blacklist). Each starts with
 * "include <name>.local", which firejail looks up in the caller's
 * ~/.config/firejail before /etc/firejail: a noblacklist, whitelist or
 * read-write line there (the user's, or planted by a program that could
 * write to $HOME on an earlier run) would weaken the sandbox. python-sb
 * hands firejail the lists without their include lines instead (lists_fd). */
static const char *const includes[] = {
    "/etc/firejail/allow-python3.inc",	  "/etc/firejail/disable-common.inc",
    "/etc/firejail/disable-devel.inc",	  "/etc/firejail/disable-interpreters.inc",
    "/etc/firejail/disable-programs.inc", "/etc/firejail/disable-xdg.inc",
};

/* /etc holds other programs' secrets: only these are shown (and the grants
 * and rule files under /etc). The template's --private-etc copy is replaced
 * by a whitelist of the same entries: the same view, and firejail 0.9.72's
 * private /etc prints "/etc/passwd: unmount: Invalid argument" on the
 * program's stderr in containers. */
static const char *const etc_entries[] = {
    "hosts", "resolv.conf",	"nsswitch.conf", "ssl",
    "pki",   "ca-certificates", "ld.so.cache",	 "localtime",
};

/* What firejail or the kernel provide: never blacklisted from the root. */
static const char *const root_kept[] = {"proc", "sys", "dev", "usr", "tmp", "run"};

static int probe(char **reterr)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	const struct passwd *pw;
	size_t cap = 0;
	int r;

	r = sb_wrap_probe_binary("firejail", "firejail", reterr);
	if (r < 0 || getuid() == 0)
		return r;
	pw = getpwuid(getuid());
	if (!pw)
		return sb_error(reterr, -EPERM,
				"firejail needs a user name for uid %u, and it has none",
				(unsigned)getuid());
	if (streq(pw->pw_name, "nobody"))
		return sb_error(
		    reterr, -EPERM,
		    "firejail never lets the user nobody start a sandbox "
		    "(firejail-users(5)): run as another user, or use os-sandbox=bwrap");
	f = fopen(USERS_FILE, "re");
	if (!f)
		return 0; /* no list: every user may */
	while (getline(&line, &cap, f) > 0)
		if (streq(sb_strstrip(line), pw->pw_name))
			return 0;
	return sb_error(reterr, -EPERM,
			"firejail lets only the users listed in %s start a sandbox, and %s is not "
			"one of them",
			USERS_FILE, pw->pw_name);
}

static int prepare(struct sb_boundary *b, const struct sb_profile *p,
		   const struct sb_interp_paths *interp)
{
	int r = sb_provider_collect_grants(b, p, interp);

	/* The existing rule files are mounted read-only over the grants;
	 * one python-sb would read once it exists cannot be. */
	if (r >= 0)
		r = sb_rule_files_check_missing(p, &b->rule_file_conflict);
	if (r >= 0)
		r = sb_strv_pushf(&b->notes,
				  sb_wrap_net_wanted(p)
				      ? "network: a namespace of its own (firejail --net=none), "
					"as root with slirp4netns and nftables from net= "
					"(unprivileged, the run stops)"
				      : "network: none (firejail --net=none)");
	if (r >= 0)
		r = sb_strv_pushf(&b->notes, "/proc and /sys as firejail shows them");
	if (r >= 0 && p->n_ignores)
		r = sb_strv_pushf(&b->notes, "ignore=: what matches now vanishes under expose-ro "
					     "and is refused under expose-rw; what appears later "
					     "only the Python guard hides");
	return r;
}

/* Firejail reads its path options as patterns (globs, ${HOME}...): a path
 * it would not take literally cannot be given to it. */
static int literal(const char *path, char **reterr)
{
	if (strpbrk(path, "*?[]$,\"\\\n"))
		return sb_error(reterr, -EINVAL,
				"firejail cannot take the path '%s' literally (it reads '*', '?', "
				"'[', '$', ',' and quotes in paths as patterns): rename it or use "
				"os-sandbox=bwrap",
				path);
	return 0;
}

/* The command line under construction, and the whitelist it holds. */
struct builder {
	char **argv;
	char **whitelisted; /* resolved paths, whitelisted or kept whole */
	char **read_only;
	char **reterr;
	const struct sb_boundary *boundary;
};

static void builder_done(struct builder *bd)
{
	sb_strv_free(bd->argv);
	sb_strv_free(bd->whitelisted);
	sb_strv_free(bd->read_only);
}

#define MAX_WHITELISTED 2048

/* A directory firejail mounts its tmpfs on to hold a whitelist: one at the
 * root or in /usr. It cannot whitelist such a directory itself: kept whole
 * instead (it is then not blacklisted). */
static bool is_top(const char *path)
{
	const char *rest = startswith(path, "/usr/");

	if (!rest)
		rest = path + 1;
	return *rest && !strchr(rest, '/');
}

static int whitelist(struct builder *bd, const char *path)
{
	int r;

	for (char **w = bd->whitelisted; w && *w; w++)
		if (sb_path_under(path, *w))
			return 0;
	if (sb_strv_length(bd->whitelisted) >= MAX_WHITELISTED)
		return sb_error(bd->reterr, -E2BIG,
				"firejail would need more than %d whitelisted paths: %s",
				MAX_WHITELISTED, sb_wrap_too_many_grants_hint(bd->boundary));
	r = literal(path, bd->reterr);
	if (r >= 0 && !is_top(path))
		r = sb_strv_pushf(&bd->argv, "--whitelist=%s", path);
	if (r >= 0)
		r = sb_strv_push(&bd->whitelisted, path);
	return r;
}

static int read_only(struct builder *bd, const char *path)
{
	int r;

	if (sb_strv_contains(bd->read_only, path))
		return 0;
	r = literal(path, bd->reterr);
	if (r >= 0)
		r = sb_strv_pushf(&bd->argv, "--read-only=%s", path);
	return r < 0 ? r : sb_strv_push(&bd->read_only, path);
}

static int read_write(struct builder *bd, const char *path)
{
	int r = literal(path, bd->reterr);

	return r < 0 ? r : sb_strv_pushf(&bd->argv, "--read-write=%s", path);
}

/* firejail leaves writable what no whitelist covers: the host's root
 * directory and /run themselves (a file created in / as root lands on the
 * host: the blacklists hide entries, not the directory), and its own tmpfs
 * mounts (/tmp, /dev, /dev/shm: memory outside limit-memory). The seccomp
 * filter lets open() create files wherever the mounts allow
 * (SB_PROVIDER_FILES), as Landlock would bound it. So the whole tree goes
 * read-only first, and the expose-rw grants are made writable again, parents
 * before children: firejail applies these lines in their order. Device files
 * on a read-only mount still work (/dev/null). */
static const char *const read_only_first[] = {"/", "/tmp", "/dev"};

/* The directory firejail mounts its tmpfs on to hold a whitelisted path (see
 * is_top()): /etc for /etc/ssl, /usr/local for /usr/local/lib/x. */
static int read_only_top(struct builder *bd, const char *path)
{
	const char *rest = startswith(path, "/usr/");
	const char *slash;
	_cleanup_free_ char *top = NULL;

	if (!rest)
		rest = path + 1;
	slash = strchr(rest, '/');
	if (!*rest || !slash)
		return 0; /* the top directory itself: kept whole, read-only by its item */
	top = strndup(path, (size_t)(slash - path));
	return top ? read_only(bd, top) : -ENOMEM;
}

static bool is_ignored(const struct sb_wrap_ignored_set *set, const char *path)
{
	for (size_t i = 0; i < set->n; i++)
		if (streq(set->items[i].path, path))
			return true;
	return false;
}

static bool holds_ignored(const struct sb_wrap_ignored_set *set, const char *dir)
{
	for (size_t i = 0; i < set->n; i++)
		if (sb_path_under(set->items[i].path, dir) && !streq(set->items[i].path, dir))
			return true;
	return false;
}

/* dir minus what ignore= hides: the whitelist of its other entries,
 * rebuilding the subdirectories that hold a hidden entry the same way. */
static int whitelist_except(struct builder *bd, const char *dir,
			    const struct sb_wrap_ignored_set *set)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (!holds_ignored(set, dir))
		return whitelist(bd, dir);
	d = opendir(dir);
	if (!d)
		return 0; /* gone since the walk: nothing to show */
	while (r >= 0 && (de = readdir(d))) {
		_cleanup_free_ char *child = NULL;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		child = sb_path_join(dir, de->d_name);
		if (!child) {
			r = -ENOMEM;
			break;
		}
		if (is_ignored(set, child))
			continue;
		r = de->d_type == DT_DIR ? whitelist_except(bd, child, set) : whitelist(bd, child);
	}
	closedir(d);
	return r;
}

struct item {
	char *path; /* resolved */
	bool writable;
};

static int cmp_item(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->path, ((const struct item *)b)->path);
}

/* A grant named by a symbolic link (a module beside the script linked to
 * elsewhere): the program opens the link's path, which firejail's new tree
 * holds only when the link itself is whitelisted (firejail then adds its
 * target, whitelisted already). Named at its directory's real path, as the
 * other items are. Not a link at the top of the tree (/lib64), which
 * firejail keeps whole. */
static int add_link_item(const char *path, const char *resolved, struct item *items, size_t *n)
{
	_cleanup_free_ char *dir = NULL, *real_dir = NULL, *link = NULL;
	const char *slash = strrchr(path, '/');
	struct stat st;

	/* A rule file may be named relative to the working directory. */
	if (streq(path, resolved) || lstat(path, &st) < 0 || !S_ISLNK(st.st_mode) ||
	    !(dir = sb_path_dirname(path)) || !(real_dir = realpath(dir, NULL)))
		return 0;
	link = sb_path_join(real_dir, slash ? slash + 1 : path);
	if (!link)
		return -ENOMEM;
	if (is_top(link) || streq(link, resolved))
		return 0;
	items[*n] = (struct item){.path = TAKE_PTR(link), .writable = items[*n - 1].writable};
	(*n)++;
	return 0;
}

/* The grants, the rule files and what any program needs of /etc,
 * whitelisted at their resolved paths, parents first (/dev and /proc are
 * firejail's, /sys stays as it shows it); expose-ro read-only, ignore=
 * applied. */
static int build_files(struct builder *bd, const struct sb_boundary *b, const struct sb_profile *p)
{
	_cleanup_(sb_wrap_ignored_done) struct sb_wrap_ignored_set set = {0};
	size_t n_files = sb_strv_length(p->files), total, n = 0;
	_cleanup_free_ struct item *items = NULL;
	int r;

	total = b->n_paths + n_files + ELEMENTSOF(etc_entries);
	/* Room for each grant's link too (below). */
	items = calloc(2 * total, sizeof(*items));
	if (!items)
		return -ENOMEM;
	r = sb_wrap_collect_ignored(b, p, &set, bd->reterr);
	for (size_t i = 0; r >= 0 && i < total; i++) {
		_cleanup_free_ char *etc = NULL;
		const char *path;
		char resolved[PATH_MAX];

		if (i < b->n_paths)
			path = b->paths[i].path;
		else if (i < b->n_paths + n_files)
			path = p->files[i - b->n_paths];
		else
			path = etc = sb_path_join("/etc", etc_entries[i - b->n_paths - n_files]);
		if (!path) {
			r = -ENOMEM;
			break;
		}
		if (sb_path_under(path, "/dev") || sb_path_under(path, "/proc") ||
		    sb_path_under(path, "/sys") || !realpath(path, resolved))
			continue; /* firejail's, or missing (an optional grant) */
		/* A link in /etc (localtime) is whitelisted as a link: firejail
		 * adds its target; the target alone would leave /etc without it. */
		if (sb_path_under(path, "/etc") && !sb_path_under(resolved, "/etc") &&
		    snprintf(resolved, sizeof(resolved), "%s", path) >= (int)sizeof(resolved))
			continue;
		items[n].path = strdup(resolved);
		if (!items[n].path) {
			r = -ENOMEM;
			break;
		}
		items[n].writable = i < b->n_paths && b->paths[i].writable;
		n++;
		r = add_link_item(path, resolved, items, &n);
	}
	if (r >= 0)
		qsort(items, n, sizeof(*items), cmp_item);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(read_only_first); i++)
		r = read_only(bd, read_only_first[i]);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = read_only_top(bd, items[i].path);
	/* Sorted, a parent comes before its children: an expose-rw directory
	 * inside an expose-ro one is made writable after the read-only line of
	 * its parent, and the reverse. */
	for (size_t i = 0; r >= 0 && i < n; i++) {
		if (items[i].writable) {
			r = whitelist(bd, items[i].path);
			if (r >= 0)
				r = read_write(bd, items[i].path);
			continue;
		}
		r = whitelist_except(bd, items[i].path, &set);
		if (r >= 0)
			r = read_only(bd, items[i].path);
	}
	for (size_t i = 0; i < n; i++)
		free(items[i].path);
	/* Inside expose-rw trees: refused rather than vanished (see above). */
	for (size_t i = 0; r >= 0 && i < set.n; i++)
		if (set.items[i].in_writable) {
			r = literal(set.items[i].path, bd->reterr);
			if (r >= 0)
				r = sb_strv_pushf(&bd->argv, "--blacklist=%s", set.items[i].path);
		}
	return r;
}

static bool holds_whitelisted(const struct builder *bd, const char *dir)
{
	for (char **w = bd->whitelisted; w && *w; w++)
		if (sb_path_under(*w, dir))
			return true;
	return false;
}

/* Every entry of dir that no grant needs is blacklisted (but kept); one that
 * holds a grant is a whitelist already. Links (/bin -> usr/bin) are left:
 * their targets are handled. */
static int blacklist_entries(struct builder *bd, const char *dir, const char *const *kept,
			     size_t n_kept)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int r = 0;

	if (!d)
		return errno == ENOENT ? 0
				       : sb_error(bd->reterr, -errno, "cannot list %s: %s", dir,
						  strerror(errno));
	while (r >= 0 && (de = readdir(d))) {
		_cleanup_free_ char *path = NULL;
		bool keep = streq(de->d_name, ".") || streq(de->d_name, "..");
		struct stat st;

		for (size_t i = 0; !keep && i < n_kept; i++)
			keep = streq(de->d_name, kept[i]);
		path = sb_path_join(dir, de->d_name);
		if (!path) {
			r = -ENOMEM;
			break;
		}
		if (keep || lstat(path, &st) < 0 || S_ISLNK(st.st_mode) ||
		    holds_whitelisted(bd, path))
			continue;
		r = literal(path, bd->reterr);
		if (r >= 0)
			r = sb_strv_pushf(&bd->argv, "--blacklist=%s", path);
	}
	closedir(d);
	return r;
}

/* The root cut down to what the grants need, /usr likewise; /run, which
 * firejail keeps its own files in, too. */
static int build_blacklist(struct builder *bd)
{
	static const char *const run_kept[] = {"firejail"}, *const firejail_kept[] = {"mnt", "lib"};
	int r;

	r = blacklist_entries(bd, "/", root_kept, ELEMENTSOF(root_kept));
	if (r >= 0 && !holds_whitelisted(bd, "/run"))
		r = blacklist_entries(bd, "/run", run_kept, ELEMENTSOF(run_kept));
	/* firejail's own state but the sandbox's mnt and its helpers (lib):
	 * the lock every firejail start on the host takes (a program of a
	 * root-started sandbox held it, and no other sandbox could start while
	 * it ran), and the other sandboxes' files. */
	if (r >= 0)
		r = blacklist_entries(bd, "/run/firejail", firejail_kept,
				      ELEMENTSOF(firejail_kept));
	/* /usr too (firejail whitelists in its directories): /usr/bin and the
	 * like unless exposed, so that a program allowed to start processes
	 * still needs an expose-* rule for the binary, as under Landlock. */
	if (r >= 0)
		r = blacklist_entries(bd, "/usr", NULL, 0);
	/* Nothing of the host's /tmp: an empty one of the sandbox's own. */
	if (r >= 0 && !holds_whitelisted(bd, "/tmp"))
		r = sb_argv_add(&bd->argv, "--private-tmp", NULL);
	return r;
}

/* net= ALLOW rules: as root, firejail's network namespace (--net=none) gets
 * slirp4netns and the nftables filter of os-sandbox=unshare, set up from
 * outside as for bwrap (wrap-net.h; the pinned names through --hosts-file).
 * Unprivileged, setuid firejail still makes that namespace as root, owned by
 * the host's user namespace: this user can neither load a filter there nor
 * attach slirp4netns, so the run stops rather than go unfiltered. */
static int build_net(struct builder *bd, const struct sb_profile *p,
		     const struct sb_wrap_request *req)
{
	const struct sb_net_rule *allow = sb_wrap_first_allow_rule(p);
	const char *bridge = sb_wrap_param(p, SB_OS_FIREJAIL, "net");
	int r;

	if (!allow)
		return sb_argv_add(&bd->argv, "--net=none", NULL);
	if (bridge)
		return sb_error(bd->reterr, -EOPNOTSUPP,
				"net=%s (%s:%u) with firejail.net=%s: a host bridge with "
				"firejail's netfilter built from the net= rules is not what this "
				"version of python-sb does, and it will not run the program on an "
				"unfiltered network. Without firejail.net, as root, the sandbox "
				"gets a network namespace of its own filtered by nftables",
				allow->text,
				allow->origin.file ? allow->origin.file : SB_ORIGIN_CLI,
				allow->origin.line, bridge);
	if (geteuid() != 0)
		return sb_error(
		    bd->reterr, -EPERM,
		    "net=%s (%s:%u) needs a network namespace filtered from outside, which "
		    "python-sb can give a firejail sandbox only as root: setuid firejail makes "
		    "the namespace as root, where this user can neither load the nftables filter "
		    "nor attach slirp4netns, and python-sb will not run the program on an "
		    "unfiltered network. Run as root, or use os-sandbox=bwrap or unshare (the "
		    "same filtered network, unprivileged)",
		    allow->text, allow->origin.file ? allow->origin.file : SB_ORIGIN_CLI,
		    allow->origin.line);
	r = sb_wrap_net_prepare(p, req->explain, req->net, bd->reterr);
	if (r >= 0)
		r = sb_argv_add(&bd->argv, "--net=none", NULL);
	if (r >= 0)
		r = sb_strv_pushf(&bd->argv, "--hosts-file=/proc/self/fd/%d", req->net->hosts_fd);
	return r;
}

static const struct sb_provider_param *find_param(const struct sb_profile *p, const char *key)
{
	const struct sb_provider_param *found = NULL;

	for (size_t i = 0; i < p->n_params; i++)
		if (p->params[i].os_sandbox == SB_OS_FIREJAIL && streq(p->params[i].key, key))
			found = &p->params[i];
	return found;
}

static int add_option(struct builder *bd, const char *name, const char *value)
{
	return value && *value ? sb_strv_pushf(&bd->argv, "--%s=%s", name, value)
			       : sb_strv_pushf(&bd->argv, "--%s", name);
}

/* The template's rlimits that a limit-* key of the profile also sets: the
 * profile's value replaces the template's, which would otherwise cut it
 * silently (limit-memory=1GB held at 300m: the inner python-sb never raises a
 * limit). A firejail.rlimit-* line still wins over both. */
static const struct {
	const char *option;
	size_t field; /* in struct sb_limits */
} profile_limits[] = {
    {"rlimit-as", offsetof(struct sb_limits, memory_bytes)},
    {"rlimit-fsize", offsetof(struct sb_limits, file_size_bytes)},
    {"rlimit-nproc", offsetof(struct sb_limits, processes)},
    {"rlimit-nofile", offsetof(struct sb_limits, open_files)},
};

static unsigned long long profile_limit(const struct sb_profile *p, const char *option)
{
	for (size_t i = 0; i < ELEMENTSOF(profile_limits); i++)
		if (streq(profile_limits[i].option, option))
			return *(const unsigned long long *)((const char *)&p->limits +
							     profile_limits[i].field);
	return 0;
}

/* The template, each option replaced by the profile's line of its name. */
static int build_template(struct builder *bd, const struct sb_profile *p, bool allow_unix,
			  bool root, bool identity, const char *self_exe)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(template_options); i++) {
		const struct option *o = &template_options[i];
		const struct sb_provider_param *prm = find_param(p, o->name);

		/* firejail would refuse to start python-sb itself (a test
		 * install under /tmp); seccomp refuses execve to the program
		 * anyway unless process-exec is granted. */
		if (!prm && streq(o->name, "noexec") && sb_path_under(self_exe, o->value))
			continue;
		/* Root: the inner python-sb empties the bounding set and locks
		 * the securebits, as python-sb started as root does under any
		 * provider, and with user= changes its identity (privileges.c);
		 * then it clears every set. */
		if (!prm && streq(o->name, "caps.drop") && root) {
			r = add_option(bd, "caps.keep",
				       identity ? "setpcap,setuid,setgid" : "setpcap");
			continue;
		}

#ifdef SB_HAVE_ASAN
		/* AddressSanitizer reserves terabytes of address space. */
		if (!prm && streq(o->name, "rlimit-as"))
			continue;
#endif
		if (!prm && profile_limit(p, o->name)) {
			r = sb_strv_pushf(&bd->argv, "--%s=%llu", o->name,
					  profile_limit(p, o->name));
			continue;
		}
		r = add_option(bd, o->name, prm ? prm->value : o->value);
	}
	/* Sockets: what seccomp lets through anyway (firejail's filter first). */
	if (r >= 0)
		r = sb_argv_add(&bd->argv,
				allow_unix ? "--protocol=unix,inet,inet6" : "--protocol=inet,inet6",
				NULL);
	return r;
}

/* firejail.<key> lines that are not the template's: --key=value. */
static int build_pass_through(struct builder *bd, const struct sb_profile *p)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < p->n_params; i++) {
		const struct sb_provider_param *prm = &p->params[i];
		bool known = streq(prm->key, "net");

		if (prm->os_sandbox != SB_OS_FIREJAIL)
			continue;
		for (size_t j = 0; !known && j < ELEMENTSOF(template_options); j++)
			known = streq(template_options[j].name, prm->key);
		if (!known)
			r = add_option(bd, prm->key, prm->value);
	}
	return r;
}

/* firejail refuses a command line of MAX_ARGS (128) words or more ("too many
 * arguments"), which the file system options alone pass on a root of a few
 * dozen entries: they go to the file firejail reads with --include instead,
 * a profile line each, which is what firejail makes of each such option
 * ("--whitelist=/x" is the line "whitelist /x"), in the same order. */
#define FIREJAIL_MAX_ARGS 128

static const char *const path_options[] = {
    "--whitelist=", "--read-only=", "--read-write=", "--blacklist=", "--private-tmp"};

static bool is_path_option(const char *arg)
{
	for (size_t i = 0; i < ELEMENTSOF(path_options); i++)
		if (startswith(arg, path_options[i]))
			return true;
	return false;
}

/* The path options of argv (from index from on) as profile lines into out,
 * and out of argv. */
static int move_path_options(char **argv, size_t from, struct sb_buf *out, char **reterr)
{
	size_t kept = from;
	int r = 0;

	for (size_t i = from; argv[i]; i++) {
		const char *eq;

		if (!is_path_option(argv[i])) {
			argv[kept++] = argv[i];
			continue;
		}
		eq = strchr(argv[i], '=');
		/* A line each: a newline would add a line of the path's
		 * choosing (literal() refuses it first; this stays closed). */
		if (r >= 0 && strchr(argv[i], '\n'))
			r = sb_error(reterr, -EINVAL,
				     "firejail cannot take a path with a newline: %s", argv[i]);
		if (r >= 0)
			r = eq ? sb_buf_printf(out, "%.*s %s\n", (int)(eq - argv[i] - 2),
					       argv[i] + 2, eq + 1)
			       : sb_buf_printf(out, "%s\n", argv[i] + 2);
		free(argv[i]);
	}
	argv[kept] = NULL;
	return r;
}

/* The path lines (head), then firejail's lists without their include lines
 * (see includes[]): a sealed memfd, which firejail reads as
 * /proc/self/fd/N and closes before it starts the program. */
static int lists_fd(const struct sb_buf *head, int *ret_fd, char **reterr)
{
	_cleanup_close_ int fd = -1;
	struct sb_buf b = {0};
	int r = 0;

	if (head->len)
		r = sb_buf_puts(&b, head->data);

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(includes); i++) {
		_cleanup_fclose_ FILE *f = fopen(includes[i], "re");
		_cleanup_free_ char *line = NULL;
		size_t cap = 0;

		if (!f)
			continue;
		while (r >= 0 && getline(&line, &cap, f) > 0) {
			const char *word = line + strspn(line, " \t");

			if (startswith(word, "include") && strchr(" \t", word[7]))
				continue;
			r = sb_buf_puts(&b, line);
			if (r >= 0 && line[strlen(line) - 1] != '\n')
				r = sb_buf_putc(&b, '\n');
		}
	}
	if (r >= 0) {
		fd = memfd_create("python-sb-firejail-lists", MFD_ALLOW_SEALING);
		if (fd < 0)
			r = -errno;
	}
	for (size_t off = 0; r >= 0 && off < b.len;) {
		ssize_t n = write(fd, b.data + off, b.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			r = n < 0 ? -errno : -EIO;
		else
			off += (size_t)n;
	}
	sb_buf_reset(&b);
	if (r >= 0 &&
	    (lseek(fd, 0, SEEK_SET) < 0 ||
	     fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0))
		r = -errno;
	if (r < 0)
		return sb_error(reterr, r, "cannot hand firejail its lists: %s", strerror(-r));
	*ret_fd = fd;
	fd = -1;
	return 0;
}

static int build_argv(const struct sb_boundary *b, const struct sb_profile *p,
		      const struct sb_wrap_request *req, char ***ret_argv, char **reterr)
{
	_cleanup_(builder_done) struct builder bd = {.reterr = reterr, .boundary = b};
	_cleanup_free_ char *firejail = NULL;
	struct sb_buf keep = {0}, lines = {0};
	int r;

	r = sb_wrap_find_binary("firejail", "firejail", sb_strv_env_get(req->host_env, "PATH"), p,
				&firejail, reterr);
	if (r < 0)
		return r;
	r = sb_strv_push(&bd.argv, firejail);
	if (r >= 0)
		r = build_template(&bd, p, b->seccomp.allow_unix_socket, geteuid() == 0,
				   b->user.set && (b->user.uid != 0 || b->user.gid != 0),
				   req->argv[0]);
	if (r >= 0)
		r = build_net(&bd, p, req);
	if (r >= 0)
		r = build_files(&bd, b, p);
	if (r >= 0)
		r = build_blacklist(&bd);
	/* After python-sb's own blacklists: firejail then skips the hundreds of
	 * paths of its lists that they already hide (under /usr/bin...),
	 * rather than mount over each (a third of its start-up here). */
	if (r >= 0 && !req->tool_fd)
		r = -EINVAL;
	/* --explain shows them as options, what firejail reads them as. */
	if (r >= 0 && !req->explain)
		r = move_path_options(bd.argv, 1, &lines, reterr);
	if (r >= 0)
		r = lists_fd(&lines, req->tool_fd, reterr);
	sb_buf_reset(&lines);
	if (r >= 0)
		r = sb_strv_pushf(&bd.argv, "--include=/proc/self/fd/%d", *req->tool_fd);
	/* firejail closes every other descriptor. */
	for (size_t i = 0; r >= 0 && i < req->n_keep_fds; i++)
		r = sb_buf_printf(&keep, "%s%d", i ? "," : "", req->keep_fds[i]);
	if (r >= 0 && req->net->ready_inner >= 0)
		r = sb_buf_printf(&keep, "%s%d", keep.len ? "," : "", req->net->ready_inner);
	if (r >= 0 && keep.len)
		r = sb_strv_pushf(&bd.argv, "--keep-fd=%s", keep.data);
	sb_buf_reset(&keep);
	if (r >= 0)
		r = build_pass_through(&bd, p);
	/* No "--": firejail would then run the program through a shell (bash
	 * -c and the arguments quoted into one string). The first word that is
	 * not an option is the program: python-sb's absolute path. */
	for (char *const *a = req->argv; r >= 0 && *a; a++)
		r = sb_strv_push(&bd.argv, *a);
	if (r >= 0 && !req->explain && sb_strv_length(bd.argv) >= FIREJAIL_MAX_ARGS)
		return sb_error(reterr, -E2BIG,
				"firejail takes fewer than %d arguments and this sandbox needs %zu "
				"(firejail.<key> lines and the program's arguments): pass fewer",
				FIREJAIL_MAX_ARGS, sb_strv_length(bd.argv));
	if (r < 0)
		return r;
	*ret_argv = TAKE_PTR(bd.argv);
	return 0;
}

static int explain(const struct sb_boundary *b, struct sb_buf *out)
{
	int r =
	    sb_buf_puts(out, "#   firejail: its template of filters and limits, the root "
			     "and /etc cut down to these (and the rule files)\n"
			     "#   the --whitelist, --read-only, --read-write, --blacklist and "
			     "--private-tmp options of the command line reach firejail as the "
			     "lines of its --include file (it takes fewer than 128 arguments)\n");

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(includes); i++)
		r = sb_buf_printf(
		    out, "#   list %s without its include lines (never ~/.config/firejail)\n",
		    includes[i]);
	return r < 0 ? r : sb_wrap_explain_grants(b, "", out);
}

const struct sb_provider sb_provider_firejail = {
    .name = "firejail",
    .flags = SB_PROVIDER_WRAPS_EXEC | SB_PROVIDER_FILES | SB_PROVIDER_SECCOMP | SB_PROVIDER_LIMITS |
	     SB_PROVIDER_PRIVILEGES | SB_PROVIDER_PARAMS_PASS_THROUGH,
    .ignore = SB_IGNORE_VANISHES,
    .params = params,
    .summary = "firejail: its filters and limits, the root cut down to the grants",
    .files_layer = {"Python guard + kernel: firejail's whitelist",
		    "kernel: firejail's whitelist (py-sandbox=false)"},
    .net_layer = {"Python guard + kernel: network namespace, nftables (as root)",
		  "kernel: network namespace, nftables (as root; py-sandbox=false)"},
    .probe = probe,
    .prepare = prepare,
    .explain = explain,
    .build_argv = build_argv,
};
