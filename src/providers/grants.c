/* SPDX-License-Identifier: MIT */
/* The paths every provider that confines files grants (Landlock rules, the
 * binds of a wrapper's new root): the interpreter's directories and files,
 * the shared libraries, what any CPython process needs from the system, and
 * the expose-* rules, each with the reason --explain shows. */
#include "grants.h"

#include <stdarg.h>

#include "path0-modules.h"

/* What any CPython process needs besides its own tree, read-only unless said.
 * Deliberately not /etc as a whole: it holds other programs' secrets. */
static const struct {
	const char *path;
	bool writable;
	bool is_file; /* spares Landlock's build a failed directory rule */
	const char *why;
} system_grants[] = {
    {"/etc/ld.so.cache", false, true, "dynamic loader"},
    {"/etc/ssl", false, false, "CA store"},
    {"/etc/pki", false, false, "CA store"},
    {"/etc/ca-certificates", false, false, "CA store"},
    {"/usr/share/ca-certificates", false, false, "CA store"},
    {"/usr/share/pki", false, false, "CA store"},
    {"/usr/lib/locale", false, false, "locales"},
    {"/usr/share/zoneinfo", false, false, "time zones"},
    {"/etc/localtime", false, true, "time zone"},
    {"/dev/null", true, true, "/dev/null"},
    {"/dev/zero", false, true, "/dev/zero"},
    {"/dev/urandom", false, true, "random numbers"},
    {"/dev/random", false, true, "random numbers"},
    /* Resolved to /proc/<pid> when the rule is added: this process only.
     * Not the whole entry: /proc/self/net shows the namespace's sockets
     * (the host's connections and socket paths under Landlock, where there
     * is no network namespace), mountinfo the host's mounts. */
    {"/proc/self/fd", false, false, "the process's own descriptors"},
    {"/proc/self/fdinfo", false, false, "the process's own descriptors"},
    {"/proc/self/task", false, false, "the process's own threads"},
    {"/proc/self/stat", false, true, "the process's own status"},
    {"/proc/self/statm", false, true, "the process's own status"},
    {"/proc/self/status", false, true, "the process's own status"},
    {"/proc/self/maps", false, true, "the process's own memory map"},
    {"/proc/self/cmdline", false, true, "the process's own command line"},
    {"/proc/self/comm", false, true, "the process's own name"},
    {"/proc/self/limits", false, true, "the process's own limits"},
    {"/sys/devices/system/cpu", false, false, "os.cpu_count()"},
};

int sb_provider_add_path(struct sb_boundary *b, const char *path, bool writable, bool optional,
			 bool is_file, const char *why)
{
	return sb_boundary_grant_path(
	    b,
	    &(struct sb_landlock_path){
		.path = path, .writable = writable, .optional = optional, .is_file = is_file},
	    why);
}

static int add_system_lib_dirs(struct sb_boundary *b)
{
	_cleanup_free_ char *dirs = strdup(SB_SYSTEM_LIB_DIRS);
	char *save = NULL;
	int r = 0;

	if (!dirs)
		return -ENOMEM;
	for (char *d = strtok_r(dirs, ":", &save); d && r >= 0; d = strtok_r(NULL, ":", &save))
		r = sb_provider_add_path(b, d, false, true, false, "shared libraries");
	return r;
}

int sb_provider_collect_grants(struct sb_boundary *b, const struct sb_profile *p,
			       const struct sb_interp_paths *interp)
{
	int r = 0;

	for (char **d = interp ? interp->dirs : NULL; r >= 0 && d && *d; d++)
		r = sb_provider_add_path(b, *d, false, true, false, "interpreter");
	for (char **f = interp ? interp->files : NULL; r >= 0 && f && *f; f++)
		r = sb_provider_add_path(b, *f, false, true, false, "interpreter and program");
	/* Each file of an allowed module beside the script, each allowed
	 * package's directory: read, never the directory that holds them. */
	for (char **m = interp ? interp->path0_modules : NULL; r >= 0 && m && *m; m++)
		r = sb_provider_add_path(b, *m, false, true, sb_path0_module_is_file(*m),
					 SB_PATH0_MODULE_WHY);
	if (r >= 0)
		r = add_system_lib_dirs(b);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(system_grants); i++)
		r = sb_provider_add_path(b, system_grants[i].path, system_grants[i].writable, true,
					 system_grants[i].is_file, system_grants[i].why);
	for (size_t i = 0; r >= 0 && i < p->n_exposes; i++) {
		const struct sb_expose_rule *e = &p->exposes[i];
		_cleanup_free_ char *why = NULL;

		if (asprintf(&why, "expose-%s at %s:%u", e->writable ? "rw" : "ro", e->origin.file,
			     e->origin.line) < 0)
			return -ENOMEM;
		r = sb_provider_add_path(b, e->resolved ? e->resolved : e->path, e->writable, false,
					 false, why);
	}
	return r;
}
