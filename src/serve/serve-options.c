/* SPDX-License-Identifier: MIT */
/* serve-options.h. Pure parsing: no printing, no exit. */
#include "serve-options.h"

#include <getopt.h>
#include <netdb.h>
#include <unistd.h>

#include "units.h"
#include "util.h"

const char sb_serve_usage[] =
    "usage: python-sb serve [--listen HOST:PORT] [--profile FILE] [--workers N]\n"
    "                       [--queue N] [--max-body SIZE] [--max-output SIZE]\n"
    "                       [--max-connections N] [--idle-timeout SECONDS]\n"
    "                       [--user USER|UID:GID] [--workdir DIR] [--fresh-exec]\n"
    "                       [--allow-host NAME]...\n"
    "       python-sb serve --queue redis://[:PASSWORD@]HOST:PORT/STREAM\n"
    "                       [--queue-depth N] [--result-ttl SECONDS]\n"
    "                       [--queue-wait SECONDS] [the options above]\n"
    "       python-sb serve --worker --queue redis://[:PASSWORD@]HOST:PORT/STREAM\n"
    "                       [--visibility-timeout SECONDS] [--max-deliveries N]\n"
    "                       [--result-ttl SECONDS] [--workers N] [--profile FILE] ...\n"
    "\n"
    "Runs untrusted Python programs over HTTP, each in a sandbox of its own, and\n"
    "answers with their output and a report of their run (docs/serve.md).\n"
    "\n"
    "  --listen HOST:PORT     address to listen on (127.0.0.1:8000; [::1]:8000;\n"
    "                         port 0: any free port)\n"
    "  --profile FILE         the policy of every run (default: the built-in\n"
    "                         code-runner profile); it must set timeout=\n"
    "  --workers N            runs at once (default: the number of CPUs)\n"
    "  --queue N              runs that may wait for a worker (default: 4 per worker);\n"
    "                         beyond that, 429 with Retry-After\n"
    "  --max-body SIZE        largest request body (default 1MB)\n"
    "  --max-output SIZE      stdout and stderr kept per run, each; a run that\n"
    "                         writes more is stopped (default 1MB)\n"
    "  --max-connections N    open connections (default 4096)\n"
    "  --idle-timeout SECONDS a connection idle that long is closed (default 30)\n"
    "  --user USER|UID:GID    the user runs execute as when started as root\n"
    "                         (default nobody)\n"
    "  --workdir DIR          where the runs' directories are made (default: a new\n"
    "                         private directory in /dev/shm, else in /tmp, removed\n"
    "                         at exit)\n"
    "  --fresh-exec           start a new python-sb for every run instead of forking\n"
    "                         it from the fork server's warm interpreter (slower;\n"
    "                         nothing shared between runs, see docs/serve.md)\n"
    "  --queue redis://...    a front end that queues runs on a Redis stream\n"
    "                         instead of running them (docs/serve-queue.md)\n"
    "  --worker               with --queue: run the stream's jobs, no HTTP\n"
    "  --queue-depth N        429 when the stream holds N jobs (default 1000)\n"
    "  --result-ttl SECONDS   how long a queued run's result is kept (default 300)\n"
    "  --queue-wait SECONDS   a waiting POST's limit, then 504 with the id to poll\n"
    "                         (default: the profile's timeout + 30)\n"
    "  --visibility-timeout SECONDS  a job pending that long (its worker died) is\n"
    "                         taken by another worker (default: timeout + 15)\n"
    "  --max-deliveries N     a job delivered more often is failed (default 3)\n"
    "  --allow-host NAME      a name the service answers to besides IP addresses and\n"
    "                         localhost, whose web pages may run programs (a proxy's\n"
    "                         public name; '*': any Host); repeatable\n"
    "  -h, --help             this text\n"
    "\n"
    "GET / is a playground; POST /v1/runs runs a program; GET /v1/health,\n"
    "GET /metrics. SIGTERM stops accepting, finishes the runs admitted, and exits.\n";

enum {
	OPT_LISTEN = 256,
	OPT_PROFILE,
	OPT_WORKERS,
	OPT_QUEUE,
	OPT_MAX_BODY,
	OPT_MAX_OUTPUT,
	OPT_MAX_CONNECTIONS,
	OPT_IDLE_TIMEOUT,
	OPT_USER,
	OPT_WORKDIR,
	OPT_PYTHON_SB,
	OPT_FRESH_EXEC,
	OPT_VERSION,
	OPT_WORKER,
	OPT_QUEUE_DEPTH,
	OPT_RESULT_TTL,
	OPT_QUEUE_WAIT,
	OPT_VISIBILITY,
	OPT_MAX_DELIVERIES,
	OPT_ALLOW_HOST,
};

static const struct option options[] = {
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"queue", required_argument, NULL, OPT_QUEUE},
    {"max-body", required_argument, NULL, OPT_MAX_BODY},
    {"max-output", required_argument, NULL, OPT_MAX_OUTPUT},
    {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"user", required_argument, NULL, OPT_USER},
    {"workdir", required_argument, NULL, OPT_WORKDIR},
    {"fresh-exec", no_argument, NULL, OPT_FRESH_EXEC},
    {"worker", no_argument, NULL, OPT_WORKER},
    {"queue-depth", required_argument, NULL, OPT_QUEUE_DEPTH},
    {"result-ttl", required_argument, NULL, OPT_RESULT_TTL},
    {"queue-wait", required_argument, NULL, OPT_QUEUE_WAIT},
    {"visibility-timeout", required_argument, NULL, OPT_VISIBILITY},
    {"max-deliveries", required_argument, NULL, OPT_MAX_DELIVERIES},
    {"allow-host", required_argument, NULL, OPT_ALLOW_HOST},
    /* Set by python-sb when it starts the service: the launcher to run. */
    {"python-sb", required_argument, NULL, OPT_PYTHON_SB},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

static int parse_listen(const char *text, struct sb_serve_options *o, char **reterr)
{
	_cleanup_free_ char *host = NULL;
	const char *colon, *port;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	unsigned long long p;
	int e;

	if (text[0] == '[') {
		const char *end = strchr(text, ']');

		if (!end || end[1] != ':')
			return sb_error(reterr, -EINVAL, "--listen %s: expected [ADDRESS]:PORT",
					text);
		host = strndup(text + 1, (size_t)(end - text - 1));
		port = end + 2;
	} else {
		colon = strrchr(text, ':');
		if (!colon)
			return sb_error(reterr, -EINVAL, "--listen %s: expected HOST:PORT", text);
		host = strndup(text, (size_t)(colon - text));
		port = colon + 1;
	}
	if (!host)
		return -ENOMEM;
	if (sb_safe_atou64(port, &p) < 0 || p > 65535)
		return sb_error(reterr, -EINVAL, "--listen %s: invalid port '%s'", text, port);
	e = getaddrinfo(*host ? host : NULL, port, &hints, &res);
	if (e != 0)
		return sb_error(reterr, -EINVAL, "--listen %s: %s", text, gai_strerror(e));
	memcpy(&o->addr, res->ai_addr, res->ai_addrlen);
	o->addr_len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static int parse_uint(const char *opt, const char *text, unsigned long long min,
		      unsigned long long max, unsigned long long *ret, char **reterr)
{
	_cleanup_free_ char *err = NULL;

	if (sb_parse_count(text, ret, &err) < 0 || *ret < min || *ret > max)
		return sb_error(reterr, -EINVAL, "--%s %s: expected a number from %llu to %llu",
				opt, text, min, max);
	return 0;
}

static int parse_size(const char *opt, const char *text, unsigned long long *ret, char **reterr)
{
	_cleanup_free_ char *err = NULL;

	if (sb_parse_size(text, ret, &err) < 0 || *ret == 0)
		return sb_error(reterr, -EINVAL, "--%s %s: %s", opt, text,
				err ? err : "must be greater than zero");
	return 0;
}

static int set_string(char **field, const char *value)
{
	free(*field);
	*field = strdup(value);
	return *field ? 0 : -ENOMEM;
}

int sb_serve_options_parse(int argc, char **argv, struct sb_serve_options *ret, char **reterr)
{
	struct sb_serve_options o = {
	    .queue = 0,
	    .max_body = 1000000,
	    .max_output = 1000000,
	    .max_connections = 4096,
	    .idle_timeout_s = 30,
	    .queue_depth = 1000,
	    .result_ttl_s = 300,
	    .max_deliveries = 3,
	};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	bool queue_set = false;
	int c, r = 0;

	o.workers = cpus > 0 ? (unsigned)cpus : 1;
	opterr = 0;
	optind = 1;
	while (r >= 0 && (c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		unsigned long long v;

		switch (c) {
		case OPT_LISTEN:
			r = set_string(&o.listen, optarg);
			break;
		case OPT_PROFILE:
			r = set_string(&o.profile, optarg);
			break;
		case OPT_WORKERS:
			r = parse_uint("workers", optarg, 1, 1024, &v, reterr);
			o.workers = (unsigned)v;
			o.workers_set = true;
			break;
		case OPT_QUEUE:
			/* A number: the local queue's places; a URL: Redis. */
			if (strstr(optarg, "://")) {
				r = set_string(&o.queue_url, optarg);
				break;
			}
			r = parse_uint("queue", optarg, 0, 1000000, &v, reterr);
			o.queue = (unsigned)v;
			queue_set = true;
			break;
		case OPT_WORKER:
			o.worker = true;
			break;
		case OPT_QUEUE_DEPTH:
			r = parse_uint("queue-depth", optarg, 1, 100000000, &v, reterr);
			o.queue_depth = (unsigned)v;
			break;
		case OPT_RESULT_TTL:
			r = parse_uint("result-ttl", optarg, 1, 30 * 86400, &v, reterr);
			o.result_ttl_s = (unsigned)v;
			break;
		case OPT_QUEUE_WAIT:
			r = parse_uint("queue-wait", optarg, 1, 86400, &v, reterr);
			o.queue_wait_s = (unsigned)v;
			break;
		case OPT_VISIBILITY:
			r = parse_uint("visibility-timeout", optarg, 1, 86400, &v, reterr);
			o.visibility_s = (unsigned)v;
			break;
		case OPT_MAX_DELIVERIES:
			r = parse_uint("max-deliveries", optarg, 1, 1000, &v, reterr);
			o.max_deliveries = (unsigned)v;
			break;
		case OPT_MAX_BODY:
			r = parse_size("max-body", optarg, &v, reterr);
			o.max_body = (size_t)v;
			break;
		case OPT_MAX_OUTPUT:
			r = parse_size("max-output", optarg, &v, reterr);
			o.max_output = v;
			break;
		case OPT_MAX_CONNECTIONS:
			r = parse_uint("max-connections", optarg, 1, 1000000, &v, reterr);
			o.max_connections = (unsigned)v;
			break;
		case OPT_IDLE_TIMEOUT:
			r = parse_uint("idle-timeout", optarg, 1, 86400, &v, reterr);
			o.idle_timeout_s = (unsigned)v;
			break;
		case OPT_USER:
			r = set_string(&o.user, optarg);
			break;
		case OPT_WORKDIR:
			r = set_string(&o.workdir, optarg);
			break;
		case OPT_PYTHON_SB:
			r = set_string(&o.python_sb, optarg);
			break;
		case OPT_FRESH_EXEC:
			o.fresh_exec = true;
			break;
		case OPT_ALLOW_HOST:
			/* A name, not HOST:PORT nor a URL: it is compared with the
			 * name of the Host and of the Origin, without their ports. */
			if (!*optarg || strpbrk(optarg, ":/[] \t"))
				r = sb_error(reterr, -EINVAL,
					     "--allow-host %s: expected a host name, without a "
					     "port (or '*')",
					     optarg);
			else
				r = sb_strv_push(&o.allowed_hosts, optarg);
			break;
		case 'h':
			o.help = true;
			break;
		case OPT_VERSION:
			o.version = true;
			break;
		default:
			r = sb_error(reterr, -EINVAL, "unknown or incomplete option '%s'",
				     argv[optind - 1]);
			break;
		}
	}
	if (r >= 0 && optind < argc)
		r = sb_error(reterr, -EINVAL, "unexpected argument '%s'", argv[optind]);
	if (r >= 0 && !o.listen)
		r = set_string(&o.listen, "127.0.0.1:8000");
	if (r >= 0)
		r = parse_listen(o.listen, &o, reterr);
	if (r >= 0 && o.worker && !o.queue_url)
		r = sb_error(reterr, -EINVAL, "--worker needs --queue redis://HOST:PORT/STREAM");
	/* A front end's "workers" only wait for Redis: many more of them. */
	if (r >= 0 && o.queue_url && !o.worker && !o.workers_set)
		o.workers = 64;
	if (r >= 0 && !queue_set)
		o.queue = o.workers * 4;
	if (r < 0) {
		sb_serve_options_done(&o);
		return r;
	}
	*ret = o;
	return 0;
}

void sb_serve_options_done(struct sb_serve_options *o)
{
	free(o->listen);
	free(o->profile);
	free(o->user);
	free(o->workdir);
	free(o->python_sb);
	free(o->queue_url);
	sb_strv_free(o->allowed_hosts);
	*o = (struct sb_serve_options){0};
}
