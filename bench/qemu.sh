#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# os-sandbox=qemu: a trivial program end to end (`python-sb -c pass`, the
# micro-VM booted, the program run, the machine powered off), emulated (TCG),
# RUNS times; prints each run's wall-clock and CPU time (qemu's and
# python-sb's, from the children's rusage), the medians, the machine's load
# average around the runs, and one run's stages as the guest saw them
# (qemu.show_boot_console: the guest kernel's clock at /init, the init's
# steps, the program's first line). Method and results: bench/README.md,
# "os-sandbox=qemu".
#
# Usage: bench/qemu.sh [PYTHON_SB]   (default: $PYTHON_SB, else build-test/python-sb)
#
# Environment: RUNS (default 7), QEMU_ARGS (more profile lines, e.g.
# "qemu.memory=512"), PYSANDBOXES_QEMU_KERNEL (passed on: e.g. Debian's
# /boot/vmlinuz-<release> instead of python-sb's own kernel; the kernel booted
# is printed), COMPARE_KERNEL (a second kernel: then both are measured
# round-robin by bench/interleave.py, python-sb's own or Debian's first).
#
# Exit status: 0; 2 on a setup error. It gates nothing: the time depends on the
# machine's load far more than on python-sb (bench/README.md).
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
sb=$(realpath -- "${1:-${PYTHON_SB:-$here/../build-test/python-sb}}")
[[ -x $sb ]] || { echo "qemu.sh: no python-sb at $sb" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null ||
    { echo "qemu.sh: qemu-system-x86_64 is needed (scripts/deps.sh test)" >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-bench-qemu.XXXXXX")
trap 'rm -rf -- "$dir"' EXIT
printf 'learn=false\nos-sandbox=qemu\nqemu.use_kvm=false\npython-import=time\n%s\n' \
    "${QEMU_ARGS:-}" >"$dir/.py-sandboxes"
printf 'learn=false\nos-sandbox=qemu\nqemu.use_kvm=false\npython-import=time\nqemu.show_boot_console=true\n%s\n' \
    "${QEMU_ARGS:-}" >"$dir/console.py-sandboxes"

cd "$dir"
RUNS=${RUNS:-7} SB=$sb /usr/bin/python3 - <<'PY'
import os, re, resource, statistics, subprocess, time

sb, runs = os.environ["SB"], int(os.environ["RUNS"])
env = {"PATH": "/usr/bin:/bin", "HOME": os.getcwd(), "LC_ALL": "C.UTF-8"}
if os.environ.get("PYSANDBOXES_QEMU_KERNEL"):
    env["PYSANDBOXES_QEMU_KERNEL"] = os.environ["PYSANDBOXES_QEMU_KERNEL"]


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def one(args):
    cpu0, t0 = children_cpu(), time.monotonic()
    p = subprocess.run([sb, *args], env=env, capture_output=True, text=True, timeout=600,
                       stdin=subprocess.DEVNULL)
    wall, cpu = time.monotonic() - t0, children_cpu() - cpu0
    if p.returncode != 0:
        raise SystemExit(f"qemu.sh: python-sb failed ({p.returncode}):\n{p.stderr}")
    return wall, cpu, p


print(f"python-sb: {sb}")
explained = subprocess.run([sb, "--explain", "-c", "pass"], env=env, capture_output=True,
                           text=True).stdout
kernel = re.search(r"-kernel (\S+)", explained)
print(f"kernel: {kernel.group(1) if kernel else '?'}")
print(f"load average before: {open('/proc/loadavg').read().split()[:3]}, "
      f"{os.cpu_count()} CPUs")
one(["-c", "pass"])  # the first run unpacks the kernel into the cache
walls, cpus = [], []
for i in range(runs):
    wall, cpu, _ = one(["-c", "pass"])
    walls.append(wall)
    cpus.append(cpu)
    print(f"run {i + 1}: wall {wall:.2f} s, CPU {cpu:.2f} s, "
          f"load {open('/proc/loadavg').read().split()[0]}")
print(f"median: wall {statistics.median(walls):.2f} s "
      f"(min {min(walls):.2f}, max {max(walls):.2f}), CPU {statistics.median(cpus):.2f} s")
print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")

wall, _, p = one(["--pysandboxes-config", "console.py-sandboxes", "-c",
                  "import time; print(f'program: {time.monotonic() * 1000:.0f} ms')"])
init = re.search(r"\[\s*([0-9.]+)\] Run /init", p.stdout + p.stderr)
print(f"one run's stages (guest clock; wall {wall:.2f} s, slower with the console):")
if init:
    print(f"  kernel at /init: {float(init.group(1)) * 1000:.0f} ms")
for line in (p.stdout + p.stderr).splitlines():
    if line.startswith("python-sb-qemu-init: ") or line.startswith("program: "):
        print("  " + line.replace("python-sb-qemu-init: ", ""))
PY

if [[ -n ${COMPARE_KERNEL:-} ]]; then
	echo
	echo "round-robin: the kernel above against $COMPARE_KERNEL (bench/interleave.py)"
	first=${PYSANDBOXES_QEMU_KERNEL:+PYSANDBOXES_QEMU_KERNEL=$PYSANDBOXES_QEMU_KERNEL}
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	env -i PATH=/usr/bin:/bin HOME="$dir" LC_ALL=C.UTF-8 /usr/bin/python3 "$here/interleave.py" \
		--runs "${RUNS:-7}" --warmup 1 \
		"first=env ${first:-PYSANDBOXES_QEMU_KERNEL_UNSET=1} $sb -c pass" \
		"second=env PYSANDBOXES_QEMU_KERNEL=$COMPARE_KERNEL $sb -c pass"
	echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
