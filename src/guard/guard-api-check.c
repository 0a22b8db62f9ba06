/* SPDX-License-Identifier: MIT */
/* The API guard's decisions (guard-api-check.h). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "guard-api-check.h"

#include <frameobject.h>

#include "guard-observer.h"
#include "guard-runtime.h"
#include "pysandboxes-module.h"
#include "util.h"

static struct {
	bool *allowed;				   /* indexed like sb_api_registry */
	bool category_allowed[SB_API_CATEGORY__N]; /* for names outside the registry */
	bool any_deserialization;		   /* some unpickling entry point granted */
	bool eval_keys; /* eval-* present: the eval layer, not a grant, decides */
} api;

int sb_api_check_prepare(const struct sb_profile *profile)
{
	api.allowed = calloc(sb_api_registry_size, sizeof(*api.allowed));
	if (!api.allowed)
		return -ENOMEM;
	api.eval_keys = profile->eval.any_key;
	/* One decision per function, computed once: the hot path is an array
	 * read. Without python-api= lines every decision is the implicit
	 * refusal calloc() wrote. */
	for (size_t i = 0; profile->n_apis > 0 && i < sb_api_registry_size; i++) {
		const struct sb_api_function *fn = &sb_api_registry[i];

		api.allowed[i] = sb_api_is_allowed(profile->apis, profile->n_apis, fn, NULL);
		if (fn->category == SB_API_DYNAMIC_CODE && api.eval_keys)
			api.allowed[i] = false;
		if (fn->category == SB_API_DESERIALIZATION && api.allowed[i])
			api.any_deserialization = true;
	}
	/* A name no function rule can match: the category and `*` rules
	 * decide. */
	for (size_t c = 0; profile->n_apis > 0 && c < SB_API_CATEGORY__N; c++) {
		const struct sb_api_function outside = {"", (enum sb_api_category)c};

		api.category_allowed[c] =
		    sb_api_is_allowed(profile->apis, profile->n_apis, &outside, NULL);
	}
	if (api.eval_keys)
		api.category_allowed[SB_API_DYNAMIC_CODE] = false;
	return 0;
}

void sb_api_check_release(void)
{
	free(api.allowed);
	memset(&api, 0, sizeof(api));
}

bool sb_api_allowed(int fn)
{
	return api.allowed[fn];
}

bool sb_api_category_allowed(enum sb_api_category category)
{
	return api.category_allowed[category];
}

bool sb_api_any_deserialization(void)
{
	return api.any_deserialization;
}

bool sb_api_caller_in_site_packages(void)
{
	PyFrameObject *frame = PyEval_GetFrame(); /* borrowed */
	PyCodeObject *code;
	const char *file;
	bool library;

	if (!frame)
		return false;
	code = PyFrame_GetCode(frame);
	file = PyUnicode_AsUTF8(code->co_filename);
	if (!file)
		PyErr_Clear();
	/* The name is the code's own file: no code object carries a
	 * site-packages name it was not loaded from (guard-code.h). */
	library = file && sb_guard_is_site_file(file);
	Py_DECREF(code);
	return library;
}

bool sb_api_caller_is_library(void)
{
	return sb_guard_caller_is_runtime() || sb_api_caller_in_site_packages();
}

/* 0 when the observer lets it go ahead, else -1 with RuleApiPermissionError
 * set. */
static int deny(int index)
{
	const struct sb_api_function *fn = &sb_api_registry[index];
	const char *category = sb_api_category_name(fn->category);
	_cleanup_free_ char *message = NULL;

	if (sb_guard_refused(&(struct sb_refusal){.kind = SB_REFUSAL_API,
						  .subject = fn->qualname}) == SB_RECORDED_ALLOW)
		return 0;
	if (fn->category != SB_API_DYNAMIC_CODE || !api.eval_keys)
		return sb_raise_api_denied(fn->qualname, category);
	/* Under eval-* keys the eval layer runs the program's own calls; what
	 * reaches this point is source a library compiles or runs on the
	 * program's behalf (code.interact, timeit, runpy.run_path...), or a code
	 * object the guarded compile() did not make. */
	if (asprintf(&message,
		     "%s() is denied (category: %s): '%s' has eval-* keys, and the eval guard "
		     "checks only what the program hands to eval/exec/compile itself, not "
		     "source a library compiles or runs for it, nor code objects the guarded "
		     "compile() did not make",
		     fn->qualname, category, sb_guard_profile_path()) < 0) {
		message = NULL;
		PyErr_NoMemory();
		return -1;
	}
	sb_raise_api_error(fn->qualname, category, message);
	return -1;
}

/* For guarded operations that are not registry functions (marshal.loads,
 * code-object construction, frame attributes): only a category or `*` rule
 * can grant them, so the message names the category alone. */
int sb_api_deny_outside_registry(const char *what, enum sb_api_category category)
{
	const char *name = sb_api_category_name(category);
	_cleanup_free_ char *message = NULL;

	if (sb_guard_refused(&(struct sb_refusal){.kind = SB_REFUSAL_API_CATEGORY,
						  .category = (int)category}) == SB_RECORDED_ALLOW)
		return 0;
	if (asprintf(&message,
		     "%s is denied by the API guard (category: %s). Add `python-api=ALLOW:%s` to "
		     "'%s' to allow the whole category",
		     what, name, name, sb_guard_profile_path()) < 0) {
		message = NULL;
		PyErr_NoMemory();
		return -1;
	}
	sb_raise_api_error(what, name, message);
	return -1;
}

int sb_api_check(int fn)
{
	return api.allowed[fn] ? 0 : deny(fn);
}
