/* SPDX-License-Identifier: MIT */
/* run-reply.h. */
#include "run-reply.h"

#include "utf8.h"
#include "util.h"

json_t *sb_run_reply_error(const char *message, const char *field)
{
	return json_pack("{s:s, s:s?}", "error", message, "field", field);
}

/* Text for JSON: program output may be any bytes. */
static json_t *output_text(const struct sb_buf *b)
{
	_cleanup_free_ char *clean = NULL;
	size_t n = b->len;

	if (sb_utf8_valid(b->data ? b->data : "", n))
		return json_stringn(b->data ? b->data : "", n);
	clean = sb_utf8_sanitize(b->data, n, &n);
	return clean ? json_stringn(clean, n) : NULL;
}

json_t *sb_run_reply_body(int error, const struct sb_run_result *res, unsigned *ret_status)
{
	if (error < 0 || !res->report) {
		char msg[256];

		if (!res->error)
			snprintf(msg, sizeof(msg), "the run could not be started: %s",
				 strerror(error < 0 ? -error : EIO));
		*ret_status = res->unavailable ? 503 : 500;
		return sb_run_reply_error(res->error ? res->error : msg, NULL);
	}
	*ret_status = 200;
	return json_pack("{s:o?, s:o?, s:O}", "stdout", output_text(&res->out), "stderr",
			 output_text(&res->err), "report", res->report);
}
