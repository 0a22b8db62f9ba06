/* SPDX-License-Identifier: MIT */
/* http.h, with libmicrohttpd. The access handler is called on the event
 * thread: first with the headers (the route is chosen, a body over the cap
 * refused at once from its Content-Length), then with each piece of the body,
 * then once more with none (the request is decoded, and queued or refused),
 * and, for a run, once more after the worker resumed the connection (the
 * response is queued). */
#include "http.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <strings.h>

#include "assets.h"
#include "http-origin.h"
#include "metrics.h"
#include "pool.h"
#include "queue-front.h"
#include "queue-job.h"
#include "run-reply.h"
#include "util.h"

/* A body this many times the cap is not read to its end: the connection is
 * closed instead (a 400 was due anyway). */
#define DISCARD_FACTOR 4

enum route {
	ROUTE_NONE,
	ROUTE_RUNS,
	ROUTE_RUN_STATUS, /* GET /v1/runs/{id}: a queued run (--queue redis://) */
	ROUTE_HEALTH,
	ROUTE_METRICS,
	ROUTE_ASSET,
};

struct sb_http {
	struct MHD_Daemon *daemon;
	struct sb_http_config cfg;
	atomic_bool draining;
	atomic_uint runs_in_flight;
};

/* One POST /v1/runs. */
struct run_request {
	struct sb_http *h;
	struct MHD_Connection *conn;
	struct sb_buf body;
	size_t body_total;
	bool admitted;	  /* counted in runs_in_flight */
	atomic_bool done; /* set by the worker before it resumes the connection */
	unsigned status;
	char *response;	   /* JSON */
	char location[64]; /* 202 and 504: /v1/runs/ID */
	char *poll_id;	   /* GET /v1/runs/{id} */
	struct sb_job job;
};

static const char *const security_headers[][2] = {
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"Cache-Control", "no-store"},
};

static enum MHD_Result send_response(struct sb_http *h, struct MHD_Connection *conn,
				     unsigned status, const char *type, void *body, size_t len,
				     enum MHD_ResponseMemoryMode mode,
				     const char *const (*extra)[2], size_t n_extra)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result r;

	if (!resp) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", type);
	for (size_t i = 0; i < ELEMENTSOF(security_headers); i++)
		MHD_add_response_header(resp, security_headers[i][0], security_headers[i][1]);
	for (size_t i = 0; i < n_extra; i++)
		MHD_add_response_header(resp, extra[i][0], extra[i][1]);
	r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	if (r == MHD_YES)
		sb_metrics_http(h->cfg.metrics, status);
	return r;
}

static enum MHD_Result send_json(struct sb_http *h, struct MHD_Connection *conn, unsigned status,
				 json_t *body, const char *const (*extra)[2], size_t n_extra)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;

	json_decref(body);
	if (!text)
		return MHD_NO;
	return send_response(h, conn, status, "application/json", text, strlen(text),
			     MHD_RESPMEM_MUST_FREE, extra, n_extra);
}

static json_t *error_body(const char *message, const char *field)
{
	return sb_run_reply_error(message, field);
}

static const char *const retry_soon[][2] = {{"Retry-After", "1"}};
static const char *const retry_later[][2] = {{"Retry-After", "5"}};

static enum MHD_Result send_error(struct sb_http *h, struct MHD_Connection *conn, unsigned status,
				  const char *message, const char *field)
{

	if (status == 429)
		return send_json(h, conn, status, error_body(message, field), retry_soon, 1);
	if (status == 503)
		return send_json(h, conn, status, error_body(message, field), retry_later, 1);
	return send_json(h, conn, status, error_body(message, field), NULL, 0);
}

static const char *const close_after[][2] = {{"Connection", "close"}};

struct framing {
	unsigned content_length, transfer_encoding, host;
};

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind _unused_, const char *key,
				     const char *value _unused_)
{
	struct framing *f = cls;

	if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
		f->content_length++;
	else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
		f->transfer_encoding++;
	else if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
		f->host++;
	return MHD_YES;
}

/* Before anything else of a request (its first call): whether it may be
 * answered at all. A body framed two ways (Content-Length and
 * Transfer-Encoding, or two Content-Lengths) is one a proxy in front may
 * have framed otherwise, so that what it took for the next request is in
 * this one's body or the reverse (request smuggling): 400, and the
 * connection is closed (RFC 9112 6.3). Then the Host and, for a run, the
 * Origin (http-origin.h): 403. */
static enum MHD_Result refuse_request(struct sb_http *h, struct MHD_Connection *conn, bool post,
				      bool *refused)
{
	struct framing f = {0};
	const char *host, *problem;

	*refused = true;
	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_framing, &f);
	/* Two Hosts: the check below would read one, a proxy perhaps the
	 * other (RFC 9112 3.2: 400). */
	if (f.host > 1)
		return send_json(h, conn, 400,
				 error_body("the request has more than one Host", NULL),
				 close_after, 1);
	if (f.content_length > 1 || (f.content_length && f.transfer_encoding))
		return send_json(
		    h, conn, 400,
		    error_body(
			f.content_length > 1
			    ? "the request has more than one Content-Length"
			    : "the request has both a Content-Length and a Transfer-Encoding",
			NULL),
		    close_after, 1);
	host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	problem = sb_http_host_problem(host, h->cfg.allowed_hosts);
	if (!problem && post)
		problem = sb_http_origin_problem(
		    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN),
		    host, h->cfg.allowed_hosts);
	if (problem)
		return send_json(h, conn, 403, error_body(problem, NULL), close_after, 1);
	*refused = false;
	return MHD_YES;
}

static enum route find_route(struct sb_http *h, const char *url, const char **ret_allow)
{
	if (streq(url, "/v1/runs")) {
		*ret_allow = "POST";
		return ROUTE_RUNS;
	}
	if (h->cfg.policy->queued && startswith(url, "/v1/runs/")) {
		*ret_allow = "GET, HEAD";
		return ROUTE_RUN_STATUS;
	}
	*ret_allow = "GET, HEAD";
	if (streq(url, "/v1/health"))
		return ROUTE_HEALTH;
	if (streq(url, "/metrics"))
		return ROUTE_METRICS;
	if (sb_asset_find(url))
		return ROUTE_ASSET;
	return ROUTE_NONE;
}

static enum MHD_Result send_health(struct sb_http *h, struct MHD_Connection *conn)
{
	_cleanup_free_ char *why = sb_pool_unavailable(h->cfg.pool);
	unsigned queued, busy, workers, queue_cap;
	bool draining = atomic_load(&h->draining);
	const char *status = draining ? "draining" : why ? "unavailable" : "ok";

	json_t *body;

	sb_pool_counts(h->cfg.pool, &queued, &busy, &workers, &queue_cap);
	body = json_pack("{s:s, s:i, s:i, s:i, s:i, s:s?}", "status", status, "workers", workers,
			 "busy", busy, "queued", queued, "queue_capacity", queue_cap, "error",
			 why && *why ? why : NULL);
	if (body && h->cfg.queue_front) {
		uint64_t depth;
		bool up;

		/* The jobs in the Redis stream, as the monitor last read them. */
		sb_queue_front_depth(h->cfg.queue_front, &depth, &up);
		json_object_set_new(body, "stream_depth", json_integer((json_int_t)depth));
	}
	return send_json(h, conn, draining || why ? 503 : 200, body, NULL, 0);
}

static enum MHD_Result send_metrics(struct sb_http *h, struct MHD_Connection *conn)
{
	struct sb_buf out = {0};

	if (h->cfg.queue_front) {
		uint64_t depth;
		bool up;

		sb_queue_front_depth(h->cfg.queue_front, &depth, &up);
		sb_metrics_stream(h->cfg.metrics, depth, up);
	}
	if (sb_metrics_render(h->cfg.metrics, h->cfg.pool, atomic_load(&h->draining), &out) < 0) {
		sb_buf_reset(&out);
		return MHD_NO;
	}
	return send_response(h, conn, 200, "text/plain; version=0.0.4; charset=utf-8", out.data,
			     out.len, MHD_RESPMEM_MUST_FREE, NULL, 0);
}

static enum MHD_Result send_asset(struct sb_http *h, struct MHD_Connection *conn, const char *url)
{
	/* CodeMirror adds its styles at run time; everything else comes from
	 * this server. */
	static const char *const page_headers[][2] = {
	    {"Content-Security-Policy",
	     "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
	     "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"},
	    {"X-Frame-Options", "DENY"},
	};
	const struct sb_asset *a = sb_asset_find(url);

	return send_response(h, conn, 200, a->type, (void *)a->data, a->len, MHD_RESPMEM_PERSISTENT,
			     page_headers, ELEMENTSOF(page_headers));
}

/* A run that could not start because the request's own memory_bytes is
 * below what the interpreter needs (the boundary says so: "limit-memory=...
 * is too small to start the interpreter") is the client's error, 400 naming
 * the field, not the service's (500): with the server's limit it starts. */
static bool too_little_memory(struct sb_http *h, const struct sb_job *job)
{
	const struct sb_run_result *res = &job->result;
	uint64_t asked = job->spec.limits.memory_bytes;
	uint64_t server = h->cfg.policy->max.memory_bytes;

	return job->error >= 0 && !res->report && !res->reply && !res->unavailable && res->error &&
	       asked && (!server || asked < server) &&
	       strstr(res->error, "is too small to start the interpreter");
}

/* On the worker's thread: the response is made there, the event thread only
 * sends it. */
static void run_done(struct sb_job *job, void *data)
{
	struct run_request *req = data;
	struct sb_run_result *res = &job->result;
	bool refused = too_little_memory(req->h, job);
	json_t *body;

	/* A poll, a job queued (202) or refused (429, 400) is not a run. */
	if (!job->spec.poll_id && (!res->reply || res->report) && !refused)
		sb_metrics_run(req->h->cfg.metrics, job);
	if (refused) {
		req->status = 400;
		body = error_body(res->error, "limits.memory_bytes");
	} else if (res->reply && job->error >= 0) {
		req->status = res->http_status;
		body = json_incref(res->reply);
		if (res->id)
			snprintf(req->location, sizeof(req->location), "/v1/runs/%s", res->id);
	} else {
		body = sb_run_reply_body(job->error, res, &req->status);
	}
	req->response = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	/* The result is in the response now: what it held goes at once. */
	sb_run_result_done(res);
	sb_run_spec_done(&job->spec);
	atomic_store(&req->done, true);
	MHD_resume_connection(req->conn);
}

static enum MHD_Result admit_run(struct sb_http *h, struct run_request *req)
{
	struct sb_request_error err = {0};
	enum MHD_Result ret;
	int r;

	if (req->body_total > h->cfg.max_body) {
		char msg[128];

		snprintf(msg, sizeof(msg), "the body is larger than the limit of %zu bytes",
			 h->cfg.max_body);
		return send_error(h, req->conn, 400, msg, NULL);
	}
	if (req->poll_id) {
		req->job.spec = (struct sb_run_spec){.poll_id = TAKE_PTR(req->poll_id)};
		r = 0;
	} else {
		r = sb_request_decode(req->body.data ? req->body.data : "", req->body.len,
				      h->cfg.policy, &req->job.spec, &err);
	}
	sb_buf_reset(&req->body);
	if (r == -EINVAL) {
		ret = send_error(h, req->conn, 400, err.message, err.field);
		sb_request_error_done(&err);
		return ret;
	}
	if (r < 0)
		return send_error(h, req->conn, 500, "out of memory", NULL);
	r = sb_pool_reserve(h->cfg.pool);
	if (r < 0) {
		sb_run_spec_done(&req->job.spec);
		if (r == -ESHUTDOWN)
			return send_error(h, req->conn, 503, "the server is shutting down", NULL);
		return send_error(h, req->conn, 429, "every worker is busy and the queue is full",
				  NULL);
	}
	req->admitted = true;
	atomic_fetch_add(&h->runs_in_flight, 1);
	req->job.done = run_done;
	req->job.data = req;
	/* Suspended before the job is queued: the worker may resume it at
	 * once. */
	MHD_suspend_connection(req->conn);
	sb_pool_submit(h->cfg.pool, &req->job);
	return MHD_YES;
}

static enum MHD_Result on_run(struct sb_http *h, struct MHD_Connection *conn, const char *poll_id,
			      const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct run_request *req = *con_cls;

	if (!req) {
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);
		unsigned long long declared;

		if (atomic_load(&h->draining))
			return send_error(h, conn, 503, "the server is shutting down", NULL);
		if (poll_id && !sb_queue_id_valid(poll_id))
			return send_error(h, conn, 404, "no such run", NULL);
		if (cl && sb_safe_atou64(cl, &declared) == 0 && declared > h->cfg.max_body) {
			char msg[128];

			snprintf(msg, sizeof(msg), "the body is larger than the limit of %zu bytes",
				 h->cfg.max_body);
			return send_error(h, conn, 400, msg, NULL);
		}
		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		req->h = h;
		req->conn = conn;
		if (poll_id && !(req->poll_id = strdup(poll_id))) {
			free(req);
			return MHD_NO;
		}
		*con_cls = req;
		return MHD_YES;
	}
	if (atomic_load(&req->done)) {
		char *text = TAKE_PTR(req->response);
		const char *extra[1][2] = {{NULL, NULL}};

		if (!text)
			return MHD_NO;
		if (req->status == 503)
			memcpy(extra, retry_later, sizeof(extra));
		else if (req->status == 429)
			memcpy(extra, retry_soon, sizeof(extra));
		else if (req->location[0]) {
			extra[0][0] = "Location";
			extra[0][1] = req->location;
		}
		return send_response(h, conn, req->status, "application/json", text, strlen(text),
				     MHD_RESPMEM_MUST_FREE, (const char *const(*)[2])extra,
				     extra[0][0] ? 1 : 0);
	}
	if (*upload_data_size > 0) {
		size_t n = *upload_data_size;

		req->body_total += n;
		if (req->body_total > h->cfg.max_body * DISCARD_FACTOR)
			return MHD_NO;
		if (req->body_total <= h->cfg.max_body &&
		    sb_buf_putn(&req->body, upload_data, n) < 0)
			return MHD_NO;
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (req->admitted)
		return MHD_YES; /* a spurious call while suspended */
	return admit_run(h, req);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version _unused_,
				  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct sb_http *h = cls;
	const char *allow;
	enum route route = find_route(h, url, &allow);
	bool get = streq(method, "GET") || streq(method, "HEAD");

	if (!*con_cls) {
		bool refused;
		enum MHD_Result r = refuse_request(h, conn, !get, &refused);

		if (refused)
			return r;
	}

	if (route == ROUTE_RUNS && streq(method, "POST"))
		return on_run(h, conn, NULL, upload_data, upload_data_size, con_cls);
	if (route == ROUTE_RUN_STATUS && get)
		return on_run(h, conn, url + strlen("/v1/runs/"), upload_data, upload_data_size,
			      con_cls);
	if (route == ROUTE_NONE)
		return send_error(h, conn, 404, "no such resource", NULL);
	if (route == ROUTE_RUNS || !get) {
		const char *const allow_header[][2] = {{"Allow", allow}};

		return send_json(h, conn, 405, error_body("method not allowed", NULL), allow_header,
				 1);
	}
	switch (route) {
	case ROUTE_HEALTH:
		return send_health(h, conn);
	case ROUTE_METRICS:
		return send_metrics(h, conn);
	default:
		return send_asset(h, conn, url);
	}
}

static void on_completed(void *cls, struct MHD_Connection *conn _unused_, void **con_cls,
			 enum MHD_RequestTerminationCode code _unused_)
{
	struct sb_http *h = cls;
	struct run_request *req = *con_cls;

	if (!req)
		return;
	if (req->admitted)
		atomic_fetch_sub(&h->runs_in_flight, 1);
	sb_buf_reset(&req->body);
	free(req->response);
	free(req->poll_id);
	free(req);
	*con_cls = NULL;
}

static void on_log(void *cls _unused_, const char *fmt, va_list ap) _printf_(2, 0);
static void on_log(void *cls _unused_, const char *fmt, va_list ap)
{
	fputs("python-sb serve: http: ", stderr);
	vfprintf(stderr, fmt, ap);
}

int sb_http_start(const struct sb_http_config *cfg, struct sb_http **ret, char **reterr)
{
	struct sb_http *h = calloc(1, sizeof(*h));
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
			 MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;

	if (!h)
		return -ENOMEM;
	h->cfg = *cfg;
	if (cfg->addr->sa_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* The logger first: MHD logs with its own until it has read it. */
	h->daemon = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_log, NULL,
	    MHD_OPTION_SOCK_ADDR, cfg->addr, MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections,
	    MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s, MHD_OPTION_LISTEN_BACKLOG_SIZE,
	    1024U, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
	if (!h->daemon) {
		int e = errno ? errno : EADDRNOTAVAIL;

		free(h);
		return sb_error(reterr, -e, "cannot listen: %s", strerror(e));
	}
	*ret = h;
	return 0;
}

uint16_t sb_http_port(struct sb_http *h)
{
	const union MHD_DaemonInfo *info =
	    MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);

	return info ? info->port : 0;
}

/* The listening socket stays open: libmicrohttpd 0.9.75 stops serving the
 * connections already open once quiesced, so a client on a kept-alive
 * connection would wait for the end instead of getting its 503. */
void sb_http_quiesce(struct sb_http *h)
{
	atomic_store(&h->draining, true);
}

bool sb_http_draining(struct sb_http *h)
{
	return atomic_load(&h->draining);
}

unsigned sb_http_runs_in_flight(struct sb_http *h)
{
	return atomic_load(&h->runs_in_flight);
}

void sb_http_stop(struct sb_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->daemon);
	free(h);
}
