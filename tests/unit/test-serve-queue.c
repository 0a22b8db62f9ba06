/* SPDX-License-Identifier: MIT */
/* The queue's pure parts: the redis:// address (src/serve/queue-redis.c) and
 * the job and result encodings (src/serve/queue-job.c). The Redis side is
 * tests/integration/test_serve_queue.py's. */
#include "queue-job.h"
#include "queue-redis.h"
#include "tap.h"
#include "util.h"

static void test_addr(void)
{
	static const struct {
		const char *url, *host, *user, *password, *stream;
		unsigned port;
	} good[] = {
	    {"redis://127.0.0.1:6380/jobs", "127.0.0.1", NULL, NULL, "jobs", 6380},
	    {"redis://redis/jobs", "redis", NULL, NULL, "jobs", 6379},
	    {"redis://:pw@redis:1/a.b_c-d", "redis", NULL, "pw", "a.b_c-d", 1},
	    {"redis://me:p:w@[::1]:7000/s", "::1", "me", "p:w", "s", 7000},
	    {"redis://me:@h/s", "h", "me", NULL, "s", 6379},
	};
	static const char *const bad[] = {
	    "rediss://h/s",  "http://h/s",	  "redis://h",	    "redis://h/", "redis://h/a/b",
	    "redis://h:0/s", "redis://h:99999/s", "redis://pw@h/s", "redis:///s", "redis://[::1/s",
	};

	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		struct sb_queue_addr a = {0};
		char *err = NULL;
		int r = sb_queue_addr_parse(good[i].url, &a, &err);

		tap_ok(r == 0 && streq(a.host, good[i].host) && a.port == good[i].port &&
			   streq(a.stream, good[i].stream) &&
			   (good[i].user ? a.user && streq(a.user, good[i].user) : !a.user) &&
			   (good[i].password ? a.password && streq(a.password, good[i].password)
					     : !a.password) &&
			   !strstr(a.display, "pw"),
		       "%s parses (%s)", good[i].url, err ? err : a.display);
		free(err);
		sb_queue_addr_done(&a);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct sb_queue_addr a = {0};
		char *err = NULL;
		int r = sb_queue_addr_parse(bad[i], &a, &err);

		tap_ok(r == -EINVAL && err && strstr(err, "--queue"), "%s is refused: %s", bad[i],
		       err ? err : "(no message)");
		free(err);
	}
}

static void test_job_round_trip(void)
{
	const struct sb_request_policy policy = {
	    .max = {.timeout_ms = 10000, .cpu_ms = 5000, .output_bytes = 1000},
	    .max_args = 4,
	    .max_arg_len = 16,
	    .max_files = 3,
	    .max_file_depth = 2,
	};
	char *args[] = {"a", "b c", NULL};
	struct sb_run_file files[] = {{.name = "d/x.txt", .content = "hi", .len = 2}};
	struct sb_run_spec spec = {
	    .source = "print(1)",
	    .source_len = 8,
	    .stdin_data = "in",
	    .stdin_len = 2,
	    .args = args,
	    .files = files,
	    .n_files = 1,
	    .limits = {.timeout_ms = 2000, .cpu_ms = 5000, .output_bytes = 1000},
	    .no_wait = true,
	};
	struct sb_run_spec back;
	struct sb_request_error err = {0};
	char id[SB_QUEUE_ID_LEN + 1], id2[SB_QUEUE_ID_LEN + 1], *job = NULL, *got = NULL;

	tap_ok(sb_queue_id_new(id) == 0 && sb_queue_id_valid(id), "a new id is valid: %s", id);
	tap_ok(sb_queue_id_new(id2) == 0 && !streq(id, id2), "two ids differ");
	tap_ok(!sb_queue_id_valid("0123") && !sb_queue_id_valid("0123456789ABCDEF0123456789abcdef"),
	       "short and upper-case ids are not ids");
	tap_ok(sb_queue_job_encode(id, &spec, &policy.max, &job) == 0, "the job encodes: %s", job);
	/* The limits at the server's are left to the worker's own. */
	tap_ok(job && strstr(job, "\"timeout_ms\":2000") && !strstr(job, "cpu_ms") &&
		   !strstr(job, "wait"),
	       "only the lowered limits travel, not wait");
	tap_ok(sb_queue_job_decode(job, &policy, &got, &back, &err) == 0 && streq(got, id) &&
		   back.source_len == 8 && streq(back.source, "print(1)") &&
		   streq(back.stdin_data, "in") && streq(back.args[1], "b c") && !back.args[2] &&
		   back.n_files == 1 && streq(back.files[0].name, "d/x.txt") &&
		   back.limits.timeout_ms == 2000 && back.limits.cpu_ms == 5000 && !back.no_wait,
	       "and decodes to the same spec");
	sb_run_spec_done(&back);
	free(got);
	got = NULL;
	free(job);

	/* A worker with lower limits refuses what its front end let through. */
	tap_ok(sb_queue_job_decode("{\"v\":1,\"id\":\"0123456789abcdef0123456789abcdef\","
				   "\"request\":{\"source\":\"\",\"limits\":{\"timeout_ms\":"
				   "20000}}}",
				   &policy, &got, &back, &err) == -EINVAL &&
		   got && err.field && streq(err.field, "limits.timeout_ms"),
	       "the worker checks the request with its own limits: %s", err.message);
	free(got);
	got = NULL;
	sb_request_error_done(&err);
	tap_ok(sb_queue_job_decode("{\"v\":1,\"id\":\"xyz\",\"request\":{\"source\":\"\"}}",
				   &policy, &got, &back, &err) == -EINVAL &&
		   !got,
	       "a job without a valid id has no id to answer: %s", err.message);
	sb_request_error_done(&err);
	tap_ok(sb_queue_job_decode("{\"v\":2,\"id\":\"0123456789abcdef0123456789abcdef\","
				   "\"request\":{\"source\":\"\"}}",
				   &policy, &got, &back, &err) == -EINVAL &&
		   got && strstr(err.message, "version"),
	       "another version is refused, with its id: %s", err.message);
	free(got);
	sb_request_error_done(&err);
}

static void test_result_round_trip(void)
{
	json_t *body = json_pack("{s:s, s:n}", "error", "x", "field"), *back = NULL;
	unsigned status = 0;
	char *text = NULL;

	int r = sb_queue_result_encode(500, body, &text);

	tap_ok(r == 0 && sb_queue_result_decode(text, &status, &back) == 0 && status == 500 &&
		   json_equal(body, back),
	       "a result encodes and decodes: %s", r == 0 ? text : "?");
	json_decref(back);
	free(text);
	json_decref(body);
	tap_ok(sb_queue_result_decode("{\"status\":700,\"body\":{}}", &status, &back) == -EINVAL,
	       "a status out of range is not a result");
	tap_ok(sb_queue_result_decode("{\"status\":200,\"body\":[]}", &status, &back) == -EINVAL,
	       "a body that is not an object is not a result");
}

int main(void)
{
	test_addr();
	test_job_round_trip();
	test_result_round_trip();
	return tap_done();
}
