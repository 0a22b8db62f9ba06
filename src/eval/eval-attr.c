/* SPDX-License-Identifier: MIT */
#include "eval-attr.h"

#include "eval-errors.h"
#include "eval-grammar.h"
#include "eval-learn.h"
#include "eval-runtime.h"
#include "eval-state.h"
#include "util.h"

#define FRAME_HINT                                                                                 \
	"it reaches a frame, and through it the program's globals; no eval- rule allows it"
#define NAMESPACE_HINT                                                                             \
	"it hands over the evaluation's own namespace, whose helpers enforce the budgets; no "     \
	"eval- rule allows it"
#define RESERVED_HINT "names starting with __sb_ belong to the eval guard"
#define FORMAT_HINT                                                                                \
	"it reads attributes in C from its template; prefer an f-string, or grant it by its "      \
	"exact name"

bool sb_eval_attr_allowed(const struct sb_eval_rules *r, PyObject *name)
{
	const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;

	if (!s) {
		PyErr_Clear();
		return false;
	}
	if (sb_eval_is_frame_attribute(s) || sb_eval_is_namespace_attribute(s) ||
	    strstr(s, SB_EVAL_RESERVED_PREFIX))
		return false;
	if (sb_eval_is_dunder(s))
		return sb_eval_names_allows(&r->magic, name);
	if (!sb_eval_names_allows(&r->attribute, name))
		return false;
	/* A pattern or a group never grants the blind methods. */
	if (streq(s, "format"))
		return r->format_granted;
	if (streq(s, "format_map"))
		return r->format_map_granted;
	return true;
}

int sb_eval_attr_check(struct sb_eval_rules *r, PyObject *name)
{
	const char *s;
	bool dunder, learning;

	if (sb_eval_attr_allowed(r, name))
		return 0;
	s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
	if (!s) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError, "attribute name must be a string");
		return -1;
	}
	if (sb_eval_is_frame_attribute(s))
		return sb_eval_deny(r, s, -1, FRAME_HINT);
	if (sb_eval_is_namespace_attribute(s))
		return sb_eval_deny(r, s, -1, NAMESPACE_HINT);
	if (strstr(s, SB_EVAL_RESERVED_PREFIX))
		return sb_eval_deny(r, s, -1, RESERVED_HINT);
	dunder = sb_eval_is_dunder(s);
	learning = sb_eval_current ? sb_eval_current->learning : false;
	if (learning) {
		sb_eval_record(r->name, dunder ? SB_EVAL_LEARN_MAGIC : SB_EVAL_LEARN_ATTRIBUTE, s);
		return 0;
	}
	return sb_eval_deny(r, s, dunder ? SB_EVAL_MAGIC : SB_EVAL_ATTRIBUTE,
			    sb_eval_is_blind_attribute(s) ? FORMAT_HINT : NULL);
}
