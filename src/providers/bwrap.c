/* SPDX-License-Identifier: MIT */
/* os-sandbox=bwrap (spec section 8): bubblewrap runs python-sb again in a new
 * root that holds only the grants (the interpreter, the shared libraries,
 * what any CPython needs, the expose-* rules and the rule files), read-only
 * except expose-rw, with ignore= masked by empty placeholders, fresh /proc
 * and /dev, its own IPC, PID, UTS, cgroup (and, unprivileged, user)
 * namespaces, every capability dropped, killed with its parent, and a network
 * namespace of its own unless bwrap.share-net. Inside, python-sb loads the
 * seccomp filter and the limits itself (stronger than bwrap's --seccomp FD:
 * that filter would have to let bwrap execute python-sb, so it could not
 * refuse execve to the program) and runs the guard.
 *
 * The network namespace has its loopback alone; net= ALLOW rules give it
 * slirp4netns and the nftables filter of os-sandbox=unshare (netns.h), set up
 * by the launching python-sb from outside (wrap-net.h). Other bwrap.<key>
 * lines are passed to bwrap as --key and the value's words. */
#include "provider.h"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>

#include "boundary.h"
#include "grants.h"
#include "namespaces.h"
#include "rule-files.h"
#include "wrap-common.h"
#include "wrap-net.h"

static const struct sb_provider_param_def params[] = {
    /* The host's network, with no filtering by the kernel. */
    {"share-net", SB_PARAM_BOOL, NULL, NULL},
    /* no/0/false: the same. */
    {"unshare-net", SB_PARAM_BOOL, NULL, NULL},
    {NULL},
};

static int probe(char **reterr)
{
	return sb_wrap_probe_binary("bwrap", "bubblewrap", reterr);
}

static bool shares_net(const struct sb_profile *p)
{
	const char *unshare = sb_wrap_param(p, SB_OS_BWRAP, "unshare-net");

	return sb_wrap_param_true(sb_wrap_param(p, SB_OS_BWRAP, "share-net")) ||
	       (unshare && !sb_wrap_param_true(unshare));
}

static int prepare(struct sb_boundary *b, const struct sb_profile *p,
		   const struct sb_interp_paths *interp)
{
	int r = sb_provider_collect_grants(b, p, interp);

	/* The existing rule files are mounted read-only over the grants;
	 * one python-sb would read once it exists cannot be. */
	if (r >= 0)
		r = sb_rule_files_check_missing(p, &b->rule_file_conflict);
	if (r >= 0 && shares_net(p))
		r = sb_strv_pushf(&b->notes, "bwrap.share-net: the host's network; net= rules are "
					     "the Python guard's and seccomp's (sockets at all), "
					     "the kernel filters no host or port");
	else if (r >= 0) {
		/* --explain's view of the filter: the names as written. */
		struct sb_netns_plan *plan = calloc(1, sizeof(*plan));

		if (!plan)
			return -ENOMEM;
		b->provider_data = plan;
		r = sb_netns_plan_build(p->nets, p->n_nets, NULL, plan);
	}
	if (r >= 0 && p->n_ignores)
		r = sb_strv_pushf(&b->notes, "ignore=: what matches now is masked (an empty file "
					     "or read-only directory); what appears later only the "
					     "Python guard hides");
	return r;
}

/* user= asks a python-sb started as root for another identity. */
static bool wants_identity(const struct sb_boundary *b)
{
	return b->user.set && (b->user.uid != 0 || b->user.gid != 0);
}

/* A path a walk found to be no symbolic link (mirror_links()): the grants
 * share their first components (/usr, /usr/lib, /usr/lib/python3.11...),
 * which the next walks then stat no more. */
struct plain_path {
	struct plain_path *next;
	char path[];
};

#define PLAIN_BUCKETS 256

/* The command line under construction. */
struct builder {
	struct sb_strv_builder argv;
	struct plain_path *plain[PLAIN_BUCKETS];
	char **links; /* symbolic links already made in the new root */
	char **dirs;  /* directories made in the new root (ensure_parents) */
	char **binds; /* paths already bound, with their right in rights */
	bool *rights; /* parallel to binds: writable */
	size_t n_binds;
};

static void builder_done(struct builder *bd)
{
	for (size_t i = 0; i < PLAIN_BUCKETS; i++)
		for (struct plain_path *e = bd->plain[i], *next; e; e = next) {
			next = e->next;
			free(e);
		}
	sb_strv_free(bd->argv.v);
	sb_strv_free(bd->links);
	sb_strv_free(bd->dirs);
	sb_strv_free(bd->binds);
	free(bd->rights);
}

/* out = a, b and c one after the other, or -ENAMETOOLONG. Not snprintf(),
 * whose formatting costs about a thousand instructions a call: the walks
 * below make a few hundred. */
static int path_cat(char out[PATH_MAX], const char *a, size_t alen, const char *b, size_t blen,
		    const char *c, size_t clen)
{
	if (alen + blen + clen >= PATH_MAX)
		return -ENAMETOOLONG;
	memmove(out, a, alen);
	memmove(out + alen, b, blen);
	memmove(out + alen + blen, c, clen);
	out[alen + blen + clen] = '\0';
	return 0;
}

static bool under_bind(const struct builder *bd, const char *path)
{
	for (size_t i = 0; i < bd->n_binds; i++)
		if (sb_path_under(path, bd->binds[i]))
			return true;
	return false;
}

/* The directories above path that bwrap would make, made first with mode
 * 0755: bwrap 0.8 run by root makes them 0700, which a program running as
 * another uid (user=) could not cross. */
static int ensure_parents(struct builder *bd, const char *path)
{
	char dir[PATH_MAX];
	int r = 0;

	if (path_cat(dir, "", 0, "", 0, path, strlen(path)) < 0)
		return -ENAMETOOLONG;
	for (char *slash = strchr(dir + 1, '/'); r >= 0 && slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (!under_bind(bd, dir) && !sb_strv_contains(bd->dirs, dir) &&
		    !sb_strv_contains(bd->links, dir)) {
			r = sb_strvb_add(&bd->argv, "--perms", "0755", "--dir", dir, NULL);
			if (r >= 0)
				r = sb_strv_push(&bd->dirs, dir);
		}
		*slash = '/';
	}
	return r;
}

static struct plain_path **plain_bucket(struct builder *bd, const char *path)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (const unsigned char *c = (const unsigned char *)path; *c; c++)
		h = (h ^ *c) * 16777619u;
	return &bd->plain[h % PLAIN_BUCKETS];
}

static bool plain_known(struct builder *bd, const char *path)
{
	for (struct plain_path *e = *plain_bucket(bd, path); e; e = e->next)
		if (streq(e->path, path))
			return true;
	return false;
}

/* Remembered or not (out of memory), the walk goes on. */
static void plain_add(struct builder *bd, const char *path)
{
	struct plain_path **bucket = plain_bucket(bd, path);
	size_t len = strlen(path) + 1;
	struct plain_path *e = malloc(sizeof(*e) + len);

	if (!e)
		return;
	memcpy(e->path, path, len);
	e->next = *bucket;
	*bucket = e;
}

/* Resolves path as the host does, recreating in the new root each symbolic
 * link met on the way (/lib -> usr/lib, /etc/localtime -> ...): the sandbox
 * then reaches the grant by the same name. The bind itself goes to the
 * resolved path. A missing component ends the walk: the rest is appended
 * as written (a -try bind then skips it). */
static int mirror_links(struct builder *bd, const char *path, char out[PATH_MAX])
{
	char rest[PATH_MAX], cur[PATH_MAX] = "";
	int hops = 0, r;

	if (path_cat(rest, "", 0, "", 0, path, strlen(path)) < 0)
		return -ENAMETOOLONG;
	for (char *p = rest; *p;) {
		char cand[PATH_MAX], target[PATH_MAX], next[PATH_MAX];
		size_t len;
		struct stat st;
		ssize_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		len = strcspn(p, "/");
		if (path_cat(cand, cur, strlen(cur), "/", 1, p, len) < 0)
			return -ENAMETOOLONG;
		p += len;
		if (plain_known(bd, cand)) {
			memcpy(cur, cand, strlen(cand) + 1);
			continue;
		}
		if (lstat(cand, &st) < 0) {
			if (path_cat(out, cand, strlen(cand), "", 0, p, strlen(p)) < 0)
				return -ENAMETOOLONG;
			return 0;
		}
		if (!S_ISLNK(st.st_mode)) {
			plain_add(bd, cand);
			memcpy(cur, cand, strlen(cand) + 1);
			continue;
		}
		if (++hops > 40)
			return -ELOOP;
		n = readlink(cand, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		if (!sb_strv_contains(bd->links, cand)) {
			r = ensure_parents(bd, cand);
			if (r >= 0)
				r = sb_strvb_add(&bd->argv, "--symlink", target, cand, NULL);
			if (r >= 0)
				r = sb_strv_push(&bd->links, cand);
			if (r < 0)
				return r;
		}
		/* Go on from the link's target, relative to its directory. */
		if (snprintf(next, sizeof(next), "%s%s%s%s", target[0] == '/' ? "" : cur,
			     target[0] == '/' ? "" : "/", target, p) >= (int)sizeof(next))
			return -ENAMETOOLONG;
		memcpy(rest, next, strlen(next) + 1);
		p = rest;
		cur[0] = '\0';
	}
	if (path_cat(out, "", 0, "", 0, cur[0] ? cur : "/", cur[0] ? strlen(cur) : 1) < 0)
		return -ENAMETOOLONG;
	return 0;
}

struct bind {
	char *path; /* resolved */
	bool writable, optional;
};

static int cmp_bind(const void *a, const void *b)
{
	return strcmp(((const struct bind *)a)->path, ((const struct bind *)b)->path);
}

/* Whether an earlier bind already gives path with this right. */
static bool covered(const struct builder *bd, const char *path, bool writable)
{
	bool found = false, right = false;

	/* The deepest bind above path decides what the sandbox sees there. */
	for (size_t i = 0; i < bd->n_binds; i++)
		if (sb_path_under(path, bd->binds[i])) {
			found = true;
			right = bd->rights[i];
		}
	return found && right == writable;
}

static int add_bind(struct builder *bd, const struct bind *bi)
{
	bool *rights;
	int r;

	if (covered(bd, bi->path, bi->writable))
		return 0;
	r = ensure_parents(bd, bi->path);
	if (r < 0)
		return r;
	r = sb_strvb_add(&bd->argv,
			 bi->writable ? (bi->optional ? "--bind-try" : "--bind")
				      : (bi->optional ? "--ro-bind-try" : "--ro-bind"),
			 bi->path, bi->path, NULL);
	if (r < 0)
		return r;
	rights = realloc(bd->rights, (bd->n_binds + 1) * sizeof(*rights));
	if (!rights)
		return -ENOMEM;
	bd->rights = rights;
	r = sb_strv_push(&bd->binds, bi->path);
	if (r < 0)
		return r;
	bd->rights[bd->n_binds++] = bi->writable;
	return 0;
}

/* The root's links into /usr (/bin, /lib64...) as the host has them, so
 * that /bin/sh names /usr/bin/sh when that is exposed. */
static int build_root_links(struct builder *bd)
{
	DIR *d = opendir("/");
	struct dirent *de;
	int r = 0;

	if (!d)
		return 0;
	while (r >= 0 && (de = readdir(d))) {
		char path[PATH_MAX], target[PATH_MAX];
		ssize_t n;

		if (de->d_type != DT_LNK ||
		    snprintf(path, sizeof(path), "/%s", de->d_name) >= (int)sizeof(path))
			continue;
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (!startswith(target, "usr/") && !startswith(target, "/usr/"))
			continue;
		r = sb_strvb_add(&bd->argv, "--symlink", target, path, NULL);
		if (r >= 0)
			r = sb_strv_push(&bd->links, path);
	}
	closedir(d);
	return r;
}

/* The grants and the rule files (the inner python-sb reads them again), as
 * binds at their resolved paths, parents before children. /dev and /proc
 * are bwrap's own. */
static int build_binds(struct builder *bd, const struct sb_boundary *b, const struct sb_profile *p,
		       const char *cwd)
{
	size_t n_files = sb_strv_length(p->files), n = 0;
	_cleanup_free_ struct bind *binds = calloc(b->n_paths + n_files + 1, sizeof(*binds));
	int r = 0;

	if (!binds)
		return -ENOMEM;
	for (size_t i = 0; r >= 0 && i < b->n_paths + n_files; i++) {
		const char *path = i < b->n_paths ? b->paths[i].path : p->files[i - b->n_paths];
		_cleanup_free_ char *absolute = NULL;
		char resolved[PATH_MAX];
		struct stat st;

		/* A rule file named relative to the working directory
		 * (--pysandboxes-config FILE). */
		if (path[0] != '/') {
			path = absolute = sb_path_join(cwd, path);
			if (!path) {
				r = -ENOMEM;
				break;
			}
		}
		if (sb_path_under(path, "/dev") || sb_path_under(path, "/proc"))
			continue;
		r = mirror_links(bd, path, resolved);
		if (r == -ENAMETOOLONG || r == -ELOOP || r == -EACCES) {
			/* Unreachable here: python-sb could not use it either. */
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		/* An optional grant this user cannot reach (another user's
		 * site-packages): bwrap's -try binds skip a missing one only. */
		if ((i >= b->n_paths || b->paths[i].optional) && stat(resolved, &st) < 0)
			continue;
		binds[n].path = strdup(resolved);
		if (!binds[n].path) {
			r = -ENOMEM;
			break;
		}
		binds[n].writable = i < b->n_paths && b->paths[i].writable;
		binds[n].optional = i >= b->n_paths || b->paths[i].optional;
		n++;
	}
	if (r >= 0)
		qsort(binds, n, sizeof(*binds), cmp_bind);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = add_bind(bd, &binds[i]);
	for (size_t i = 0; i < n; i++)
		free(binds[i].path);
	return r;
}

/* ignore=: an empty read-only directory over a directory, /dev/null over a
 * file (reads succeed and return nothing, spec section 8; writes are
 * discarded). --dev-bind: bwrap's other binds are nodev, where opening a
 * device fails with EACCES. */
static int build_masks(struct builder *bd, const struct sb_boundary *b, const struct sb_profile *p,
		       char **reterr)
{
	_cleanup_(sb_wrap_ignored_done) struct sb_wrap_ignored_set set = {0};
	int r;

	r = sb_wrap_collect_ignored(b, p, &set, reterr);
	for (size_t i = 0; r >= 0 && i < set.n; i++)
		r = set.items[i].dir ? sb_strvb_add(&bd->argv, "--tmpfs", set.items[i].path,
						    "--remount-ro", set.items[i].path, NULL)
				     : sb_strvb_add(&bd->argv, "--dev-bind", "/dev/null",
						    set.items[i].path, NULL);
	return r;
}

/* A network namespace of the sandbox's own; with net= ALLOW rules, set up
 * from outside once the inner python-sb started in it (wrap-net.h). */
static int build_net(struct builder *bd, const struct sb_profile *p,
		     const struct sb_wrap_request *req, char **reterr)
{
	int r;

	if (shares_net(p))
		return 0;
	r = sb_strvb_add(&bd->argv, "--unshare-net", NULL);
	if (r < 0 || !sb_wrap_net_wanted(p))
		return r;
	return sb_wrap_net_prepare(p, req->explain, req->net, reterr);
}

/* The pinned names (wrap-net.h), over whatever the grants show there. */
static int build_hosts(struct builder *bd, const struct sb_wrap_request *req)
{
	char fd[16];
	int r;

	if (req->net->hosts_fd < 0)
		return 0;
	r = ensure_parents(bd, "/etc/hosts");
	snprintf(fd, sizeof(fd), "%d", req->net->hosts_fd);
	return r < 0 ? r : sb_strvb_add(&bd->argv, "--ro-bind-data", fd, "/etc/hosts", NULL);
}

/* bwrap.<key>=<value> lines that python-sb does not know: --key, then the
 * value's words (bwrap takes an option's arguments as separate words). */
static int build_pass_through(struct builder *bd, const struct sb_profile *p)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < p->n_params; i++) {
		const struct sb_provider_param *prm = &p->params[i];
		bool documented = false;
		_cleanup_free_ char *words = NULL;
		char *save = NULL;

		if (prm->os_sandbox != SB_OS_BWRAP)
			continue;
		for (const struct sb_provider_param_def *d = params; d->key; d++)
			documented = documented || streq(d->key, prm->key);
		if (documented)
			continue;
		r = sb_strvb_pushf(&bd->argv, "--%s", prm->key);
		words = strdup(prm->value);
		if (!words)
			return -ENOMEM;
		for (char *w = strtok_r(words, " \t", &save); r >= 0 && w;
		     w = strtok_r(NULL, " \t", &save))
			r = sb_strvb_push(&bd->argv, w);
	}
	return r;
}

/* bubblewrap refuses a longer command line (its MAX_ARGS, 0.4 to 0.8):
 * refused here with the cause and what to change, not with its one line. */
#define BWRAP_MAX_ARGS 9000

static int build_argv(const struct sb_boundary *b, const struct sb_profile *p,
		      const struct sb_wrap_request *req, char ***ret_argv, char **reterr)
{
	_cleanup_(builder_done) struct builder bd = {0};
	_cleanup_free_ char *bwrap = NULL;
	int r;

	r = sb_wrap_find_binary("bwrap", "bubblewrap", sb_strv_env_get(req->host_env, "PATH"), p,
				&bwrap, reterr);
	if (r < 0)
		return r;
	r = sb_strvb_add(&bd.argv, bwrap,
			 /* Every namespace bwrap knows, the network below (cgroup
			  * where the kernel has it). */
			 "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
			 "--die-with-parent", "--cap-drop", "ALL",
			 /* No --clearenv: bwrap gets no environment of the host's
			  * (the inner python-sb reads it from the handover record)
			  * but a sanitizer build's options. */
			 "--proc", "/proc",
			 /* The kernel's settings, global whatever the namespaces:
			  * uid 0 (python-sb started by root) writes a sysctl with
			  * no capability at all (kernel.core_pattern names a
			  * program the host's kernel runs as root), and bwrap 0.8
			  * leaves /proc/sys writable then. Read-only binds over
			  * them, as os-sandbox=unshare's /proc holds none. */
			 "--ro-bind", "/proc/sys", "/proc/sys", "--ro-bind-try",
			 "/proc/sysrq-trigger", "/proc/sysrq-trigger", "--dev", "/dev", NULL);
	/* A user namespace for an unprivileged caller (bwrap needs one to
	 * mount). For root it changes nothing (root inside is the host's uid 0
	 * either way, its capabilities dropped; /proc/sys read-only above) and
	 * costs a few hundred microseconds. */
	if (r >= 0 && geteuid() != 0)
		r = sb_strvb_add(&bd.argv, "--unshare-user", NULL);
	/* Root: the inner python-sb empties the bounding set and locks the
	 * securebits, as python-sb started as root does under any provider
	 * (bwrap leaves the bounding set full), and with user= changes its
	 * identity (privileges.c); then it clears every set. */
	else if (r >= 0)
		r = wants_identity(b)
			? sb_strvb_add(&bd.argv, "--cap-add", "CAP_SETPCAP", "--cap-add",
				       "CAP_SETUID", "--cap-add", "CAP_SETGID", NULL)
			: sb_strvb_add(&bd.argv, "--cap-add", "CAP_SETPCAP", NULL);
	if (r >= 0)
		r = build_net(&bd, p, req, reterr);
	if (r >= 0)
		r = build_root_links(&bd);
	if (r >= 0)
		r = build_binds(&bd, b, p, req->cwd);
	if (r >= 0)
		r = build_masks(&bd, b, p, reterr);
	if (r >= 0)
		r = build_hosts(&bd, req);
	/* The working directory, empty when it is not exposed. */
	if (r >= 0)
		r = ensure_parents(&bd, req->cwd);
	if (r >= 0)
		r = sb_strvb_add(&bd.argv, "--perms", "0755", "--dir", req->cwd, "--chdir",
				 req->cwd, NULL);
	/* Nothing but the grants is writable: not the new root, not /dev. */
	if (r >= 0)
		r = sb_strvb_add(&bd.argv, "--remount-ro", "/dev", "--remount-ro", "/", NULL);
	if (r >= 0)
		r = build_pass_through(&bd, p);
	if (r >= 0 && bd.argv.n > BWRAP_MAX_ARGS)
		return sb_error(
		    reterr, -E2BIG,
		    "bwrap takes at most %d arguments and this sandbox needs %zu for its "
		    "%zu grants: %s",
		    BWRAP_MAX_ARGS, bd.argv.n, b->n_paths, sb_wrap_too_many_grants_hint(b));
	if (r >= 0)
		r = sb_strvb_push(&bd.argv, "--");
	for (char *const *a = req->argv; r >= 0 && *a; a++)
		r = sb_strvb_push(&bd.argv, *a);
	if (r < 0)
		return r;
	*ret_argv = TAKE_PTR(bd.argv.v);
	return 0;
}

static int explain(const struct sb_boundary *b, struct sb_buf *out)
{
	int r =
	    sb_wrap_explain_grants(b,
				   "#   bubblewrap: a new root holding only these (the rule files "
				   "too), every namespace of its own, no capability\n",
				   out);

	if (r >= 0 && b->provider_data)
		r = sb_netns_explain(b->provider_data, out);
	return r;
}

static void done(struct sb_boundary *b)
{
	if (b->provider_data)
		sb_netns_plan_done(b->provider_data);
	free(b->provider_data);
	b->provider_data = NULL;
}

/* In the python-sb re-entered under bwrap: bubblewrap's new root holds only
 * the grants, but a descriptor the program inherited (stdin redirected from
 * a file, stdout appended to a log) still points into the host's mounts, and
 * /proc/self/fd/N would reopen that file by its host path, for writing too,
 * past the read-only binds. Kept beneath the new root by Landlock
 * (namespaces.h), as under os-sandbox=unshare; signals and abstract sockets
 * are bubblewrap's business (its PID namespace, bwrap.share-net). */
static int enter(const struct sb_boundary *b _unused_, char ***warnings _unused_,
		 int *ret_status _unused_, char **reterr)
{
	int r = sb_ns_confine_beneath_root(false);

	if (r < 0)
		return sb_error(reterr, r,
				"cannot keep the program's files beneath bubblewrap's root "
				"(Landlock): %s",
				strerror(-r));
	return 0;
}

const struct sb_provider sb_provider_bwrap = {
    .name = "bwrap",
    .flags = SB_PROVIDER_WRAPS_EXEC | SB_PROVIDER_FILES | SB_PROVIDER_SECCOMP | SB_PROVIDER_LIMITS |
	     SB_PROVIDER_PRIVILEGES | SB_PROVIDER_PARAMS_PASS_THROUGH,
    .ignore = SB_IGNORE_MASKED,
    .params = params,
    .summary = "bubblewrap: a new root of the grants, namespaces",
    .files_layer = {"Python guard + kernel: bubblewrap's new root",
		    "kernel: bubblewrap's new root (py-sandbox=false)"},
    .net_layer = {"Python guard + kernel: network namespace, nftables (bwrap.share-net: "
		  "the guard alone)",
		  "kernel: network namespace, nftables (py-sandbox=false; bwrap.share-net: "
		  "nothing)"},
    .probe = probe,
    .prepare = prepare,
    .enter = enter,
    .explain = explain,
    .done = done,
    .build_argv = build_argv,
};
