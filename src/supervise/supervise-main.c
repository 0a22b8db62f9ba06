/* SPDX-License-Identifier: MIT */
/*
 * python-sb-supervise: the timeout supervisor as a program of its own
 * (src/kernel/supervise-exec.h). python-sb's process execs it right after
 * starting the program's process with its own memory; it keeps python-sb's
 * pid, so the caller waits for it and sees the status it mirrors. Static and
 * small: its exec is the whole price of the supervisor.
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "pid-init.h"
#include "supervise-exec.h"
#include "supervise-outcome.h"
#include "supervisor.h"
#include "util.h"

struct args {
	pid_t child, init;
	uint64_t deadline_ns;
	unsigned long long timeout_ms, output_bytes;
	struct sb_relay relay;
};

static int parse_number(const char *s, unsigned long long max, unsigned long long *ret)
{
	unsigned long long v;
	int r = sb_safe_atou64(s, &v);

	if (r < 0)
		return r;
	if (v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

static int parse_stream(const char *s, struct sb_relay_stream *ret)
{
	unsigned from, to, both;
	int end = 0;

	if (sscanf(s, "%u:%u:%u%n", &from, &to, &both, &end) != 3 || s[end] || from > INT32_MAX ||
	    (to != 1 && to != 2) || both > 1)
		return -EINVAL;
	*ret = (struct sb_relay_stream){
	    .from = (int)from, .to = (int)to, .child_fd = -1, .both = both == 1};
	return 0;
}

static int parse_args(int argc, char **argv, struct args *ret)
{
	unsigned long long pid, init, deadline;
	int r;

	if (argc < 7 || argc > 9 || strcmp(argv[1], SB_SUPERVISE_PROTOCOL) != 0)
		return -EINVAL;
	r = parse_number(argv[2], INT32_MAX, &pid);
	if (r >= 0)
		r = parse_number(argv[3], INT32_MAX, &init);
	if (r >= 0)
		r = parse_number(argv[4], UINT64_MAX, &deadline);
	if (r >= 0)
		r = parse_number(argv[5], ULLONG_MAX, &ret->timeout_ms);
	if (r >= 0)
		r = parse_number(argv[6], ULLONG_MAX, &ret->output_bytes);
	if (r < 0 || pid == 0)
		return r < 0 ? r : -EINVAL;
	ret->child = (pid_t)pid;
	ret->init = (pid_t)init;
	ret->deadline_ns = deadline;
	ret->relay = (struct sb_relay){.limit = ret->output_bytes};
	for (int i = 7; i < argc; i++) {
		r = parse_stream(argv[i], &ret->relay.s[ret->relay.n]);
		if (r < 0)
			return r;
		ret->relay.n++;
	}
	return 0;
}

/* The init of os-sandbox=unshare's PID namespace, exec'd by itself
 * (pid-init.h): ALIVE_FD JOIN_FD NS_FLAGS. */
static int init_main(int argc, char **argv)
{
	unsigned long long alive, join, flags;
	int r = argc == 5 ? 0 : -EINVAL;

	if (r >= 0)
		r = parse_number(argv[2], INT32_MAX, &alive);
	if (r >= 0)
		r = parse_number(argv[3], INT32_MAX, &join);
	if (r >= 0)
		r = parse_number(argv[4], INT32_MAX, &flags);
	if (r < 0) {
		fprintf(stderr, "python-sb-supervise: started by python-sb only: %s\n",
			strerror(-r));
		return SB_EXIT_CONFIG;
	}
	sb_pid_init_run(&(struct sb_init_args){
	    .alive_fd = (int)alive, .join_fd = (int)join, .ns_flags = (int)flags});
}

int main(int argc, char **argv)
{
	_cleanup_free_ char *err = NULL;
	struct sb_supervisor s = {.sfd = -1};
	struct sb_supervise_result res;
	struct sb_outcome o;
	struct args a = {0};
	sigset_t set;
	int r;

	if (argc > 1 && strcmp(argv[1], SB_INIT_PROTOCOL) == 0)
		return init_main(argc, argv);
	/* Only python-sb starts this, with the program as its child: the
	 * program dies with us (its PR_SET_PDEATHSIG) whatever happens here. */
	r = parse_args(argc, argv, &a);
	if (r < 0) {
		fprintf(stderr,
			"python-sb-supervise: started by python-sb only (a python-sb of another "
			"version? install both again): %s\n",
			strerror(-r));
		return SB_EXIT_CONFIG;
	}
	/* python-sb blocked these before the program's process existed, and
	 * the mask survived the exec: nothing sent since is lost. */
	sb_supervisor_sigset(&set, a.init > 0);
	s.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s.sfd < 0 || sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
		fprintf(stderr, "python-sb: supervisor: cannot create a signalfd: %s\n",
			strerror(errno));
		return SB_EXIT_CONFIG;
	}
	if (a.relay.n > 0) {
		for (size_t i = 0; i < a.relay.n; i++)
			(void)fcntl(a.relay.s[i].from, F_SETFL, O_NONBLOCK);
		/* A caller's reader that goes away must not kill the
		 * supervisor (EPIPE instead). */
		signal(SIGPIPE, SIG_IGN);
		s.relay = &a.relay;
	}
	s.self = getpid();
	s.child = a.child;
	s.init = a.init;
	r = sb_supervisor_watch(&s, a.deadline_ns, &res, &err);
	if (s.relay)
		sb_relay_close(s.relay);
	if (r < 0) {
		fprintf(stderr, "python-sb: cannot start the supervisor: %s\n",
			err ? err : strerror(-r));
		return SB_EXIT_CONFIG;
	}
	sb_supervise_outcome(&res, a.timeout_ms, a.output_bytes, 0, &o);
	if (o.message[0])
		fprintf(stderr, "python-sb: %s\n", o.message);
	if (o.signal) {
		signal(o.signal, SIG_DFL);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(o.signal);
	}
	return o.exit_code;
}
