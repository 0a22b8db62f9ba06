/* SPDX-License-Identifier: MIT */
/* python-sb-serve: the service (docs/serve.md), started by `python-sb serve`.
 * A separate binary, so that python-sb itself loads neither libmicrohttpd nor
 * its TLS dependencies at every start. The only place of the service that
 * prints. */
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>

#include "diag.h"
#include "http.h"
#include "metrics.h"
#include "pool.h"
#include "profile.h"
#include "queue-front.h"
#include "queue-redis.h"
#include "queue-worker.h"
#include "rundir.h"
#include "runner.h"
#include "serve-options.h"
#include "util.h"

#define EXIT_USAGE	   2
#define EXIT_FAILURE_START 1
/* How long SIGTERM waits for responses to be sent once the runs are over. */
#define DRAIN_SEND_MS 5000

extern const char sb_serve_default_profile[];
extern char **environ;

static int fail(const char *what, const char *detail, int r)
{
	fprintf(stderr, "python-sb serve: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : strerror(-r));
	return EXIT_FAILURE_START;
}

/* A daemon may be started with 0-2 closed: the runs' descriptors must not
 * land there. */
static void ensure_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0) {
			int n = open("/dev/null", O_RDWR);

			if (n >= 0 && n != fd) {
				dup2(n, fd);
				close(n);
			}
		}
}

/* Thousands of idle connections need as many descriptors. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Descriptors kept for what is not a connection: the service's own (the
 * listening socket, epoll, the fork server's socket, Redis, logs), and per
 * worker those of a run in flight (stdin, arguments, the report's region,
 * two pipes, the reply socketpair, the run's directory while it is filled:
 * under 20), or of a front end's worker (its Redis connection). */
#define NOFILE_RESERVE_BASE   64
#define NOFILE_RESERVE_RUN    32
#define NOFILE_RESERVE_QUEUED 4

/* The connections the descriptor limit leaves room for: idle connections
 * must not take the descriptors a run needs, or anyone who opens enough of
 * them makes every run of everyone else fail ("Too many open files").
 * 0 with *reterr when there is no room at all. */
static unsigned connection_limit(const struct sb_serve_options *o, char **reterr)
{
	rlim_t per_worker = o->queue_url ? NOFILE_RESERVE_QUEUED : NOFILE_RESERVE_RUN;
	rlim_t reserve = NOFILE_RESERVE_BASE + per_worker * o->workers;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= reserve + o->max_connections)
		return o->max_connections;
	if (rl.rlim_cur <= reserve) {
		sb_error(
		    reterr, -EMFILE,
		    "the descriptor limit (%llu) leaves no room for connections beside the "
		    "%u workers' runs (%llu kept for them): raise it (ulimit -n, LimitNOFILE=) "
		    "or lower --workers",
		    (unsigned long long)rl.rlim_cur, o->workers, (unsigned long long)reserve);
		return 0;
	}
	fprintf(stderr,
		"python-sb serve: at most %llu connections, not %u: the descriptor limit is %llu "
		"and %llu are kept for the workers' runs (raise it: ulimit -n, LimitNOFILE=)\n",
		(unsigned long long)(rl.rlim_cur - reserve), o->max_connections,
		(unsigned long long)rl.rlim_cur, (unsigned long long)reserve);
	return (unsigned)(rl.rlim_cur - reserve);
}

static int resolve_user(const char *user, uid_t *ret_uid, gid_t *ret_gid, char **reterr)
{
	unsigned long long uid, gid;
	const char *colon = strchr(user, ':');
	struct passwd *pw;

	if (colon) {
		_cleanup_free_ char *u = strndup(user, (size_t)(colon - user));

		if (!u)
			return -ENOMEM;
		if (sb_safe_atou64(u, &uid) < 0 || sb_safe_atou64(colon + 1, &gid) < 0 ||
		    uid == 0 || gid == 0 || uid >= UINT32_MAX || gid >= UINT32_MAX)
			return sb_error(reterr, -EINVAL,
					"--user %s: expected a user name or UID:GID, not root",
					user);
		*ret_uid = (uid_t)uid;
		*ret_gid = (gid_t)gid;
		return 0;
	}
	pw = getpwnam(user);
	if (!pw)
		return sb_error(reterr, -ENOENT, "--user %s: no such user", user);
	if (pw->pw_uid == 0 || pw->pw_gid == 0)
		return sb_error(reterr, -EINVAL, "--user %s: runs never execute as root", user);
	*ret_uid = pw->pw_uid;
	*ret_gid = pw->pw_gid;
	return 0;
}

static const char *host_getenv(const char *name, void *userdata _unused_)
{
	return sb_strv_env_get(environ, name);
}

/* Where a run's python-sb would look for a rule file named relative to
 * its current directory: a directory that does not exist, so that every
 * such include shows in missing_files below it. */
#define RUN_CWD "/nonexistent/python-sb-serve-run-directory"

/* An include named relative to the current directory ("./x", "conf/x") is
 * read, in a run, from the run's directory (the fork server's: the work
 * directory), which the request fills: its files would add rules, or
 * whatever the service saw here would be missing there. Found by loading
 * the profile again as from such a directory. */
static int check_includes(const struct sb_load_options *real)
{
	_cleanup_(sb_profile_freep) struct sb_profile *profile = NULL;
	_cleanup_(sb_diags_done) struct sb_diags diags = {0};
	struct sb_load_options opts = *real;
	int r;

	opts.cwd = RUN_CWD;
	r = sb_profile_load(&opts, &profile, &diags);
	if (r < 0 && r != -EINVAL)
		return fail("cannot load the profile", real->path, r);
	for (char **m = profile ? profile->missing_files : NULL; m && *m; m++) {
		const char *rel = startswith(*m, RUN_CWD "/");

		if (!rel)
			continue;
		fprintf(stderr,
			"python-sb serve: the profile %s (or a file it includes) includes "
			"\"%s\", a name relative to "
			"the current directory: in a run, that is the run's directory, which "
			"the request fills. Name it with an absolute path, or with a bare "
			"name (no '/') for a file next to the file that includes it\n",
			real->path, rel);
		return EXIT_FAILURE_START;
	}
	return 0;
}

/* The server's limits come from the profile every run gets: a request may
 * only lower them, so they must be known (and a timeout set). */
static int read_limits(const char *profile_path, struct sb_limits *ret)
{
	_cleanup_(sb_profile_freep) struct sb_profile *profile = NULL;
	_cleanup_(sb_diags_done) struct sb_diags diags = {0};
	char cwd[PATH_MAX];
	struct sb_load_options opts;
	int r;

	if (!getcwd(cwd, sizeof(cwd)))
		return fail("cannot read the current directory", NULL, -errno);
	opts = (struct sb_load_options){
	    .path = profile_path,
	    .getenv = host_getenv,
	    .cwd = cwd,
	    .home = getenv("HOME"),
	};
	r = sb_profile_load(&opts, &profile, &diags);
	if (r >= 0 || r == -EINVAL) {
		int c = sb_profile_check(profile, &opts, &diags);

		if (c < 0 && c != -EINVAL)
			r = c;
	}
	sb_diags_sort(&diags);
	for (size_t i = 0; i < diags.n; i++)
		fprintf(stderr, "python-sb serve: %s: %s:%u: %s\n",
			diags.items[i].warning ? "warning" : "error", diags.items[i].file,
			diags.items[i].line, diags.items[i].message);
	if (r < 0 || diags.n_errors > 0)
		return fail("the profile is invalid", profile_path, r < 0 ? r : -EINVAL);
	if (profile->root_missing)
		return fail("the profile does not exist", profile_path, -ENOENT);
	/* A run never learns: learning records and allows what the rules
	 * refuse. */
	if (profile->learn == SB_LEARN_FILE) {
		fprintf(stderr,
			"python-sb serve: the profile %s asks for learning mode (%s:%u: learn=%s), "
			"which would let every run do what the rules refuse: remove the rule\n",
			profile_path, profile->learn_origin.file, profile->learn_origin.line,
			profile->learn_file);
		return EXIT_FAILURE_START;
	}
	/* Same as an include's: a relative name is the run's directory's, whose
	 * content the request chooses (a directory of that name, writable when
	 * the runs are the service's user). */
	for (size_t i = 0; i < profile->n_exposes; i++) {
		const struct sb_expose_rule *e = &profile->exposes[i];

		if (e->path[0] == '/')
			continue;
		fprintf(
		    stderr,
		    "python-sb serve: %s:%u: %s=%s is relative to the current directory: in a "
		    "run, that is the run's directory, which the request fills. Use an absolute "
		    "path (the run's directory is granted read-only already)\n",
		    e->origin.file, e->origin.line, e->writable ? "expose-rw" : "expose-ro",
		    e->path);
		return EXIT_FAILURE_START;
	}
	if (!profile->limits.timeout_ms)
		return fail("the profile must set timeout= (every run needs a deadline)",
			    profile_path, -EINVAL);
	r = check_includes(&opts);
	if (r != 0)
		return r;
	*ret = profile->limits;
	return 0;
}

/* --profile as an absolute name, from the service's current directory, the
 * one it was checked from: a relative one would be looked up from each
 * run's directory. */
static int absolute_profile(const char *profile, char **ret)
{
	char cwd[PATH_MAX];

	if (profile[0] == '/') {
		*ret = strdup(profile);
		return *ret ? 0 : -ENOMEM;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	*ret = sb_path_join(cwd, profile);
	return *ret ? 0 : -ENOMEM;
}

static int write_default_profile(const char *workdir, char **ret_path)
{
	_cleanup_free_ char *path = sb_path_join(workdir, "default.py-sandboxes");
	_cleanup_close_ int fd = -1;
	size_t len = strlen(sb_serve_default_profile);

	if (!path)
		return -ENOMEM;
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, sb_serve_default_profile, len) != (ssize_t)len)
		return -EIO;
	*ret_path = TAKE_PTR(path);
	return 0;
}

/* The runner's news (runner.h), from any of its threads. */
static void runner_event(void *data _unused_, const char *message)
{
	fprintf(stderr, "python-sb serve: %s\n", message);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* --queue redis://...: the password may come from the environment instead
 * of the command line, which every user of the machine can read. */
static int queue_addr(const struct sb_serve_options *opts, struct sb_queue_addr *ret, char **reterr)
{
	const char *pw = getenv("PYTHON_SB_QUEUE_PASSWORD");
	int r = sb_queue_addr_parse(opts->queue_url, ret, reterr);

	if (r >= 0 && !ret->password && pw && *pw && !(ret->password = strdup(pw)))
		r = -ENOMEM;
	return r;
}

/* The runs' own deadline (the runner's: timeout + 5 s) must pass before a
 * job is taken for dead, or a slow run would be run twice. */
static int visibility_ms(const struct sb_serve_options *opts, const struct sb_limits *limits,
			 uint64_t *ret, char **reterr)
{
	uint64_t floor_ms = limits->timeout_ms + 5000;

	if (!opts->visibility_s) {
		*ret = limits->timeout_ms + 15000;
		return 0;
	}
	if ((uint64_t)opts->visibility_s * 1000 <= floor_ms)
		return sb_error(
		    reterr, -EINVAL,
		    "--visibility-timeout %u: must be above the runs' timeout (%llu ms) "
		    "+ 5 s, or a run still going would be taken by another worker",
		    opts->visibility_s, (unsigned long long)limits->timeout_ms);
	*ret = (uint64_t)opts->visibility_s * 1000;
	return 0;
}

/* Until SIGTERM, SIGINT or SIGHUP. */
static void wait_for_stop(int sfd)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) < 0 && errno == EINTR)
		;
	fprintf(stderr, "python-sb serve: signal %u: draining\n", si.ssi_signo);
}

int main(int argc, char **argv)
{
	_cleanup_(sb_serve_options_done) struct sb_serve_options opts = {0};
	_cleanup_free_ char *err = NULL, *workdir = NULL, *default_profile = NULL, *profile = NULL;
	_cleanup_free_ char *nofile_err = NULL;
	_cleanup_close_ int sfd = -1, workdir_lock = -1;
	unsigned stale = 0;
	struct sb_runner_config rcfg = {0};
	const struct sb_runner_ops *ops;
	struct sb_runner *runner = NULL;
	struct sb_metrics *metrics = NULL;
	struct sb_pool *pool = NULL;
	struct sb_http *http = NULL;
	struct sb_request_policy policy;
	struct sb_limits limits = {0};
	_cleanup_(sb_queue_addr_done) struct sb_queue_addr qaddr = {0};
	struct sb_queue_worker *qworker = NULL;
	char host[NI_MAXHOST];
	sigset_t stop;
	unsigned max_connections;
	int r, status = EXIT_FAILURE_START;

	r = sb_serve_options_parse(argc, argv, &opts, &err);
	if (r < 0) {
		fprintf(stderr, "python-sb serve: %s\n%s", err ? err : strerror(-r),
			sb_serve_usage);
		return EXIT_USAGE;
	}
	if (opts.help) {
		fputs(sb_serve_usage, stdout);
		return 0;
	}
	if (opts.version) {
		printf("python-sb serve %s\n", SB_VERSION);
		return 0;
	}
	ensure_std_fds();
	raise_nofile();
	/* Every thread made from now on inherits this mask: the signals that
	 * stop the service are read here, from a signalfd. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	sfd = signalfd(-1, &stop, SFD_CLOEXEC);
	if (sfd < 0)
		return fail("cannot create a signalfd", NULL, -errno);

	if (opts.queue_url) {
		r = queue_addr(&opts, &qaddr, &err);
		if (r < 0) {
			fprintf(stderr, "python-sb serve: %s\n%s", err ? err : strerror(-r),
				sb_serve_usage);
			return EXIT_USAGE;
		}
	}
	ops = opts.fresh_exec ? &sb_runner_exec : &sb_runner_fork;
	rcfg.python_sb = opts.python_sb ? opts.python_sb : SB_PYTHON_SB_PATH;
	rcfg.event = runner_event;
	if (geteuid() == 0) {
		rcfg.change_user = true;
		r = resolve_user(opts.user ? opts.user : "nobody", &rcfg.uid, &rcfg.gid, &err);
		if (r < 0)
			return fail("cannot choose the runs' user", err, r);
	} else if (opts.user) {
		return fail("--user needs the service to start as root", NULL, -EPERM);
	}

	/* What a killed service of this user left (its runs' programs and
	 * files), which nothing else would remove. */
	if (!opts.workdir) {
		r = sb_workdir_remove_stale(&stale);
		if (r < 0)
			fprintf(stderr,
				"python-sb serve: warning: cannot remove a stale work directory: "
				"%s\n",
				strerror(-r));
		if (stale > 0)
			fprintf(stderr,
				"python-sb serve: removed %u work director%s left by a service "
				"that was killed\n",
				stale, stale == 1 ? "y" : "ies");
	}
	r = sb_workdir_create(opts.workdir, &workdir, &workdir_lock, &err);
	if (r < 0)
		return fail("cannot create the work directory", err, r);
	/* A directory of ours from an earlier life may still hold runs. */
	if (opts.workdir)
		sb_workdir_empty(workdir);
	if (!opts.profile) {
		r = write_default_profile(workdir, &default_profile);
		if (r < 0) {
			fail("cannot write the default profile", NULL, r);
			goto out;
		}
	}
	if (opts.profile) {
		r = absolute_profile(opts.profile, &profile);
		if (r < 0) {
			fail("cannot resolve the profile's name", opts.profile, r);
			goto out;
		}
	}
	rcfg.profile_path = profile ? profile : default_profile;
	rcfg.workdir = workdir;
	if (read_limits(rcfg.profile_path, &limits) != 0)
		goto out;
	rcfg.limits = limits;
	policy = (struct sb_request_policy){
	    .max = {.timeout_ms = limits.timeout_ms,
		    .cpu_ms = limits.cpu_ms,
		    .memory_bytes = limits.memory_bytes,
		    .output_bytes = opts.max_output},
	    .max_args = 256,
	    .max_arg_len = 65536,
	    .max_files = 64,
	    .max_file_depth = 8,
	    .queued = opts.queue_url && !opts.worker,
	};

	if (opts.worker) {
		uint64_t vis_ms = 0;

		r = visibility_ms(&opts, &limits, &vis_ms, &err);
		if (r < 0) {
			fail("cannot start the worker", err, r);
			goto out;
		}
		r = ops->open(&rcfg, &runner, &err);
		if (r < 0) {
			fail("cannot prepare the runner", err, r);
			goto out;
		}
		r = sb_queue_worker_start(
		    &(struct sb_queue_worker_config){
			.addr = &qaddr,
			.threads = opts.workers,
			.ops = ops,
			.runner = runner,
			.policy = &policy,
			.result_ttl_s = opts.result_ttl_s,
			.visibility_ms = vis_ms,
			.max_deliveries = opts.max_deliveries,
			.event = runner_event,
		    },
		    &qworker);
		if (r < 0) {
			fail("cannot start the worker", NULL, r);
			goto out;
		}
		/* Tests and scripts wait for this line. */
		fprintf(stderr,
			"python-sb serve: worker on %s (%u runs at once, visibility timeout %llu "
			"ms, max deliveries %u, profile %s, runner %s%s%s)\n",
			qaddr.display, opts.workers, (unsigned long long)vis_ms,
			opts.max_deliveries, opts.profile ? opts.profile : "built-in code-runner",
			ops->name, rcfg.change_user ? ", runs as uid " : "",
			rcfg.change_user ? (opts.user ? opts.user : "nobody") : "");
		fflush(stderr);
		wait_for_stop(sfd);
		/* The runs in flight end and their results are written. */
		sb_queue_worker_stop(qworker);
		status = 0;
		goto out;
	}
	if (opts.queue_url) {
		ops = &sb_runner_queue_front;
		r = sb_queue_front_open(
		    &(struct sb_queue_front_config){
			.addr = &qaddr,
			.max_depth = opts.queue_depth,
			.result_ttl_s = opts.result_ttl_s,
			.wait_ms = opts.queue_wait_s ? opts.queue_wait_s * 1000
						     : (unsigned)limits.timeout_ms + 30000,
			.max = policy.max,
			.event = runner_event,
		    },
		    &runner, &err);
	} else {
		r = ops->open(&rcfg, &runner, &err);
	}
	if (r < 0) {
		fail("cannot prepare the runner", err, r);
		goto out;
	}
	metrics = sb_metrics_new();
	if (!metrics) {
		fail("out of memory", NULL, -ENOMEM);
		goto out;
	}
	r = sb_pool_start(opts.workers, opts.queue, ops, runner, &pool);
	if (r < 0) {
		fail("cannot start the workers", NULL, r);
		goto out;
	}
	max_connections = connection_limit(&opts, &nofile_err);
	if (max_connections == 0) {
		fail("cannot listen", nofile_err, -EMFILE);
		goto out;
	}
	r = sb_http_start(
	    &(struct sb_http_config){
		.addr = (const struct sockaddr *)&opts.addr,
		.addr_len = opts.addr_len,
		.max_connections = max_connections,
		.idle_timeout_s = opts.idle_timeout_s,
		.max_body = opts.max_body,
		.policy = &policy,
		.pool = pool,
		.metrics = metrics,
		.queue_front = opts.queue_url ? runner : NULL,
		.allowed_hosts = opts.allowed_hosts,
	    },
	    &http, &err);
	if (r < 0) {
		fail(opts.listen, err, r);
		goto out;
	}
	if (getnameinfo((const struct sockaddr *)&opts.addr, opts.addr_len, host, sizeof(host),
			NULL, 0, NI_NUMERICHOST) != 0)
		snprintf(host, sizeof(host), "?");
	/* Tests and scripts read the port of --listen HOST:0 from this line. */
	fprintf(stderr,
		"python-sb serve: listening on http://%s%s%s:%u/ (%u workers, queue %u, profile "
		"%s, runner %s%s%s%s%s)\n",
		opts.addr.ss_family == AF_INET6 ? "[" : "", host,
		opts.addr.ss_family == AF_INET6 ? "]" : "", sb_http_port(http), opts.workers,
		opts.queue, opts.profile ? opts.profile : "built-in code-runner", ops->name,
		opts.queue_url ? " " : "", opts.queue_url ? qaddr.display : "",
		rcfg.change_user ? ", runs as uid " : "",
		rcfg.change_user ? (opts.user ? opts.user : "nobody") : "");
	fflush(stderr);

	wait_for_stop(sfd);
	/* Draining: no new connection, 503 for new runs; what was admitted
	 * runs to its end and its response is sent. */
	sb_http_quiesce(http);
	sb_pool_drain(pool);
	for (unsigned waited = 0; sb_http_runs_in_flight(http) > 0 && waited < DRAIN_SEND_MS;
	     waited += 10)
		sleep_ms(10);
	status = 0;
out:
	sb_http_stop(http);
	sb_pool_stop(pool);
	if (runner)
		ops->close(runner);
	sb_metrics_free(metrics);
	if (workdir)
		sb_workdir_clean(workdir, !opts.workdir);
	if (status == 0)
		fprintf(stderr, "python-sb serve: stopped\n");
	return status;
}
