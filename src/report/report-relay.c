/* SPDX-License-Identifier: MIT */
/* report-relay.h. The thread only reads and writes: it takes no lock that the
 * fork could leave held in the child. */
#include "report-relay.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>

#include "util.h"

static int write_all(int fd, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, buf, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

static void *relay_main(void *data)
{
	struct sb_report_relay *r = data;
	struct pollfd pfd[2] = {{.fd = r->out[0], .events = POLLIN},
				{.fd = r->err[0], .events = POLLIN}};
	uint64_t *counts[2] = {&r->stdout_bytes, &r->stderr_bytes};
	bool broken[2] = {false, false};
	char buf[65536];

	while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			n = read(pfd[i].fd, buf, sizeof(buf));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				/* End of file: every writer is gone. */
				pfd[i].fd = -1;
				continue;
			}
			*counts[i] += (uint64_t)n;
			/* A reader of ours that went away: the program keeps
			 * writing into a pipe nobody reads, counted, as it
			 * would write into a closed one. */
			if (!broken[i] && write_all(i + 1, buf, (size_t)n) < 0)
				broken[i] = true;
		}
	}
	return NULL;
}

int sb_report_relay_start(struct sb_report_relay *r, char **reterr)
{
	sigset_t all, saved;
	int e;

	*r = (struct sb_report_relay){.out = {-1, -1}, .err = {-1, -1}};
	if (pipe2(r->out, O_CLOEXEC) < 0 || pipe2(r->err, O_CLOEXEC) < 0) {
		e = errno;
		sb_report_relay_finish(r);
		return sb_error(reterr, -e, "report: cannot create the output pipes: %s",
				strerror(e));
	}
	/* The thread inherits this mask: signals for the process go to the
	 * supervisor's thread, which reads them from its signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	e = pthread_create(&r->thread, NULL, relay_main, r);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (e != 0) {
		sb_report_relay_finish(r);
		return sb_error(reterr, -e, "report: cannot start the output relay: %s",
				strerror(e));
	}
	r->started = true;
	return 0;
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

int sb_report_relay_child(struct sb_report_relay *r)
{
	if (dup2(r->out[1], STDOUT_FILENO) < 0 || dup2(r->err[1], STDERR_FILENO) < 0)
		return -errno;
	close_pair(r->out);
	close_pair(r->err);
	return 0;
}

void sb_report_relay_finish(struct sb_report_relay *r)
{
	/* The last writers: once closed, the thread reads to end of file. */
	if (r->out[1] >= 0)
		close(r->out[1]);
	if (r->err[1] >= 0)
		close(r->err[1]);
	r->out[1] = r->err[1] = -1;
	if (r->started)
		pthread_join(r->thread, NULL);
	r->started = false;
	close_pair(r->out);
	close_pair(r->err);
}
