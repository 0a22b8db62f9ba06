#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Wrapper providers benchmark: `python-sb -c pass` under os-sandbox=bwrap and
# os-sandbox=firejail against the same tool run by hand, with the very
# sandbox python-sb builds (its command line from --explain, python-ref or
# /usr/bin/python3 in place of the inner python-sb), and against the bare
# interpreters, all in one interleaved run. python-sb is the hooked copy (what
# meson install installs, docs/development.md "Two binaries") when the build
# can make one. Method and results: bench/README.md, "Wrapper providers".
#
# Usage: bench/wrappers.sh [BUILD_DIR]   (as root, or with bwrap usable and
#                                        firejail allowed for the caller)
#
#   BUILD_DIR   as for bench/startup.sh: a release build to reuse, or a new
#               directory to set one up in; default: a temporary directory.
#
# Environment: PYTHON_SB, PYTHON_REF, PYTHON3, KEEP_BUILD, EXTRA_ENV as for
# startup.sh, PYTHON_SB_HOOKED as for python3.sh, and
#   OUT_DIR     where wrappers.json goes (default: a new temp dir)
#   IRUNS       rounds of the interleaved run (default 200)
#   MAX_RATIO   threshold of python-sb under a tool / the tool by hand around
#               /usr/bin/python3, the median of the per-round ratios (default
#               1.00: no slower)
#
# Exit status: 0 when both ratios are within MAX_RATIO, 1 when one is above,
# 2 on a setup error.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/common.sh"

IRUNS=${IRUNS:-200}
MAX_RATIO=${MAX_RATIO:-1.00}
for tool in bwrap firejail; do
    command -v "$tool" >/dev/null ||
        die "$tool is needed (Debian: apt-get install bubblewrap firejail; scripts/deps.sh test)"
done

bench_setup "$@"
bench_out_dir wrappers
bench_use_hooked python-sb
bench_write_profile "$profile_dir/bwrap.py-sandboxes" os-sandbox=bwrap
bench_write_profile "$profile_dir/firejail.py-sandboxes" os-sandbox=firejail
# For the breakdown: python-sb run by hand inside bwrap's sandbox (no
# launching python-sb, no handover), with the subprocess provider.
bench_write_profile "$profile_dir/inside.py-sandboxes" os-sandbox=subprocess

# The by-hand commands: python-sb's own command line for the tool (--explain),
# with the interpreter in place of the inner python-sb, and the interpreter
# made visible as python-sb's binary is (bound, or whitelisted). The seccomp
# filter of the exec-allowing policy, for bwrap --seccomp (see README).
"${clean_env[@]}" "$PYTHON3" - "$sb" "$ref" "$PYTHON3" "$profile_dir" "$out" "$static" <<'EOF'
import os, re, shlex, subprocess, sys

sb, ref, py3, profile_dir, out, static = sys.argv[1:]

def explained(provider):
    r = subprocess.run([sb, "--pysandboxes-config", f"{profile_dir}/{provider}.py-sandboxes",
                        "--explain", "-c", "pass"], capture_output=True, text=True, check=True)
    if f"#   provider in use: {provider}\n" not in r.stdout:
        sys.exit(f"wrappers.sh: python-sb does not use {provider}")
    lines = r.stdout.splitlines()
    return shlex.split(lines[lines.index(
        "#   command line (descriptors as they would be now):") + 1].lstrip("# "))

def real(p):
    return os.path.realpath(p)

def cwd_dir(opts):
    """Where the working directory is made (--perms 0755 --dir CWD --chdir):
    binds added there come after bwrap's other directories and binds."""
    for i, a in enumerate(opts):
        if a == "--dir" and opts[i + 2] == "--chdir":
            return i - 2 if opts[i - 2] == "--perms" else i
    sys.exit("wrappers.sh: no --dir for the working directory in bwrap's command line")

cmds = {}
bw = explained("bwrap")
opts = bw[:bw.index("--")]
for name, interp in [("ref", ref), ("python3", py3)]:
    binds = []
    for p in dict.fromkeys([interp, real(interp)]):
        binds += ["--ro-bind", p, p]
    # Before the new root is made read-only (bwrap applies them in order).
    at = cwd_dir(opts)
    cmds[f"bwrap-{name}"] = opts[:at] + binds + opts[at:] + ["--", interp, "-c", "pass"]
# The breakdown's command: bwrap by hand around python-sb itself.
prof = f"{profile_dir}/inside.py-sandboxes"
at = cwd_dir(opts)
cmds["bwrap-sb"] = opts[:at] + ["--ro-bind", prof, prof] + opts[at:] + \
    ["--", sb, "--pysandboxes-config", prof, "-c", "pass"]
fj = explained("firejail")
opts = [a for a in fj[:fj.index(sb)] if not a.startswith("--keep-fd=")]
# firejail's lists reach python-sb's firejail as a memfd (its include lines
# dropped): the same text in a file for the by-hand runs.
lists = f"{out}/firejail-lists.inc"
with open(lists, "w") as f:
    for inc in ("allow-python3", "disable-common", "disable-devel", "disable-interpreters",
                "disable-programs", "disable-xdg"):
        path = f"/etc/firejail/{inc}.inc"
        if os.path.exists(path):
            f.writelines(l for l in open(path) if not re.match(r"\s*include\s", l))
opts = [f"--include={lists}" if a.startswith("--include=/proc/self/fd/") else a for a in opts]
for name, interp in [("ref", ref), ("python3", py3)]:
    extra = [f"--whitelist={p}" for p in dict.fromkeys([interp, real(interp)])]
    # No blacklist above the interpreter (its directory, or /work for a
    # build tree when python-sb is elsewhere).
    def hides(a):
        d = a.removeprefix("--blacklist=")
        return a.startswith("--blacklist=") and any(
            p == d or p.startswith(d.rstrip("/") + "/") for p in (interp, real(interp)))
    cmds[f"firejail-{name}"] = [a for a in opts if not hides(a)] + extra + \
        [interp, "-c", "pass"]
with open(f"{out}/by-hand.sh", "w") as f:
    for name, argv in cmds.items():
        f.write(f"{name.replace('-', '_')}={shlex.quote(' '.join(argv))}\n")

# seccomp-programs.c of the build: the compiled filter of policy key 24
# (exec and fork allowed: bwrap must be able to execute the interpreter).
src = os.path.join(os.path.dirname(static), "seccomp-programs.c")
if os.path.exists(src):
    text = open(src).read()
    m = re.search(r"program_24\[\] = \{(.*?)\};", text, re.S)
    if m:
        data = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", m.group(1)))
        open(f"{out}/filter-exec.bpf", "wb").write(data)
EOF
# shellcheck disable=SC1091
. "$out/by-hand.sh"

# Each command must run (and the by-hand ones import what python3 does).
for c in "$bwrap_ref" "$bwrap_python3" "$bwrap_sb" "$firejail_ref" "$firejail_python3"; do
    # shellcheck disable=SC2086  # words, as interleave.py splits them
    "${clean_env[@]}" $c </dev/null >/dev/null || die "this does not run here: $c"
done
for p in bwrap firejail; do
    "${clean_env[@]}" "$sb" --pysandboxes-config "$profile_dir/$p.py-sandboxes" -c pass ||
        die "python-sb does not run under $p here"
done

sbc() { printf '%s --pysandboxes-config %s/%s.py-sandboxes -c pass' "$sb" "$profile_dir" "$1"; }
echo "== interleaved: $IRUNS rounds after 10 warm-up rounds" >&2
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs" >&2
"${clean_env[@]}" "$PYTHON3" "$bench_here/interleave.py" --runs "$IRUNS" \
    --json "$out/wrappers.json" \
    python-ref="$ref -c pass" \
    python3="$PYTHON3 -c pass" \
    python-sb-subprocess="$sb -c pass" \
    bwrap-ref="$bwrap_ref" \
    bwrap-python3="$bwrap_python3" \
    bwrap-sb="$bwrap_sb" \
    python-sb-bwrap="$(sbc bwrap)" \
    firejail-ref="$firejail_ref" \
    firejail-python3="$firejail_python3" \
    python-sb-firejail="$(sbc firejail)"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# The pairs that decide, paired per round like interleave.py's ratios.
status=0
"$PYTHON3" - "$out/wrappers.json" "$MAX_RATIO" <<'EOF' || status=$?
import json, random, statistics, sys

samples = json.load(open(sys.argv[1]))["samples"]
limit = float(sys.argv[2])

def cpu(name):
    return [u + s for u, s in zip(samples[name]["user"], samples[name]["sys"])]

def paired(a, b, rounds=2000, key="wall"):
    xs, ys = (samples[a]["wall"], samples[b]["wall"]) if key == "wall" else (cpu(a), cpu(b))
    ratios = [x / y for x, y in zip(xs, ys)]
    rng = random.Random(0)
    boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(rounds))
    return statistics.median(ratios), boot[int(0.025 * rounds)], boot[int(0.975 * rounds)]

print()
print(f"{'pair':40} {'paired ratio [95 %]':>28}   Δ medians ms   CPU ratio")
failed = False
# The goal is against /usr/bin/python3 (issue 14); python-ref, the static
# binary's layout, for reference.
for a, b, gate in [("python-sb-bwrap", "bwrap-python3", True), ("python-sb-bwrap", "bwrap-ref", False),
                   ("python-sb-firejail", "firejail-python3", True),
                   ("python-sb-firejail", "firejail-ref", False),
                   ("python-sb-bwrap", "bwrap-sb", False), ("bwrap-sb", "bwrap-python3", False),
                   ("bwrap-python3", "python3", False), ("firejail-python3", "python3", False),
                   ("python-sb-subprocess", "python3", False)]:
    r, lo, hi = paired(a, b)
    d = statistics.median(samples[a]["wall"]) - statistics.median(samples[b]["wall"])
    c = paired(a, b, key="cpu")[0]
    print(f"{a + ' / ' + b:40} {r:8.4f} [{lo:.4f}, {hi:.4f}]      {d:+8.3f}   {c:8.4f}")
    if gate:
        ok = r <= limit
        failed = failed or not ok
        print(f"{'OK' if ok else 'FAIL'}: {a} / {b} = {r:.4f} {'<=' if ok else '>'} {limit}")
sys.exit(1 if failed else 0)
EOF

# bwrap --seccomp FD, for the record (README: why python-sb loads the filter
# itself): bwrap-ref with and without the exec-allowing filter, both through
# sh for the redirection.
if [[ -f $out/filter-exec.bpf ]]; then
    printf '#!/bin/sh\nexec %s "$@" 9<%s\n' "$(command -v bwrap)" "$out/filter-exec.bpf" \
        >"$out/bwrap-fd9"
    chmod +x "$out/bwrap-fd9"
    with=${bwrap_ref/#$(command -v bwrap) /$out/bwrap-fd9 --seccomp 9 }
    without=${bwrap_ref/#$(command -v bwrap) /$out/bwrap-fd9 }
    echo "== bwrap --seccomp: $((IRUNS / 2)) rounds" >&2
    "${clean_env[@]}" "$PYTHON3" "$bench_here/interleave.py" --runs "$((IRUNS / 2))" \
        --json "$out/bwrap-seccomp.json" bwrap-ref-sh="$without" bwrap-ref-sh-seccomp="$with"
fi
echo "results: $out/wrappers.json" >&2
exit "$status"
