/* SPDX-License-Identifier: MIT */
#pragma once

/* Learning mode, the file edit: inserting learned lines into a rule file
 * (spec §6 "Writing the file"). Each section's new lines go just before its
 * "# </learning_...>" closing marker, under "# Add rules (YYYY/MM/DD at
 * HH:MM)"; at the end of the file when the marker is missing. A line that is
 * in the file already is not repeated. A missing file starts from the
 * template. The previous file is kept as <file>.old, .old_1, .old_2...; the
 * new one is written to <file>.<pid>.tmp (O_EXCL|O_NOFOLLOW) and renamed over
 * <file>, and a <file> that is a symbolic link is refused: a planted link
 * must not redirect the write. */

#include <stdbool.h>
#include <time.h>

#include "learn-rules.h"

/* The documented template every new rule file starts from (learn-template.c,
 * generated from data/py-sandboxes.template). */
extern const char sb_learn_template[];

/* The new text of a rule file: text (NULL: the template) with the rules
 * inserted and the replaced lines commented out. *ret_added counts the rule
 * lines actually added. 0 or -ENOMEM. */
int sb_learn_file_merge(const char *text, const struct sb_learn_rules *rules, time_t now,
			char **ret_text, size_t *ret_added);

struct sb_learn_write_result {
	char *backup; /* the .old name the previous file was saved as, NULL if none */
	size_t added; /* rule lines added */
	bool created; /* the file did not exist */
	bool changed; /* the file was written */
};

/* Merges rules into path and writes it as described above. An existing file
 * that would not change is left alone. 0, or -errno with *reterr naming the
 * cause (-ELOOP: path is a symbolic link; -EEXIST: the temporary name is
 * taken; -EBADMSG: the file holds a NUL byte, it is no rule file). */
int sb_learn_file_write(const char *path, const struct sb_learn_rules *rules, time_t now,
			struct sb_learn_write_result *ret, char **reterr);

void sb_learn_write_result_done(struct sb_learn_write_result *r);
