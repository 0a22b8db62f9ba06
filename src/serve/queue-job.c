/* SPDX-License-Identifier: MIT */
/* queue-job.h. The request inside a job goes through the same decoder as a
 * request over HTTP (request.c, fuzzed): a worker trusts nothing of the
 * front end's checks. */
#include "queue-job.h"

#include <sys/random.h>

#include "util.h"

#define JOB_VERSION 1

int sb_queue_id_new(char id[SB_QUEUE_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char bytes[SB_QUEUE_ID_LEN / 2];

	if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes))
		return -errno ? -errno : -EIO;
	for (size_t i = 0; i < sizeof(bytes); i++) {
		id[2 * i] = hex[bytes[i] >> 4];
		id[2 * i + 1] = hex[bytes[i] & 15];
	}
	id[SB_QUEUE_ID_LEN] = '\0';
	return 0;
}

bool sb_queue_id_valid(const char *id)
{
	size_t n = 0;

	for (; id[n]; n++)
		if (!((id[n] >= '0' && id[n] <= '9') || (id[n] >= 'a' && id[n] <= 'f')))
			return false;
	return n == SB_QUEUE_ID_LEN;
}

static int set_new(json_t *obj, const char *key, json_t *value)
{
	return value && json_object_set_new(obj, key, value) == 0 ? 0 : -ENOMEM;
}

static json_t *encode_request(const struct sb_run_spec *spec, const struct sb_run_limits *max)
{
	static const struct {
		const char *name;
		size_t offset;
	} limits[] = {
	    {"timeout_ms", offsetof(struct sb_run_limits, timeout_ms)},
	    {"cpu_ms", offsetof(struct sb_run_limits, cpu_ms)},
	    {"memory_bytes", offsetof(struct sb_run_limits, memory_bytes)},
	    {"output_bytes", offsetof(struct sb_run_limits, output_bytes)},
	};
	json_t *req = json_object(), *lim = json_object();
	int r = req && lim ? 0 : -ENOMEM;

	if (r >= 0)
		r = set_new(req, "source", json_stringn(spec->source, spec->source_len));
	if (r >= 0 && spec->stdin_data)
		r = set_new(req, "stdin", json_stringn(spec->stdin_data, spec->stdin_len));
	if (r >= 0 && spec->args) {
		json_t *args = json_array();

		for (char **a = spec->args; args && *a; a++)
			if (json_array_append_new(args, json_string(*a)) < 0) {
				json_decref(args);
				args = NULL;
			}
		r = set_new(req, "args", args);
	}
	if (r >= 0 && spec->n_files) {
		json_t *files = json_object();

		for (size_t i = 0; files && i < spec->n_files; i++)
			if (json_object_set_new(
				files, spec->files[i].name,
				json_stringn(spec->files[i].content, spec->files[i].len)) < 0) {
				json_decref(files);
				files = NULL;
			}
		r = set_new(req, "files", files);
	}
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(limits); i++) {
		uint64_t v = *(const uint64_t *)((const char *)&spec->limits + limits[i].offset);
		uint64_t m = *(const uint64_t *)((const char *)max + limits[i].offset);

		if (v && (!m || v < m))
			r = set_new(lim, limits[i].name, json_integer((json_int_t)v));
	}
	if (r >= 0 && json_object_size(lim))
		r = set_new(req, "limits", json_incref(lim));
	json_decref(lim);
	if (r < 0) {
		json_decref(req);
		return NULL;
	}
	return req;
}

int sb_queue_job_encode(const char *id, const struct sb_run_spec *spec,
			const struct sb_run_limits *server_max, char **ret)
{
	json_t *job = json_pack("{s:i, s:s, s:o?}", "v", JOB_VERSION, "id", id, "request",
				encode_request(spec, server_max));

	if (!job || !json_object_get(job, "request")) {
		json_decref(job);
		return -ENOMEM;
	}
	*ret = json_dumps(job, JSON_COMPACT);
	json_decref(job);
	return *ret ? 0 : -ENOMEM;
}

static int job_error(struct sb_request_error *err, const char *message)
{
	sb_request_error_done(err);
	err->message = strdup(message);
	return err->message ? -EINVAL : -ENOMEM;
}

int sb_queue_job_decode(const char *text, const struct sb_request_policy *policy, char **ret_id,
			struct sb_run_spec *spec, struct sb_request_error *err)
{
	json_t *job = json_loads(text, JSON_REJECT_DUPLICATES, NULL), *v, *id, *request;
	int r;

	*ret_id = NULL;
	*spec = (struct sb_run_spec){0};
	if (!job || !json_is_object(job)) {
		json_decref(job);
		return job_error(err, "the job is not a JSON object");
	}
	v = json_object_get(job, "v");
	id = json_object_get(job, "id");
	request = json_object_get(job, "request");
	if (!json_is_string(id) || !sb_queue_id_valid(json_string_value(id)) ||
	    json_string_length(id) != SB_QUEUE_ID_LEN) {
		json_decref(job);
		return job_error(err, "the job has no valid id");
	}
	*ret_id = strdup(json_string_value(id));
	if (!*ret_id) {
		json_decref(job);
		return -ENOMEM;
	}
	if (!json_is_integer(v) || json_integer_value(v) != JOB_VERSION)
		r = job_error(err, "the job is of another version of python-sb serve (v is not 1)");
	else if (json_object_size(job) != 3 || !request)
		r = job_error(err, "the job has fields other than v, id and request");
	else
		r = sb_request_decode_value(request, policy, spec, err);
	json_decref(job);
	return r;
}

int sb_queue_result_encode(unsigned status, json_t *body, char **ret)
{
	json_t *result = json_pack("{s:i, s:O}", "status", (json_int_t)status, "body", body);

	if (!result)
		return -ENOMEM;
	*ret = json_dumps(result, JSON_COMPACT);
	json_decref(result);
	return *ret ? 0 : -ENOMEM;
}

int sb_queue_result_decode(const char *text, unsigned *ret_status, json_t **ret_body)
{
	json_t *result = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	json_t *status = json_object_get(result, "status"), *body = json_object_get(result, "body");
	int r = -EINVAL;

	if (json_is_object(result) && json_object_size(result) == 2 && json_is_integer(status) &&
	    json_integer_value(status) >= 100 && json_integer_value(status) <= 599 &&
	    json_is_object(body)) {
		*ret_status = (unsigned)json_integer_value(status);
		*ret_body = json_incref(body);
		r = 0;
	}
	json_decref(result);
	return r;
}
