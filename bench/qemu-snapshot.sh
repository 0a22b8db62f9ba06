#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# os-sandbox=qemu: what a pre-booted template VM restored from a snapshot per
# run would cost under emulation (TCG), against a cold boot of the same
# machine, round-robin. Method and results: bench/README.md, "A template VM
# restored per run".
#
# The guest is python-sb's own kernel with qemu's command line as
# src/providers/qemu.c writes it (microvm, the same machine options, kernel
# command line, -m, the virtio-serial device with its four ports) and an
# initramfs of bench/qemu-snapshot-init.c: it says READY on the serial line
# and waits there for a job. The template is that machine saved while it
# waits, with QMP `migrate` to `exec:cat > FILE` (not stopped first: a paused
# source restores paused; no 9p share: a mounted one blocks migration); a
# restored run is qemu started with `-incoming "exec:cat FILE"`, the job's
# line written once QMP says the machine runs (what the serial line receives
# during the load is lost). Each run sends the count 2: the job runs twice,
# each timed on the guest's clock, so the
# first run against the second shows what TCG's translation (not in the
# snapshot) costs after a restore. Variants, each measured once per round, in
# an order reversed every other round:
#   cold-exec    boot, READY, fork+execve a static "hello" twice, reset
#   snap-exec    the same restored from the template (taken at -m 2048)
#   snap-exec-m128  the same with -m 128 (what restoring the RAM costs)
#   snap-exec-mapped  the same at -m 2048 with the template's RAM in a file
#                (memory-backend-file, made shared, restored private: copy
#                on write) left out of the stream (x-ignore-shared): the RAM
#                mapped, not copied
#   snap-restore the template restored and told to quit over QMP once it
#                runs: the restore alone, no job
#   cold-pystart boot, READY, `python3 -I -S -c pass` started twice (its
#                start-up files in the initramfs), reset
#   snap-pystart the same restored: a template taken before the interpreter's
#                start, which each run still pays
#   cold-python  boot, python3 -I -S started in the guest, READY, the program
#                `pass` exec()ed twice by that interpreter
#   snap-python  the same restored with python3 already started and waiting
#   qemu-start   qemu started with -S and told to quit over QMP: its own
#                start (the kernel's ELF loaded, the devices) and exit, no
#                guest instruction run
#   python-sb    (when PYTHON_SB or $1 is given) `python-sb -c pass` with
#                os-sandbox=qemu, the provider as it is
# For each: wall time from qemu's start to its exit, its CPU time (rusage:
# the vCPU thread, the I/O threads, the migration's `cat`), the guest's times.
#
# Usage: bench/qemu-snapshot.sh [PYTHON_SB]
# Environment: RUNS (rounds, default 7), QEMU_KERNEL (default: python-sb's own
# kernel, build-qemu-kernel/*/vmlinux), KEEP (set: the working directory,
# with the templates, is kept).
# Exit status: 0; 2 on a setup error. It gates nothing.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
sb=${1:-${PYTHON_SB:-}}
[[ -z $sb ]] || sb=$(realpath -- "$sb")
kernel=${QEMU_KERNEL:-$(ls -t "$here"/../build-qemu-kernel/*/vmlinux 2>/dev/null | head -n1)}
[[ -r $kernel ]] ||
	{ echo "qemu-snapshot.sh: no kernel (scripts/qemu-kernel.sh, or QEMU_KERNEL=)" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "qemu-snapshot.sh: qemu-system-x86_64 is needed (scripts/deps.sh test)" >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/py-sandboxes-bench-qemu-snap.XXXXXX")
[[ -n ${KEEP:-} ]] || trap 'rm -rf -- "$dir"' EXIT
gcc -O2 -static -o "$dir/init" "$here/qemu-snapshot-init.c"
printf '#include <unistd.h>\nint main(void){return write(1, "hello\\n", 6) != 6;}\n' >"$dir/job.c"
gcc -O2 -static -o "$dir/job" "$dir/job.c"

cd "$dir"
RUNS=${RUNS:-7} KERNEL=$(realpath -- "$kernel") SB=$sb /usr/bin/python3 "$here/qemu-snapshot.py"
