/* SPDX-License-Identifier: MIT */
/* The audit hook and its dispatch to the guard's parts. */
#include "audit-guard.h"

#include "guard-files-check.h"
#include "guard-observer.h"
#include "guard-open-code.h"
#include "guard-part.h"
#include "guard-runtime.h"
#include "pysandboxes-module.h"
#include "util.h"

#define SB_SELFTEST_EVENT "pysandboxes.selftest"

/* Every part of the guard, in the order they are prepared and activated. */
static const struct sb_guard_part *const parts[] = {
    &sb_guard_imports_part,
    &sb_guard_files_part,
    &sb_guard_net_part,
    &sb_guard_api_part,
    &sb_guard_native_files_part,
    /* After the API part: the eval layer takes its own copies of eval,
     * exec and compile, whatever the API part put in their place. */
    &sb_guard_eval_part,
};

/* All guard state is plain C data: no Python object holds it, so no
 * introspection (__subclasses__, gc.get_referents, closures) can reach or
 * reset it, unlike a guard written in Python. */
static struct {
	bool enabled; /* py-sandbox=true */
	unsigned long selftest_hits;
	struct sb_audit_handler *handlers; /* every part's, sorted by event */
	size_t n_handlers;
	const struct sb_audit_handler **index; /* by hash of the event name */
	uint32_t *index_n;		       /* how many handlers the event has */
	uint32_t index_mask;
	uint64_t modules_version; /* sys.modules at the last after-import pass */
	bool after_import_again;  /* a part asked for another pass */
} guard;

/* What a runtime section exempts: the import of a module and the globals an
 * unpickler looks up. Not the sensitive-API registry: a C function the
 * program planted where the runtime will call it (a __setstate__, a
 * meta_path finder) stays the program's call. */
static bool runtime_section_event(const char *event)
{
	return streq(event, "import") || streq(event, "exec") || streq(event, "pickle.find_class");
}

/* FNV-1a: event names are short ASCII literals. */
static uint32_t event_hash(const char *event)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *c = (const unsigned char *)event; *c; c++)
		h = (h ^ *c) * 16777619u;
	return h;
}

/* The first of the handlers of event in the sorted table, or NULL; *n how
 * many there are (the names are compared once, here). */
static const struct sb_audit_handler *find_handlers(const char *event, unsigned *n)
{
	for (uint32_t i = event_hash(event) & guard.index_mask;; i = (i + 1) & guard.index_mask) {
		const struct sb_audit_handler *h = guard.index[i];

		if (!h || streq(h->event, event)) {
			*n = h ? guard.index_n[i] : 0;
			return h;
		}
	}
}

/* An open-addressing table over the distinct event names, at most a quarter
 * full, each slot pointing at the first of its event's handlers, which are
 * laid out in guard.handlers one event after another, each event's in the
 * parts' order. Placed by counting, not sorted: a qsort() of the ~100
 * handlers by name cost ~45k instructions at every start. */
static int build_index(const struct sb_audit_handler *all, size_t n)
{
	_cleanup_free_ uint32_t *slot_of = NULL, *next = NULL;
	size_t size = 4;
	uint32_t at = 0;

	while (size < 4 * n)
		size *= 2;
	guard.index = calloc(size, sizeof(*guard.index));
	guard.index_n = calloc(size, sizeof(*guard.index_n));
	guard.handlers = calloc(n ? n : 1, sizeof(*guard.handlers));
	slot_of = calloc(n ? n : 1, sizeof(*slot_of));
	next = calloc(size, sizeof(*next));
	if (!guard.index || !guard.index_n || !guard.handlers || !slot_of || !next)
		return -ENOMEM;
	guard.index_mask = (uint32_t)(size - 1);
	/* Each handler's slot (the first handler of an event stands for it
	 * until the layout is known), and how many each event has. */
	for (size_t k = 0; k < n; k++) {
		uint32_t i = event_hash(all[k].event) & guard.index_mask;

		while (guard.index[i] && !streq(guard.index[i]->event, all[k].event))
			i = (i + 1) & guard.index_mask;
		if (!guard.index[i])
			guard.index[i] = &all[k];
		guard.index_n[i]++;
		slot_of[k] = i;
	}
	for (size_t i = 0; i < size; i++)
		if (guard.index_n[i]) {
			next[i] = at;
			guard.index[i] = &guard.handlers[at];
			at += guard.index_n[i];
		}
	for (size_t k = 0; k < n; k++)
		guard.handlers[next[slot_of[k]]++] = all[k];
	guard.n_handlers = n;
	return 0;
}

/* An event no handler names: the parts' families (prefixes), which they
 * refuse unless they know better. A first-letter test keeps this cheap for
 * the many events nobody handles. */
static int dispatch_prefix(const char *event, PyObject *args)
{
	for (size_t i = 0; i < ELEMENTSOF(parts); i++)
		for (size_t k = 0; k < parts[i]->n_prefixes; k++) {
			const struct sb_audit_prefix *p = &parts[i]->prefixes[k];

			if (p->prefix[0] == event[0] && startswith(event, p->prefix) &&
			    p->handle(event, args) < 0)
				return -1;
		}
	return 0;
}

static int sb_audit_hook(const char *event, PyObject *args, void *userdata _unused_)
{
	const struct sb_audit_handler *h;
	unsigned n;

	if (!sb_guard_armed()) {
		if (streq(event, SB_SELFTEST_EVENT))
			guard.selftest_hits++;
		return 0;
	}
	if (sb_guard_run.section_open && runtime_section_event(event) &&
	    sb_guard_in_runtime_section())
		return 0;
	/* Decisions must stay cheap: one hash of the name and, for an event
	 * someone handles, one comparison; no allocation. */
	h = find_handlers(event, &n);
	for (unsigned k = 0; k < n; k++)
		if (h[k].handle(args) < 0)
			return -1;
	return n == 0 ? dispatch_prefix(event, args) : 0;
}

/* Changes whenever sys.modules does: most import statements find their
 * module loaded already, and then no part has anything to look at. */
static uint64_t modules_version(void)
{
	PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
#if PY_VERSION_HEX < 0x030C0000
	return ((PyDictObject *)modules)->ma_version_tag;
#else
	/* No version tag: the size catches new modules; a deletion followed by
	 * a re-import is still caught by the _imp hooks for C modules. */
	return (uint64_t)PyDict_Size(modules);
#endif
}

int sb_guard_after_import(void)
{
	uint64_t version = modules_version();
	bool again = false;

	if (version == guard.modules_version && !guard.after_import_again)
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
		int r = parts[i]->after_import ? parts[i]->after_import() : 0;

		if (r < 0)
			return -1;
		again = again || r > 0;
	}
	/* Read again: the parts' own imports (socket's) changed it. */
	guard.modules_version = modules_version();
	guard.after_import_again = again;
	return 0;
}

int sb_guard_module_loading(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(parts); i++)
		if (parts[i]->module_loading && parts[i]->module_loading(name) < 0)
			return -1;
	return 0;
}

int sb_guard_module_loaded(const char *name, PyObject *module)
{
	for (size_t i = 0; i < ELEMENTSOF(parts); i++)
		if (parts[i]->module_loaded && parts[i]->module_loaded(name, module) < 0)
			return -1;
	return 0;
}

static PyObject *pysandboxes_init(void)
{
	return sb_pysandboxes_module_init();
}

int sb_guard_prepare(const struct sb_profile *profile, const char *profile_path,
		     const struct sb_interp_paths *interp, const struct sb_guard_observer *observer,
		     char **reterr)
{
	_cleanup_free_ struct sb_audit_handler *all = NULL;
	size_t n = 0, n_all = 0;
	int r;

	guard.enabled = profile->py_sandbox;
	r = sb_guard_runtime_prepare(profile_path);
	if (r < 0)
		return r;
	if (PyImport_AppendInittab("pysandboxes", pysandboxes_init) < 0)
		return -ENOMEM;
	if (!guard.enabled)
		return 0;
	sb_guard_observe(observer);
	for (size_t i = 0; i < ELEMENTSOF(parts); i++)
		n += parts[i]->n_handlers;
	all = calloc(n ? n : 1, sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
		r = parts[i]->prepare(profile, interp, reterr);
		if (r < 0)
			return r;
		/* A part may have no handlers (NULL): memcpy() must not see it. */
		for (size_t k = 0; k < parts[i]->n_handlers; k++)
			all[n_all++] = parts[i]->handlers[k];
	}
	r = build_index(all, n_all);
	if (r < 0)
		return r;
	/* Registered before Py_InitializeFromConfig(): CPython keeps such hooks
	 * in the runtime, ahead of any hook Python code could add. */
	if (PySys_AddAuditHook(sb_audit_hook, NULL) < 0) {
		*reterr = strdup("cannot register the audit hook");
		return -EPERM;
	}
	r = sb_open_code_install();
	if (r < 0)
		*reterr = strdup("cannot install the open_code hook");
	return r;
}

int sb_guard_activate(char **reterr)
{
	unsigned long before = guard.selftest_hits;
	int r;

	if (!guard.enabled)
		return 0;
	/* A guard that silently never runs is worse than none: prove it fires. */
	if (PySys_Audit(SB_SELFTEST_EVENT, NULL) < 0 || guard.selftest_hits != before + 1) {
		PyErr_Clear();
		*reterr = strdup("the audit hook did not fire; refusing to run unguarded");
		return -EIO;
	}
	r = sb_guard_runtime_activate();
	if (r < 0)
		return r;
	r = sb_open_code_activate();
	if (r < 0) {
		*reterr = strdup("cannot find _io.BytesIO for the open_code hook");
		return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
		r = parts[i]->activate(reterr);
		if (r < 0)
			return r;
	}
	guard.modules_version = (uint64_t)-1;
	sb_guard_runtime_arm();
	return 0;
}

void sb_guard_release(void)
{
	for (size_t i = 0; i < ELEMENTSOF(parts); i++)
		if (parts[i]->release)
			parts[i]->release();
	sb_guard_runtime_release();
	sb_open_code_release();
	sb_guard_observe(NULL);
	free(guard.handlers);
	free(guard.index);
	free(guard.index_n);
	memset(&guard, 0, sizeof(guard));
}

int sb_guard_settle(char **reterr)
{
	if (!guard.enabled)
		return 0;
	if (sb_files_ready() < 0 || sb_guard_after_import() < 0) {
		PyErr_Clear();
		return sb_error(reterr, -ENOMEM, "cannot settle the guard");
	}
	return 0;
}

int sb_guard_fork_child(const char *dir)
{
	/* As the exec runner's --expose-ro=DIR: the same messages. */
	struct sb_expose_rule rule = {.path = (char *)dir, .resolved = (char *)dir};

	if (!guard.enabled)
		return 0;
	return sb_files_expose(&rule);
}
