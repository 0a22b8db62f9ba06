/* SPDX-License-Identifier: MIT */
#pragma once

#include "profile.h"

/* An os-sandbox provider. The launcher asks the selected provider to enter its
 * boundary before the interpreter starts; a provider that was named but cannot
 * be applied makes the launch fail, it never runs the program unprotected. */
struct sb_provider {
	enum sb_os_sandbox id;
	const char *name;
	/* What the kernel enforces with this provider, for --explain. */
	const char *boundary;
	/* 0 when this build and this machine can apply it; otherwise -errno and
	 * *reterr says why (malloc'ed). */
	int (*probe)(char **reterr);
};

const struct sb_provider *sb_provider_get(enum sb_os_sandbox id);

/* Resolves "auto" (and an absent os-sandbox line) to a provider that this
 * machine can apply; a provider named literally never falls back.
 * *ret_note (may be NULL on return) explains an auto choice, for --explain and
 * a warning when the kernel is the reason. 0, or -errno with *reterr. */
int sb_provider_select(enum sb_os_sandbox requested, const struct sb_provider **ret,
		       char **ret_note, bool *ret_warn, char **reterr);
