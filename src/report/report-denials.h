/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

#include "report-shm.h"

/* Records one refusal of the guard in the report region: called where the
 * guard raises its exception (pysandboxes-module.c), whether or not the
 * program catches it. Does nothing when no report was asked for. subject:
 * the module, path, address or function refused (NULL: none); message: the
 * exception's text, which names the rule to add when there is one. */
void sb_report_denial(enum sb_report_denial_kind kind, const char *subject, const char *message);

/* The rule a guard message tells the user to add ("... Add 'python-import=x'
 * to '/p'", "... Use 'expose-rw=/d' instead ...", "Add `python-api=ALLOW:f`
 * ..."): its offset and length in message; false when it names none. */
bool sb_report_rule_in_message(const char *message, size_t *ret_off, size_t *ret_len);
