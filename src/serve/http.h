/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "request.h"

struct sb_pool;
struct sb_metrics;
struct sb_runner;

/* The HTTP side of the service (libmicrohttpd): one event thread (epoll) reads
 * requests and writes responses for every connection, so slow or idle clients
 * hold a few kilobytes each and no worker; a run's request is suspended while
 * its job waits and runs, and resumed by the worker when it is done.
 *
 *   POST /v1/runs   a run (request.h), 200 with its output and report
 *   GET  /v1/runs/ID with --queue redis://: a queued run's result (202 while
 *                   it is pending, 404 unknown or expired)
 *   GET  /v1/health 200, or 503 while draining or while the runner cannot run
 *                   programs (its fork server is down)
 *   GET  /metrics   Prometheus text
 *   GET  /          the playground (assets.h)
 */

struct sb_http_config {
	const struct sockaddr *addr;
	socklen_t addr_len;
	unsigned max_connections;
	unsigned idle_timeout_s;
	size_t max_body;
	const struct sb_request_policy *policy;
	struct sb_pool *pool;
	struct sb_metrics *metrics;
	/* --queue redis://: the pool's runner is the queue's front end
	 * (queue-front.h); GET /v1/runs/{id} is a route. NULL: local runs. */
	struct sb_runner *queue_front;
	/* --allow-host: names the service answers to beyond IP addresses and
	 * localhost, and whose pages may run programs ("*": any Host);
	 * http-origin.h. */
	char *const *allowed_hosts;
};

struct sb_http;

int sb_http_start(const struct sb_http_config *cfg, struct sb_http **ret, char **reterr);
/* The port listened on (the one chosen by the kernel for port 0). */
uint16_t sb_http_port(struct sb_http *h);
/* SIGTERM: new runs get 503 (health too); runs already admitted go on. */
void sb_http_quiesce(struct sb_http *h);
bool sb_http_draining(struct sb_http *h);
/* Runs admitted whose response is not sent yet. */
unsigned sb_http_runs_in_flight(struct sb_http *h);
void sb_http_stop(struct sb_http *h);
