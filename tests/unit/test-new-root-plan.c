/* SPDX-License-Identifier: MIT */
/* The plan of os-sandbox=unshare's new root (src/kernel/new-root.c), built
 * without mounting anything: what sb_root_plan_finish() keeps and drops, on a
 * plan of thousands of binds (every module beside a script under
 * python-import=*), whose lookups go through the plan's index. */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "new-root.h"
#include "tap.h"

#define N_MODULES 3000

static char dir[] = "/tmp/sb-root-plan-XXXXXX";

static const struct sb_root_entry *entry(const struct sb_root_plan *p, const char *path)
{
	const struct sb_root_entry *found = NULL;
	size_t times = 0;

	for (size_t i = 0; i < p->n; i++)
		if (streq(p->entries[i].path, path)) {
			found = &p->entries[i];
			times++;
		}
	return times == 1 ? found : NULL;
}

static char *module(size_t i)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/m%zu.py", dir, i);
	return path;
}

int main(void)
{
	struct sb_root_plan p = {0};
	char path[PATH_MAX];
	bool sorted = true, all_once = true;
	const struct sb_root_entry *e;
	int r = 0;

	if (!mkdtemp(dir))
		return tap_ok(false, "mkdtemp"), tap_done();
	for (size_t i = 0; i < N_MODULES; i++) {
		int fd = open(module(i), O_WRONLY | O_CREAT | O_EXCL, 0644);

		if (fd < 0)
			return tap_ok(false, "create %s", module(i)), tap_done();
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/pkg", dir);
	mkdir(path, 0755);

	for (size_t i = 0; r >= 0 && i < N_MODULES; i++)
		r = sb_root_plan_bind(&p, module(i), false, true, "module");
	/* Granted twice: the widest right, one entry. */
	if (r >= 0)
		r = sb_root_plan_bind(&p, module(7), true, true, "module, again");
	if (r >= 0)
		r = sb_root_plan_bind(&p, path, false, false, "package");
	/* A bind under a bind with the same right adds nothing; a directory of
	 * ours under a bind is the host's already. */
	if (r >= 0)
		r = sb_root_plan_bind(&p, "/usr", false, false, "usr");
	if (r >= 0)
		r = sb_root_plan_bind(&p, "/usr/share", false, false, "usr/share");
	if (r >= 0)
		r = sb_root_plan_bind(&p, "/usr/lib", true, false, "usr/lib, writable");
	if (r >= 0)
		r = sb_root_plan_proc(&p, "/proc", "proc");
	if (r >= 0)
		r = sb_root_plan_file(&p, "/proc/fake", "x", 0644, "under proc");
	if (r >= 0)
		r = sb_root_plan_finish(&p);
	tap_ok(r == 0, "the plan is made and finished: %d", r);

	for (size_t i = 0; i < N_MODULES; i++) {
		e = entry(&p, module(i));
		all_once = all_once && e && e->kind == SB_ROOT_BIND && !e->is_dir &&
			   e->writable == (i == 7);
	}
	tap_ok(all_once, "each of the %d modules is bound once, the one granted twice writable",
	       N_MODULES);
	e = entry(&p, path);
	tap_ok(e && e->kind == SB_ROOT_BIND && e->is_dir, "the package's directory is bound");
	e = entry(&p, dir);
	tap_ok(e && e->kind == SB_ROOT_DIR, "the modules' directory is a directory of ours");
	e = entry(&p, "/tmp");
	tap_ok(e && e->kind == SB_ROOT_DIR, "and so is its parent");
	tap_ok(entry(&p, "/usr") != NULL, "/usr is bound");
	tap_ok(entry(&p, "/usr/share") == NULL,
	       "/usr/share, the same right under /usr, is dropped");
	e = entry(&p, "/usr/lib");
	tap_ok(e && e->writable, "/usr/lib, writable under a read-only /usr, is kept");
	tap_ok(entry(&p, "/proc") && entry(&p, "/proc/fake") == NULL,
	       "a file under the fresh /proc is dropped");
	for (size_t i = 1; i < p.n; i++)
		sorted = sorted && strcmp(p.entries[i - 1].path, p.entries[i].path) < 0;
	tap_ok(sorted, "the entries are sorted, each path once (%zu)", p.n);
	/* The index follows the finished plan. */
	tap_ok(sb_root_plan_set_file(&p, "/proc/fake", "y") == -ENOENT,
	       "the dropped file is not found afterwards");

	sb_root_plan_done(&p);
	for (size_t i = 0; i < N_MODULES; i++)
		unlink(module(i));
	rmdir(path);
	rmdir(dir);
	return tap_done();
}
