/* SPDX-License-Identifier: MIT */
/* The queue's decoders (src/serve/queue-job.c): a job as a worker reads it
 * from the Redis stream, and a result as the front end reads it back, both
 * bytes anyone who can write to Redis controls. The first byte picks which,
 * the rest is the text.
 *
 * Oracle: a job decoded is encoded again (the front end's encoder, with the
 * policy's limits as the server's) and decodes to the same id and the same
 * spec, field for field; a refusal has a message and leaves nothing decoded
 * (an id only when it was valid). A result decoded has a status of 100-599
 * and an object as body, and encodes to a result that decodes to the same. */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "queue-job.h"
#include "util.h"

static const struct sb_request_policy policy = {
    .max = {.timeout_ms = 10000, .cpu_ms = 5000, .memory_bytes = 0, .output_bytes = 1000},
    .max_args = 4,
    .max_arg_len = 16,
    .max_files = 3,
    .max_file_depth = 2,
};

static bool same_bytes(const char *a, size_t na, const char *b, size_t nb)
{
	return na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

static bool same_spec(const struct sb_run_spec *a, const struct sb_run_spec *b)
{
	size_t i = 0;

	if (!same_bytes(a->source, a->source_len, b->source, b->source_len) ||
	    !a->stdin_data != !b->stdin_data ||
	    (a->stdin_data &&
	     !same_bytes(a->stdin_data, a->stdin_len, b->stdin_data, b->stdin_len)) ||
	    memcmp(&a->limits, &b->limits, sizeof(a->limits)) != 0 || a->n_files != b->n_files ||
	    !a->args != !b->args)
		return false;
	for (; a->args && a->args[i] && b->args[i]; i++)
		if (!streq(a->args[i], b->args[i]))
			return false;
	if (a->args && (a->args[i] || b->args[i]))
		return false;
	for (i = 0; i < a->n_files; i++)
		if (!streq(a->files[i].name, b->files[i].name) ||
		    !same_bytes(a->files[i].content, a->files[i].len, b->files[i].content,
				b->files[i].len))
			return false;
	return true;
}

static void job(const char *text)
{
	struct sb_run_spec spec, again;
	struct sb_request_error err = {0}, err2 = {0};
	char *id = NULL, *id2 = NULL, *encoded = NULL;
	int r = sb_queue_job_decode(text, &policy, &id, &spec, &err);

	if (r < 0) {
		FUZZ_ASSERT(r == -EINVAL || r == -ENOMEM, "%d", r);
		FUZZ_ASSERT(r != -EINVAL || err.message, "a refusal without a message");
		FUZZ_ASSERT(!spec.source && !spec.args && !spec.files, "a refusal left a spec");
		FUZZ_ASSERT(!id || sb_queue_id_valid(id), "an invalid id: %s", id);
		free(id);
		sb_request_error_done(&err);
		return;
	}
	FUZZ_ASSERT(id && sb_queue_id_valid(id), "a job without a valid id");
	FUZZ_ASSERT(!spec.no_wait && !spec.poll_id, "a worker's spec with front-end fields");
	if (sb_queue_job_encode(id, &spec, &policy.max, &encoded) == 0) {
		r = sb_queue_job_decode(encoded, &policy, &id2, &again, &err2);
		FUZZ_ASSERT(r == 0, "its own encoding refused: %s: %s", encoded,
			    err2.message ? err2.message : "?");
		FUZZ_ASSERT(streq(id, id2), "the id changed");
		FUZZ_ASSERT(same_spec(&spec, &again), "the spec changed: %s", encoded);
		sb_run_spec_done(&again);
	}
	free(encoded);
	free(id);
	free(id2);
	sb_run_spec_done(&spec);
	sb_request_error_done(&err2);
}

static void result(const char *text)
{
	unsigned status, status2;
	json_t *body, *body2;
	char *encoded = NULL;

	if (sb_queue_result_decode(text, &status, &body) < 0)
		return;
	FUZZ_ASSERT(status >= 100 && status <= 599 && json_is_object(body), "a bad result");
	if (sb_queue_result_encode(status, body, &encoded) == 0) {
		FUZZ_ASSERT(sb_queue_result_decode(encoded, &status2, &body2) == 0,
			    "its own encoding refused: %s", encoded);
		FUZZ_ASSERT(status == status2 && json_equal(body, body2), "the result changed");
		json_decref(body2);
	}
	free(encoded);
	json_decref(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1)
		return 0;
	text = strndup((const char *)data + 1, size - 1);
	if (!text)
		return 0;
	if (data[0] & 1)
		result(text);
	else
		job(text);
	free(text);
	return 0;
}
