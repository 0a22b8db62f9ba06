/* SPDX-License-Identifier: MIT */
/* The API guard's tables (src/guard/guard-api-table.h): the module lookup the
 * wrappers find modules by, and each wrapped function against the registry
 * line whose rules decide it. */
#include <string.h>

#include "guard-api-table.h"
#include "tap.h"
#include "util.h"

static void test_module_lookup(void)
{
	static const char *const absent[] = {
	    "", "o", "osx", "multiprocessing", "multiprocessing.contextx", "zzz", "_", "Os",
	};
	bool all = true;

	for (int m = 0; m < SB_API_M__N; m++)
		if (sb_api_module_id(sb_api_module_names[m]) != m) {
			tap_diag("'%s' is not found at its id %d", sb_api_module_names[m], m);
			all = false;
		}
	tap_ok(all, "every module of the table is found at its id");
	for (size_t i = 0; i < ELEMENTSOF(absent); i++)
		tap_ok(sb_api_module_id(absent[i]) == -1, "'%s' holds nothing guarded", absent[i]);
}

/* The registry line of a wrapped function is its own: module.attr (a method:
 * module.cls.attr, or module.cls for a constructor), and its alias another
 * line. */
static void test_wraps_match_the_registry(void)
{
	bool names = true, aliases = true, classes = true, hooks = true;

	for (size_t i = 0; i < SB_API_N_WRAPS; i++) {
		const struct sb_api_wrap *w = &sb_api_wraps[i];
		char want[256], want_cls[256];
		const char *q;

		if (w->fn == SB_API_NO_FN) {
			hooks = hooks && (w->flags & (SB_API_F_IMP_HOOK | SB_API_F_AFTER_IMPORT));
			continue;
		}
		q = sb_api_registry[w->fn].qualname;
		snprintf(want, sizeof(want), "%s.%s%s%s", sb_api_module_names[w->module],
			 w->cls ? w->cls : "", w->cls ? "." : "", w->attr);
		snprintf(want_cls, sizeof(want_cls), "%s.%s", sb_api_module_names[w->module],
			 w->cls ? w->cls : "");
		if (!streq(q, want) && !(w->cls && streq(q, want_cls))) {
			tap_diag("the wrap of %s is decided by '%s'", want, q);
			names = false;
		}
		if (w->alias != SB_API_NO_FN && w->alias == w->fn) {
			tap_diag("%s is its own alias", q);
			aliases = false;
		}
		/* _imp's create step installs a module's functions before anyone
		 * sees it; a class would need the after-import scan. */
		if (w->cls && sb_api_module_made_by_imp[w->module]) {
			tap_diag("%s is a method of a module only _imp makes", q);
			classes = false;
		}
	}
	tap_ok(names, "every wrapped function is decided by its own registry line");
	tap_ok(aliases, "no wrapped function is its own alias");
	tap_ok(classes, "no wrapped method belongs to a module only _imp makes");
	tap_ok(hooks, "a wrap without a registry function is an import hook");
}

int main(void)
{
	test_module_lookup();
	test_wraps_match_the_registry();
	return tap_done();
}
