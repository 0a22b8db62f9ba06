/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The command line of `python-sb serve` (docs/serve.md), parsed into plain
 * values. */
struct sb_serve_options {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	char *listen;  /* as written */
	char *profile; /* NULL: the built-in code-runner profile */
	unsigned workers;
	unsigned queue;
	size_t max_body;
	uint64_t max_output;
	unsigned max_connections;
	unsigned idle_timeout_s;
	char *user; /* NULL: nobody when started as root */
	char *workdir;
	char *python_sb;
	bool fresh_exec;      /* the exec runner: a new python-sb per run */
	char **allowed_hosts; /* --allow-host, each (http-origin.h) */
	bool workers_set;
	/* docs/serve-queue.md: --queue redis://... (the front end, or with
	 * --worker a worker) */
	char *queue_url;
	bool worker;
	unsigned queue_depth;	 /* 429 from this many jobs in the stream */
	unsigned result_ttl_s;	 /* how long results are kept */
	unsigned queue_wait_s;	 /* 0: the profile's timeout + 30 s */
	unsigned visibility_s;	 /* 0: the profile's timeout + 15 s */
	unsigned max_deliveries; /* a job delivered more often is failed */
	bool help, version;
};

/* 0; -EINVAL with *reterr the message for a usage error; -ENOMEM. */
int sb_serve_options_parse(int argc, char **argv, struct sb_serve_options *ret, char **reterr);
void sb_serve_options_done(struct sb_serve_options *o);

extern const char sb_serve_usage[];
