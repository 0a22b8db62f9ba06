/* SPDX-License-Identifier: MIT */
/* queue-redis.h, with hiredis. The steps that must not be seen half done (a
 * job queued only if the stream is short enough; a result written, its waiter
 * woken, its entry acknowledged and deleted) are Lua scripts: Redis runs a
 * script atomically, so no crash of a worker or the front end, nor a race
 * between two workers, can leave a job with two results or none. */
#include "queue-redis.h"

#include <hiredis/hiredis.h>
#include <stdarg.h>

#include "util.h"

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS	 5000
#define STREAM_NAME_MAX	 128

struct sb_queue_conn {
	redisContext *ctx;
	char *where; /* host:port, for messages */
	bool broken;
	char claim_cursor[64]; /* XAUTOCLAIM's: where the next scan of the pending list starts */
};

void sb_queue_addr_done(struct sb_queue_addr *a)
{
	free(a->host);
	free(a->user);
	if (a->password)
		explicit_bzero(a->password, strlen(a->password));
	free(a->password);
	free(a->stream);
	free(a->display);
	*a = (struct sb_queue_addr){0};
}

static bool stream_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > STREAM_NAME_MAX)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return false;
	return true;
}

static int parse_addr(const char *url, struct sb_queue_addr *a, char **reterr)
{
	const char *rest = startswith(url, "redis://"), *slash, *at, *hostport, *colon;
	_cleanup_free_ char *authority = NULL;
	unsigned long long port = 6379;

	if (!rest)
		return sb_error(reterr, -EINVAL,
				"--queue %s: expected redis://[:PASSWORD@]HOST[:PORT]/STREAM "
				"(rediss:// and unix sockets are not supported)",
				startswith(url, "redis") ? "(the URL)" : url);
	slash = strchr(rest, '/');
	if (!slash || !stream_name_ok(slash + 1))
		return sb_error(reterr, -EINVAL,
				"--queue: the URL must end with /STREAM, a name of letters, "
				"digits, '.', '_' and '-' (at most %d)",
				STREAM_NAME_MAX);
	authority = strndup(rest, (size_t)(slash - rest));
	a->stream = strdup(slash + 1);
	if (!authority || !a->stream)
		return -ENOMEM;
	at = strrchr(authority, '@');
	hostport = at ? at + 1 : authority;
	if (at) {
		const char *userinfo = authority,
			   *pw = memchr(userinfo, ':', (size_t)(at - userinfo));

		if (!pw)
			return sb_error(reterr, -EINVAL,
					"--queue: expected [USER]:PASSWORD@ before the host");
		if (pw > userinfo && !(a->user = strndup(userinfo, (size_t)(pw - userinfo))))
			return -ENOMEM;
		/* USER:@ names the user, the password coming from elsewhere. */
		if (at > pw + 1 && !(a->password = strndup(pw + 1, (size_t)(at - pw - 1))))
			return -ENOMEM;
	}
	if (hostport[0] == '[') {
		const char *end = strchr(hostport, ']');

		if (!end || (end[1] && end[1] != ':'))
			return sb_error(reterr, -EINVAL, "--queue: expected [ADDRESS]:PORT");
		a->host = strndup(hostport + 1, (size_t)(end - hostport - 1));
		colon = end[1] ? end + 1 : NULL;
	} else {
		colon = strrchr(hostport, ':');
		a->host = colon ? strndup(hostport, (size_t)(colon - hostport)) : strdup(hostport);
	}
	if (!a->host)
		return -ENOMEM;
	if (!*a->host)
		return sb_error(reterr, -EINVAL, "--queue: the URL has no host");
	if (colon && (sb_safe_atou64(colon + 1, &port) < 0 || port == 0 || port > 65535))
		return sb_error(reterr, -EINVAL, "--queue: invalid port '%s'", colon + 1);
	a->port = (unsigned)port;
	if (asprintf(&a->display, "redis://%s%s%s:%u/%s", strchr(a->host, ':') ? "[" : "", a->host,
		     strchr(a->host, ':') ? "]" : "", a->port, a->stream) < 0) {
		a->display = NULL;
		return -ENOMEM;
	}
	return 0;
}

int sb_queue_addr_parse(const char *url, struct sb_queue_addr *ret, char **reterr)
{
	struct sb_queue_addr a = {0};
	int r = parse_addr(url, &a, reterr);

	if (r < 0) {
		sb_queue_addr_done(&a);
		return r;
	}
	*ret = a;
	return 0;
}

static struct timeval ms_to_tv(unsigned ms)
{
	return (struct timeval){.tv_sec = ms / 1000, .tv_usec = (long)(ms % 1000) * 1000};
}

void sb_queue_disconnect(struct sb_queue_conn *c)
{
	if (!c)
		return;
	if (c->ctx)
		redisFree(c->ctx);
	free(c->where);
	free(c);
}

bool sb_queue_conn_broken(const struct sb_queue_conn *c)
{
	return c->broken;
}

/* One command; NULL with *reterr when it failed: on I/O (the connection is
 * broken from then on) or by Redis's refusal (an error reply). */
static redisReply *command(struct sb_queue_conn *c, char **reterr, int *reterrno, const char *fmt,
			   ...)
{
	redisReply *reply;
	va_list ap;

	va_start(ap, fmt);
	reply = redisvCommand(c->ctx, fmt, ap);
	va_end(ap);
	if (!reply) {
		c->broken = true;
		*reterrno = c->ctx->err == REDIS_ERR_EOF	   ? -ECONNRESET
			    : c->ctx->err == REDIS_ERR_IO && errno ? -errno
								   : -EIO;
		sb_error(reterr, *reterrno, "Redis at %s: %s", c->where,
			 c->ctx->errstr[0] ? c->ctx->errstr : "connection lost");
		return NULL;
	}
	if (reply->type == REDIS_REPLY_ERROR) {
		*reterrno = -EPROTO;
		sb_error(reterr, -EPROTO, "Redis at %s refused: %s", c->where, reply->str);
		freeReplyObject(reply);
		return NULL;
	}
	return reply;
}

static void reply_freep(redisReply **r)
{
	if (*r)
		freeReplyObject(*r);
}
#define _cleanup_reply_ _cleanup_(reply_freep)

int sb_queue_connect(const struct sb_queue_addr *a, unsigned connect_ms, unsigned command_ms,
		     struct sb_queue_conn **ret, char **reterr)
{
	struct sb_queue_conn *c = calloc(1, sizeof(*c));
	int r = 0;

	if (!c)
		return -ENOMEM;
	strcpy(c->claim_cursor, "0-0");
	if (asprintf(&c->where, "%s:%u", a->host, a->port) < 0) {
		c->where = NULL;
		free(c);
		return -ENOMEM;
	}
	c->ctx = redisConnectWithTimeout(a->host, (int)a->port, ms_to_tv(connect_ms));
	if (!c->ctx || c->ctx->err) {
		r = c->ctx && c->ctx->err == REDIS_ERR_IO && errno ? -errno : -EHOSTUNREACH;
		sb_error(reterr, r, "cannot reach Redis at %s: %s", c->where,
			 c->ctx ? c->ctx->errstr : "out of memory");
		goto fail;
	}
	if (redisSetTimeout(c->ctx, ms_to_tv(command_ms)) != REDIS_OK) {
		r = sb_error(reterr, -EIO, "Redis at %s: cannot set a timeout", c->where);
		goto fail;
	}
	if (a->password) {
		_cleanup_reply_ redisReply *reply =
		    a->user ? command(c, reterr, &r, "AUTH %s %s", a->user, a->password)
			    : command(c, reterr, &r, "AUTH %s", a->password);

		if (!reply)
			goto fail;
	}
	*ret = c;
	return 0;
fail:
	sb_queue_disconnect(c);
	return r;
}

unsigned sb_queue_backoff_next(struct sb_queue_backoff *b)
{
	unsigned d = b->delay_ms ? b->delay_ms : BACKOFF_FIRST_MS;

	b->delay_ms = d * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : d * 2;
	return d;
}

void sb_queue_backoff_reset(struct sb_queue_backoff *b)
{
	b->delay_ms = 0;
}

/* The keys of queue-redis.h, {S}:kind:ID. */
static char *key(const char *stream, const char *kind, const char *id)
{
	char *k;

	if (asprintf(&k, "{%s}%s%s%s%s", stream, kind ? ":" : "", kind ? kind : "", id ? ":" : "",
		     id ? id : "") < 0)
		return NULL;
	return k;
}

int sb_queue_ensure_group(struct sb_queue_conn *c, const char *stream, char **reterr)
{
	_cleanup_free_ char *s = key(stream, NULL, NULL);
	_cleanup_free_ char *err = NULL;
	_cleanup_reply_ redisReply *reply = NULL;
	int r = 0;

	if (!s)
		return -ENOMEM;
	/* From the start of the stream: jobs queued before any worker was
	 * there are delivered too. */
	reply = command(c, &err, &r, "XGROUP CREATE %s %s 0 MKSTREAM", s, SB_QUEUE_GROUP);
	if (reply || (r == -EPROTO && err && strstr(err, "BUSYGROUP")))
		return 0;
	if (reterr)
		*reterr = TAKE_PTR(err);
	return r;
}

static const char enqueue_script[] =
    "local depth = tonumber(ARGV[1])\n"
    "if depth > 0 and redis.call('XLEN', KEYS[1]) >= depth then return 0 end\n"
    "local eid = redis.call('XADD', KEYS[1], '*', 'job', ARGV[3])\n"
    "redis.call('SET', KEYS[2], eid)\n"
    "return 1\n";

int sb_queue_enqueue(struct sb_queue_conn *c, const char *stream, const char *id, const char *job,
		     size_t max_depth, char **reterr)
{
	_cleanup_free_ char *s = key(stream, NULL, NULL), *jk = key(stream, "job", id);
	_cleanup_reply_ redisReply *reply = NULL;
	char depth[32];
	int r = 0;

	if (!s || !jk)
		return -ENOMEM;
	snprintf(depth, sizeof(depth), "%zu", max_depth);
	reply = command(c, reterr, &r, "EVAL %s 2 %s %s %s %s %s", enqueue_script, s, jk, depth, id,
			job);
	if (!reply)
		return r;
	if (reply->type != REDIS_REPLY_INTEGER)
		return sb_error(reterr, -EPROTO, "Redis at %s: unexpected reply to the enqueue",
				c->where);
	return reply->integer == 1 ? 0 : -EAGAIN;
}

/* {1, result}, {0} (waiting or running) or {-1} (unknown), read at once. */
static const char poll_script[] = "local r = redis.call('GET', KEYS[1])\n"
				  "if r then return {1, r} end\n"
				  "if redis.call('EXISTS', KEYS[2]) == 1 then return {0} end\n"
				  "return {-1}\n";

int sb_queue_poll(struct sb_queue_conn *c, const char *stream, const char *id, char **ret_result,
		  char **reterr)
{
	_cleanup_free_ char *rk = key(stream, "result", id), *jk = key(stream, "job", id);
	_cleanup_reply_ redisReply *reply = NULL;
	int r = 0;

	if (!rk || !jk)
		return -ENOMEM;
	reply = command(c, reterr, &r, "EVAL %s 2 %s %s", poll_script, rk, jk);
	if (!reply)
		return r;
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
	    reply->element[0]->type != REDIS_REPLY_INTEGER)
		return sb_error(reterr, -EPROTO, "Redis at %s: unexpected reply to a poll",
				c->where);
	if (reply->element[0]->integer < 0)
		return -ENOENT;
	if (reply->element[0]->integer == 0)
		return 0;
	if (reply->elements < 2 || reply->element[1]->type != REDIS_REPLY_STRING)
		return sb_error(reterr, -EPROTO, "Redis at %s: unexpected reply to a poll",
				c->where);
	*ret_result = strndup(reply->element[1]->str, reply->element[1]->len);
	return *ret_result ? 1 : -ENOMEM;
}

int sb_queue_wait_done(struct sb_queue_conn *c, const char *stream, const char *id,
		       unsigned wait_ms, char **reterr)
{
	_cleanup_free_ char *dk = key(stream, "done", id);
	_cleanup_reply_ redisReply *reply = NULL;
	char seconds[32];
	int r = 0;

	if (!dk)
		return -ENOMEM;
	/* BLPOP takes fractions of a second since Redis 6. */
	snprintf(seconds, sizeof(seconds), "%u.%03u", wait_ms / 1000, wait_ms % 1000);
	reply = command(c, reterr, &r, "BLPOP %s %s", dk, seconds);
	if (!reply)
		return r;
	return reply->type == REDIS_REPLY_ARRAY ? 1 : 0;
}

int sb_queue_depth(struct sb_queue_conn *c, const char *stream, uint64_t *ret, char **reterr)
{
	_cleanup_free_ char *s = key(stream, NULL, NULL);
	_cleanup_reply_ redisReply *reply = NULL;
	int r = 0;

	if (!s)
		return -ENOMEM;
	reply = command(c, reterr, &r, "XLEN %s", s);
	if (!reply)
		return r;
	*ret =
	    reply->type == REDIS_REPLY_INTEGER && reply->integer > 0 ? (uint64_t)reply->integer : 0;
	return 0;
}

void sb_queue_entry_done(struct sb_queue_entry *e)
{
	free(e->entry_id);
	free(e->job);
	*e = (struct sb_queue_entry){0};
}

/* [id, [field, value, ...]] into *ret. */
static int take_entry(const redisReply *entry, struct sb_queue_entry *ret)
{
	const redisReply *fields;

	*ret = (struct sb_queue_entry){0};
	if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 ||
	    entry->element[0]->type != REDIS_REPLY_STRING)
		return -EPROTO;
	ret->entry_id = strndup(entry->element[0]->str, entry->element[0]->len);
	if (!ret->entry_id)
		return -ENOMEM;
	fields = entry->element[1];
	if (fields->type != REDIS_REPLY_ARRAY)
		return 0; /* deleted meanwhile: a job without its fields */
	for (size_t i = 0; i + 1 < fields->elements; i += 2)
		if (fields->element[i]->type == REDIS_REPLY_STRING &&
		    fields->element[i + 1]->type == REDIS_REPLY_STRING &&
		    streq(fields->element[i]->str, "job")) {
			free(ret->job);
			ret->job =
			    strndup(fields->element[i + 1]->str, fields->element[i + 1]->len);
			if (!ret->job)
				return -ENOMEM;
		}
	return 0;
}

static int deliveries(struct sb_queue_conn *c, const char *s, struct sb_queue_entry *e,
		      char **reterr)
{
	_cleanup_reply_ redisReply *reply = NULL;
	int r = 0;

	reply = command(c, reterr, &r, "XPENDING %s %s %s %s 1", s, SB_QUEUE_GROUP, e->entry_id,
			e->entry_id);
	if (!reply)
		return r;
	if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 1 &&
	    reply->element[0]->type == REDIS_REPLY_ARRAY && reply->element[0]->elements == 4 &&
	    reply->element[0]->element[3]->type == REDIS_REPLY_INTEGER)
		e->deliveries = (uint64_t)reply->element[0]->element[3]->integer;
	return 0;
}

int sb_queue_claim_stale(struct sb_queue_conn *c, const char *stream, const char *consumer,
			 uint64_t min_idle_ms, struct sb_queue_entry *ret, char **reterr)
{
	_cleanup_free_ char *s = key(stream, NULL, NULL);
	_cleanup_reply_ redisReply *reply = NULL;
	char idle[32];
	const redisReply *entries;
	int r = 0;

	if (!s)
		return -ENOMEM;
	snprintf(idle, sizeof(idle), "%llu", (unsigned long long)min_idle_ms);
	reply = command(c, reterr, &r, "XAUTOCLAIM %s %s %s %s %s COUNT 1", s, SB_QUEUE_GROUP,
			consumer, idle, c->claim_cursor);
	if (!reply)
		return r;
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 2 ||
	    reply->element[0]->type != REDIS_REPLY_STRING ||
	    reply->element[1]->type != REDIS_REPLY_ARRAY)
		return sb_error(reterr, -EPROTO, "Redis at %s: unexpected reply to XAUTOCLAIM",
				c->where);
	snprintf(c->claim_cursor, sizeof(c->claim_cursor), "%.*s", (int)reply->element[0]->len,
		 reply->element[0]->str);
	entries = reply->element[1];
	for (size_t i = 0; i < entries->elements; i++) {
		if (entries->element[i]->type != REDIS_REPLY_ARRAY)
			continue;
		r = take_entry(entries->element[i], ret);
		if (r >= 0)
			r = deliveries(c, s, ret, reterr);
		if (r < 0) {
			sb_queue_entry_done(ret);
			return r;
		}
		return 1;
	}
	return 0;
}

int sb_queue_read_new(struct sb_queue_conn *c, const char *stream, const char *consumer,
		      unsigned block_ms, struct sb_queue_entry *ret, char **reterr)
{
	_cleanup_free_ char *s = key(stream, NULL, NULL);
	_cleanup_reply_ redisReply *reply = NULL;
	const redisReply *entries;
	char block[32];
	int r = 0;

	if (!s)
		return -ENOMEM;
	snprintf(block, sizeof(block), "%u", block_ms);
	reply = command(c, reterr, &r, "XREADGROUP GROUP %s %s COUNT 1 BLOCK %s STREAMS %s >",
			SB_QUEUE_GROUP, consumer, block, s);
	if (!reply)
		return r;
	if (reply->type == REDIS_REPLY_NIL)
		return 0;
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 1 ||
	    reply->element[0]->type != REDIS_REPLY_ARRAY || reply->element[0]->elements != 2 ||
	    reply->element[0]->element[1]->type != REDIS_REPLY_ARRAY)
		return sb_error(reterr, -EPROTO, "Redis at %s: unexpected reply to XREADGROUP",
				c->where);
	entries = reply->element[0]->element[1];
	if (entries->elements == 0)
		return 0;
	r = take_entry(entries->element[0], ret);
	if (r < 0) {
		sb_queue_entry_done(ret);
		return r == -EPROTO ? sb_error(reterr, r, "Redis at %s: unexpected entry", c->where)
				    : r;
	}
	ret->deliveries = 1;
	return 1;
}

/* The job key is there until the job's first result is written: without
 * it, this result is a duplicate (another worker finished the job first, or
 * the job's result has expired) and is dropped. */
static const char complete_script[] = "local fresh = redis.call('EXISTS', KEYS[2]) == 1 and\n"
				      "  redis.call('SET', KEYS[3], ARGV[3], 'NX', 'EX', ARGV[4])\n"
				      "redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])\n"
				      "redis.call('XDEL', KEYS[1], ARGV[2])\n"
				      "if not fresh then\n"
				      "  redis.call('HINCRBY', KEYS[5], 'duplicates', 1)\n"
				      "  return 0\n"
				      "end\n"
				      "redis.call('DEL', KEYS[2])\n"
				      "redis.call('RPUSH', KEYS[4], '1')\n"
				      "redis.call('EXPIRE', KEYS[4], ARGV[4])\n"
				      "redis.call('HINCRBY', KEYS[5], ARGV[5], 1)\n"
				      "return 1\n";

int sb_queue_complete(struct sb_queue_conn *c, const char *stream, const char *entry_id,
		      const char *id, const char *result, unsigned ttl_s, const char *stat,
		      char **reterr)
{
	_cleanup_free_ char *s = key(stream, NULL, NULL), *jk = key(stream, "job", id),
			    *rk = key(stream, "result", id), *dk = key(stream, "done", id),
			    *sk = key(stream, "stats", NULL);
	_cleanup_reply_ redisReply *reply = NULL;
	char ttl[32];
	int r = 0;

	if (!s || !jk || !rk || !dk || !sk)
		return -ENOMEM;
	snprintf(ttl, sizeof(ttl), "%u", ttl_s);
	reply = command(c, reterr, &r, "EVAL %s 5 %s %s %s %s %s %s %s %s %s %s", complete_script,
			s, jk, rk, dk, sk, SB_QUEUE_GROUP, entry_id, result, ttl, stat);
	if (!reply)
		return r;
	if (reply->type != REDIS_REPLY_INTEGER)
		return sb_error(reterr, -EPROTO, "Redis at %s: unexpected reply to a result",
				c->where);
	return reply->integer == 1 ? 1 : 0;
}

int sb_queue_drop(struct sb_queue_conn *c, const char *stream, const char *entry_id, char **reterr)
{
	_cleanup_free_ char *s = key(stream, NULL, NULL);
	_cleanup_reply_ redisReply *ack = NULL, *del = NULL;
	int r = 0;

	if (!s)
		return -ENOMEM;
	ack = command(c, reterr, &r, "XACK %s %s %s", s, SB_QUEUE_GROUP, entry_id);
	if (!ack)
		return r;
	del = command(c, reterr, &r, "XDEL %s %s", s, entry_id);
	return del ? 0 : r;
}

/* XINFO CONSUMERS and XGROUP DELCONSUMER in one script: no entry can be
 * delivered to a consumer between the check of its pending count and its
 * removal. */
static const char forget_script[] =
    "local gone = 0\n"
    "for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do\n"
    "  local f = {}\n"
    "  for i = 1, #c, 2 do f[c[i]] = c[i + 1] end\n"
    "  if f['pending'] == 0 and (f['name'] == ARGV[2] or\n"
    "      (ARGV[2] == '' and f['idle'] >= tonumber(ARGV[3]))) then\n"
    "    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], f['name'])\n"
    "    gone = gone + 1\n"
    "  end\n"
    "end\n"
    "return gone\n";

int sb_queue_forget_consumers(struct sb_queue_conn *c, const char *stream, const char *consumer,
			      uint64_t min_idle_ms, unsigned *ret_n, char **reterr)
{
	_cleanup_free_ char *s = key(stream, NULL, NULL);
	_cleanup_reply_ redisReply *reply = NULL;
	char idle[32];
	int r = 0;

	if (!s)
		return -ENOMEM;
	snprintf(idle, sizeof(idle), "%llu", (unsigned long long)min_idle_ms);
	reply = command(c, reterr, &r, "EVAL %s 1 %s %s %s %s", forget_script, s, SB_QUEUE_GROUP,
			consumer ? consumer : "", idle);
	if (!reply)
		return r;
	if (reply->type != REDIS_REPLY_INTEGER || reply->integer < 0)
		return sb_error(reterr, -EPROTO,
				"Redis at %s: unexpected reply to the removal of consumers",
				c->where);
	if (ret_n)
		*ret_n = (unsigned)reply->integer;
	return 0;
}
