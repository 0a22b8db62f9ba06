/* SPDX-License-Identifier: MIT */
/* POST /v1/runs decoding (src/serve/request.c): every bad input is refused
 * with the field it concerns, every good one decoded exactly. */
#include "request.h"
#include "tap.h"
#include "util.h"

static const struct sb_request_policy policy = {
    .max = {.timeout_ms = 10000, .cpu_ms = 5000, .memory_bytes = 0, .output_bytes = 1000},
    .max_args = 3,
    .max_arg_len = 8,
    .max_files = 2,
    .max_file_depth = 2,
};

struct bad_case {
	const char *body;
	const char *field; /* NULL: the body as a whole */
	const char *in_message;
};

static const struct bad_case bad_cases[] = {
    {"", NULL, "not JSON"},
    {"{", NULL, "not JSON"},
    {"nul", NULL, "not JSON"},
    {"[]", NULL, "JSON object"},
    {"\"x\"", NULL, "JSON object"},
    {"{\"source\": \"a\\u0000b\"}", NULL, "not JSON"},
    {"{\"source\": \"a\", \"source\": \"b\"}", NULL, "duplicate"},
    {"{}", "source", "required"},
    {"{\"stdin\": \"x\"}", "source", "required"},
    {"{\"source\": 1}", "source", "string"},
    {"{\"source\": null}", "source", "string"},
    {"{\"source\": \"\", \"stdin\": 5}", "stdin", "string"},
    {"{\"source\": \"\", \"args\": \"a\"}", "args", "array"},
    {"{\"source\": \"\", \"args\": [\"a\", 2]}", "args[1]", "string"},
    {"{\"source\": \"\", \"args\": [\"a\", \"b\", \"c\", \"d\"]}", "args", "more than 3"},
    {"{\"source\": \"\", \"args\": [\"123456789\"]}", "args[0]", "longer than 8"},
    {"{\"source\": \"\", \"files\": []}", "files", "object"},
    {"{\"source\": \"\", \"files\": {\"a\": 1}}", "files", "must be a string"},
    {"{\"source\": \"\", \"files\": {\"../a\": \"\"}}", "files", "'..'"},
    {"{\"source\": \"\", \"files\": {\"/etc/x\": \"\"}}", "files", "absolute"},
    {"{\"source\": \"\", \"files\": {\"a//b\": \"\"}}", "files", "empty component"},
    {"{\"source\": \"\", \"files\": {\"a/\": \"\"}}", "files", "empty component"},
    {"{\"source\": \"\", \"files\": {\"\": \"\"}}", "files", "empty"},
    {"{\"source\": \"\", \"files\": {\"./a\": \"\"}}", "files", "'.'"},
    {"{\"source\": \"\", \"files\": {\"main.py\": \"\"}}", "files", "program's own"},
    {"{\"source\": \"\", \"files\": {\"main.py/x\": \"\"}}", "files", "below the program's own"},
    {"{\"source\": \"\", \"files\": {\"a b\": \"\"}}", "files", "character"},
    {"{\"source\": \"\", \"files\": {\"a/b/c\": \"\"}}", "files", "too deep"},
    {"{\"source\": \"\", \"files\": {\"a\": \"\", \"b\": \"\", \"c\": \"\"}}", "files",
     "more than 2"},
    {"{\"source\": \"\", \"files\": {\"a\": \"\", \"a/b\": \"\"}}", "files",
     "both a file and a directory"},
    {"{\"source\": \"\", \"limits\": 3}", "limits", "object"},
    {"{\"source\": \"\", \"limits\": {\"wall\": 3}}", "limits.wall", "unknown limit"},
    {"{\"source\": \"\", \"limits\": {\"timeout_ms\": 0}}", "limits.timeout_ms", "at least 1"},
    {"{\"source\": \"\", \"limits\": {\"timeout_ms\": -5}}", "limits.timeout_ms", "at least 1"},
    {"{\"source\": \"\", \"limits\": {\"timeout_ms\": 1.5}}", "limits.timeout_ms", "whole"},
    {"{\"source\": \"\", \"limits\": {\"timeout_ms\": \"1\"}}", "limits.timeout_ms", "whole"},
    {"{\"source\": \"\", \"limits\": {\"timeout_ms\": 10001}}", "limits.timeout_ms",
     "above the server's limit of 10000"},
    {"{\"source\": \"\", \"limits\": {\"output_bytes\": 1001}}", "limits.output_bytes", "above"},
    {"{\"source\": \"\", \"extra\": 1}", "extra", "unknown field"},
};

static void test_bad(void)
{
	for (size_t i = 0; i < ELEMENTSOF(bad_cases); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct sb_request_error err = {0};
		struct sb_run_spec spec;
		int r = sb_request_decode(c->body, strlen(c->body), &policy, &spec, &err);

		TAP_IS_INT(r, -EINVAL, c->body);
		TAP_IS_STR(err.field, c->field, "  its field");
		tap_ok(err.message && strstr(err.message, c->in_message),
		       "  its message says '%s' (%s)", c->in_message,
		       err.message ? err.message : "(none)");
		tap_ok(spec.source == NULL && spec.args == NULL && spec.files == NULL,
		       "  nothing is left decoded");
		sb_request_error_done(&err);
	}
}

static void test_good(void)
{
	static const char body[] =
	    "{\"source\": \"print(1)\\n\", \"stdin\": \"in\", \"args\": [\"-x\", \"\\u00e9\"],"
	    " \"files\": {\"data/a.txt\": \"A\", \"b\": \"\"}, \"limits\": {\"timeout_ms\": 500,"
	    " \"memory_bytes\": 123456789}}";
	struct sb_request_error err = {0};
	struct sb_run_spec spec;
	int r = sb_request_decode(body, sizeof(body) - 1, &policy, &spec, &err);

	TAP_IS_INT(r, 0, "a full request decodes");
	TAP_IS_STR(spec.source, "print(1)\n", "source");
	TAP_IS_INT(spec.source_len, 9, "source length");
	TAP_IS_STR(spec.stdin_data, "in", "stdin");
	TAP_IS_INT(sb_strv_length(spec.args), 2, "two args");
	TAP_IS_STR(spec.args ? spec.args[1] : NULL, "\xc3\xa9", "args in UTF-8");
	TAP_IS_INT(spec.n_files, 2, "two files");
	TAP_IS_STR(spec.n_files ? spec.files[0].name : NULL, "data/a.txt", "a file's name");
	TAP_IS_INT(spec.limits.timeout_ms, 500, "the timeout is lowered");
	TAP_IS_INT(spec.limits.cpu_ms, 5000, "the CPU limit stays the server's");
	TAP_IS_INT(spec.limits.memory_bytes, 123456789,
		   "a limit the server does not set may be set");
	TAP_IS_INT(spec.limits.output_bytes, 1000, "the output cap stays the server's");
	sb_run_spec_done(&spec);

	r = sb_request_decode("{\"source\": \"\", \"stdin\": null, \"args\": null}", 43, &policy,
			      &spec, &err);
	TAP_IS_INT(r, 0, "null optional fields are absent ones");
	TAP_IS_INT(spec.stdin_len, 0, "  no stdin");
	sb_run_spec_done(&spec);
}

int main(void)
{
	test_bad();
	test_good();
	TAP_IS_STR(sb_request_file_name_problem("a-b_c.d/e.txt", 2), NULL,
		   "letters, digits, '.', '_', '-' and one '/' level");
	TAP_IS_STR(sb_request_file_name_problem("..a", 2), NULL, "'..a' is a name, not '..'");
	return tap_done();
}
