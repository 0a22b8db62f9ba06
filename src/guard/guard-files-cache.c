/* SPDX-License-Identifier: MIT */
/* The files part's resolution cache (guard-files-cache.h).
 *
 * Resolving a path (sb_path_resolve: one lstat per component) costs several
 * system calls, and a program that reads many files (or imports many modules)
 * resolves the same directories again and again. The cache remembers, for an
 * absolute lexical path without "..", what the resolver answered, so that a
 * repeated decision needs no system call and the first decision in a known
 * directory needs one lstat (of the last component), or none once the
 * directory's links are listed (dir_has_link()) or when the caller's own
 * system call tells (os.stat through lstat: stat_through_lstat() in
 * guard-files-wrap.c), instead of one per component. Every directory met on
 * the way is cached too, so a new directory below a known one costs one
 * lstat, not one per component from "/". Decisions (grants, ignore= rules)
 * are still taken each time on the resolved path; only the resolution is
 * remembered. All storage is static (a fixed table and a fixed arena):
 * nothing is allocated on the hot path, and a full cache is emptied, not
 * grown.
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
 * resolve to themselves: sb_rc_seed()), and only for resolutions whose
 * components all existed or whose first missing component was reported
 * missing (ENOENT; DIR_MISSING): the resolver appends what follows it
 * lexically, and that answer changes only when the name is made a link,
 * which is a write decision too. A name hidden by EACCES is not remembered:
 * it can become visible without a write (seteuid()). The path object
 * remembered with a read allowed (rc_last) is as valid as the entry its text
 * is the key of: until the next sb_rc_clear(). Changes of the current directory
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

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-files-cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "file-policy.h"
#include "util.h"

#define RC_SLOTS  16384u     /* a power of two; at most half used */
#define RC_ARENA  (2u << 20) /* records: key and value strings */
#define RC_PROBES 16u

/* 8 bytes: the table is looked at on every decision and its pages are
 * touched at random (the first touch of each costs two page faults, a read
 * then the copy on write), so it is kept small: 128 KiB for 8192 entries (an
 * import-heavy program reading 3000 files uses 3300). The key, its length
 * and what only directories need live in the record. A full table is emptied
 * and filled again. */
struct sb_rc_slot {
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

_Static_assert(sizeof(struct sb_rc_slot) == 8, "a slot is 8 bytes");
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
	struct sb_rc_slot slots[RC_SLOTS];
	/* Mapped by sb_rc_init(), not in .bss: the hook library's .bss is
	 * prefaulted as it starts (prefault.h, hook.c), and 2 MiB of it would
	 * be memory no run needs. */
	char *arena;
	uint32_t used;	     /* bytes of arena in use */
	uint32_t n;	     /* entries */
	uint16_t gen;	     /* 0 = never valid */
	uint64_t epoch;	     /* counts sb_rc_clear(): unlike gen, it never wraps */
	bool off;	     /* threads or fork seen: never again */
	bool remember_reads; /* no ignore= rules: a read's verdict is its resolved path's */
	bool cwd_valid;
	size_t cwd_len;
	char cwd[PATH_MAX];
} rc __attribute__((aligned(4096))); /* zero: in .bss, not in the binary;
					 sb_rc_init() sets gen */

static struct rc_rec rc_rec_of(const struct sb_rc_slot *sl)
{
	struct rc_rec r;

	memcpy(&r, rc.arena + sl->rec, sizeof(r));
	return r;
}

static const char *rc_key(const struct sb_rc_slot *sl)
{
	return rc.arena + sl->rec + sizeof(struct rc_rec);
}

/* The path object of the last read allowed from the cache (see
 * sb_rc_read_allowed()): a program hands the same str to os.stat(),
 * os.path.exists() and open() in a row, and comparing its address is cheaper
 * than hashing its text. The reference is strong, so that the address cannot
 * be taken by another object while it is remembered; only exact str and bytes
 * objects, whose text cannot change, are remembered, and only absolute paths,
 * whose meaning does not depend on the current directory. It is as valid as
 * the cache entry its text is the key of: until the next sb_rc_clear() (epoch). */
static struct {
	PyObject *obj;
	uint64_t epoch;
	bool follow;
} rc_last;

void sb_rc_clear(void)
{
	/* A new generation invalidates every slot without touching them. */
	if (++rc.gen == 0)
		rc.gen = 1, memset(rc.slots, 0, sizeof(rc.slots));
	rc.epoch++;
	rc.used = 0;
	rc.n = 0;
	rc.cwd_valid = false;
}

void sb_rc_disable(void)
{
	rc.off = true;
	sb_rc_clear();
}

/* Only while this thread is the program's only one (see above). */
static bool rc_usable(void)
{
	PyThreadState *t;

	if (rc.off || !rc.arena)
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
static struct sb_rc_slot *rc_find_h(const char *abs, size_t n, bool follow, uint32_t h)
{
	for (uint32_t i = 0; i < RC_PROBES; i++) {
		struct sb_rc_slot *sl = &rc.slots[(h + i) & (RC_SLOTS - 1)];

		if (sl->gen != rc.gen)
			return NULL;
		if (sl->hash == (uint16_t)(h >> 16) && sl->follow == follow &&
		    rc_rec_of(sl).key_len == n && memcmp(rc_key(sl), abs, n) == 0)
			return sl;
	}
	return NULL;
}

/* The resolved path of (abs, follow) into out; NULL when not cached. */
static struct sb_rc_slot *rc_get_h(const char *abs, size_t n, bool follow, uint32_t h,
				   char out[PATH_MAX])
{
	struct sb_rc_slot *sl = rc_find_h(abs, n, follow, h);

	if (sl) {
		struct rc_rec r = rc_rec_of(sl);
		size_t m = r.val_len ? r.val_len : r.key_len;

		memcpy(out, rc_key(sl) + (r.val_len ? r.key_len : 0), m);
		out[m] = '\0';
	}
	return sl;
}

static struct sb_rc_slot *rc_get(const char *abs, size_t n, bool follow, char out[PATH_MAX])
{
	return rc_get_h(abs, n, follow, rc_hash(abs, n, follow), out);
}

static struct sb_rc_slot *rc_put_h(const char *abs, size_t n, bool follow, uint32_t h,
				   const char *resolved)
{
	size_t m = strlen(resolved);
	struct rc_rec r = {0};

	if (n >= PATH_MAX || m >= PATH_MAX || !rc.arena)
		return NULL;
	if (m == n && memcmp(abs, resolved, n) == 0)
		m = 0; /* the value is the key */
	if (rc.n >= RC_SLOTS / 2 || rc.used + sizeof(r) + n + m > RC_ARENA) {
		bool cwd_valid = rc.cwd_valid;

		sb_rc_clear();
		rc.cwd_valid = cwd_valid; /* still the cwd: only the table is full */
	}
	for (uint32_t i = 0; i < RC_PROBES; i++) {
		struct sb_rc_slot *sl = &rc.slots[(h + i) & (RC_SLOTS - 1)];
		char *at = rc.arena + rc.used;

		if (sl->gen == rc.gen)
			continue;
		r.val_len = (uint16_t)m;
		r.key_len = (uint16_t)n;
		memcpy(at, &r, sizeof(r));
		memcpy(at + sizeof(r), abs, n);
		memcpy(at + sizeof(r) + n, resolved, m);
		*sl = (struct sb_rc_slot){
		    .gen = rc.gen, .hash = (uint16_t)(h >> 16), .rec = rc.used, .follow = follow};
		rc.used += (uint32_t)(sizeof(r) + n + m);
		rc.n++;
		return sl;
	}
	return NULL;
}

static struct sb_rc_slot *rc_put(const char *abs, size_t n, bool follow, const char *resolved)
{
	return rc_put_h(abs, n, follow, rc_hash(abs, n, follow), resolved);
}

/* Lists the symbolic links of directory dir (resolved) into the arena for
 * its entry ds: a few getdents64 calls instead of an lstat per name. Gives
 * up (DIR_UNSCANNABLE: lstat as before) on a large directory, on more than a
 * few links, or when the file system does not report types (DT_UNKNOWN). */
static void dir_scan(struct sb_rc_slot *ds, const char *dir)
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
static int dir_has_link(struct sb_rc_slot *ds, const char *dir, const char *name, size_t len,
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
bool sb_rc_cwd(char out[PATH_MAX])
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

/* /proc changes its names without any write of the program (its fds, its
 * cwd, its threads: /proc/self/fd/3 is a link to whatever fd 3 is now), so
 * nothing resolved there is remembered. */
static bool in_proc(const char *resolved)
{
	/* Compared byte by byte: asked at every step of a walk, and a
	 * strncmp() of a pointer is a call. */
	return resolved[0] == '/' && resolved[1] == 'p' && resolved[2] == 'r' &&
	       resolved[3] == 'o' && resolved[4] == 'c' && (!resolved[5] || resolved[5] == '/');
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
 * status is not looked up (SB_RC_LAST_UNKNOWN): the caller finds it out with
 * the very system call it makes anyway (see read_wrapped() in guard-files-wrap.c). *ret_slot is the
 * entry of abs when it is cached. hint, when given, is what the caller's
 * lookup of raw found (used when raw is abs), and receives abs's hash. */
int sb_rc_resolve(const char *raw, const char *abs, bool follow, bool last_unknown,
		  char out[PATH_MAX], struct sb_rc_slot **ret_slot, struct sb_rc_hint *hint)
{
	struct sb_rc_slot *ds = NULL;
	size_t n = strlen(abs), len = strlen(raw), d, o;
	/* raw is its own lexical form (most are): then it has no ".."
	 * component and its last name is neither "." nor followed by '/'. */
	bool same = len == n && memcmp(raw, abs, n) == 0;
	bool complete = true;
	bool missing = false; /* !complete because of ENOENT alone: cacheable */
	struct sb_rc_hint in = hint ? *hint : (struct sb_rc_hint){0};
	uint32_t h;

	/* Whatever the way out, *hint only ever describes abs. */
	if (hint)
		hint->valid = false;
	*ret_slot = NULL;
	if (!*raw || (!same && has_dotdot(raw)) || !rc_usable())
		return SB_RC_FALLBACK;
	if (!same && sb_path_follows_last(raw, len))
		follow = true;
	if (n == 1) { /* "/" */
		out[0] = '/', out[1] = '\0';
		return SB_RC_DONE;
	}
	if (in.valid && in.follow == follow && same) {
		h = in.h;
		if (!in.absent && (*ret_slot = rc_get_h(abs, n, follow, h, out)))
			return SB_RC_DONE;
	} else {
		h = rc_hash(abs, n, follow);
		if ((*ret_slot = rc_get_h(abs, n, follow, h, out)))
			return SB_RC_DONE;
	}
	if (hint)
		*hint =
		    (struct sb_rc_hint){.h = h, .valid = true, .follow = follow, .absent = true};
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
			return SB_RC_FALLBACK;
		if (complete && (!last || follow)) {
			/* Only last names count towards listing a
			 * directory: each directory on the way is looked at
			 * once and cached (listing /tmp for it would cost more
			 * than that lstat), and the caller that can do without
			 * (last_unknown) does not make it listed either. */
			link = dir_has_link(ds, out, name, name_len, last && !last_unknown);
			if (link < 0 && last && last_unknown) {
				if (!append_name(out, &o, name, name_len))
					return SB_RC_FALLBACK;
				return SB_RC_LAST_UNKNOWN;
			}
			if (link < 0) {
				struct stat st;
				size_t before = o;

				if (!append_name(out, &o, name, name_len))
					return SB_RC_FALLBACK;
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
				return SB_RC_FALLBACK;
			memcpy(prefix, abs, e);
			prefix[e] = '\0';
			if (sb_path_resolve_ex(prefix, "/", true, out, &all) < 0 || !all ||
			    in_proc(out))
				return SB_RC_FALLBACK;
			o = strlen(out);
		} else if (!append_name(out, &o, name, name_len)) {
			return SB_RC_FALLBACK;
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
	return SB_RC_DONE;
}

/* The hot path: a read of an absolute path that was allowed before, with
 * nothing changed since (see the resolution cache). Keys are
 * sb_path_absolute() forms (no "//", "." or ".." component, no trailing
 * '/'), so a raw path equal to a key is its own abs. Without ignore= rules a
 * read decision depends on the resolved path alone, which the entry stands
 * for. n is strlen(raw). */
bool sb_rc_read_allowed(const char *raw, size_t n, bool follow, struct sb_rc_hint *hint)
{
	struct sb_rc_slot *slot;
	uint32_t h;

	hint->valid = false;
	if (!rc.remember_reads || raw[0] != '/' || n >= PATH_MAX || !rc_usable())
		return false;
	h = rc_hash(raw, n, follow);
	slot = rc_find_h(raw, n, follow, h);
	*hint = (struct sb_rc_hint){.h = h, .valid = true, .follow = follow, .absent = !slot};
	return slot && slot->allowed;
}

/* The text of an exact str (compact ASCII: its own UTF-8) or bytes object,
 * read in place, and its length; NULL for any other object. Embedded NULs
 * are not looked for: no cache key has one, so such a text is never found,
 * and the full check (sb_files_path_bytes()) refuses it. */
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
void sb_rc_remember(PyObject *o, bool follow)
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
 * key sb_rc_read_allowed() allows. Call sb_files_ready() first. hint as for
 * sb_rc_read_allowed(); not set when o is no plain str or bytes. */
bool sb_rc_obj_read_allowed(PyObject *o, bool follow, struct sb_rc_hint *hint)
{
	const char *raw;
	size_t n;

	hint->valid = hint->allowed = false;
	if (o == rc_last.obj && rc_last.epoch == rc.epoch && rc_last.follow == follow &&
	    rc_usable())
		return true;
	raw = plain_text(o, &n);
	return raw && sb_rc_read_allowed(raw, n, follow, hint);
}

/* The directories the implicit grants showed to resolve to themselves
 * (existing, no link on the way: the interpreter's tree, the script's
 * directory, /dev) go into the resolution cache as such, so that the first
 * decisions below them look at none of their components again. They were
 * resolved just now, within the first decision: no write of the program can
 * have come between. */
void sb_rc_seed(char *const *dirs, size_t n_dirs)
{
	if (!rc_usable())
		return;
	/* The slots are looked at in random order, each page read (the
	 * shared zero page) before it is written (a copy): two page faults
	 * per page, 64 for the table, where one call maps it writable at
	 * once. Only a hint: an older kernel says EINVAL, and faults. */
	madvise(rc.slots, sizeof(rc.slots), MADV_POPULATE_WRITE);
	for (size_t i = 0; i < n_dirs; i++) {
		const char *c = dirs[i];
		size_t n = strlen(c);

		if (n < 2 || n >= PATH_MAX || c[0] != '/' || in_proc(c) ||
		    rc_find_h(c, n, true, rc_hash(c, n, true)))
			continue;
		rc_put(c, n, true, c);
	}
}

void sb_rc_init(bool off, bool remember_reads)
{
	sb_rc_clear(); /* gen 0 -> 1: the zeroed slots are empty */
	if (!rc.arena) {
		void *arena = mmap(NULL, RC_ARENA, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		/* Without it (a tight limit-memory), no cache: every decision
		 * resolves its path, as with threads. */
		if (arena == MAP_FAILED)
			off = true;
		else
			rc.arena = arena;
	}
	rc.off = off;
	rc.remember_reads = remember_reads;
}

void sb_rc_release(void)
{
	/* The finalized interpreter's object: drop it, don't DECREF. */
	rc_last.obj = NULL;
	rc.off = false;
	sb_rc_clear();
}

void sb_rc_cwd_changed(void)
{
	rc.cwd_valid = false;
}

void sb_rc_allow_read(struct sb_rc_slot *slot, struct sb_rc_hint *hint)
{
	if (!slot || !rc.remember_reads)
		return;
	slot->allowed = true;
	if (hint)
		hint->allowed = true;
}

bool sb_rc_missing(const struct sb_rc_slot *slot)
{
	return slot && slot->dir_state == DIR_MISSING;
}

struct sb_rc_slot *sb_rc_put_checked(const char *abs, const char *resolved, bool missing,
				     const struct sb_rc_hint *hint)
{
	struct sb_rc_slot *slot;

	if (in_proc(resolved))
		return NULL;
	slot = hint->valid && hint->follow ? rc_put_h(abs, strlen(abs), true, hint->h, resolved)
					   : rc_put(abs, strlen(abs), true, resolved);
	if (slot && missing)
		slot->dir_state = DIR_MISSING;
	return slot;
}
