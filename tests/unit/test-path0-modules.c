/* SPDX-License-Identifier: MIT */
/* What of sys.path[0] both layers grant (src/policy/path0-modules.c): the
 * files of the allowed modules and the allowed packages' directories, chosen
 * by name and then by type (d_type, or stat() through a link), and nothing
 * else: not a FIFO or a directory named like a module file, not a dotless
 * file named like a package, not a module the profile does not allow. */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "path0-modules.h"
#include "tap.h"

static char root[] = "/tmp/sb-path0-test-XXXXXX";

static char *at(const char *rel)
{
	static char buf[4][PATH_MAX];
	static unsigned n;
	char *b = buf[n++ % 4];

	snprintf(b, sizeof(buf[0]), "%s/%s", root, rel);
	return b;
}

static void touch(const char *rel)
{
	int fd = open(at(rel), O_WRONLY | O_CREAT, 0644);

	if (fd >= 0)
		close(fd);
}

static bool has(char *const *v, const char *rel)
{
	return sb_strv_contains(v, at(rel));
}

int main(void)
{
	struct sb_name_rule names[] = {{.name = (char *)"mod"},	  {.name = (char *)"pkg"},
				       {.name = (char *)"lmod"},  {.name = (char *)"lpkg"},
				       {.name = (char *)"fifo"},  {.name = (char *)"dotdir"},
				       {.name = (char *)"noext"}, {.name = (char *)"dangling"}};
	struct sb_profile p = {.imports = names, .n_imports = ELEMENTSOF(names)};
	_cleanup_strv_free_ char **got = NULL;
	_cleanup_strv_free_ char **all = NULL;
	static const char *const wanted[] = {
	    "mod.py",  "mod.pyc", "mod.cpython-311-x86_64-linux-gnu.so", "pkg",
	    "lmod.py", "lpkg",	  "__pycache__/mod.cpython-311.pyc",
	};
	static const char *const refused[] = {
	    "fifo.py",	"dotdir.py",
	    "noext",	"dangling.py",
	    "other.py", "mod.txt",
	    "mod.x.py", "__pycache__",
	    "notes",	"__pycache__/other.cpython-311.pyc",
	};
	int r;

	if (!mkdtemp(root))
		return tap_ok(false, "mkdtemp"), tap_done();
	touch("mod.py");
	touch("mod.pyc");
	touch("mod.cpython-311-x86_64-linux-gnu.so");
	touch("mod.txt");
	touch("mod.x.py");
	touch("other.py");
	touch("noext");
	touch("notes");
	mkdir(at("pkg"), 0755);
	mkdir(at("dotdir.py"), 0755);
	mkdir(at("real"), 0755);
	touch("real/lmod_impl.py");
	mkdir(at("real/lpkg_impl"), 0755);
	mkdir(at("__pycache__"), 0755);
	touch("__pycache__/mod.cpython-311.pyc");
	touch("__pycache__/other.cpython-311.pyc");
	if (mkfifo(at("fifo.py"), 0644) < 0 || symlink("real/lmod_impl.py", at("lmod.py")) < 0 ||
	    symlink("real/lpkg_impl", at("lpkg")) < 0 || symlink("missing", at("dangling.py")) < 0)
		return tap_ok(false, "lay out %s", root), tap_done();

	r = sb_path0_modules(root, &p, NULL, &got, NULL);
	tap_ok(r == 0, "listed: %d", r);
	for (size_t i = 0; i < ELEMENTSOF(wanted); i++)
		tap_ok(has(got, wanted[i]), "granted: %s", wanted[i]);
	for (size_t i = 0; i < ELEMENTSOF(refused); i++)
		tap_ok(!has(got, refused[i]), "not granted: %s", refused[i]);
	tap_ok(sb_strv_length(got) == ELEMENTSOF(wanted), "nothing else (%zu paths)",
	       sb_strv_length(got));
	for (size_t i = 1; got && got[i]; i++)
		tap_ok(strcmp(got[i - 1], got[i]) < 0, "sorted: %s < %s", got[i - 1], got[i]);
	tap_ok(sb_path0_module_is_file(at("mod.py")) && sb_path0_module_is_file(at("lmod.py")) &&
		   !sb_path0_module_is_file(at("pkg")) && !sb_path0_module_is_file(at("lpkg")),
	       "module files are files, packages are not");

	/* The -m package is allowed whatever the profile says; with
	 * python-import=* every module is, the FIFO still not. */
	p.n_imports = 0;
	sb_strv_free(got);
	got = NULL;
	r = sb_path0_modules(root, &p, "other", &got, NULL);
	tap_ok(r == 0 && has(got, "other.py") && has(got, "__pycache__/other.cpython-311.pyc") &&
		   sb_strv_length(got) == 2,
	       "the -m package alone (%zu paths)", sb_strv_length(got));
	p.import_all = true;
	r = sb_path0_modules(root, &p, NULL, &all, NULL);
	tap_ok(r == 0 && has(all, "real") && has(all, "notes") == false && !has(all, "fifo.py") &&
		   !has(all, "dotdir.py") && has(all, "mod.x.py") == false,
	       "python-import=*: every module and package, no FIFO (%zu paths)",
	       sb_strv_length(all));

	for (size_t i = 0; i < ELEMENTSOF(wanted); i++)
		unlink(at(wanted[i]));
	for (const char *const *f =
		 (const char *const[]){"mod.txt", "mod.x.py", "other.py", "noext", "notes",
				       "fifo.py", "dangling.py", "real/lmod_impl.py",
				       "__pycache__/other.cpython-311.pyc", NULL};
	     *f; f++)
		unlink(at(*f));
	rmdir(at("pkg"));
	rmdir(at("lpkg"));
	unlink(at("lpkg"));
	rmdir(at("dotdir.py"));
	rmdir(at("real/lpkg_impl"));
	rmdir(at("real"));
	rmdir(at("__pycache__"));
	rmdir(root);
	return tap_done();
}
