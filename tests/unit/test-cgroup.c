/* SPDX-License-Identifier: MIT */
/* Where the program's cgroup would go: the parser of mountinfo and
 * /proc/self/cgroup, and the probe on a fake tree (the kernel's part, that
 * memory.max holds, is the integration suite's where a controller is
 * delegated). */
#include <sys/stat.h>

#include "cgroup.h"
#include "tap.h"
#include "util.h"

#define MOUNT_V2 "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
#define MOUNT_V1 "31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"

static void test_locate(void)
{
	static const struct {
		const char *mountinfo, *cgroup, *want;
	} cases[] = {
	    {MOUNT_V2, "0::/system.slice/app.service\n", "/sys/fs/cgroup/system.slice/app.service"},
	    {MOUNT_V1 MOUNT_V2, "4:memory:/x\n0::/user.slice\n", "/sys/fs/cgroup/user.slice"},
	    {MOUNT_V2, "0::/\n", "/sys/fs/cgroup/"},
	    /* A mount of a sub-hierarchy: the path below its root. */
	    {"40 25 0:26 /ctr /cg rw - cgroup2 cgroup2 rw\n", "0::/ctr/job\n", "/cg/job"},
	    {"40 25 0:26 /ctr /cg rw - cgroup2 cgroup2 rw\n", "0::/other\n", NULL},
	    /* Escaped blanks in the mount point. */
	    {"40 25 0:26 / /my\\040cg rw - cgroup2 cgroup2 rw\n", "0::/a\n", "/my cg/a"},
	    /* Hybrid without a v2 line, v1 only, nothing. */
	    {MOUNT_V1, "0::/\n", NULL},
	    {MOUNT_V2, "4:memory:/x\n", NULL},
	    {"", "", NULL},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *dir = NULL;
		int r = sb_cgroup_locate(cases[i].mountinfo, cases[i].cgroup, &dir);

		if (cases[i].want)
			tap_ok(r == 0 && dir && streq(dir, cases[i].want), "locate %zu: %s (%s)", i,
			       cases[i].want, dir ? dir : "none");
		else
			TAP_IS_INT(r, -ENOENT, "locate: no cgroup v2 directory");
	}
}

static void write_at(const char *root, const char *rel, const char *text)
{
	_cleanup_free_ char *p = sb_path_join(root, rel);
	FILE *f = fopen(p, "we");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_probe(void)
{
	char root[] = "/tmp/sb-cgroup-test.XXXXXX";
	_cleanup_free_ char *parent = NULL, *err = NULL, *cmd = NULL;
	int r;

	if (!mkdtemp(root)) {
		tap_ok(false, "mkdtemp");
		return;
	}
	if (asprintf(&cmd, "mkdir -p %s/proc/self %s/sys/fs/cgroup/svc", root, root) < 0 ||
	    system(cmd) != 0) {
		tap_ok(false, "fake tree");
		return;
	}
	write_at(root, "proc/self/mountinfo", MOUNT_V2);
	write_at(root, "proc/self/cgroup", "0::/svc\n");
	write_at(root, "sys/fs/cgroup/svc/cgroup.subtree_control", "cpu pids\n");
	r = sb_cgroup_probe(root, &parent, &err);
	tap_ok(r == -EOPNOTSUPP && err && strstr(err, "memory controller is not delegated"),
	       "no memory in subtree_control: %s", err ? err : "?");
	free(err);
	err = NULL;
	write_at(root, "sys/fs/cgroup/svc/cgroup.subtree_control", "cpu memory pids\n");
	r = sb_cgroup_probe(root, &parent, &err);
	tap_ok(r == 0 && parent && strstr(parent, "/sys/fs/cgroup/svc") &&
		   streq(strstr(parent, "/sys/fs/cgroup/svc"), "/sys/fs/cgroup/svc"),
	       "delegated: %s", parent ? parent : (err ? err : "?"));
	write_at(root, "proc/self/cgroup", "1:name=systemd:/\n");
	free(err);
	err = NULL;
	TAP_IS_INT(sb_cgroup_probe(root, &parent, &err), -EOPNOTSUPP, "no unified hierarchy");
	free(cmd);
	if (asprintf(&cmd, "rm -rf %s", root) >= 0 && system(cmd) != 0)
		tap_diag("could not remove %s", root);
}

int main(void)
{
	test_locate();
	test_probe();
	return tap_done();
}
