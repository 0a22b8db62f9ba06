/* SPDX-License-Identifier: MIT */
/* libFuzzer entry for the fork server's decoders (src/serve/zygote-proto.c):
 * any bytes, as a message and as an arguments file. No crash, no leak, no
 * undefined behaviour; what decodes encodes again to bytes that decode to the
 * same message (the decoder accepts nothing the encoder could not write). */
#include <stdint.h>
#include <stdlib.h>

#include "util.h"
#include "zygote-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && streq(a, b));
}

static bool same(const struct sb_zmsg *a, const struct sb_zmsg *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case SB_ZMSG_READY:
		return a->ready.pid == b->ready.pid && a->ready.modules == b->ready.modules &&
		       a->ready.warm_ns == b->ready.warm_ns && a->ready.rss_kb == b->ready.rss_kb &&
		       same_str(a->ready.provider, b->ready.provider);
	case SB_ZMSG_RUN:
		return a->run.id == b->run.id && a->run.timeout_ms == b->run.timeout_ms &&
		       a->run.cpu_ms == b->run.cpu_ms &&
		       a->run.memory_bytes == b->run.memory_bytes &&
		       same_str(a->run.rundir, b->run.rundir);
	case SB_ZMSG_KILL:
		return a->kill.reason == b->kill.reason;
	case SB_ZMSG_FAILED:
		return same_str(a->failed.message, b->failed.message);
	case SB_ZMSG_DONE:
		return memcmp(&a->done, &b->done, sizeof(a->done)) == 0;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sb_zmsg m, again;
	char **args = NULL, **args_again = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;

	if (sb_zmsg_decode(data, size, &m) == 0) {
		if (sb_zmsg_encode(&m, &buf, &len) != 0 || len != size ||
		    memcmp(buf, data, size) != 0 || sb_zmsg_decode(buf, len, &again) != 0 ||
		    !same(&m, &again))
			abort();
		sb_zmsg_done(&again);
		sb_zmsg_done(&m);
		free(buf);
		buf = NULL;
	}
	if (sb_zargs_decode(data, size, &args) == 0) {
		if (sb_zargs_encode(args, &buf, &len) != 0 || len != size ||
		    memcmp(buf, data, size) != 0 || sb_zargs_decode(buf, len, &args_again) != 0 ||
		    sb_strv_length(args) != sb_strv_length(args_again))
			abort();
		for (size_t i = 0; args[i]; i++)
			if (!streq(args[i], args_again[i]))
				abort();
		sb_strv_free(args_again);
		sb_strv_free(args);
		free(buf);
	}
	return 0;
}
