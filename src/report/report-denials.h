/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "report-shm.h"

/* Records one refusal of the guard in the report region: called where the
 * guard raises its exception (pysandboxes-module.c), whether or not the
 * program catches it. Does nothing when no report was asked for. subject:
 * the module, path, address or function refused (NULL: none); message: the
 * exception's text, which names the rule to add when there is one. */
void sb_report_denial(enum sb_report_denial_kind kind, const char *subject, const char *message);

/* The run's refusals, kept in this process for the exit summary whether or
 * not a report was asked for (main() prints it, docs/python-sb.md): counted
 * from sb_denials_start() (the program's start) to sb_denials_stop(); the
 * messages of the first SB_DENIALS_KEPT kept. */
#define SB_DENIALS_KEPT 1000
size_t sb_denials_count(void);
/* The messages in order (NULL-terminated; NULL when none). */
char *const *sb_denials_messages(void);
/* in_program (NULL: always) tells a refusal of the program's code from the
 * runtime's own (CPython printing a traceback compiles its lines). */
void sb_denials_start(bool (*in_program)(void));
/* Stops counting: what runs after the program (its traceback's printing)
 * is not the program's. */
void sb_denials_stop(void);

/* The rule a guard message tells the user to add ("... Add 'python-import=x'
 * to '/p'", "... Use 'expose-rw=/d' instead ...", "Add `python-api=ALLOW:f`
 * ..."): its offset and length in message; false when it names none. */
bool sb_report_rule_in_message(const char *message, size_t *ret_off, size_t *ret_len);
