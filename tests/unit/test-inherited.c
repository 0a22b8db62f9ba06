/* SPDX-License-Identifier: MIT */
/* Descriptors and environment inherited from the caller: the parser, and the
 * close and the scrub checked by their effect in a forked child. */
#include <fcntl.h>
#include <sys/wait.h>

#include "inherited.h"
#include "tap.h"
#include "util.h"

extern char **environ;

static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid;

	(void)fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(fn());
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static int child_close(void)
{
	int fds[6];
	char *err = NULL;

	for (int i = 0; i < 6; i++) {
		fds[i] = open("/dev/null", O_RDONLY);
		if (fds[i] < 3)
			return 90;
	}
	/* Keep the 2nd and the 5th, a duplicate, and values to ignore. */
	const int keep[] = {fds[4], -1, fds[1], 2, fds[4]};
	if (sb_inherited_close_fds(keep, ELEMENTSOF(keep), &err) < 0)
		return 91;
	for (int i = 0; i < 6; i++)
		if (is_open(fds[i]) != (i == 1 || i == 4))
			return 10 + i;
	if (!is_open(0) || !is_open(1) || !is_open(2))
		return 20;
	if (sb_inherited_close_fds(NULL, 0, &err) < 0 || is_open(fds[1]) || is_open(fds[4]))
		return 21;
	return 0;
}

static const char *args_end;
static bool use_layout;

/* The block /proc/self/environ reads, and a launcher's copy, are zeroed; a
 * variable unset before (its string left in the block, its pointer gone from
 * environ) too, whether the block is found from the layout or in /proc. */
static int child_scrub(void)
{
	_cleanup_strv_free_ char **copy = NULL;
	char buf[65536];
	ssize_t n;
	int fd;

	for (char **e = environ; e && *e; e++)
		if (sb_strv_push(&copy, *e) < 0)
			return 90;
	if (!copy)
		return 91; /* meson test gives us an environment */
	if (!getenv("SB_TEST_UNSET") || unsetenv("SB_TEST_UNSET") < 0)
		return 93;
	sb_inherited_scrub_environment(copy, use_layout ? args_end : NULL);
	for (char **e = copy; *e; e++)
		if (**e)
			return 1;
	fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 92;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return 2;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i])
			return 3;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *path;
		int fd;
	} named[] = {
	    {"/dev/fd/63", 63},	  {"/proc/self/fd/7", 7},
	    {"/dev/fd/", -1},	  {"/dev/fd/x", -1},
	    {"s.py", -1},	  {"/dev/fd/99999999999", -1},
	    {"/proc/1/fd/3", -1}, {NULL, -1},
	};

	/* A variable of our own, unset in the child before the scrub: the
	 * kernel's block still holds it. Re-executed to have it there. */
	if (!getenv("SB_TEST_UNSET")) {
		char *const env_argv[] = {argv[0], NULL};

		(void)fflush(stdout);
		setenv("SB_TEST_UNSET", "secret-value", 1);
		execv("/proc/self/exe", env_argv);
		return 99;
	}

	for (size_t i = 0; i < ELEMENTSOF(named); i++)
		TAP_IS_INT(sb_inherited_fd_named(named[i].path), named[i].fd,
			   named[i].path ? named[i].path : "(null)");
	TAP_IS_INT(in_child(child_close), 0, "every descriptor above 2 but those kept is closed");
	args_end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
	use_layout = false;
	TAP_IS_INT(in_child(child_scrub), 0,
		   "the block (found in /proc) and the copy are zeroed, an unset variable too");
	use_layout = true;
	TAP_IS_INT(in_child(child_scrub), 0,
		   "the block (found from argv and AT_EXECFN) and the copy are zeroed");
	return tap_done();
}
