/* SPDX-License-Identifier: MIT */
/* libexec.h. */
#include "libexec.h"

#include "util.h"

int sb_libexec_find(const char *self, const char *name, const char *relative, const char *absolute,
		    int mode, char **ret)
{
	_cleanup_free_ char *dir = self ? sb_path_dirname(self) : NULL;
	const char *candidates[] = {name, relative};

	if (self && !dir)
		return -ENOMEM;
	for (size_t i = 0; dir && i < ELEMENTSOF(candidates); i++) {
		_cleanup_free_ char *path = sb_path_join(dir, candidates[i]);

		if (!path)
			return -ENOMEM;
		if (access(path, mode) == 0) {
			*ret = TAKE_PTR(path);
			return 0;
		}
	}
	if (access(absolute, mode) < 0)
		return -ENOENT;
	*ret = strdup(absolute);
	return *ret ? 0 : -ENOMEM;
}
