/* SPDX-License-Identifier: MIT */
/* The eval layer's interface (eval.h): life cycle, and the entry points the
 * guard and the pysandboxes module call. */
#include "eval.h"

#include "api-registry.h"
#include "eval-alloc.h"
#include "eval-callables.h"
#include "eval-code.h"
#include "eval-format.h"
#include "eval-profile.h"
#include "eval-run.h"
#include "eval-runtime.h"
#include "eval-shims.h"
#include "profile.h"
#include "util.h"

static struct {
	bool prepared, activated;
	bool keys;	      /* the profile has eval-* keys: evaluation is guarded */
	bool dynamic_granted; /* python-api grants eval/exec/compile: unguarded */
} ev;

int sb_eval_prepare(const struct sb_profile *profile, char **reterr)
{
	const struct sb_api_function *fn = sb_api_lookup("builtins.eval");
	int r;

	ev.keys = profile->eval.any_key;
	ev.dynamic_granted = fn && profile->n_apis > 0 &&
			     sb_api_is_allowed(profile->apis, profile->n_apis, fn, NULL);
	r = sb_eval_rules_prepare(&profile->eval);
	if (r < 0)
		return sb_error(reterr, r, "cannot compile the eval-* rules");
	sb_eval_shims_plug(sb_eval_run_builtin);
	sb_eval_callables_plug(sb_eval_shim);
	ev.prepared = true;
	return 0;
}

int sb_eval_activate(const char *profile_path, char **reterr)
{
	int r;

	if (!ev.prepared)
		return 0;
	r = sb_eval_runtime_activate(profile_path, reterr);
	if (r < 0)
		return r;
	/* The allocation budget counts what evaluations allocate: only a
	 * profile that evaluates pays for the hook. */
	if (ev.keys && sb_eval_alloc_install() < 0)
		return sb_error(reterr, -EIO, "cannot install the eval guard's allocation budget");
	if (sb_eval_format_patch_formatter() < 0) {
		PyErr_Clear();
		return sb_error(reterr, -EIO, "cannot guard string.Formatter");
	}
	ev.activated = true;
	return 0;
}

void sb_eval_release(void)
{
	sb_eval_code_release();
	sb_eval_rules_release();
	sb_eval_runtime_release();
	memset(&ev, 0, sizeof(ev));
}

bool sb_eval_takes_over(void)
{
	return ev.activated && (ev.keys || (sb_eval_learning() && !ev.dynamic_granted));
}

bool sb_eval_owns_event(void)
{
	return sb_eval_own_events > 0;
}

PyObject *sb_eval_builtin(enum sb_eval_builtin which, PyObject *const *args, Py_ssize_t nargs,
			  PyObject *kwnames)
{
	struct sb_eval_rules *r = sb_eval_rules_find(NULL);

	if (!ev.keys)
		return sb_eval_run_learning(which, args, nargs, kwnames);
	if (!r) {
		PyErr_SetString(PyExc_SystemError, "the eval guard has no default profile");
		return NULL;
	}
	return sb_eval_run_builtin(r, which, args, nargs, kwnames);
}

PyObject *sb_eval_guarded_eval(PyObject *self _unused_, PyObject *const *args, Py_ssize_t nargs,
			       PyObject *kwnames)
{
	static const char *const names[] = {"source", "profile", "names", "mode"};
	static const char *const modes[] = {"eval", "exec"};
	PyObject *a[4] = {0};
	struct sb_eval_rules *r;
	const char *profile = NULL;
	int mode = SB_EVAL_MODE_EVAL;

	if (nargs > 4) {
		PyErr_SetString(PyExc_TypeError, "guarded_eval() takes at most 4 arguments");
		return NULL;
	}
	for (Py_ssize_t i = 0; i < nargs; i++)
		a[i] = args[i];
	for (Py_ssize_t k = 0; kwnames && k < PyTuple_GET_SIZE(kwnames); k++) {
		PyObject *key = PyTuple_GET_ITEM(kwnames, k);
		size_t i;

		for (i = 0; i < ELEMENTSOF(names); i++)
			if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0)
				break;
		if (i == ELEMENTSOF(names) || a[i]) {
			PyErr_Format(PyExc_TypeError,
				     "guarded_eval() got an unexpected keyword argument '%U'", key);
			return NULL;
		}
		a[i] = args[nargs + k];
	}
	if (!a[0]) {
		PyErr_SetString(PyExc_TypeError, "guarded_eval() missing the source");
		return NULL;
	}
	if (!ev.activated) {
		PyErr_SetString(PyExc_RuntimeError,
				"guarded_eval() needs the eval guard, which this run does not have "
				"(py-sandbox=false)");
		return NULL;
	}
	if (a[1] && a[1] != Py_None) {
		if (!PyUnicode_Check(a[1]) || !(profile = PyUnicode_AsUTF8(a[1]))) {
			PyErr_SetString(PyExc_TypeError, "guarded_eval(): profile must be a str");
			return NULL;
		}
	}
	if (a[3] && a[3] != Py_None) {
		mode = -1;
		for (size_t i = 0; PyUnicode_Check(a[3]) && i < ELEMENTSOF(modes); i++)
			if (PyUnicode_CompareWithASCIIString(a[3], modes[i]) == 0)
				mode = (int)i;
		if (mode < 0) {
			PyErr_SetString(PyExc_ValueError,
					"guarded_eval(): mode must be 'eval' or 'exec'");
			return NULL;
		}
	}
	r = sb_eval_rules_find(profile);
	if (!r) {
		/* Never a silent fall back to the default profile. */
		struct sb_buf known = {0};

		for (size_t i = 0; i < sb_eval_rules_count(); i++)
			if (sb_eval_rules_at(i)->name)
				sb_buf_printf(&known, "%s'%s'", known.len ? ", " : "",
					      sb_eval_rules_at(i)->name);
		PyErr_Format(PyExc_ValueError,
			     "guarded_eval(): no eval profile named '%s' in '%s' (named profiles: "
			     "%s); define it with eval-syntax:%s=...",
			     profile, sb_eval_profile_path(), known.data ? known.data : "none",
			     profile);
		sb_buf_reset(&known);
		return NULL;
	}
	return sb_eval_run_guarded(r, a[0], a[2], (enum sb_eval_mode)mode);
}

int sb_eval_after_import(void)
{
	if (!ev.activated)
		return 0;
	return sb_eval_format_patch_formatter();
}
