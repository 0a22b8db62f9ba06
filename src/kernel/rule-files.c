/* SPDX-License-Identifier: MIT */
/* Rule files inside writable grants (rule-files.h).
 *
 * Alternatives weighed: a read-only bind mount of each rule file in a private
 * mount namespace would keep such layouts working (a mount point can be
 * neither written, renamed nor unlinked, and a hard link across mounts fails
 * with EXDEV), but needs CAP_SYS_ADMIN or an unprivileged user namespace,
 * which many hosts and container runtimes refuse; and a missing file cannot
 * be mounted over. Refusing the layout holds everywhere Landlock does. */
#include "rule-files.h"

#include <limits.h>

#include "file-policy.h"
#include "util.h"

static int conflict(const struct sb_profile *p, const char *cwd, const char *file, bool missing,
		    char **ret)
{
	char real[PATH_MAX];

	if (sb_path_resolve(file, cwd, true, real) < 0)
		return 0;
	for (size_t i = 0; i < p->n_exposes; i++) {
		const struct sb_expose_rule *e = &p->exposes[i];
		const char *grant = e->resolved ? e->resolved : e->path;

		if (!e->writable || !sb_path_under(real, grant))
			continue;
		if (asprintf(
			ret,
			"expose-rw=%s at %s:%u lets the program %s the rule file %s%s: Landlock "
			"cannot take one file out of a granted directory. Keep the rule files "
			"outside every expose-rw directory (or name the profile with "
			"--pysandboxes-config)",
			e->path, e->origin.file ? e->origin.file : SB_ORIGIN_CLI, e->origin.line,
			missing ? "create" : "change", real,
			missing ? ", which python-sb would read on the next run" : "") < 0) {
			*ret = NULL;
			return -ENOMEM;
		}
		return 1;
	}
	return 0;
}

int sb_rule_files_check(const struct sb_profile *p, char **ret_conflict)
{
	char cwd[PATH_MAX];
	int r = 0;

	bool writable = false;

	*ret_conflict = NULL;
	for (size_t i = 0; i < p->n_exposes; i++)
		writable = writable || p->exposes[i].writable;
	if (!writable)
		return 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	for (char **f = p->files; r == 0 && f && *f; f++)
		r = conflict(p, cwd, *f, false, ret_conflict);
	for (char **f = p->missing_files; r == 0 && f && *f; f++)
		r = conflict(p, cwd, *f, true, ret_conflict);
	return r < 0 ? r : 0;
}
