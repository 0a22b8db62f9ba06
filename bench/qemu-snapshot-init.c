/* SPDX-License-Identifier: MIT */
/* PID 1 of bench/qemu-snapshot.sh's guest: a template that waits for a job.
 *
 * It says READY on the serial line, then waits for one line there: a count N.
 * It runs the job N times, each timed on the guest's clock, says
 * "DONE <ns> <ns>..." and resets the machine (qemu runs with -no-reboot, so
 * the reset ends it). The host snapshots the machine while it waits for the
 * line (bench/qemu-snapshot.sh), and restores that snapshot once per run.
 *
 * The job, by the kernel's command line (sbjob=, which the kernel hands to
 * init as an environment variable):
 *   exec    fork and execve /job (a static "hello") per count
 *   pystart fork and execve `python3 -I -S -c pass` per count (its start-up
 *           files in the initramfs): what a template taken before the
 *           interpreter's start leaves to each run
 *   python  a python3 started before READY (so in the snapshot) that reads
 *           the count and a program from the line and exec()s it N times
 *           (it does the timing and the DONE line itself)
 * The READY line carries the guest's clock (ns since boot): a cold boot's
 * cost up to the point where the template waits. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define PYTHON_JOB                                                                                 \
	"import sys, time\n"                                                                       \
	"out = sys.stdout\n"                                                                       \
	"out.write('READY %d\\n' % time.monotonic_ns()); out.flush()\n"                            \
	"n, _, src = sys.stdin.readline().partition(' ')\n"                                        \
	"code, ts = src.replace('\\\\n', '\\n'), []\n"                                             \
	"for _ in range(int(n)):\n"                                                                \
	"    t = time.monotonic_ns(); exec(code, {'__name__': '__main__'})\n"                      \
	"    out.flush(); ts.append(time.monotonic_ns() - t)\n"                                    \
	"out.write('DONE ' + ' '.join(map(str, ts)) + '\\n'); out.flush()\n"

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static _Noreturn void end(int tty, const char *why)
{
	if (why)
		dprintf(tty, "FAIL %s: %s\n", why, strerror(errno));
	tcdrain(tty);
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}

/* The child's stdin, stdout and stderr on the serial line. */
static pid_t spawn(int tty, char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		dup2(tty, 0);
		dup2(tty, 1);
		dup2(tty, 2);
		execve(argv[0], argv, (char *[]){"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", NULL});
		_exit(127);
	}
	return pid;
}

int main(void)
{
	const char *job = getenv("sbjob") ?: "exec";
	struct termios raw;
	char line[64] = "";
	long long ts[16];
	bool pystart = strcmp(job, "pystart") == 0;
	int tty, n = 0, status;
	ssize_t len;

	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("proc", "/proc", "proc", 0, NULL);
	tty = open("/dev/ttyS0", O_RDWR | O_NOCTTY);
	if (tty < 0)
		end(2, "/dev/ttyS0");
	/* No echo, no line editing, no CR/LF translation: the line is data. */
	tcgetattr(tty, &raw);
	cfmakeraw(&raw);
	raw.c_cc[VMIN] = 1;
	tcsetattr(tty, TCSANOW, &raw);

	if (strcmp(job, "python") == 0) {
		pid_t pid =
		    spawn(tty, (char *[]){"/usr/bin/python3", "-I", "-S", "-c", PYTHON_JOB, NULL});

		if (pid < 0 || waitpid(pid, &status, 0) < 0)
			end(tty, "python3");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			dprintf(tty, "FAIL python3 status %d\n", status);
		end(tty, NULL);
	}

	dprintf(tty, "READY %lld\n", now_ns());
	/* The count, then a newline; the serial line gives it a few bytes at
	 * a time. */
	for (size_t got = 0; got < sizeof(line) - 1 && !strchr(line, '\n'); got += (size_t)len) {
		len = read(tty, line + got, sizeof(line) - 1 - got);
		if (len <= 0)
			end(tty, "read");
		line[got + (size_t)len] = '\0';
	}
	n = atoi(line);
	if (n < 0 || n > 16)
		n = 1;
	for (int i = 0; i < n; i++) {
		long long t0 = now_ns();
		pid_t pid =
		    pystart
			? spawn(tty, (char *[]){"/usr/bin/python3", "-I", "-S", "-c", "pass", NULL})
			: spawn(tty, (char *[]){"/job", NULL});

		if (pid < 0 || waitpid(pid, &status, 0) < 0)
			end(tty, "/job");
		ts[i] = now_ns() - t0;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			dprintf(tty, "FAIL the job's status %d\n", status);
			end(tty, NULL);
		}
	}
	dprintf(tty, "DONE");
	for (int i = 0; i < n; i++)
		dprintf(tty, " %lld", ts[i]);
	dprintf(tty, "\n");
	end(tty, NULL);
}
