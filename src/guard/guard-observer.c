/* SPDX-License-Identifier: MIT */
/* The guard's observer: refusals offered, decisions noted (guard-observer.h). */
#include "guard-observer.h"

const struct sb_guard_observer *sb_guard_observer;

void sb_guard_observe(const struct sb_guard_observer *observer)
{
	sb_guard_observer = observer;
}

enum sb_refusal_answer sb_guard_refused(const struct sb_refusal *r)
{
	if (!sb_guard_observer || !sb_guard_observer->refused)
		return SB_REFUSE;
	return sb_guard_observer->refused(r);
}

void sb_guard_note_file(const char *resolved, bool write, const char *needed)
{
	if (sb_guard_observer && sb_guard_observer->file_decided)
		sb_guard_observer->file_decided(resolved, write, needed);
}

void sb_guard_note_net(const char *ip, uint16_t port, unsigned direction)
{
	if (sb_guard_observer && sb_guard_observer->net_decided)
		sb_guard_observer->net_decided(ip, port, direction);
}

void sb_guard_note_name(const char *name, const char *ip)
{
	if (sb_guard_observer && sb_guard_observer->name_resolved)
		sb_guard_observer->name_resolved(name, ip);
}

void sb_guard_note_result(const char *needs_objects)
{
	if (sb_guard_observer && sb_guard_observer->result_sent)
		sb_guard_observer->result_sent(needs_objects);
}
