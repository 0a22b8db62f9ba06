/* SPDX-License-Identifier: MIT */
/* The denials of a run report (report-denials.h). Plain C: the guard calls it
 * from its refusal paths, which must not raise anything else. */
#include "report-denials.h"

#include "report-collector.h"

#include <stdbool.h>
#include <string.h>

bool sb_report_rule_in_message(const char *message, size_t *ret_off, size_t *ret_len)
{
	static const char *const leads[] = {"Add '", "Add `", "Use '"};

	for (const char *p = message; p && *p; p++)
		for (size_t i = 0; i < sizeof(leads) / sizeof(leads[0]); i++) {
			const char *rule, *end;

			if (strncmp(p, leads[i], 5) != 0)
				continue;
			rule = p + 5;
			end = strchr(rule, leads[i][4]);
			/* A rule is one key=value: a placeholder such as
			 * "expose-ro=<dir>" is still the rule to add. */
			if (!end || end == rule || !memchr(rule, '=', (size_t)(end - rule)))
				continue;
			*ret_off = (size_t)(rule - message);
			*ret_len = (size_t)(end - rule);
			return true;
		}
	return false;
}

static void put(struct sb_report_shm *shm, const char *s, size_t n, struct sb_report_str *ret)
{
	if (!s || !sb_report_shm_str_add(shm, s, n, ret))
		*ret = (struct sb_report_str){0};
}

/* The network guard's messages say what was refused between these two. */
static void network_subject(const char *message, const char **ret, size_t *ret_len)
{
	const char *start = message ? strstr(message, "Guard network ") : NULL;
	const char *end = start ? strstr(start, " DENIED") : NULL;

	if (!end)
		return;
	start += strlen("Guard network ");
	*ret = start;
	*ret_len = (size_t)(end - start);
}

void sb_report_denial(enum sb_report_denial_kind kind, const char *subject, const char *message)
{
	struct sb_report_shm *shm = sb_report_region;
	struct sb_report_denial *d;
	size_t off, len, subject_len;

	/* Before the program starts, and while no code of it runs (CPython
	 * printing an uncaught exception parses the line for its carets, and
	 * the guard refuses that compile), refusals are the runtime's own. */
	if (!shm || !(shm->flags & SB_REPORT_F_STARTED) || !sb_report_collector_in_program())
		return;
	shm->denials_total++;
	if (shm->n_denials >= SB_REPORT_DENIALS_MAX)
		return;
	d = &shm->denials[shm->n_denials];
	subject_len = subject ? strlen(subject) : 0;
	if (!subject && kind == SB_REPORT_DENIAL_NETWORK)
		network_subject(message, &subject, &subject_len);
	put(shm, subject, subject_len, &d->subject);
	put(shm, message, message ? strlen(message) : 0, &d->message);
	if (message && sb_report_rule_in_message(message, &off, &len))
		put(shm, message + off, len, &d->rule);
	else
		d->rule = (struct sb_report_str){0};
	d->kind = (uint32_t)kind;
	shm->n_denials++;
}
