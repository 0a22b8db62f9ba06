/* SPDX-License-Identifier: MIT */
/* expose-ro=, expose-rw=, ignore=: the files part of the guard.
 *
 * Decisions are taken on the resolved path (src/policy/file-policy.c), from the
 * audit events CPython raises ("open", "os.remove", ...). Where CPython 3.11
 * raises none (os.stat, lstat, access, readlink, statvfs, pathconf, chroot,
 * mkfifo, mknod: gh-115322) or raises one whose path is relative to a
 * directory fd it does not report ("open" from os.open(dir_fd=)), C wrappers
 * replace the functions in both the posix and os modules. Every wrapper also
 * turns a path-like or buffer argument into str/bytes once, before the
 * original sees it: the audit event then carries the very string the system
 * call gets, so a __fspath__ that answers differently on its second call, or
 * a bytearray changed by a warning filter, cannot split check and use. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-files.h"

#include <dirent.h>
#include <fcntl.h>
#include <frameobject.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "file-policy.h"
#include "guard-observer.h"
#include "guard-part.h"
#include "guard-runtime.h"
#include "pysandboxes-module.h"
#include "util.h"

static const char *const ca_stores[] = {
    "/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/usr/share/ca-certificates", "/usr/share/pki",
};

/* An implicit grant not resolved yet (see resolve_pending()). */
struct pending_grant {
	char *path; /* absolute */
	bool file, writable;
	bool link_too; /* also the link path itself, if it is one */
	const char *why;
};

static struct {
	struct sb_file_policy policy;
	bool prepared;
	struct pending_grant *pending;
	size_t n_pending;
} files;

/* Interned keyword names, made once by files_activate(): looking a C string
 * up in a dict would create a str object on every call. */
static struct {
	PyObject *dir_fd, *follow_symlinks, *fspath;
} keys;

/* ---- decisions ---------------------------------------------------------- */

/* The directory a dir_fd stands for, through /proc/self/fd; -EBADF when it
 * cannot be named (not a directory, deleted, no /proc): such fds are refused. */
static int dir_fd_path(int fd, char out[PATH_MAX])
{
	char link[64];
	struct stat st;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
		return -EBADF;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, PATH_MAX - 1);
	if (n <= 0 || out[0] != '/')
		return -EBADF;
	out[n] = '\0';
	if (n > 10 && streq(out + n - 10, " (deleted)"))
		return -EBADF;
	return 0;
}

/* ---- resolution cache ------------------------------------------------------
 *
 * Resolving a path (sb_path_resolve: one lstat per component) costs several
 * system calls, and a program that reads many files (or imports many modules)
 * resolves the same directories again and again. The cache remembers, for an
 * absolute lexical path without "..", what the resolver answered, so that a
 * repeated decision needs no system call and the first decision in a known
 * directory needs one lstat (of the last component), or none once the
 * directory's links are listed (dir_has_link()) or when the caller's own
 * system call tells (os.stat through lstat: stat_through_lstat()), instead of
 * one per component. Every directory met on the way is cached too, so a new
 * directory below a known one costs one lstat, not one per component from
 * "/". Decisions (grants, ignore= rules) are still taken each time on the
 * resolved path; only the resolution is remembered. All storage is static (a
 * fixed table and a fixed arena): nothing is allocated on the hot path, and a
 * full cache is emptied, not grown.
 *
 * Why this is safe: the resolved path of P can only change when the file
 * system namespace changes along P: a symbolic link created, replaced or
 * retargeted, or a rename onto a path that exists (creating a node where there
 * was none, or removing one that is not a link, leaves the resolver's answer
 * the same: a missing tail is appended lexically). Every such change a guarded
 * program can make goes through a write decision of this part (the "os.*"
 * events and the C wrappers: symlink, rename/replace, remove/unlink, rmdir,
 * mkdir, link, mkfifo, mknod, open for writing, chmod and the other attribute
 * changes, shutil, sqlite3), and every write decision empties the cache
 * before the change is made. Entries are only added by read decisions (and,
 * within the first one, for the directories the implicit grants showed to
 * resolve to themselves: rc_seed()), and only for resolutions whose
 * components all existed or whose first missing component was reported
 * missing (ENOENT; DIR_MISSING): the resolver appends what follows it
 * lexically, and that answer changes only when the name is made a link,
 * which is a write decision too. A name hidden by EACCES is not remembered:
 * it can become visible without a write (seteuid()). The path object
 * remembered with a read allowed (rc_last) is as valid as the entry its text
 * is the key of: until the next rc_clear(). Changes of the current directory
 * ("os.chdir", raised by chdir and fchdir) and of the root (chroot) drop the
 * cached cwd. The one
 * file system whose names change without any write of the program is /proc
 * (/proc/self/fd/N is whatever fd N is now, /proc/self/cwd follows fchdir):
 * nothing below it is remembered, however it is reached (/dev/fd is a
 * link there).
 *
 * That argument needs the program to be the only actor: a second thread or a
 * forked child could change the namespace between another thread's write
 * decision and its system call, after which a stale entry would live on. So
 * the cache is switched off for good as soon as the program starts a thread
 * ("_thread.start_new_thread") or a process ("os.fork", "os.forkpty",
 * "os.exec", "os.posix_spawn", "os.spawn", "os.system", "subprocess.Popen":
 * a child could be another guarded python-sb changing a shared directory), it
 * is not used while the interpreter has more than one thread state, and it is
 * off from the start when the profile grants any function of the threads,
 * process-exec or process-control categories (python-api=), since not every
 * way to start one raises an event (_posixsubprocess.fork_exec). Processes
 * outside the sandbox can change a shared directory at any time: they race
 * the uncached resolver as well (check and use are two system calls); the
 * kernel layer (Landlock), which checks at use, is the defence against them. */

#define RC_SLOTS  16384u     /* a power of two; at most half used */
#define RC_ARENA  (2u << 20) /* records: key and value strings */
#define RC_PROBES 16u

/* 8 bytes: the table is looked at on every decision and its pages are
 * touched at random (the first touch of each costs two page faults, a read
 * then the copy on write), so it is kept small: 128 KiB for 8192 entries (an
 * import-heavy program reading 3000 files uses 3300). The key, its length
 * and what only directories need live in the record. A full table is emptied
 * and filled again. */
struct rc_slot {
	uint16_t gen;	   /* valid when == rc.gen */
	uint16_t hash;	   /* the high half of the key's hash: a quick reject */
	uint32_t rec : 24; /* offset of the record in the arena */
	uint32_t follow : 1;
	uint32_t allowed : 1; /* a read decision on it allowed (only without ignore=) */
	/* For a directory entry: its symbolic links, listed once (see
	 * dir_has_link()), so that names in it need no lstat. */
	uint32_t dir_state : 2; /* DIR_UNSCANNED, DIR_SCANNED, DIR_UNSCANNABLE, DIR_MISSING */
	uint32_t misses : 4;	/* lstat-needing decisions before the scan */
};

_Static_assert(sizeof(struct rc_slot) == 8, "a slot is 8 bytes");
_Static_assert(RC_ARENA <= 1u << 24, "record offsets fit in 24 bits");

/* DIR_MISSING: the key's last name did not exist (lstat(): ENOENT), nor does
 * anything below it; the value is lexical from there, as the resolver makes
 * it. Only ENOENT: a name hidden by EACCES can become visible without a write
 * (a seteuid() back to root), a name that does not exist cannot. */
enum { DIR_UNSCANNED, DIR_SCANNED, DIR_UNSCANNABLE, DIR_MISSING };

/* Unknown names in a directory before its links are listed (see dir_has_link()). */
#define DIR_SCAN_AFTER 2

/* A record in the arena: this header, the key (the absolute lexical path),
 * then the resolved path unless it is the key itself (val_len 0), as it is
 * for most paths. Read and written with memcpy (no alignment). */
struct rc_rec {
	uint32_t links; /* offset of the link names, each NUL-terminated */
	uint16_t links_len;
	uint16_t val_len;
	uint16_t key_len; /* PATH_MAX fits */
};

static struct {
	struct rc_slot slots[RC_SLOTS];
	char arena[RC_ARENA];
	uint32_t used;	/* bytes of arena in use */
	uint32_t n;	/* entries */
	uint16_t gen;	/* 0 = never valid */
	uint64_t epoch; /* counts rc_clear(): unlike gen, it never wraps */
	bool off;	/* threads or fork seen: never again */
	bool cwd_valid;
	size_t cwd_len;
	char cwd[PATH_MAX];
} rc __attribute__((aligned(4096))); /* zero: in .bss, not in the binary;
					 files_prepare() sets gen */

static struct rc_rec rc_rec_of(const struct rc_slot *sl)
{
	struct rc_rec r;

	memcpy(&r, rc.arena + sl->rec, sizeof(r));
	return r;
}

static const char *rc_key(const struct rc_slot *sl)
{
	return rc.arena + sl->rec + sizeof(struct rc_rec);
}

/* The path object of the last read allowed from the cache (see
 * read_allowed_before()): a program hands the same str to os.stat(),
 * os.path.exists() and open() in a row, and comparing its address is cheaper
 * than hashing its text. The reference is strong, so that the address cannot
 * be taken by another object while it is remembered; only exact str and bytes
 * objects, whose text cannot change, are remembered, and only absolute paths,
 * whose meaning does not depend on the current directory. It is as valid as
 * the cache entry its text is the key of: until the next rc_clear() (epoch). */
static struct {
	PyObject *obj;
	uint64_t epoch;
	bool follow;
} rc_last;

static void rc_clear(void)
{
	/* A new generation invalidates every slot without touching them. */
	if (++rc.gen == 0)
		rc.gen = 1, memset(rc.slots, 0, sizeof(rc.slots));
	rc.epoch++;
	rc.used = 0;
	rc.n = 0;
	rc.cwd_valid = false;
}

static void rc_disable(void)
{
	rc.off = true;
	rc_clear();
}

/* Only while this thread is the program's only one (see above). */
static bool rc_usable(void)
{
	PyThreadState *t;

	if (rc.off)
		return false;
	t = PyInterpreterState_ThreadHead(PyInterpreterState_Get());
	return t && !PyThreadState_Next(t);
}

/* Eight bytes at a time: a collision only costs a probe (keys are compared
 * in full), so speed matters more than quality here. The last word overlaps
 * the one before it rather than being assembled byte by byte. */
static uint32_t rc_hash(const char *s, size_t n, bool follow)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)n << 1 | follow), w = 0;
	const char *end = s + n;

	if (n < 8) {
		for (size_t i = 0; i < n; i++)
			w |= (uint64_t)(unsigned char)s[i] << (8 * i);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		return (uint32_t)(h ^ (h >> 32));
	}
	for (; end - s > 8; s += 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	memcpy(&w, end - 8, 8);
	h = (h ^ w) * 0xff51afd7ed558ccdull;
	h ^= h >> 32;
	return (uint32_t)(h ^ (h >> 29));
}

/* h is rc_hash(abs, n, follow). */
static struct rc_slot *rc_find_h(const char *abs, size_t n, bool follow, uint32_t h)
{
	for (uint32_t i = 0; i < RC_PROBES; i++) {
		struct rc_slot *sl = &rc.slots[(h + i) & (RC_SLOTS - 1)];

		if (sl->gen != rc.gen)
			return NULL;
		if (sl->hash == (uint16_t)(h >> 16) && sl->follow == follow &&
		    rc_rec_of(sl).key_len == n && memcmp(rc_key(sl), abs, n) == 0)
			return sl;
	}
	return NULL;
}

/* The resolved path of (abs, follow) into out; NULL when not cached. */
static struct rc_slot *rc_get_h(const char *abs, size_t n, bool follow, uint32_t h,
				char out[PATH_MAX])
{
	struct rc_slot *sl = rc_find_h(abs, n, follow, h);

	if (sl) {
		struct rc_rec r = rc_rec_of(sl);
		size_t m = r.val_len ? r.val_len : r.key_len;

		memcpy(out, rc_key(sl) + (r.val_len ? r.key_len : 0), m);
		out[m] = '\0';
	}
	return sl;
}

static struct rc_slot *rc_get(const char *abs, size_t n, bool follow, char out[PATH_MAX])
{
	return rc_get_h(abs, n, follow, rc_hash(abs, n, follow), out);
}

static struct rc_slot *rc_put_h(const char *abs, size_t n, bool follow, uint32_t h,
				const char *resolved)
{
	size_t m = strlen(resolved);
	struct rc_rec r = {0};

	if (n >= PATH_MAX || m >= PATH_MAX)
		return NULL;
	if (m == n && memcmp(abs, resolved, n) == 0)
		m = 0; /* the value is the key */
	if (rc.n >= RC_SLOTS / 2 || rc.used + sizeof(r) + n + m > RC_ARENA) {
		bool cwd_valid = rc.cwd_valid;

		rc_clear();
		rc.cwd_valid = cwd_valid; /* still the cwd: only the table is full */
	}
	for (uint32_t i = 0; i < RC_PROBES; i++) {
		struct rc_slot *sl = &rc.slots[(h + i) & (RC_SLOTS - 1)];
		char *at = rc.arena + rc.used;

		if (sl->gen == rc.gen)
			continue;
		r.val_len = (uint16_t)m;
		r.key_len = (uint16_t)n;
		memcpy(at, &r, sizeof(r));
		memcpy(at + sizeof(r), abs, n);
		memcpy(at + sizeof(r) + n, resolved, m);
		*sl = (struct rc_slot){
		    .gen = rc.gen, .hash = (uint16_t)(h >> 16), .rec = rc.used, .follow = follow};
		rc.used += (uint32_t)(sizeof(r) + n + m);
		rc.n++;
		return sl;
	}
	return NULL;
}

static struct rc_slot *rc_put(const char *abs, size_t n, bool follow, const char *resolved)
{
	return rc_put_h(abs, n, follow, rc_hash(abs, n, follow), resolved);
}

/* Lists the symbolic links of directory dir (resolved) into the arena for
 * its entry ds: a few getdents64 calls instead of an lstat per name. Gives
 * up (DIR_UNSCANNABLE: lstat as before) on a large directory, on more than a
 * few links, or when the file system does not report types (DT_UNKNOWN). */
static void dir_scan(struct rc_slot *ds, const char *dir)
{
	char buf[16384] __attribute__((aligned(8)));
	uint32_t start = rc.used, total = 0;
	unsigned calls = 0, links = 0;
	ssize_t n;
	int fd;

	ds->dir_state = DIR_UNSCANNABLE;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	while ((n = getdents64(fd, buf, sizeof(buf))) > 0) {
		if (++calls > 8)
			goto out;
		for (ssize_t off = 0; off < n;) {
			const struct dirent64 *e = (const struct dirent64 *)(buf + off);
			size_t len;

			off += e->d_reclen;
			if (e->d_type == DT_UNKNOWN)
				goto out;
			if (e->d_type != DT_LNK)
				continue;
			len = strlen(e->d_name) + 1;
			if (++links > 16 || total + len > 1024 || start + total + len > RC_ARENA)
				goto out;
			memcpy(rc.arena + start + total, e->d_name, len);
			total += (uint32_t)len;
		}
	}
	if (n == 0) {
		struct rc_rec r = rc_rec_of(ds);

		rc.used += total;
		r.links = start;
		r.links_len = (uint16_t)total;
		memcpy(rc.arena + ds->rec, &r, sizeof(r));
		ds->dir_state = DIR_SCANNED;
	}
out:
	close(fd);
}

/* Whether name (len bytes) in the directory of entry ds (resolved dir) is a
 * symbolic link: 1 or 0 (0 also when it does not exist), -1 when unknown
 * (the caller lstats). A directory is listed on its second unknown name: a
 * package directory whose one .pyc is opened costs no more than before. The
 * list is as valid as the entry: a link can only appear or go through a
 * write decision, which empties the cache. Without may_scan, an unknown name
 * does not count towards the listing. */
static int dir_has_link(struct rc_slot *ds, const char *dir, const char *name, size_t len,
			bool may_scan)
{
	struct rc_rec r;

	if (!ds)
		return -1;
	if (ds->dir_state == DIR_UNSCANNED && may_scan && ++ds->misses >= DIR_SCAN_AFTER)
		dir_scan(ds, dir);
	if (ds->dir_state != DIR_SCANNED)
		return -1;
	r = rc_rec_of(ds);
	for (uint32_t off = 0; off < r.links_len;) {
		const char *l = rc.arena + r.links + off;
		size_t m = strlen(l);

		if (m == len && memcmp(l, name, len) == 0)
			return 1;
		off += (uint32_t)m + 1;
	}
	return 0;
}

/* The current directory, from the cache when it is valid. */
static bool cwd_get(char out[PATH_MAX])
{
	if (rc.cwd_valid && rc_usable()) {
		memcpy(out, rc.cwd, rc.cwd_len + 1);
		return true;
	}
	if (!getcwd(out, PATH_MAX))
		return false;
	if (rc_usable()) {
		rc.cwd_len = strlen(out);
		memcpy(rc.cwd, out, rc.cwd_len + 1);
		rc.cwd_valid = true;
	}
	return true;
}

/* Whether raw has a ".." component: the resolver applies ".." to the
 * resolved path (after a link, the link target's parent), while abs folds it
 * lexically, so such paths are not looked up by abs. */
static bool has_dotdot(const char *raw)
{
	for (const char *p = raw; (p = strstr(p, "..")); p += 2)
		if ((p == raw || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
			return true;
	return false;
}

/* Whether the kernel follows the last component of raw (len bytes) whatever
 * the call: a trailing '/' or "." names what a link there points to, even for
 * lstat or unlink ("link/." is the target directory). */
static bool follows_last(const char *raw, size_t len)
{
	return raw[len - 1] == '/' || (raw[len - 1] == '.' && (len == 1 || raw[len - 2] == '/'));
}

/* /proc changes its names without any write of the program (its fds, its
 * cwd, its threads: /proc/self/fd/3 is a link to whatever fd 3 is now), so
 * nothing resolved there is remembered. */
static bool in_proc(const char *resolved)
{
	const char *rest = startswith(resolved, "/proc");

	return rest && (!*rest || *rest == '/');
}

/* Appends "/name" (or "name" to "/") to the resolved path in out (length *o). */
static bool append_name(char out[PATH_MAX], size_t *o, const char *name, size_t len)
{
	if (*o + 1 + len >= PATH_MAX)
		return false;
	if (*o > 1)
		out[(*o)++] = '/';
	memcpy(out + *o, name, len);
	*o += len;
	out[*o] = '\0';
	return true;
}

/* What a lookup learnt about a key, for the next step not to hash and probe
 * it again. */
struct rc_hint {
	uint32_t h;  /* rc_hash() of the key */
	bool valid;  /* h is set */
	bool follow; /* the key's follow */
	bool absent; /* the key was looked up and is not cached */
	/* Set by the decision: a read of the key was allowed and its entry
	 * says so (a path object may be remembered in rc_last). */
	bool allowed;
};

enum {
	WALK_FALLBACK = -1, /* a link or an oddity: ask sb_path_resolve() */
	WALK_DONE = 0,	    /* out is the resolution */
	WALK_LAST_UNKNOWN,  /* out is the resolution if the last name is no link */
};

/* sb_path_resolve(raw, base, follow) through the cache, walking abs (which is
 * sb_path_absolute(raw, base), base a physical directory: getcwd, or
 * /proc/self/fd of a dir_fd, so that without ".." resolving raw from base and
 * abs from "/" walk the same components). It starts at the longest leading
 * directory of abs that is cached and resolves each further component as the
 * resolver would: a name that is no link resolves to itself, a missing one is
 * appended lexically with everything after it. Each directory found on the
 * way is cached, so that the next path in it or below it needs no system
 * call for those components (the first decision in a new package directory
 * lstats one name, not every component from "/"). A link goes to the
 * resolver. A trailing '/' makes the resolver follow the last component: it
 * is part of the key as follow. With last_unknown, the last name's link
 * status is not looked up (WALK_LAST_UNKNOWN): the caller finds it out with
 * the very system call it makes anyway (see read_wrapped()). *ret_slot is the
 * entry of abs when it is cached. hint, when given, is what the caller's
 * lookup of raw found (used when raw is abs), and receives abs's hash. */
static int resolve_cached(const char *raw, const char *abs, bool follow, bool last_unknown,
			  char out[PATH_MAX], struct rc_slot **ret_slot, struct rc_hint *hint)
{
	struct rc_slot *ds = NULL;
	size_t n = strlen(abs), len = strlen(raw), d, o;
	/* raw is its own lexical form (most are): then it has no ".."
	 * component and its last name is neither "." nor followed by '/'. */
	bool same = len == n && memcmp(raw, abs, n) == 0;
	bool complete = true;
	bool missing = false; /* !complete because of ENOENT alone: cacheable */
	struct rc_hint in = hint ? *hint : (struct rc_hint){0};
	uint32_t h;

	/* Whatever the way out, *hint only ever describes abs. */
	if (hint)
		hint->valid = false;
	*ret_slot = NULL;
	if (!*raw || (!same && has_dotdot(raw)) || !rc_usable())
		return WALK_FALLBACK;
	if (!same && follows_last(raw, len))
		follow = true;
	if (n == 1) { /* "/" */
		out[0] = '/', out[1] = '\0';
		return WALK_DONE;
	}
	if (in.valid && in.follow == follow && same) {
		h = in.h;
		if (!in.absent && (*ret_slot = rc_get_h(abs, n, follow, h, out)))
			return WALK_DONE;
	} else {
		h = rc_hash(abs, n, follow);
		if ((*ret_slot = rc_get_h(abs, n, follow, h, out)))
			return WALK_DONE;
	}
	if (hint)
		*hint = (struct rc_hint){.h = h, .valid = true, .follow = follow, .absent = true};
	/* The longest cached leading directory: usually the parent. abs
	 * starts with '/', has no trailing '/' and is not "/". */
	d = (size_t)((const char *)memrchr(abs, '/', n) - abs);
	for (;;) {
		d = d ? d : 1;
		ds = rc_get(abs, d, true, out);
		if (ds || d == 1)
			break;
		d = (size_t)((const char *)memrchr(abs, '/', d) - abs);
	}
	if (!ds) {
		/* The root: its entry holds the list of its links (/lib, /bin). */
		out[0] = '/', out[1] = '\0';
		ds = rc_put(abs, 1, true, out);
	} else if (ds->dir_state == DIR_MISSING) {
		complete = false, missing = true; /* the rest is lexical */
	}
	o = strlen(out);
	/* Then component by component, each directory cached as it is found. */
	for (size_t s = d; s < n;) {
		const char *name, *slash;
		size_t name_len, e;
		bool last, went_missing = false;
		int link = 0;

		while (abs[s] == '/')
			s++;
		slash = memchr(abs + s, '/', n - s);
		e = slash ? (size_t)(slash - abs) : n;
		name = abs + s;
		name_len = e - s;
		last = e == n;
		if (in_proc(out))
			return WALK_FALLBACK;
		if (complete && (!last || follow)) {
			/* Only last names count towards listing a
			 * directory: each directory on the way is looked at
			 * once and cached (listing /tmp for it would cost more
			 * than that lstat), and the caller that can do without
			 * (last_unknown) does not make it listed either. */
			link = dir_has_link(ds, out, name, name_len, last && !last_unknown);
			if (link < 0 && last && last_unknown) {
				if (!append_name(out, &o, name, name_len))
					return WALK_FALLBACK;
				return WALK_LAST_UNKNOWN;
			}
			if (link < 0) {
				struct stat st;
				size_t before = o;

				if (!append_name(out, &o, name, name_len))
					return WALK_FALLBACK;
				if (lstat(out, &st) < 0) {
					/* Missing: the rest is lexical. */
					complete = false;
					missing = went_missing = errno == ENOENT;
				} else if (S_ISLNK(st.st_mode)) {
					link = 1;
				}
				o = before;
				out[o] = '\0';
			}
		}
		/* A link: the resolver, for good or, for a directory, to resolve
		 * it once and cache where it leads. */
		if (link > 0) {
			char prefix[PATH_MAX];
			bool all;

			if (last)
				return WALK_FALLBACK;
			memcpy(prefix, abs, e);
			prefix[e] = '\0';
			if (sb_path_resolve_ex(prefix, "/", true, out, &all) < 0 || !all ||
			    in_proc(out))
				return WALK_FALLBACK;
			o = strlen(out);
		} else if (!append_name(out, &o, name, name_len)) {
			return WALK_FALLBACK;
		}
		/* A missing directory too (once: what is below it is
		 * missing as well), so that the next path through it needs
		 * no lstat: a program probing for optional files (gettext's
		 * catalogues, configuration files) asks again and again. */
		if (!last && (complete || went_missing)) {
			ds = rc_put(abs, e, true, out);
			if (ds && went_missing)
				ds->dir_state = DIR_MISSING;
		}
		s = e;
	}
	/* A missing name is remembered as such: creating it, as a link or
	 * anything else, is a write decision, which empties the cache. */
	if ((complete || missing) && !in_proc(out)) {
		*ret_slot = rc_put_h(abs, n, follow, h, out);
		if (*ret_slot && !complete)
			(*ret_slot)->dir_state = DIR_MISSING;
	}
	return WALK_DONE;
}

static int refuse_unresolvable(const char *raw, const char *why)
{
	_cleanup_free_ char *text = NULL;

	if (asprintf(&text,
		     "Access to '%s' must be accepted by a rule: %s, so the guard cannot tell "
		     "which file it names. Add 'expose-ro=<dir>' to '%s' and use a path",
		     raw, why, sb_guard_profile_path()) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_file_not_found(raw, text);
}

static bool is_directory(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Raises the refusal for a verdict. Only on the refusal path: may allocate. */
static int refuse(enum sb_fp_verdict v, const struct sb_fp_grant *g, const struct sb_fp_ignore *ig,
		  const char *raw, const char *abs, const char *resolved, bool write, bool missing)
{
	_cleanup_free_ char *text = NULL, *dir = NULL;
	const char *key = write ? "expose-rw" : "expose-ro";
	int r = -1;

	switch (v) {
	case SB_FP_IGNORED:
		r = asprintf(&text, "Access to '%s' is ignored by rule 'ignore=%s' from %s", raw,
			     ig->pattern, ig->origin);
		break;
	case SB_FP_READ_ONLY:
		if (g->implicit)
			r = asprintf(&text,
				     "Cannot write to '%s%s'. It is exposed read-only without a "
				     "rule (%s). Add 'expose-rw=%s' to '%s' to allow writing",
				     g->dir, g->file || streq(g->dir, "/") ? "" : "/", g->why,
				     g->dir, sb_guard_profile_path());
		else
			r = asprintf(&text,
				     "Cannot write to '%s%s'. Rule 'expose-ro=%s' from %s. Use "
				     "'expose-rw=%s' instead to allow writing",
				     g->dir, streq(g->dir, "/") ? "" : "/", g->written, g->origin,
				     g->written);
		break;
	case SB_FP_NOT_EXPOSED:
	default:
		/* A symbolic link that leads outside: name the path the program
		 * used, not where the link points (readlink would not tell). */
		/* missing: resolved does not exist, nor does what abs leads
		 * to (no stat needed to tell they are no directories). */
		if (!streq(abs, resolved) && (missing || !is_directory(abs)) &&
		    strncmp(abs, resolved, strlen(abs)) != 0) {
			_cleanup_free_ char *parent = sb_path_dirname(abs);

			if (parent && sb_file_policy_grant_for(&files.policy, parent))
				r = asprintf(
				    &text,
				    "Access to '%s' must be accepted by a rule: it leads "
				    "through a symbolic link outside the exposed directories. "
				    "Add '%s=<the link target's directory>' to '%s'",
				    abs, key, sb_guard_profile_path());
		}
		if (r < 0) {
			/* Reading a directory exposes it; a file, its directory. */
			dir = !missing && !write && is_directory(resolved)
				  ? strdup(resolved)
				  : sb_path_dirname(resolved);
			if (!dir)
				break;
			r = asprintf(
			    &text, "Access to '%s' must be accepted by a rule. Add '%s=%s' to '%s'",
			    abs, key, dir, sb_guard_profile_path());
		}
		break;
	}
	if (r < 0) {
		text = NULL;
		PyErr_NoMemory();
		return -1;
	}
	if (v == SB_FP_READ_ONLY)
		return sb_raise_permission(EACCES, raw, text);
	return sb_raise_file_not_found(raw, text);
}

/* The decision, for the observer. sys.path[0] (the script's directory, or
 * the cwd) is readable by an implicit grant of the guard, not of Landlock,
 * so the profile must name what the program read there: the directory of a
 * file the program opened, the sys.path entry itself for a module the import
 * machinery loaded from it (its listing is what finds the module). A listing
 * alone names nothing: the machinery lists every entry on every import. */
static void note_decided(const char *resolved, bool write, enum sb_fp_verdict v,
			 const struct sb_fp_grant *g)
{
	const char *needed = NULL;

	if (v == SB_FP_ALLOW && g && g->implicit && streq(g->why, "a sys.path entry")) {
		if (!sb_guard_caller_is_import_bootstrap())
			needed = resolved;
		else if (!is_directory(resolved))
			needed = g->dir;
	}
	sb_guard_note_file(resolved, write, needed);
}

/* The decision for one raw path (relative to dir_fd when >= 0, else to the
 * cwd). resolved_out, when given, receives the resolved path. 0, or -1 with
 * the exception set. */
static int resolve_pending(void);

/* The implicit grants, resolved at the first decision. 0, or -1 with the
 * exception set. */
static int files_ready(void)
{
	if (files.n_pending && resolve_pending() < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

/* The hot path: a read of an absolute path that was allowed before, with
 * nothing changed since (see the resolution cache). Keys are
 * sb_path_absolute() forms (no "//", "." or ".." component, no trailing
 * '/'), so a raw path equal to a key is its own abs. Without ignore= rules a
 * read decision depends on the resolved path alone, which the entry stands
 * for. n is strlen(raw). */
static bool read_allowed_before(const char *raw, size_t n, bool follow, struct rc_hint *hint)
{
	struct rc_slot *slot;
	uint32_t h;

	hint->valid = false;
	if (files.policy.n_ignores || raw[0] != '/' || n >= PATH_MAX || !rc_usable())
		return false;
	h = rc_hash(raw, n, follow);
	slot = rc_find_h(raw, n, follow, h);
	*hint = (struct rc_hint){.h = h, .valid = true, .follow = follow, .absent = !slot};
	return slot && slot->allowed;
}

/* The lexical absolute form of raw (relative to dir_fd, or the cwd) into
 * abs, and the directory it is relative to into base (*basep NULL for an
 * absolute raw). 0, or -1 with the exception set. */
static int absolute(const char *raw, int dir_fd, char abs[PATH_MAX], char base[PATH_MAX],
		    const char **basep)
{
	*basep = NULL;
	if (raw[0] != '/') {
		if (dir_fd >= 0) {
			if (dir_fd_path(dir_fd, base) < 0)
				return refuse_unresolvable(raw,
							   "its dir_fd is not a directory that "
							   "/proc/self/fd can name");
		} else if (!cwd_get(base)) {
			return refuse_unresolvable(raw, "the current directory cannot be named");
		}
		*basep = base;
	}
	if (sb_path_absolute(raw, *basep, abs) < 0)
		return refuse_unresolvable(raw, "it is too long or loops");
	return 0;
}

/* The verdict on a resolved path, and what follows from it: the observer's
 * note, the refusal. slot is the cache entry this very resolution came from, if any
 * (NULL when the resolver itself answered, e.g. for a path with ".."). */
static int verdict(const char *raw, const char *abs, const char *resolved, bool write,
		   struct rc_slot *slot)
{
	const struct sb_fp_grant *g;
	const struct sb_fp_ignore *ig;
	enum sb_fp_verdict v;

	v = sb_file_policy_decide(&files.policy, raw, abs, resolved, write, &g, &ig);
	if (slot && v == SB_FP_ALLOW && !write && !files.policy.n_ignores)
		slot->allowed = true;
	if (sb_guard_observed())
		note_decided(resolved, write, v, g);
	if (v == SB_FP_ALLOW)
		return 0;
	/* What a rule would allow is offered to the observer: not a refusal by
	 * an ignore= rule, a decision; nor the import machinery's
	 * bytecode-cache writes, which fail harmlessly without an observer
	 * too. */
	if (v != SB_FP_IGNORED && sb_guard_observed() &&
	    !(write && sb_guard_caller_is_import_bootstrap()) &&
	    sb_guard_refused(&(struct sb_refusal){
		.kind = SB_REFUSAL_FILE, .subject = resolved, .write = write}) == SB_RECORDED_ALLOW)
		return 0;
	return refuse(v, g, ig, raw, abs, resolved, write, slot && slot->dir_state == DIR_MISSING);
}

/* check_raw() after its fast path, into the caller's abs and resolved. With
 * last_unknown (a read that follows the last name), 1 when only the last
 * name's link status is missing: resolved is then right if it is no link,
 * and the decision is the caller's (see stat_through_lstat()). hint as for
 * resolve_cached(). */
static int check_raw_ex(const char *raw, int dir_fd, bool write, bool follow, bool last_unknown,
			char abs[PATH_MAX], char resolved[PATH_MAX], struct rc_hint *hint)
{
	char base[PATH_MAX];
	const char *basep;
	struct rc_slot *slot = NULL;
	int walk = WALK_FALLBACK;

	/* A write may change the namespace: forget every resolution before it
	 * happens, and remember none made for it (see the resolution cache). */
	if (write)
		rc_clear();
	if (absolute(raw, dir_fd, abs, base, &basep) < 0)
		return -1;
	if (!write)
		walk = resolve_cached(raw, abs, follow, last_unknown, resolved, &slot, hint);
	if (walk == WALK_LAST_UNKNOWN)
		return 1;
	if (walk != WALK_DONE && sb_path_resolve(raw, basep, follow, resolved) < 0)
		return refuse_unresolvable(raw, "it is too long or loops");
	if (verdict(raw, abs, resolved, write, slot) < 0)
		return -1;
	if (hint && slot && slot->allowed)
		hint->allowed = true;
	return 0;
}

static int check_raw(const char *raw, int dir_fd, bool write, bool follow, char *resolved_out)
{
	char abs[PATH_MAX], resolved[PATH_MAX];
	struct rc_hint hint = {0};
	int r;

	if (files_ready() < 0)
		return -1;
	if (!write && !resolved_out && read_allowed_before(raw, strlen(raw), follow, &hint))
		return 0;
	r = check_raw_ex(raw, dir_fd, write, follow, false, abs, resolved, &hint);
	if (r == 0 && resolved_out)
		memcpy(resolved_out, resolved, strlen(resolved) + 1);
	return r;
}

/* The text of an exact str (compact ASCII: its own UTF-8) or bytes object,
 * read in place, and its length; NULL for any other object. Embedded NULs
 * are not looked for: no cache key has one, so such a text is never found,
 * and the full check (path_bytes()) refuses it. */
static const char *plain_text(PyObject *o, size_t *n)
{
	if (PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o)) {
		*n = (size_t)PyUnicode_GET_LENGTH(o);
		return (const char *)PyUnicode_DATA(o);
	}
	if (PyBytes_CheckExact(o)) {
		*n = (size_t)PyBytes_GET_SIZE(o);
		return PyBytes_AS_STRING(o);
	}
	return NULL;
}

/* Remembers o after a read of it (follow) was allowed from, or into, the
 * cache: see rc_last. Only an exact str or bytes object with an absolute
 * path (o's own text, so that it is the key or lexically the same path). */
static void rc_remember(PyObject *o, bool follow)
{
	PyObject *old = rc_last.obj;
	size_t n;
	const char *raw = plain_text(o, &n);

	if (!raw || raw[0] != '/')
		return;
	if (o != old) {
		rc_last.obj = Py_NewRef(o);
		Py_XDECREF(old); /* a str or bytes: no code runs */
	}
	rc_last.epoch = rc.epoch;
	rc_last.follow = follow;
}

/* Whether a read of the path object o (follow) is known to be allowed: o is
 * the object remembered last (after its first decision), or its text is a
 * key read_allowed_before() allows. Call files_ready() first. hint as for
 * read_allowed_before(); not set when o is no plain str or bytes. */
static bool obj_read_allowed_before(PyObject *o, bool follow, struct rc_hint *hint)
{
	const char *raw;
	size_t n;

	hint->valid = hint->allowed = false;
	if (o == rc_last.obj && rc_last.epoch == rc.epoch && rc_last.follow == follow &&
	    rc_usable())
		return true;
	raw = plain_text(o, &n);
	return raw && read_allowed_before(raw, n, follow, hint);
}

enum path_kind {
	PATH_STRING,	  /* *ret is the path, owned by the object or *keep */
	PATH_FD,	  /* a held descriptor: a capability */
	PATH_NONE,	  /* None: the current directory for listdir() and friends */
	PATH_UNCHECKABLE, /* a type whose value could change between check and use */
	PATH_ERROR,	  /* an exception is set */
};

/* The bytes of a path argument. A str is encoded as CPython encodes it for
 * the system call; a path-like object only when from_python (the event comes
 * from Python code that will call os functions, which are wrapped). */
static enum path_kind path_bytes(PyObject *o, bool allow_pathlike, const char **ret,
				 PyObject **keep)
{
	*keep = NULL;
	if (!o || o == Py_None)
		return PATH_NONE;
	/* The common case, read in place: an ASCII str is its UTF-8. */
	if (PyUnicode_CheckExact(o) && PyUnicode_IS_COMPACT_ASCII(o)) {
		const char *s = (const char *)PyUnicode_DATA(o);

		if (memchr(s, '\0', (size_t)PyUnicode_GET_LENGTH(o)))
			return PATH_UNCHECKABLE;
		*ret = s;
		return PATH_STRING;
	}
	if (PyLong_Check(o) || (!PyUnicode_Check(o) && !PyBytes_Check(o) && PyIndex_Check(o)))
		return PATH_FD;
	if (!PyUnicode_Check(o) && !PyBytes_Check(o)) {
		if (!allow_pathlike)
			return PATH_UNCHECKABLE;
		*keep = PyOS_FSPath(o);
		if (!*keep)
			return PyErr_ExceptionMatches(PyExc_TypeError)
				   ? (PyErr_Clear(), PATH_UNCHECKABLE)
				   : PATH_ERROR;
		o = *keep;
	}
	if (PyUnicode_Check(o)) {
		Py_ssize_t n;
		const char *s = PyUnicode_AsUTF8AndSize(o, &n);

		/* UTF-8 is the file system encoding here (UTF-8 mode or a UTF-8
		 * locale); undecodable bytes (surrogateescape) need the real
		 * encoder. */
		if (!s) {
			PyObject *b;

			PyErr_Clear();
			b = PyUnicode_EncodeFSDefault(o);
			Py_XDECREF(*keep);
			*keep = b;
			if (!b)
				return PATH_ERROR;
			o = b;
		} else {
			if ((size_t)n != strlen(s))
				return PATH_UNCHECKABLE;
			*ret = s;
			return PATH_STRING;
		}
	}
	*ret = PyBytes_AS_STRING(o);
	if ((size_t)PyBytes_GET_SIZE(o) != strlen(*ret))
		return PATH_UNCHECKABLE;
	return PATH_STRING;
}

static int refuse_uncheckable(PyObject *o)
{
	_cleanup_free_ char *text = NULL;

	if (asprintf(&text,
		     "A path given as a %s object cannot be checked by the guard; pass a str or "
		     "bytes path (os.fspath(p))",
		     Py_TYPE(o)->tp_name) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return sb_raise_permission(EACCES, NULL, text);
}

/* Checks one path argument of an event or wrapper: held fds pass (a
 * capability), None means the current directory. */
static int check_obj(PyObject *o, int dir_fd, bool write, bool follow, bool allow_pathlike)
{
	PyObject *keep;
	const char *raw = NULL;
	struct rc_hint hint = {0};
	int r;

	/* Also for a held fd (os.chmod(fd), os.truncate(fd)...): any write
	 * empties the resolution cache (see there). */
	if (write)
		rc_clear();
	else if (o) {
		/* The hot path: open() of a path read before. dir_fd does
		 * not matter: only absolute paths are found. */
		if (files_ready() < 0)
			return -1;
		if (obj_read_allowed_before(o, follow, &hint))
			return 0;
	}
	switch (path_bytes(o, allow_pathlike, &raw, &keep)) {
	case PATH_FD:
		return 0;
	case PATH_NONE:
		return check_raw(".", -1, write, follow, NULL);
	case PATH_UNCHECKABLE:
		return refuse_uncheckable(o);
	case PATH_ERROR:
		return -1;
	case PATH_STRING:
		break;
	}
	if (write) {
		r = check_raw(raw, dir_fd, write, follow, NULL);
	} else {
		char abs[PATH_MAX], resolved[PATH_MAX];

		/* Looked up already (hint): straight to the resolution. */
		r = check_raw_ex(raw, dir_fd, false, follow, false, abs, resolved, &hint);
		if (r == 0 && hint.allowed)
			rc_remember(o, follow);
	}
	Py_XDECREF(keep);
	return r;
}

/* Attribute changes (chmod, chown, utime, xattrs, link sources): the event
 * does not say whether follow_symlinks was given, so both the link and its
 * target must be writable. */
static int check_obj_both(PyObject *o, int dir_fd, bool allow_pathlike)
{
	if (check_obj(o, dir_fd, true, true, allow_pathlike) < 0)
		return -1;
	return check_obj(o, dir_fd, true, false, allow_pathlike);
}

int sb_guard_file_check(const char *path, bool write)
{
	if (!files.prepared || !sb_guard_armed())
		return 0;
	return check_raw(path, -1, write, true, NULL);
}

/* ---- audit events ------------------------------------------------------- */

static PyObject *arg(PyObject *args, Py_ssize_t i)
{
	return PyTuple_Check(args) && PyTuple_GET_SIZE(args) > i ? PyTuple_GET_ITEM(args, i) : NULL;
}

static int arg_fd(PyObject *args, Py_ssize_t i)
{
	PyObject *o = arg(args, i);
	long fd;

	if (!o || !PyLong_Check(o))
		return -1;
	fd = PyLong_AsLong(o);
	if (fd == -1 && PyErr_Occurred())
		PyErr_Clear();
	/* The events report a missing dir_fd as -1; AT_FDCWD is the cwd too. */
	return fd < 0 || fd > INT_MAX ? -1 : (int)fd;
}

static bool open_writes(PyObject *mode, PyObject *flags)
{
	if (mode && PyUnicode_Check(mode)) {
		const char *m = PyUnicode_AsUTF8(mode);

		if (!m) {
			PyErr_Clear();
			return true;
		}
		/* A few characters: a loop costs less than strpbrk(). */
		for (; *m; m++)
			if (*m == 'w' || *m == 'a' || *m == 'x' || *m == '+')
				return true;
	}
	if (flags && PyLong_Check(flags)) {
		long f = PyLong_AsLong(flags);

		if (f == -1 && PyErr_Occurred()) {
			PyErr_Clear();
			return true;
		}
		if ((f & O_ACCMODE) != O_RDONLY || (f & (O_CREAT | O_TRUNC | O_APPEND)))
			return true;
#ifdef O_TMPFILE
		if ((f & O_TMPFILE) == O_TMPFILE)
			return true;
#endif
	}
	return false;
}

/* open(), io.open(), os.open(), io.FileIO, io.open_code(): (path, mode, flags).
 * A path-like object reaches this event only through io.FileIO() called
 * directly (open() and os.open() are wrapped and pass a str): FileIO has
 * already called its __fspath__, and a second call could answer otherwise. */
static int on_open(PyObject *args)
{
	return check_obj(arg(args, 0), -1, open_writes(arg(args, 1), arg(args, 2)), true, false);
}

static int on_read(PyObject *args)
{
	return check_obj(arg(args, 0), -1, false, true, false);
}

/* os.chdir and os.fchdir: the cached cwd is dropped (the event comes before
 * the change; the next decision asks getcwd again). */
static int on_chdir(PyObject *args)
{
	int r = check_obj(arg(args, 0), -1, false, true, false);

	rc.cwd_valid = false;
	return r;
}

/* A second thread or process could change the namespace between another's
 * write decision and its system call: no resolution cache from now on. */
static int on_new_actor(PyObject *args _unused_)
{
	rc_disable();
	return 0;
}

/* os.listdir/os.scandir with None: the cwd. */
static int on_list(PyObject *args)
{
	return check_obj(arg(args, 0), -1, false, true, false);
}

/* (path, ..., dir_fd) with dir_fd at index i */
static int on_attr_change(PyObject *args, Py_ssize_t dir_fd_index)
{
	return check_obj_both(arg(args, 0), dir_fd_index ? arg_fd(args, dir_fd_index) : -1, false);
}

static int on_chmod(PyObject *args)
{
	return on_attr_change(args, 2);
}

static int on_chown(PyObject *args)
{
	return on_attr_change(args, 3);
}

static int on_utime(PyObject *args)
{
	return on_attr_change(args, 3);
}

static int on_xattr_write(PyObject *args)
{
	return on_attr_change(args, 0);
}

static int on_create_or_remove(PyObject *args, Py_ssize_t dir_fd_index)
{
	return check_obj(arg(args, 0), arg_fd(args, dir_fd_index), true, false, false);
}

static int on_mkdir(PyObject *args)
{
	return on_create_or_remove(args, 2);
}

static int on_remove(PyObject *args)
{
	return on_create_or_remove(args, 1);
}

static int on_truncate(PyObject *args)
{
	return check_obj(arg(args, 0), -1, true, true, false);
}

static int on_rename(PyObject *args)
{
	if (check_obj(arg(args, 0), arg_fd(args, 2), true, false, false) < 0)
		return -1;
	return check_obj(arg(args, 1), arg_fd(args, 3), true, false, false);
}

/* A hard link to a file is a second name with the same permissions: linking
 * a read-only file into a writable directory would make it writable. */
static int on_link(PyObject *args)
{
	if (check_obj_both(arg(args, 0), arg_fd(args, 2), false) < 0)
		return -1;
	return check_obj(arg(args, 1), arg_fd(args, 3), true, false, false);
}

/* os.symlink(target, link, dir_fd): the link's place must be writable, and
 * its target, resolved from the link's directory as the kernel will, within
 * the grants: a link to /etc in a writable directory is refused. */
static int on_symlink(PyObject *args)
{
	char where[PATH_MAX];
	PyObject *keep = NULL;
	const char *target = NULL;
	_cleanup_free_ char *dir = NULL;
	int r;

	switch (path_bytes(arg(args, 1), false, &target, &keep)) {
	case PATH_STRING:
		break;
	case PATH_ERROR:
		return -1;
	default:
		return refuse_uncheckable(arg(args, 1));
	}
	r = check_raw(target, arg_fd(args, 2), true, false, where);
	Py_XDECREF(keep);
	if (r < 0)
		return -1;
	switch (path_bytes(arg(args, 0), false, &target, &keep)) {
	case PATH_STRING:
		break;
	case PATH_ERROR:
		return -1;
	default:
		return refuse_uncheckable(arg(args, 0));
	}
	dir = sb_path_dirname(where);
	if (!dir) {
		Py_XDECREF(keep);
		PyErr_NoMemory();
		return -1;
	}
	if (target[0] == '/') {
		r = check_raw(target, -1, false, true, NULL);
	} else {
		char joined[PATH_MAX];

		if (snprintf(joined, sizeof(joined), "%s/%s", dir, target) >= (int)sizeof(joined))
			r = refuse_unresolvable(target, "it is too long");
		else
			r = check_raw(joined, -1, false, true, NULL);
	}
	Py_XDECREF(keep);
	return r;
}

/* shutil and sqlite3 events come from Python code with the program's own
 * arguments (str or path-like): checked early for a clear message, the os
 * calls they make are checked again on str paths. */
static int on_copy(PyObject *args)
{
	if (check_obj(arg(args, 0), -1, false, true, true) < 0)
		return -1;
	return check_obj(arg(args, 1), -1, true, true, true);
}

static int on_rmtree(PyObject *args)
{
	return check_obj(arg(args, 0), arg_fd(args, 1), true, false, true);
}

static int on_move(PyObject *args)
{
	if (check_obj(arg(args, 0), -1, true, false, true) < 0)
		return -1;
	return check_obj(arg(args, 1), -1, true, true, true);
}

static int on_shutil_chown(PyObject *args)
{
	return check_obj(arg(args, 0), -1, true, true, true);
}

static int on_make_archive(PyObject *args)
{
	if (check_obj(arg(args, 0), -1, true, true, true) < 0)
		return -1;
	return check_obj(arg(args, 2), -1, false, true, true);
}

static int on_unpack_archive(PyObject *args)
{
	if (check_obj(arg(args, 0), -1, false, true, true) < 0)
		return -1;
	return check_obj(arg(args, 1), -1, true, true, true);
}

/* sqlite3.connect(database): ':memory:' and '' open no file; a 'file:' URI
 * is checked on its path part too (the event does not say whether uri=True). */
static int on_sqlite_connect(PyObject *args)
{
	PyObject *keep = NULL;
	const char *db = NULL;
	int r = 0;

	switch (path_bytes(arg(args, 0), true, &db, &keep)) {
	case PATH_STRING:
		break;
	case PATH_ERROR:
		return -1;
	case PATH_UNCHECKABLE:
		return refuse_uncheckable(arg(args, 0));
	default:
		return 0;
	}
	if (*db && !streq(db, ":memory:") && !strstr(db, "mode=memory")) {
		const char *uri = startswith(db, "file:");
		bool ro = uri && strstr(db, "mode=ro");

		/* The URI's path first: that is the file uri=True opens, and
		 * the one to name in the message. */
		if (uri) {
			char path[PATH_MAX];
			size_t n;

			if (startswith(uri, "//")) {
				uri += 2;
				uri = startswith(uri, "localhost") ? uri + 9 : uri;
			}
			n = strcspn(uri, "?#");
			if (n > 0 && n < sizeof(path)) {
				memcpy(path, uri, n);
				path[n] = '\0';
				r = check_raw(path, -1, !ro, true, NULL);
			}
		}
		if (r >= 0)
			r = check_raw(db, -1, !ro, true, NULL);
	}
	Py_XDECREF(keep);
	return r;
}

static const struct sb_audit_handler file_handlers[] = {
    {"open", on_open},
    {"_thread.start_joinable_thread", on_new_actor},
    {"_thread.start_new_thread", on_new_actor},
    {"os.chdir", on_chdir},
    {"os.exec", on_new_actor},
    {"os.fork", on_new_actor},
    {"os.forkpty", on_new_actor},
    {"os.posix_spawn", on_new_actor},
    {"os.spawn", on_new_actor},
    {"os.system", on_new_actor},
    {"subprocess.Popen", on_new_actor},
    {"os.chmod", on_chmod},
    {"os.chown", on_chown},
    {"os.getxattr", on_read},
    {"os.link", on_link},
    {"os.listdir", on_list},
    {"os.listxattr", on_list},
    {"os.mkdir", on_mkdir},
    {"os.removexattr", on_xattr_write},
    {"os.remove", on_remove},
    {"os.rename", on_rename},
    {"os.rmdir", on_remove},
    {"os.scandir", on_list},
    {"os.setxattr", on_xattr_write},
    {"os.symlink", on_symlink},
    {"os.truncate", on_truncate},
    {"os.utime", on_utime},
    {"shutil.chown", on_shutil_chown},
    {"shutil.copyfile", on_copy},
    {"shutil.copymode", on_copy},
    {"shutil.copystat", on_copy},
    {"shutil.copytree", on_copy},
    {"shutil.make_archive", on_make_archive},
    {"shutil.move", on_move},
    {"shutil.rmtree", on_rmtree},
    {"shutil.unpack_archive", on_unpack_archive},
    {"sqlite3.connect", on_sqlite_connect},
};

/* ---- wrappers ------------------------------------------------------------ */

enum wrap_kind {
	WRAP_CONVERT,  /* raises its own event: only make the path a str/bytes */
	WRAP_OPEN,     /* os.open: the "open" event lacks dir_fd */
	WRAP_READ,     /* no event: decide here */
	WRAP_WRITE,    /* no event, creates a node: decide here */
	WRAP_READLINK, /* no event, and the answer must not name an outside path */
	WRAP_LIST,     /* listdir/scandir: hide ignored entries */
};

struct wrapped {
	const char *module; /* "posix" (also set in os), "_io" (also io, builtins) */
	const char *name;
	enum wrap_kind kind;
	unsigned n_paths; /* path arguments: positions 0..n-1 */
	const char *kw[2];
	bool follow;	    /* default of follow_symlinks */
	bool probe;	    /* a metadata probe the import machinery makes (see probe_exempt()) */
	PyObject *original; /* a strong reference, reachable from C only */
	PyMethodDef def;
	bool doc_owned; /* def.ml_doc was allocated (else: the original's) */
};

enum {
	W_OPEN,
	W_IO_OPEN,
	W_STAT,
	W_LSTAT,
	W_ACCESS,
	W_STATVFS,
	W_PATHCONF,
	W_CHROOT,
	W_READLINK,
	W_MKFIFO,
	W_MKNOD,
	W_LISTDIR,
	W_SCANDIR,
	W_CHDIR,
	W_CHMOD,
	W_CHOWN,
	W_LCHOWN,
	W_MKDIR,
	W_REMOVE,
	W_UNLINK,
	W_RMDIR,
	W_RENAME,
	W_REPLACE,
	W_LINK,
	W_SYMLINK,
	W_TRUNCATE,
	W_UTIME,
	W_GETXATTR,
	W_SETXATTR,
	W_LISTXATTR,
	W_REMOVEXATTR,
	W__N,
};

static struct wrapped wrapped[W__N] = {
    [W_OPEN] = {"posix", "open", WRAP_OPEN, 1, {"path"}, true},
    [W_IO_OPEN] = {"_io", "open", WRAP_CONVERT, 1, {"file"}, true},
    [W_STAT] = {"posix", "stat", WRAP_READ, 1, {"path"}, true, true},
    [W_LSTAT] = {"posix", "lstat", WRAP_READ, 1, {"path"}, false, true},
    [W_ACCESS] = {"posix", "access", WRAP_READ, 1, {"path"}, true, true},
    [W_STATVFS] = {"posix", "statvfs", WRAP_READ, 1, {"path"}, true},
    [W_PATHCONF] = {"posix", "pathconf", WRAP_READ, 1, {"path"}, true},
    [W_CHROOT] = {"posix", "chroot", WRAP_READ, 1, {"path"}, true},
    [W_READLINK] = {"posix", "readlink", WRAP_READLINK, 1, {"path"}, false},
    [W_MKFIFO] = {"posix", "mkfifo", WRAP_WRITE, 1, {"path"}, false},
    [W_MKNOD] = {"posix", "mknod", WRAP_WRITE, 1, {"path"}, false},
    [W_LISTDIR] = {"posix", "listdir", WRAP_LIST, 1, {"path"}, true},
    [W_SCANDIR] = {"posix", "scandir", WRAP_LIST, 1, {"path"}, true},
    [W_CHDIR] = {"posix", "chdir", WRAP_CONVERT, 1, {"path"}, true},
    [W_CHMOD] = {"posix", "chmod", WRAP_CONVERT, 1, {"path"}, true},
    [W_CHOWN] = {"posix", "chown", WRAP_CONVERT, 1, {"path"}, true},
    [W_LCHOWN] = {"posix", "lchown", WRAP_CONVERT, 1, {"path"}, false},
    [W_MKDIR] = {"posix", "mkdir", WRAP_CONVERT, 1, {"path"}, false},
    [W_REMOVE] = {"posix", "remove", WRAP_CONVERT, 1, {"path"}, false},
    [W_UNLINK] = {"posix", "unlink", WRAP_CONVERT, 1, {"path"}, false},
    [W_RMDIR] = {"posix", "rmdir", WRAP_CONVERT, 1, {"path"}, false},
    [W_RENAME] = {"posix", "rename", WRAP_CONVERT, 2, {"src", "dst"}, false},
    [W_REPLACE] = {"posix", "replace", WRAP_CONVERT, 2, {"src", "dst"}, false},
    [W_LINK] = {"posix", "link", WRAP_CONVERT, 2, {"src", "dst"}, true},
    [W_SYMLINK] = {"posix", "symlink", WRAP_CONVERT, 2, {"src", "dst"}, false},
    [W_TRUNCATE] = {"posix", "truncate", WRAP_CONVERT, 1, {"path"}, true},
    [W_UTIME] = {"posix", "utime", WRAP_CONVERT, 1, {"path"}, true},
    [W_GETXATTR] = {"posix", "getxattr", WRAP_CONVERT, 1, {"path"}, true},
    [W_SETXATTR] = {"posix", "setxattr", WRAP_CONVERT, 1, {"path"}, true},
    [W_LISTXATTR] = {"posix", "listxattr", WRAP_CONVERT, 1, {"path"}, true},
    [W_REMOVEXATTR] = {"posix", "removexattr", WRAP_CONVERT, 1, {"path"}, true},
};

/* The import machinery stats every sys.path directory and candidate file on
 * each import: exempting those probes (only stat/lstat/access, only when the
 * innermost frame is importlib's bootstrap) keeps imports as fast as
 * without the guard. What it then opens is still checked ("open"), and a
 * probe tells the program nothing: importlib only uses it to pick a file. */
static bool probe_exempt(const struct wrapped *w)
{
	return w->probe && sb_guard_caller_is_import_bootstrap();
}

/* A path-like or buffer argument as the str/bytes the original will use. */
static PyObject *convert(PyObject *o)
{
	if (PyUnicode_Check(o) || PyBytes_Check(o) || PyLong_Check(o) || o == Py_None)
		return Py_NewRef(o);
	/* Looked up as PyOS_FSPath() looks it up: in the type's MRO (its
	 * method cache), running no Python code on the way. */
	if (_PyType_Lookup(Py_TYPE(o), keys.fspath))
		return PyOS_FSPath(o);
	/* bytearray, memoryview: copied now, so a warning filter run by the
	 * original (DeprecationWarning) cannot change it after the check. */
	if (PyObject_CheckBuffer(o))
		return PyBytes_FromObject(o);
	return Py_NewRef(o);
}

static int kw_int(PyObject *o, int dflt, bool *present)
{
	long v;

	if (present)
		*present = o && o != Py_None;
	if (!o || o == Py_None)
		return dflt;
	v = PyLong_AsLong(o);
	if (v == -1 && PyErr_Occurred()) {
		PyErr_Clear();
		return dflt;
	}
	return v < INT_MIN || v > INT_MAX ? dflt : (int)v;
}

static bool kw_true(PyObject *o, bool dflt)
{
	int r;

	if (!o)
		return dflt;
	r = PyObject_IsTrue(o);
	if (r < 0) {
		PyErr_Clear();
		return dflt;
	}
	return r;
}

/* ---- filtered scandir ---- */

typedef struct {
	PyObject_HEAD PyObject *it;
	char *dir; /* the resolved directory, NULL when unknown */
} filtered_scandir;

static bool entry_hidden(const char *dir, PyObject *name)
{
	const struct sb_fp_ignore *ig;
	PyObject *keep;
	const char *s = NULL;
	bool hidden = false;

	if (path_bytes(name, false, &s, &keep) == PATH_STRING)
		hidden = sb_file_policy_entry_ignored(&files.policy, dir ? dir : "/", s, &ig);
	Py_XDECREF(keep);
	PyErr_Clear();
	return hidden;
}

static PyObject *fs_next(filtered_scandir *self)
{
	for (;;) {
		PyObject *entry = PyIter_Next(self->it), *name;
		bool hidden;

		if (!entry)
			return NULL;
		name = PyObject_GetAttrString(entry, "name");
		if (!name)
			return entry;
		hidden = entry_hidden(self->dir, name);
		Py_DECREF(name);
		if (!hidden)
			return entry;
		Py_DECREF(entry);
	}
}

static PyObject *fs_close(filtered_scandir *self, PyObject *unused _unused_)
{
	return PyObject_CallMethod(self->it, "close", NULL);
}

static PyObject *fs_enter(filtered_scandir *self, PyObject *unused _unused_)
{
	return Py_NewRef(self);
}

static PyObject *fs_exit(filtered_scandir *self, PyObject *args _unused_)
{
	PyObject *r = PyObject_CallMethod(self->it, "close", NULL);

	if (!r)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_FALSE;
}

static void fs_dealloc(filtered_scandir *self)
{
	Py_XDECREF(self->it);
	free(self->dir);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef fs_methods[] = {
    {"close", (PyCFunction)fs_close, METH_NOARGS, NULL},
    {"__enter__", (PyCFunction)fs_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)fs_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject filtered_scandir_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "posix.ScandirIterator",
    .tp_basicsize = sizeof(filtered_scandir),
    .tp_dealloc = (destructor)fs_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)fs_next,
    .tp_methods = fs_methods,
};

/* The resolved directory a listing is of (for entry names); NULL when it
 * cannot be named. */
static char *listed_dir(PyObject *path)
{
	char resolved[PATH_MAX], base[PATH_MAX];
	PyObject *keep;
	const char *raw = ".";

	switch (path_bytes(path, false, &raw, &keep)) {
	case PATH_FD: {
		long fd = PyLong_AsLong(path);

		if (fd == -1 && PyErr_Occurred())
			PyErr_Clear();
		return fd >= 0 && fd <= INT_MAX && dir_fd_path((int)fd, resolved) == 0
			   ? strdup(resolved)
			   : NULL;
	}
	case PATH_NONE:
	case PATH_STRING:
		break;
	default:
		PyErr_Clear();
		return NULL;
	}
	if (!getcwd(base, sizeof(base)) || sb_path_resolve(raw, base, true, resolved) < 0) {
		Py_XDECREF(keep);
		return NULL;
	}
	Py_XDECREF(keep);
	return strdup(resolved);
}

static PyObject *filter_listing(PyObject *path, PyObject *result, bool scandir)
{
	_cleanup_free_ char *dir = NULL;
	PyObject *out;

	if (!result || !files.policy.n_ignores)
		return result;
	dir = listed_dir(path);
	if (scandir) {
		filtered_scandir *fs = PyObject_New(filtered_scandir, &filtered_scandir_type);

		if (!fs) {
			Py_DECREF(result);
			return NULL;
		}
		fs->it = result;
		fs->dir = TAKE_PTR(dir);
		return (PyObject *)fs;
	}
	if (!PyList_Check(result))
		return result;
	out = PyList_New(0);
	for (Py_ssize_t i = 0; out && i < PyList_GET_SIZE(result); i++) {
		PyObject *name = PyList_GET_ITEM(result, i);

		if (!entry_hidden(dir, name) && PyList_Append(out, name) < 0)
			Py_CLEAR(out);
	}
	Py_DECREF(result);
	return out;
}

/* "/proc/self/fd/N/rel" in the type of rel (str or bytes). */
static PyObject *through_proc(int dir_fd, PyObject *rel)
{
	if (PyBytes_Check(rel))
		return PyBytes_FromFormat("/proc/self/fd/%d/%s", dir_fd, PyBytes_AS_STRING(rel));
	return PyUnicode_FromFormat("/proc/self/fd/%d/%U", dir_fd, rel);
}

/* The index in the keyword part of a vectorcall of the argument called
 * name (key: its interned str, NULL to compare by text only), or -1. */
static Py_ssize_t kw_index(PyObject *kwnames, PyObject *key, const char *name)
{
	Py_ssize_t n = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;

	for (Py_ssize_t i = 0; key && i < n; i++)
		if (PyTuple_GET_ITEM(kwnames, i) == key)
			return i;
	for (Py_ssize_t i = 0; i < n; i++)
		if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), name) == 0)
			return i;
	return -1;
}

/* os.stat(path) whose last name's link status the cache does not know
 * (resolved: the path if it is no link): one lstat() answers both questions.
 * For a name that is no link, stat() and lstat() return the same, so the
 * program gets the lstat() result, decided on the path the very same system
 * call showed to be no link; a link goes the usual way (the resolver, then
 * stat()). A failure (a missing name) is decided on the path as the resolver
 * would append it, and the program gets lstat()'s error, which is stat()'s. */
static PyObject *stat_through_lstat(PyObject *path, const char *raw, const char *abs,
				    const char *resolved, struct rc_hint *hint, bool *use_stat)
{
	PyObject *st = PyObject_Vectorcall(wrapped[W_LSTAT].original, &path, 1, NULL);
	PyObject *type, *value, *tb;
	struct rc_slot *slot = NULL;

	*use_stat = false;
	if (st) {
		PyObject *mode =
		    PyTuple_Check(st) && PyTuple_GET_SIZE(st) > 0 ? PyTuple_GET_ITEM(st, 0) : NULL;
		long m = mode && PyLong_Check(mode) ? PyLong_AsLong(mode) : -1;

		if (m == -1 || S_ISLNK(m)) {
			PyErr_Clear();
			Py_DECREF(st);
			*use_stat = true;
			return NULL;
		}
		if (!in_proc(resolved))
			slot = hint->valid && hint->follow
				   ? rc_put_h(abs, strlen(abs), true, hint->h, resolved)
				   : rc_put(abs, strlen(abs), true, resolved);
		if (verdict(raw, abs, resolved, false, slot) < 0)
			Py_CLEAR(st);
		else if (slot && slot->allowed)
			hint->allowed = true;
		return st;
	}
	/* Missing (see DIR_MISSING): remembered, lstat() said ENOENT. */
	if (PyErr_ExceptionMatches(PyExc_FileNotFoundError) && !in_proc(resolved)) {
		slot = hint->valid && hint->follow
			   ? rc_put_h(abs, strlen(abs), true, hint->h, resolved)
			   : rc_put(abs, strlen(abs), true, resolved);
		if (slot)
			slot->dir_state = DIR_MISSING;
	}
	PyErr_Fetch(&type, &value, &tb);
	if (verdict(raw, abs, resolved, false, slot) < 0) {
		Py_XDECREF(type);
		Py_XDECREF(value);
		Py_XDECREF(tb);
		return NULL;
	}
	if (slot && slot->allowed)
		hint->allowed = true;
	PyErr_Restore(type, value, tb);
	return NULL;
}

/* read_wrapped() once the cache has not answered: the decision (and, for
 * stat, possibly the call itself through stat_through_lstat()). The path is
 * str or bytes. */
static __attribute__((noinline)) PyObject *
read_decide_and_call(struct wrapped *w, PyObject *const *call, size_t nargsf, PyObject *kwnames,
		     const char *raw, size_t n, bool follow, struct rc_hint *hint)
{
	char abs[PATH_MAX], resolved[PATH_MAX];
	PyObject *result = NULL;
	bool use_stat = true;
	int r;

	/* lstat() answers for stat() only when the kernel would not follow the
	 * last name anyway (lstat("link/") and lstat("link/.") do). */
	r = check_raw_ex(raw, -1, false, follow,
			 w - wrapped == W_STAT && follow && wrapped[W_LSTAT].original && n &&
			     !follows_last(raw, n),
			 abs, resolved, hint);
	if (r < 0)
		return NULL;
	if (r > 0) {
		result = stat_through_lstat(call[0], raw, abs, resolved, hint, &use_stat);
		/* A link: resolved and decided as any other path. */
		if (use_stat && check_raw(raw, -1, false, follow, NULL) < 0)
			return NULL;
	}
	if (use_stat)
		result = PyObject_Vectorcall(w->original, call, nargsf, kwnames);
	return result;
}

/* stat, lstat and access called with one positional path, and at most
 * follow_symlinks: the common case (importlib's probes, os.path.exists,
 * pathlib), without call_wrapped_general()'s keyword handling. A path
 * allowed before goes straight to the original; the import machinery's
 * probes are exempted only after that (looking at the caller costs more than
 * the cache lookup). */
static PyObject *read_wrapped(struct wrapped *w, PyObject *const *args, PyObject *kwnames)
{
	bool follow = kwnames ? kw_true(args[1], w->follow) : w->follow;
	/* The keyword's value, if any, follows the path; the original gets
	 * the answer the decision used (a __bool__ could change its mind). */
	PyObject *call[2] = {convert(args[0]), follow ? Py_True : Py_False};
	PyObject *keep = NULL, *result = NULL;
	size_t nargsf = 1;
	const char *raw = NULL;
	struct rc_hint hint = {0};
	size_t n;

	if (!call[0])
		return NULL;
	if (files_ready() < 0)
		goto out;
	if (obj_read_allowed_before(call[0], follow, &hint)) {
		result = PyObject_Vectorcall(w->original, call, nargsf, kwnames);
		goto out;
	}
	if (path_bytes(call[0], false, &raw, &keep) != PATH_STRING) {
		Py_XDECREF(keep);
		PyErr_Clear();
		/* A held fd, or a type the original will refuse: the general
		 * path (check_obj) decides. */
		if (check_obj(call[0], -1, false, follow, false) == 0)
			result = PyObject_Vectorcall(w->original, call, nargsf, kwnames);
		Py_DECREF(call[0]);
		return result;
	}
	n = strlen(raw);
	if (probe_exempt(w)) {
		result = PyObject_Vectorcall(w->original, call, nargsf, kwnames);
	} else {
		result = read_decide_and_call(w, call, nargsf, kwnames, raw, n, follow, &hint);
		if (hint.allowed)
			rc_remember(call[0], follow);
	}
out:
	Py_XDECREF(keep);
	Py_DECREF(call[0]);
	return result;
}

#define WRAP_MAX_ARGS 16 /* os functions take at most 7 */

/* A vectorcall: the arguments stay in the caller's array (which Python code
 * cannot change, unlike a dict passed as **kwargs) and are copied into a
 * stack array only to replace converted paths; no tuple or dict is built on
 * the way to the original. */
static __attribute__((noinline)) PyObject *
call_wrapped_general(struct wrapped *w, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *stack[WRAP_MAX_ARGS], *paths[2] = {NULL, NULL}, *result = NULL;
	PyObject *rewritten = NULL, *new_kwnames = NULL, *call_kwnames = kwnames;
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, i_dir_fd, i_follow;
	bool armed = sb_guard_armed();
	int dir_fd;
	bool has_dir_fd;

	if (nargs + nkw > WRAP_MAX_ARGS)
		return PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments", w->name,
				    WRAP_MAX_ARGS);
	memcpy(stack, args, (size_t)(nargs + nkw) * sizeof(*stack));
	for (unsigned i = 0; i < w->n_paths; i++) {
		Py_ssize_t at = (Py_ssize_t)i < nargs ? (Py_ssize_t)i : -1;
		PyObject *o;

		if (at < 0) {
			at = kw_index(kwnames, NULL, w->kw[i]);
			if (at < 0)
				continue;
			at += nargs;
		}
		o = stack[at];
		paths[i] = convert(o);
		if (!paths[i])
			goto out;
		stack[at] = paths[i]; /* owned by paths[i] */
	}
	i_dir_fd = kw_index(kwnames, keys.dir_fd, "dir_fd");
	dir_fd = kw_int(i_dir_fd < 0 ? NULL : stack[nargs + i_dir_fd], -1, &has_dir_fd);
	if (armed && paths[0]) {
		bool follow;

		i_follow = kw_index(kwnames, keys.follow_symlinks, "follow_symlinks");
		follow = kw_true(i_follow < 0 ? NULL : stack[nargs + i_follow], w->follow);
		/* The original gets the answer the decision used: a __bool__
		 * asked twice could answer otherwise the second time. */
		if (i_follow >= 0)
			stack[nargs + i_follow] = follow ? Py_True : Py_False;
		switch (w->kind) {
		case WRAP_READ:
		case WRAP_READLINK:
			if (probe_exempt(w))
				break;
			if (check_obj(paths[0], dir_fd, false, follow, false) < 0)
				goto out;
			break;
		case WRAP_WRITE:
			if (check_obj(paths[0], dir_fd, true, false, false) < 0)
				goto out;
			break;
		case WRAP_OPEN:
			/* The "open" event only has the relative name: hand the
			 * original a path through the descriptor instead, which
			 * names the same directory and which the event can
			 * resolve. A dir_fd that /proc cannot name is refused. */
			if (has_dir_fd && (PyUnicode_Check(paths[0]) || PyBytes_Check(paths[0]))) {
				char base[PATH_MAX];
				const char *raw = PyUnicode_Check(paths[0])
						      ? PyUnicode_AsUTF8(paths[0])
						      : PyBytes_AS_STRING(paths[0]);
				Py_ssize_t at =
				    nargs > 0 ? 0 : nargs + kw_index(kwnames, NULL, "path");
				Py_ssize_t k = 0;

				if (!raw)
					goto out;
				if (raw[0] == '/')
					break;
				if (dir_fd_path(dir_fd, base) < 0) {
					refuse_unresolvable(raw,
							    "its dir_fd is not a directory that "
							    "/proc/self/fd can name");
					goto out;
				}
				rewritten = through_proc(dir_fd, paths[0]);
				if (!rewritten)
					goto out;
				stack[at] = rewritten;
				/* Without dir_fd (has_dir_fd: it is a keyword). */
				new_kwnames = PyTuple_New(nkw - 1);
				if (!new_kwnames)
					goto out;
				for (Py_ssize_t j = 0; j < nkw; j++) {
					if (j == i_dir_fd)
						continue;
					PyTuple_SET_ITEM(new_kwnames, k,
							 Py_NewRef(PyTuple_GET_ITEM(kwnames, j)));
					stack[nargs + k++] = stack[nargs + j];
				}
				call_kwnames = new_kwnames;
			}
			break;
		default:
			break;
		}
	}
	result = PyObject_Vectorcall(w->original, stack, nargs, call_kwnames);
	/* A new root or cwd: what was resolved before may mean another file. */
	if (w - wrapped == W_CHROOT || w - wrapped == W_CHDIR)
		rc_clear();
	if (!result || !armed)
		goto out;
	if (w->kind == WRAP_LIST) {
		result = filter_listing(paths[0], result, w - wrapped == W_SCANDIR);
	} else if (w->kind == WRAP_READLINK && (PyUnicode_Check(result) || PyBytes_Check(result))) {
		/* Where the link points is itself information: refused, as
		 * for reading the target, when it leads outside. */
		char where[PATH_MAX], joined[PATH_MAX];
		PyObject *keep;
		const char *raw = NULL, *target = NULL;
		_cleanup_free_ char *dir = NULL;
		int r = 0;

		if (path_bytes(paths[0], false, &raw, &keep) != PATH_STRING)
			goto out;
		Py_XDECREF(keep);
		if (check_raw(raw, dir_fd, false, false, where) < 0 ||
		    path_bytes(result, false, &target, &keep) != PATH_STRING) {
			Py_CLEAR(result);
			goto out;
		}
		dir = sb_path_dirname(where);
		if (!dir)
			r = -1;
		else if (target[0] == '/')
			r = snprintf(joined, sizeof(joined), "%s", target);
		else
			r = snprintf(joined, sizeof(joined), "%s/%s", dir, target);
		Py_XDECREF(keep);
		if (r < 0 || r >= (int)sizeof(joined) ||
		    check_raw(joined, -1, false, true, NULL) < 0) {
			if (!PyErr_Occurred())
				refuse_unresolvable(raw, "its target is too long");
			else if (PyErr_ExceptionMatches(PyExc_FileNotFoundError)) {
				/* Name the link, not its target. */
				PyErr_Clear();
				refuse_unresolvable(raw, "it is a symbolic link that leads outside "
							 "the exposed directories");
			}
			Py_CLEAR(result);
		}
	}
out:
	Py_XDECREF(paths[0]);
	Py_XDECREF(paths[1]);
	Py_XDECREF(rewritten);
	Py_XDECREF(new_kwnames);
	return result;
}

/* The common cases first, in a function small enough to be inlined into
 * each wrapper; the rest in call_wrapped_general(). */
static inline PyObject *call_wrapped(struct wrapped *w, PyObject *const *args, Py_ssize_t nargs,
				     PyObject *kwnames)
{
	if (!files.prepared || !w->original)
		return PyErr_Format(PyExc_RuntimeError, "%s is not available", w->name);
	/* A wrapper whose function raises its own event: the paths are already
	 * str or bytes (nothing to convert, nothing a second __fspath__ call
	 * could change). Straight to the original. */
	if (w->kind == WRAP_CONVERT && nargs >= (Py_ssize_t)w->n_paths && w - wrapped != W_CHROOT &&
	    w - wrapped != W_CHDIR) {
		bool plain = true;

		for (unsigned i = 0; plain && i < w->n_paths; i++)
			plain = PyUnicode_CheckExact(args[i]) || PyBytes_CheckExact(args[i]);
		if (plain)
			return PyObject_Vectorcall(w->original, args, (size_t)nargs, kwnames);
	}
	/* stat(path), stat(path, follow_symlinks=...) (pathlib), and the
	 * like. The keyword is matched by identity: CPython interns keyword
	 * names written in the source; anything else goes the general way. */
	if (w->kind == WRAP_READ && nargs == 1 && sb_guard_armed() &&
	    (!kwnames || (PyTuple_GET_SIZE(kwnames) == 1 &&
			  PyTuple_GET_ITEM(kwnames, 0) == keys.follow_symlinks)))
		return read_wrapped(w, args, kwnames);
	return call_wrapped_general(w, args, nargs, kwnames);
}

/* One C function per wrapper: with m_self NULL (so that gc.get_referents()
 * of a wrapper does not lead to the original), the function itself must
 * know which entry it stands for. */
#define WRAPPER(idx)                                                                               \
	static PyObject *wrap_##idx(PyObject *self _unused_, PyObject *const *args,                \
				    Py_ssize_t nargs, PyObject *kwnames)                           \
	{                                                                                          \
		return call_wrapped(&wrapped[idx], args, nargs, kwnames);                          \
	}
WRAPPER(W_OPEN)
WRAPPER(W_IO_OPEN)
WRAPPER(W_STAT)
WRAPPER(W_LSTAT)
WRAPPER(W_ACCESS)
WRAPPER(W_STATVFS)
WRAPPER(W_PATHCONF)
WRAPPER(W_CHROOT)
WRAPPER(W_READLINK)
WRAPPER(W_MKFIFO)
WRAPPER(W_MKNOD)
WRAPPER(W_LISTDIR)
WRAPPER(W_SCANDIR)
WRAPPER(W_CHDIR)
WRAPPER(W_CHMOD)
WRAPPER(W_CHOWN)
WRAPPER(W_LCHOWN)
WRAPPER(W_MKDIR)
WRAPPER(W_REMOVE)
WRAPPER(W_UNLINK)
WRAPPER(W_RMDIR)
WRAPPER(W_RENAME)
WRAPPER(W_REPLACE)
WRAPPER(W_LINK)
WRAPPER(W_SYMLINK)
WRAPPER(W_TRUNCATE)
WRAPPER(W_UTIME)
WRAPPER(W_GETXATTR)
WRAPPER(W_SETXATTR)
WRAPPER(W_LISTXATTR)
WRAPPER(W_REMOVEXATTR)

static PyObject *(*const wrapper_fn[W__N])(PyObject *, PyObject *const *, Py_ssize_t,
					   PyObject *) = {
    [W_OPEN] = wrap_W_OPEN,
    [W_IO_OPEN] = wrap_W_IO_OPEN,
    [W_STAT] = wrap_W_STAT,
    [W_LSTAT] = wrap_W_LSTAT,
    [W_ACCESS] = wrap_W_ACCESS,
    [W_STATVFS] = wrap_W_STATVFS,
    [W_PATHCONF] = wrap_W_PATHCONF,
    [W_CHROOT] = wrap_W_CHROOT,
    [W_READLINK] = wrap_W_READLINK,
    [W_MKFIFO] = wrap_W_MKFIFO,
    [W_MKNOD] = wrap_W_MKNOD,
    [W_LISTDIR] = wrap_W_LISTDIR,
    [W_SCANDIR] = wrap_W_SCANDIR,
    [W_CHDIR] = wrap_W_CHDIR,
    [W_CHMOD] = wrap_W_CHMOD,
    [W_CHOWN] = wrap_W_CHOWN,
    [W_LCHOWN] = wrap_W_LCHOWN,
    [W_MKDIR] = wrap_W_MKDIR,
    [W_REMOVE] = wrap_W_REMOVE,
    [W_UNLINK] = wrap_W_UNLINK,
    [W_RMDIR] = wrap_W_RMDIR,
    [W_RENAME] = wrap_W_RENAME,
    [W_REPLACE] = wrap_W_REPLACE,
    [W_LINK] = wrap_W_LINK,
    [W_SYMLINK] = wrap_W_SYMLINK,
    [W_TRUNCATE] = wrap_W_TRUNCATE,
    [W_UTIME] = wrap_W_UTIME,
    [W_GETXATTR] = wrap_W_GETXATTR,
    [W_SETXATTR] = wrap_W_SETXATTR,
    [W_LISTXATTR] = wrap_W_LISTXATTR,
    [W_REMOVEXATTR] = wrap_W_REMOVEXATTR,
};

/* The wrapper's docstring: the original's, in CPython's layout
 * "name(sig)\n--\n\n" + text, so that inspect.signature() still works. The
 * wrapper has no module as self: "name($module, /, path...)" becomes
 * "name(path...)". NULL when the original's can be used as it is. */
static char *wrapper_doc(const char *name, const char *doc)
{
	size_t n = strlen(name), rest_len;
	const char *rest;
	char *text;

	if (!doc || strncmp(doc, name, n) != 0 || doc[n] != '(')
		return NULL;
	rest = startswith(doc + n + 1, "$module, /, ");
	if (!rest)
		return NULL;
	rest_len = strlen(rest);
	text = malloc(n + 1 + rest_len + 1);
	if (!text)
		return NULL;
	memcpy(text, doc, n + 1);
	memcpy(text + n + 1, rest, rest_len + 1);
	return text;
}

/* The modules a wrapper goes into, looked up once per activation. */
enum home {
	HOME_POSIX,
	HOME_OS,
	HOME_IO_C,
	HOME_IO,
	HOME_BUILTINS,
	HOME__N,
};

static const char *const home_names[HOME__N] = {"posix", "os", "_io", "io", "builtins"};

/* Replaces name in every module that exports the original object under it:
 * posix and os (os re-exports posix's functions), _io, io and builtins. */
static int install(struct wrapped *w, size_t idx, PyObject *const homes[HOME__N])
{
	static const enum home posix_homes[] = {HOME_POSIX, HOME_OS};
	static const enum home io_homes[] = {HOME_IO_C, HOME_IO, HOME_BUILTINS};
	bool io = streq(w->module, "_io");
	const enum home *targets = io ? io_homes : posix_homes;
	size_t n_targets = io ? ELEMENTSOF(io_homes) : ELEMENTSOF(posix_homes);
	PyObject *module = homes[targets[0]], *key, *modname, *fn;
	int r = -1;

	if (!module)
		return 0;
	key = PyUnicode_InternFromString(w->name);
	if (!key)
		return -1;
	w->original = PyDict_GetItemWithError(PyModule_GetDict(module), key);
	if (!w->original) {
		Py_DECREF(key);
		/* Not built on this platform: nothing to wrap. */
		return PyErr_Occurred() ? -1 : 0;
	}
	Py_INCREF(w->original);
	w->def.ml_name = w->name;
	w->def.ml_meth = (PyCFunction)(void (*)(void))wrapper_fn[idx];
	w->def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
	w->def.ml_doc = NULL;
	w->doc_owned = false;
	if (PyCFunction_Check(w->original)) {
		const char *doc = ((PyCFunctionObject *)w->original)->m_ml->ml_doc;
		char *text = wrapper_doc(w->name, doc);

		/* The original's text lives as long as its module's code. */
		w->def.ml_doc = text ? text : doc;
		w->doc_owned = text != NULL;
	}
	modname = PyUnicode_InternFromString(w->module);
	fn = modname ? PyCFunction_NewEx(&w->def, NULL, modname) : NULL;
	Py_XDECREF(modname);
	if (!fn)
		goto out;
	for (size_t i = 0; i < n_targets; i++) {
		PyObject *m = homes[targets[i]], *dict, *cur;

		if (!m)
			continue;
		dict = PyModule_GetDict(m);
		cur = PyDict_GetItemWithError(dict, key); /* borrowed */
		/* Only where it is the same function (os.open is posix.open;
		 * builtins.open is _io.open). */
		if (cur == w->original && PyDict_SetItem(dict, key, fn) < 0)
			goto out;
		if (!cur && PyErr_Occurred())
			goto out;
	}
	r = 0;
out:
	Py_XDECREF(fn);
	Py_DECREF(key);
	return r;
}

/* ---- part ----------------------------------------------------------------- */

/* Whether the profile lets the program start a thread or a process: then the
 * resolution cache is never used (see there). Any ALLOW that could cover such
 * a function counts, whatever DENY rules say. */
static bool grants_other_actors(const struct sb_profile *profile)
{
	for (size_t i = 0; i < profile->n_apis; i++) {
		const struct sb_api_rule *a = &profile->apis[i];
		enum sb_api_category c;

		if (a->deny)
			continue;
		if (a->kind == SB_API_TARGET_ALL)
			return true;
		c = a->kind == SB_API_TARGET_CATEGORY ? a->category
		    : a->function		      ? a->function->category
						      : SB_API_CATEGORY__N;
		if (c == SB_API_PROCESS_EXEC || c == SB_API_PROCESS_CONTROL || c == SB_API_THREADS)
			return true;
	}
	return false;
}

static int defer_grant(const char *path, bool file, bool writable, bool link_too, const char *why)
{
	struct pending_grant *p;

	if (!path || !*path)
		return 0;
	p = realloc(files.pending, (files.n_pending + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	files.pending = p;
	p[files.n_pending] = (struct pending_grant){
	    .path = strdup(path),
	    .file = file,
	    .writable = writable,
	    .link_too = link_too,
	    .why = why,
	};
	if (!p[files.n_pending].path)
		return -ENOMEM;
	files.n_pending++;
	return 0;
}

/* The link itself: an exact grant of its own path. */
static int grant_link(const char *path, const char *why)
{
	char hop[PATH_MAX];
	struct sb_fp_grant *grants;
	char *copy;

	/* A file that resolved to its own path has no link on the way: the
	 * grant of its target is that of the link path already. */
	for (size_t i = 0; i < files.policy.n_implicit; i++)
		if (files.policy.implicit[i].file && streq(files.policy.implicit[i].dir, path))
			return 0;
	if (sb_path_resolve(path, "/", false, hop) < 0)
		return 0;
	grants = realloc(files.policy.implicit, (files.policy.n_implicit + 1) * sizeof(*grants));
	if (!grants)
		return -ENOMEM;
	files.policy.implicit = grants;
	copy = strdup(hop);
	if (!copy)
		return -ENOMEM;
	grants[files.policy.n_implicit++] = (struct sb_fp_grant){
	    .dir = copy,
	    .len = strlen(copy),
	    .implicit = true,
	    .file = true,
	    .why = why,
	};
	return 0;
}

/* The directories the implicit grants showed to resolve to themselves
 * (existing, no link on the way: the interpreter's tree, the script's
 * directory, /dev) go into the resolution cache as such, so that the first
 * decisions below them look at none of their components again. They were
 * resolved just now, within the first decision: no write of the program can
 * have come between. */
static void rc_seed(void)
{
	if (!rc_usable())
		return;
	/* The slots are looked at in random order, each page read (the
	 * shared zero page) before it is written (a copy): two page faults
	 * per page, 64 for the table, where one call maps it writable at
	 * once. Only a hint: an older kernel says EINVAL, and faults. */
	madvise(rc.slots, sizeof(rc.slots), MADV_POPULATE_WRITE);
	for (size_t i = 0; i < files.policy.n_canonical; i++) {
		const char *c = files.policy.canonical[i];
		size_t n = strlen(c);

		if (n < 2 || n >= PATH_MAX || c[0] != '/' || in_proc(c) ||
		    rc_find_h(c, n, true, rc_hash(c, n, true)))
			continue;
		rc_put(c, n, true, c);
	}
}

/* The implicit grants are resolved (realpath and stat of each, ~70 system
 * calls) at the first decision rather than on every start: a program that
 * opens nothing never pays for them. Resolving late changes nothing: every
 * change to the file system the guard mediates is itself a decision, made
 * after this, and paths relative to the current directory were made
 * absolute when they were recorded. */
static int resolve_pending(void)
{
	int r = 0;

	for (size_t i = 0; i < files.n_pending; i++) {
		const struct pending_grant *p = &files.pending[i];

		if (r >= 0)
			r = sb_file_policy_add_implicit(&files.policy, p->path, p->file,
							p->writable, p->why);
		if (r >= 0 && p->link_too)
			r = grant_link(p->path, p->why);
		free(p->path);
	}
	free(files.pending);
	files.pending = NULL;
	files.n_pending = 0;
	if (r >= 0)
		rc_seed();
	return r;
}

static int files_prepare(const struct sb_profile *profile, const struct sb_interp_paths *interp,
			 char **reterr _unused_)
{
	int r;

	rc_clear(); /* gen 0 -> 1: the zeroed slots are empty */
	rc.off = grants_other_actors(profile);

	r = sb_file_policy_init(&files.policy, profile);
	for (char **d = interp ? interp->dirs : NULL; r >= 0 && d && *d; d++)
		r = defer_grant(*d, false, false, false, "the interpreter's files");
	/* Each link of the chain (readlink of it) and its target. */
	for (char **f = interp ? interp->files : NULL; r >= 0 && f && *f; f++)
		r = defer_grant(*f, true, false, true, "the interpreter's files");
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(ca_stores); i++)
		r = defer_grant(ca_stores[i], false, false, false, "a CA store");
	/* What the kernel boundary grants too: harmless, and needed by
	 * subprocess.DEVNULL, os.urandom fallbacks, and the like. */
	if (r >= 0)
		r = defer_grant("/dev/null", true, true, false, "a device");
	if (r >= 0)
		r = defer_grant("/dev/zero", true, false, false, "a device");
	if (r >= 0)
		r = defer_grant("/dev/urandom", true, false, false, "a device");
	if (r >= 0)
		r = defer_grant("/dev/random", true, false, false, "a device");
	if (r < 0)
		return r;
	files.prepared = true;
	return 0;
}

static int add_sys_path(void)
{
	PyObject *path = PySys_GetObject("path"); /* borrowed */
	char cwd[PATH_MAX];

	if (!path || !PyList_Check(path))
		return 0;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(path); i++) {
		PyObject *item = PyList_GET_ITEM(path, i), *keep;
		const char *dir = NULL;
		enum path_kind k = path_bytes(item, false, &dir, &keep);
		int r = 0;

		if (k == PATH_STRING) {
			char abs[PATH_MAX];

			/* '' is the current directory (-c, -m, the REPL); a
			 * relative entry is made absolute now, as it means now. */
			if (!*dir)
				dir = getcwd(cwd, sizeof(cwd));
			else if (dir[0] != '/' && getcwd(cwd, sizeof(cwd)) &&
				 (size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, dir) <
				     sizeof(abs))
				dir = abs; /* joined, not normalised: ".." is the resolver's */
			if (dir && dir[0] == '/')
				r = defer_grant(dir, false, false, false, "a sys.path entry");
		}
		Py_XDECREF(keep);
		PyErr_Clear();
		if (r < 0)
			return r;
	}
	return 0;
}

/* The entry Py_RunMain() will put first in sys.path, after activate(): the
 * script's directory, or the current directory for -m, -c, stdin and the
 * REPL; none with -P/-I (safe_path). Imports from it must keep working. */
static int add_sys_path0(void)
{
	PyObject *flags = PySys_GetObject("flags"), *argv = PySys_GetObject("argv"); /* borrowed */
	PyObject *safe = flags ? PyObject_GetAttrString(flags, "safe_path") : NULL, *keep;
	const char *arg0 = NULL;
	char cwd[PATH_MAX];
	int r = 0;

	if (safe && PyObject_IsTrue(safe) == 1) {
		Py_DECREF(safe);
		return 0;
	}
	Py_XDECREF(safe);
	PyErr_Clear();
	if (!argv || !PyList_Check(argv) || PyList_GET_SIZE(argv) < 1 ||
	    path_bytes(PyList_GET_ITEM(argv, 0), false, &arg0, &keep) != PATH_STRING) {
		PyErr_Clear();
		return 0;
	}
	if (!*arg0 || streq(arg0, "-m") || streq(arg0, "-c") || streq(arg0, "-")) {
		if (getcwd(cwd, sizeof(cwd)))
			r = defer_grant(cwd, false, false, false, "a sys.path entry");
	} else {
		/* CPython puts the directory of the script's real path there. */
		_cleanup_free_ char *real = realpath(arg0, NULL), *dir = NULL;

		dir = real ? sb_path_dirname(real) : NULL;
		if (dir)
			r = defer_grant(dir, false, false, false, "a sys.path entry");
	}
	Py_XDECREF(keep);
	return r;
}

static int files_activate(char **reterr)
{
	PyObject *homes[HOME__N] = {NULL};
	int r;

	r = add_sys_path0();
	if (r >= 0)
		r = add_sys_path();
	if (r < 0)
		return r;
	if (PyType_Ready(&filtered_scandir_type) < 0)
		goto fail;
	keys.dir_fd = PyUnicode_InternFromString("dir_fd");
	keys.follow_symlinks = PyUnicode_InternFromString("follow_symlinks");
	keys.fspath = PyUnicode_InternFromString("__fspath__");
	if (!keys.dir_fd || !keys.follow_symlinks || !keys.fspath)
		goto fail;
	for (size_t i = 0; i < HOME__N; i++) {
		homes[i] = sb_guard_loaded_module(home_names[i]);
		if (!homes[i] && PyErr_Occurred())
			goto fail;
	}
	for (size_t i = 0; i < W__N; i++)
		if (install(&wrapped[i], i, homes) < 0)
			goto fail;
	for (size_t i = 0; i < HOME__N; i++)
		Py_XDECREF(homes[i]);
	return 0;
fail:
	for (size_t i = 0; i < HOME__N; i++)
		Py_XDECREF(homes[i]);
	PyErr_Clear();
	*reterr = strdup("cannot install the files guard");
	return -EIO;
}

static void files_release(void)
{
	for (size_t i = 0; i < W__N; i++) {
		if (wrapped[i].doc_owned)
			free((char *)wrapped[i].def.ml_doc);
		/* The originals belonged to the finalized interpreter: drop,
		 * don't DECREF. */
		wrapped[i].original = NULL;
		wrapped[i].def = (PyMethodDef){0};
	}
	for (size_t i = 0; i < files.n_pending; i++)
		free(files.pending[i].path);
	free(files.pending);
	files.pending = NULL;
	files.n_pending = 0;
	sb_file_policy_done(&files.policy);
	files.prepared = false;
	/* Like the originals: the finalized interpreter's objects. */
	keys.dir_fd = keys.follow_symlinks = keys.fspath = NULL;
	rc_last.obj = NULL;
	rc.off = false;
	rc_clear();
}

const struct sb_guard_part sb_guard_files_part = {
    .name = "files",
    .prepare = files_prepare,
    .activate = files_activate,
    .release = files_release,
    .handlers = file_handlers,
    .n_handlers = ELEMENTSOF(file_handlers),
};
