#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where the guard's time goes in one start, by part (issue 19).

callgrind counts instructions, not the system calls the guard makes or the
cold caches of its first run, and on this VM the guard's time is about twice
what its instructions predict. This builds an instrumented copy of
python-sb-hook.so (a copy of the tree, never the worktree: clock_gettime()
around the audit hook per event name, each part's activate, the
after-import pass and guard-code.c's re-read of a .pyc), makes the hooked
copy, runs each workload RUNS times under os-sandbox=none and prints the
median microseconds per item.

Usage: bench/guard-timing.py [--runs N] [--keep DIR]   (from the repository)

Needs what a release build needs and patchelf. Method and results:
bench/README.md, "The guard's share".
"""
import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE.parent

TIMING = r'''
#include <stdio.h>
#include <time.h>
static double sbt_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
'''


def patch(path, old, new, count=1):
    text = path.read_text()
    if text.count(old) < 1:
        sys.exit(f"guard-timing.py: {path.name} changed: cannot find {old[:60]!r}")
    path.write_text(text.replace(old, new, count))


def instrument(tree, log):
    guard = tree / "src/guard"
    audit = guard / "audit-guard.c"
    patch(audit, '#include "util.h"\n', '#include "util.h"\n' + TIMING + r'''
static struct { const char *what; double us; unsigned long n; } sbt[96];
static void sbt_add(const char *what, double us)
{
	int i;

	for (i = 0; i < 95 && sbt[i].what && strcmp(sbt[i].what, what); i++)
		;
	if (!sbt[i].what)
		sbt[i].what = strdup(what);
	sbt[i].us += us;
	sbt[i].n++;
}
void sbt_add_file_holds(double us);
void sbt_add_file_holds(double us) { sbt_add("reread .pyc (file_holds)", us); }
static void sbt_print(void)
{
	FILE *f = fopen("''' + log + r'''", "a");

	if (!f)
		return;
	for (int i = 0; i < 96 && sbt[i].what; i++)
		fprintf(f, "%s\t%.1f\t%lu\n", sbt[i].what, sbt[i].us, sbt[i].n);
	fputs("--\n", f);
	fclose(f);
}
''')
    patch(audit, "static int sb_audit_hook(const char *event, PyObject *args, void *userdata _unused_)\n{",
          "static int sb_audit_hook_x(const char *event, PyObject *args);\n"
          "static int sb_audit_hook(const char *event, PyObject *args, void *userdata _unused_)\n"
          "{\n\tdouble t0 = sbt_now();\n\tint r = sb_audit_hook_x(event, args);\n"
          "\tchar what[160];\n\tsnprintf(what, sizeof(what), \"event %s\", event);\n"
          "\tsbt_add(what, sbt_now() - t0);\n\treturn r;\n}\n"
          "static int sb_audit_hook_x(const char *event, PyObject *args)\n{")
    patch(audit, "int sb_guard_after_import(void)\n{",
          "static int sb_guard_after_import_x(void);\nint sb_guard_after_import(void)\n"
          "{\n\tdouble t0 = sbt_now();\n\tint r = sb_guard_after_import_x();\n"
          "\tsbt_add(\"after-import pass\", sbt_now() - t0);\n\treturn r;\n}\n"
          "static int sb_guard_after_import_x(void)\n{")
    patch(audit, "\t\tr = parts[i]->activate(reterr);",
          "\t\tdouble t0 = sbt_now();\n\t\tchar what[64];\n"
          "\t\tr = parts[i]->activate(reterr);\n"
          "\t\tsnprintf(what, sizeof(what), \"activate %s\", parts[i]->name);\n"
          "\t\tsbt_add(what, sbt_now() - t0);")
    patch(audit, "void sb_guard_release(void)\n{", "void sb_guard_release(void)\n{\n\tsbt_print();")
    code = guard / "guard-code.c"
    patch(code, '#include "util.h"\n', '#include "util.h"\n' + TIMING +
          "void sbt_add_file_holds(double us);\n")
    patch(code, "static bool file_holds(const char *path, size_t skip, const char *data, size_t len)\n{",
          "static bool file_holds_x(const char *path, size_t skip, const char *data, size_t len);\n"
          "static bool file_holds(const char *path, size_t skip, const char *data, size_t len)\n"
          "{\n\tdouble t0 = sbt_now();\n\tbool r = file_holds_x(path, skip, data, len);\n"
          "\tsbt_add_file_holds(sbt_now() - t0);\n\treturn r;\n}\n"
          "static bool file_holds_x(const char *path, size_t skip, const char *data, size_t len)\n{")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--keep", help="build here and keep it (default: a temporary directory)")
    a = p.parse_args()
    top = pathlib.Path(a.keep or tempfile.mkdtemp(prefix="py-sandboxes-guard-timing."))
    try:
        tree, build, log = top / "src", top / "build", top / "timing.log"
        if not tree.exists():
            tree.mkdir(parents=True)
            archive = subprocess.run(["git", "-C", str(SRC), "archive", "HEAD"], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
            instrument(tree, str(log))
        if not (build / "build.ninja").exists():
            subprocess.run(["meson", "setup", "--buildtype=release", "-Dwerror=false", str(build),
                            str(tree)], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["meson", "compile", "-C", str(build), "python-sb-hook"], check=True,
                       stdout=subprocess.DEVNULL)
        hooked = top / "hooked"
        (hooked / "bin").mkdir(parents=True, exist_ok=True)
        (hooked / "lib").mkdir(exist_ok=True)
        shutil.copy(build / "python-sb-hook.so", hooked / "lib")
        subprocess.run([str(SRC / "scripts/install-hook.sh"), str(hooked / "bin/python-sb"),
                        "$ORIGIN/../lib"], check=True, stdout=subprocess.DEVNULL)
        run = top / "run"
        run.mkdir(exist_ok=True)
        shutil.copy(HERE / "workload-small.py", run)
        (run / "none.py-sandboxes").write_text(
            "os-sandbox=none\npython-import=*\nenv=HOME=${HOME}\nenv=LANG=${LANG}\n"
            "env=PATH=${PATH}\nenv=PYTHONHASHSEED=${PYTHONHASHSEED}\n")
        env = {"HOME": os.environ.get("HOME", "/"), "LANG": os.environ.get("LANG", "C.UTF-8"),
               "PATH": os.environ["PATH"], "PYTHONHASHSEED": "0"}
        print(f"# load average {os.getloadavg()[0]:.2f}; {a.runs} runs each; median µs (calls)")
        for args in (["-c", "pass"], ["workload-small.py"]):
            log.unlink(missing_ok=True)
            for _ in range(a.runs):
                subprocess.run([str(hooked / "bin/python-sb"), "--pysandboxes-config",
                                "none.py-sandboxes", *args], cwd=run, env=env, check=True,
                               stdout=subprocess.DEVNULL)
            samples = {}
            for block in log.read_text().split("--\n"):
                for line in filter(None, block.splitlines()):
                    what, us, n = line.split("\t")
                    samples.setdefault(what, []).append((float(us), int(n)))
            print(f"## {' '.join(args)}")
            rows = sorted(((statistics.median(u for u, _ in s), what, s[-1][1])
                           for what, s in samples.items()), reverse=True)
            hook = sum(us for us, what, _ in rows if what.startswith("event "))
            print(f"{'all events':34} {hook:8.1f}")
            for us, what, n in rows:
                if us >= 1.0:
                    print(f"{what:34} {us:8.1f} ({n})")
    finally:
        if not a.keep:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
