/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* python-sb serve's Redis Streams queue (docs/serve-queue.md): the address,
 * the connection (hiredis: no RESP of ours) and every command the front end
 * and the workers send, each a function returning 0 or -errno. The keys of a
 * stream S, all with the hash tag {S} so that they share a cluster slot:
 *
 *   {S}            the stream: one entry per job waiting or running
 *                  (field "job": queue-job.h's encoding); an entry is
 *                  deleted when its result is written, so its length is the
 *                  backlog
 *   {S}:job:ID     the stream entry of job ID while it waits or runs
 *   {S}:result:ID  the job's result, written once (SET NX), kept --result-ttl
 *   {S}:done:ID    a list that gets one element when the result is written
 *                  (BLPOP wakes the front end waiting for it), same TTL
 *   {S}:stats      a hash of counters: results, duplicates, poisoned
 *
 * The consumer group of the workers is "python-sb". */

#define SB_QUEUE_GROUP "python-sb"

struct sb_queue_addr {
	char *host;
	unsigned port;
	char *user;	/* NULL: AUTH with the password alone */
	char *password; /* NULL: no AUTH */
	char *stream;
	char *display; /* redis://host:port/stream, without the password */
};

/* redis://[[USER]:PASSWORD@]HOST[:PORT]/STREAM (port 6379; the stream name of
 * [A-Za-z0-9._-], at most 128 bytes; USER:@ without a password: one may be
 * given otherwise). 0; -EINVAL with *reterr; -ENOMEM. */
int sb_queue_addr_parse(const char *url, struct sb_queue_addr *ret, char **reterr);
void sb_queue_addr_done(struct sb_queue_addr *a);

struct sb_queue_conn;

/* Connects (with a timeout of connect_ms, commands timing out after
 * command_ms), authenticates. 0; -errno with *reterr (the server's own words
 * when it refused). */
int sb_queue_connect(const struct sb_queue_addr *a, unsigned connect_ms, unsigned command_ms,
		     struct sb_queue_conn **ret, char **reterr);
void sb_queue_disconnect(struct sb_queue_conn *c);
/* Whether the connection broke (a command failed on I/O): it must be dropped
 * and made anew; a command Redis refused leaves it usable. */
bool sb_queue_conn_broken(const struct sb_queue_conn *c);

/* A growing pause between attempts to reach Redis: 100 ms, doubling, up to
 * 5 s; reset once it answers. */
struct sb_queue_backoff {
	unsigned delay_ms;
};
unsigned sb_queue_backoff_next(struct sb_queue_backoff *b);
void sb_queue_backoff_reset(struct sb_queue_backoff *b);

/* The consumer group, made if missing (with the stream). */
int sb_queue_ensure_group(struct sb_queue_conn *c, const char *stream, char **reterr);

/* Queues a job: -EAGAIN (nothing queued) when the stream holds max_depth
 * entries or more (0: no limit); 0 when queued. Atomic (one script). */
int sb_queue_enqueue(struct sb_queue_conn *c, const char *stream, const char *id, const char *job,
		     size_t max_depth, char **reterr);

/* The state of job ID: 1 with *ret_result (malloc'ed) once its result is
 * written, 0 while it waits or runs, -ENOENT when unknown (never queued, or
 * its result expired). */
int sb_queue_poll(struct sb_queue_conn *c, const char *stream, const char *id, char **ret_result,
		  char **reterr);
/* Waits up to wait_ms for job ID's result to be written: 1 when it is (then
 * sb_queue_poll() has it), 0 when not yet. */
int sb_queue_wait_done(struct sb_queue_conn *c, const char *stream, const char *id,
		       unsigned wait_ms, char **reterr);
/* Entries in the stream: the jobs waiting or running. */
int sb_queue_depth(struct sb_queue_conn *c, const char *stream, uint64_t *ret, char **reterr);

/* A job delivered to a worker. */
struct sb_queue_entry {
	char *entry_id; /* the stream's */
	char *job;	/* the "job" field: queue-job.h's encoding, or NULL */
	uint64_t deliveries;
};
void sb_queue_entry_done(struct sb_queue_entry *e);

/* XAUTOCLAIM: one entry pending for more than min_idle_ms (its worker died or
 * hung), now this consumer's, with how many times it has been delivered.
 * 1 with *ret; 0 when there is none. */
int sb_queue_claim_stale(struct sb_queue_conn *c, const char *stream, const char *consumer,
			 uint64_t min_idle_ms, struct sb_queue_entry *ret, char **reterr);
/* XREADGROUP: one new entry, waiting up to block_ms. 1 with *ret; 0. */
int sb_queue_read_new(struct sb_queue_conn *c, const char *stream, const char *consumer,
		      unsigned block_ms, struct sb_queue_entry *ret, char **reterr);
/* Writes the result of job ID (SET NX: the first result written is the
 * job's), wakes its waiter, acknowledges and deletes the entry, counts it
 * under stat ("results", "poisoned") in one script. 1 when this result is
 * the job's, 0 when one was there already (counted as a duplicate). */
int sb_queue_complete(struct sb_queue_conn *c, const char *stream, const char *entry_id,
		      const char *id, const char *result, unsigned ttl_s, const char *stat,
		      char **reterr);
/* Acknowledges and deletes an entry without a result (one that is not a job
 * at all: no id to answer). */
int sb_queue_drop(struct sb_queue_conn *c, const char *stream, const char *entry_id, char **reterr);

/* Forgets, in one script, the consumers of the group that hold no pending
 * entry and are either named CONSUMER or (CONSUMER NULL) idle for at least
 * MIN_IDLE_MS: a worker's own at its clean exit, dead workers' once their
 * entries have been claimed. A consumer with a pending entry is never
 * forgotten: XGROUP DELCONSUMER drops its entries, which would then never be
 * claimed again. *ret_n: how many were forgotten. */
int sb_queue_forget_consumers(struct sb_queue_conn *c, const char *stream, const char *consumer,
			      uint64_t min_idle_ms, unsigned *ret_n, char **reterr);
