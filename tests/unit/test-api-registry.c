/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "api-registry.h"
#include "tap.h"
#include "util.h"

static const struct sb_origin origin = {"profile", 7};

/* Spot checks of the registry: every spelling, every category, the [new]
 * entries, and what must stay out. */
static const struct {
	const char *qualname;
	const char *category; /* NULL: must not be in the registry */
} lookups[] = {
    {"os.system", "process-exec"},
    {"posix.system", "process-exec"},
    {"os.popen", "process-exec"},
    {"os.execvpe", "process-exec"},
    {"posix.execve", "process-exec"},
    {"os.spawnlpe", "process-exec"},
    {"os.posix_spawnp", "process-exec"},
    {"posix.posix_spawn", "process-exec"},
    {"os.fork", "process-exec"},
    {"posix.forkpty", "process-exec"},
    {"subprocess.Popen", "process-exec"},
    {"subprocess.getstatusoutput", "process-exec"},
    {"subprocess._fork_exec", "process-exec"},
    {"_posixsubprocess.fork_exec", "process-exec"},
    {"pty.spawn", "process-exec"},
    {"pty.fork", "process-exec"},
    {"multiprocessing.Process.start", "process-exec"},
    {"multiprocessing.process.BaseProcess.start", "process-exec"},
    {"multiprocessing.context.SpawnProcess.start", "process-exec"},
    {"_interpreters.create", "process-exec"},
    {"os.kill", "process-control"},
    {"posix.killpg", "process-control"},
    {"os.abort", "process-control"},
    {"os.setpgrp", "process-control"},
    {"signal.alarm", "process-control"},
    {"_signal.alarm", "process-control"},
    {"signal.setitimer", "process-control"},
    {"_signal.raise_signal", "process-control"},
    {"signal.pthread_kill", "process-control"},
    {"resource.setrlimit", "process-control"},
    {"resource.prlimit", "process-control"},
    {"os.setuid", "privileges"},
    {"posix.setregid", "privileges"},
    {"os.setgroups", "privileges"},
    {"os.umask", "privileges"},
    {"os.setresuid", "privileges"},
    {"posix.setresgid", "privileges"},
    {"os.initgroups", "privileges"},
    {"os.unshare", "privileges"},
    {"posix.setns", "privileges"},
    {"_thread.start_new_thread", "threads"},
    {"_thread.start_new", "threads"},
    {"_thread.start_joinable_thread", "threads"},
    {"threading._start_joinable_thread", "threads"},
    {"threading._start_new_thread", "threads"},
    {"threading.Thread.start", "threads"},
    {"_thread.interrupt_main", "threads"},
    {"threading.settrace", "threads"},
    {"threading.setprofile", "threads"},
    {"threading.settrace_all_threads", "threads"},
    {"threading.setprofile_all_threads", "threads"},
    {"threading.stack_size", "threads"},
    {"_thread.stack_size", "threads"},
    {"ctypes.CDLL", "native"},
    {"ctypes.cast", "native"},
    {"ctypes.string_at", "native"},
    {"ctypes.wstring_at", "native"},
    {"importlib.reload", "introspection"},
    {"sys._getframe", "introspection"},
    {"sys._getframemodulename", "introspection"},
    {"sys._current_frames", "introspection"},
    {"sys._current_exceptions", "introspection"},
    {"sys.settrace", "introspection"},
    {"sys.setprofile", "introspection"},
    {"sys.addaudithook", "introspection"},
    {"sys.monitoring.use_tool_id", "introspection"},
    {"sys.remote_exec", "introspection"},
    {"gc.get_objects", "introspection"},
    {"gc.get_referrers", "introspection"},
    {"gc.get_referents", "introspection"},
    {"inspect.currentframe", "introspection"},
    {"inspect.stack", "introspection"},
    {"inspect.trace", "introspection"},
    {"faulthandler.enable", "introspection"},
    {"builtins.eval", "dynamic-code"},
    {"builtins.exec", "dynamic-code"},
    {"builtins.compile", "dynamic-code"},
    {"pickle.loads", "deserialization"},
    {"pickle.load", "deserialization"},
    {"_pickle.loads", "deserialization"},
    {"_pickle.load", "deserialization"},
    {"pickle._loads", "deserialization"},
    {"pickle._Unpickler", "deserialization"},
    /* out of the registry on purpose */
    {"os._exit", NULL},
    {"posix._exit", NULL},
    {"signal.signal", NULL},
    {"_signal.signal", NULL},
    {"pickle.Unpickler", NULL},
    {"os.chroot", NULL},
    {"nt.system", NULL},
    {"_winapi.CreateProcess", NULL},
    {"os.startfile", NULL},
    {"os.systemm", NULL},
    {"system", NULL},
    {"", NULL},
};

static void test_registry(void)
{
	size_t per_category[SB_API_CATEGORY__N] = {0};

	for (size_t i = 0; i < ELEMENTSOF(lookups); i++) {
		const struct sb_api_function *fn = sb_api_lookup(lookups[i].qualname);

		TAP_IS_STR(fn ? sb_api_category_name(fn->category) : NULL, lookups[i].category,
			   lookups[i].qualname);
	}

	tap_ok(sb_api_registry_size >= 140 && sb_api_registry_size <= 170,
	       "about 145 functions (%zu)", sb_api_registry_size);
	for (size_t i = 0; i < sb_api_registry_size; i++) {
		per_category[sb_api_registry[i].category]++;
		for (size_t j = i + 1; j < sb_api_registry_size; j++)
			if (streq(sb_api_registry[i].qualname, sb_api_registry[j].qualname))
				tap_ok(false, "duplicate %s", sb_api_registry[i].qualname);
	}
	for (size_t c = 0; c < SB_API_CATEGORY__N; c++)
		tap_ok(per_category[c] > 0, "category %s has functions (%zu)",
		       sb_api_category_name(c), per_category[c]);
	TAP_IS_INT(per_category[SB_API_DYNAMIC_CODE], 3, "dynamic-code is eval, exec, compile");

	/* Every os.X with a C twin posix.X is registered under both names, and
	 * the same for signal/_signal. */
	for (size_t i = 0; i < sb_api_registry_size; i++) {
		const char *q = sb_api_registry[i].qualname, *rest;
		char twin[128];

		if ((rest = startswith(q, "posix.")))
			snprintf(twin, sizeof(twin), "os.%s", rest);
		else if ((rest = startswith(q, "_signal.")))
			snprintf(twin, sizeof(twin), "signal.%s", rest);
		else if ((rest = startswith(q, "signal.")))
			snprintf(twin, sizeof(twin), "_signal.%s", rest);
		else
			continue;
		tap_ok(sb_api_lookup(twin) != NULL, "%s has its twin %s", q, twin);
	}
}

/* The compile-time ids and the index generated at build time
 * (src/tools/api-index-gen.c): each id names its own row, and the index is
 * every row once, in strcmp order, so that the binary search finds each
 * qualname at its own row and nothing else. */
static void test_ids_and_index(void)
{
	static const struct {
		const char *id;
		int value;
	} ids[] = {
#define SB_API(id, qualname, category) {#id, SB_API_FN_##id},
#include "api-registry-list.h"
#undef SB_API
	};
	bool seen[SB_API_FN__N] = {false}, ok = true;

	TAP_IS_INT(ELEMENTSOF(ids), sb_api_registry_size, "one id per row");
	TAP_IS_INT(SB_API_FN__N, sb_api_registry_size, "SB_API_FN__N is the registry's size");
	for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
		char expect[128];
		size_t k;

		for (k = 0; sb_api_registry[ids[i].value].qualname[k] && k + 1 < sizeof(expect);
		     k++)
			expect[k] = sb_api_registry[ids[i].value].qualname[k] == '.'
					? '_'
					: sb_api_registry[ids[i].value].qualname[k];
		expect[k] = '\0';
		ok = ok && ids[i].value == (int)i && streq(ids[i].id, expect);
	}
	tap_ok(ok, "every SB_API_FN_<id> is the row of <id> with dots as underscores");
	TAP_IS_STR(sb_api_registry[SB_API_FN_os_system].qualname, "os.system",
		   "SB_API_FN_os_system");
	TAP_IS_STR(sb_api_registry[SB_API_FN_pickle__Unpickler].qualname, "pickle._Unpickler",
		   "SB_API_FN_pickle__Unpickler");
	TAP_IS_STR(
	    sb_api_registry[SB_API_FN_multiprocessing_context_ForkServerProcess_start].qualname,
	    "multiprocessing.context.ForkServerProcess.start", "a long id");

	ok = true;
	for (size_t i = 0; i < SB_API_FN__N; i++) {
		unsigned row = sb_api_by_name[i];

		ok = ok && row < SB_API_FN__N && !seen[row];
		if (row < SB_API_FN__N)
			seen[row] = true;
		if (i > 0)
			ok = ok && strcmp(sb_api_registry[sb_api_by_name[i - 1]].qualname,
					  sb_api_registry[row].qualname) < 0;
	}
	tap_ok(ok, "sb_api_by_name is every row once, in strcmp order");
	ok = true;
	for (size_t i = 0; i < SB_API_FN__N; i++)
		ok = ok && sb_api_lookup(sb_api_registry[i].qualname) == &sb_api_registry[i];
	tap_ok(ok, "sb_api_lookup finds every qualname at its own row");
	/* Neighbours in strcmp order of the first and last names, and names
	 * that are a prefix or an extension of a registered one. */
	tap_ok(sb_api_lookup("_") == NULL, "before the first name");
	tap_ok(sb_api_lookup("~") == NULL, "after the last name");
	tap_ok(sb_api_lookup("os.syste") == NULL, "a prefix of a name");
	tap_ok(sb_api_lookup("os.system.x") == NULL, "an extension of a name");
	tap_ok(sb_api_lookup("OS.SYSTEM") == NULL, "names are case-sensitive");
}

static void test_categories(void)
{
	static const char *const names[] = {
	    "process-exec", "process-control", "privileges",   "threads",
	    "native",	    "introspection",   "dynamic-code", "deserialization",
	};

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		TAP_IS_STR(sb_api_category_name((enum sb_api_category)i), names[i],
			   "category name");
		TAP_IS_INT(sb_api_category_from_name(names[i]), i, names[i]);
	}
	TAP_IS_INT(sb_api_category_from_name("thread"), -EINVAL, "unknown category");
	TAP_IS_INT(sb_api_category_from_name("Threads"), -EINVAL, "categories are lower case");
	TAP_IS_STR(sb_api_category_name(SB_API_CATEGORY__N), NULL, "out-of-range category");
	TAP_IS_STR(sb_api_category_name((enum sb_api_category) - 1), NULL, "negative category");
}

struct parse_ok {
	const char *value;
	size_t n;
	bool deny;
	enum sb_api_target_kind kinds[3];
	const char *targets[3]; /* category name, qualname or "*" */
};

static const struct parse_ok parse_ok_cases[] = {
    {"ALLOW:threads", 1, false, {SB_API_TARGET_CATEGORY}, {"threads"}},
    {"DENY:os.system", 1, true, {SB_API_TARGET_FUNCTION}, {"os.system"}},
    {"ALLOW:*", 1, false, {SB_API_TARGET_ALL}, {"*"}},
    {"DENY:*", 1, true, {SB_API_TARGET_ALL}, {"*"}},
    {"ALLOW:os.system,posix.system",
     2,
     false,
     {SB_API_TARGET_FUNCTION, SB_API_TARGET_FUNCTION},
     {"os.system", "posix.system"}},
    {"ALLOW: threads , dynamic-code,  subprocess.Popen ",
     3,
     false,
     {SB_API_TARGET_CATEGORY, SB_API_TARGET_CATEGORY, SB_API_TARGET_FUNCTION},
     {"threads", "dynamic-code", "subprocess.Popen"}},
    {"  DENY : threading.settrace", 1, true, {SB_API_TARGET_FUNCTION}, {"threading.settrace"}},
};

static const char *target_name(const struct sb_api_rule *r)
{
	switch (r->kind) {
	case SB_API_TARGET_ALL:
		return "*";
	case SB_API_TARGET_CATEGORY:
		return sb_api_category_name(r->category);
	case SB_API_TARGET_FUNCTION:
		return r->function ? r->function->qualname : NULL;
	}
	return NULL;
}

static void test_parse_ok(void)
{
	for (size_t i = 0; i < ELEMENTSOF(parse_ok_cases); i++) {
		const struct parse_ok *c = &parse_ok_cases[i];
		_cleanup_free_ struct sb_api_rule *rules = NULL;
		_cleanup_free_ char *err = NULL;
		size_t n = 0;
		int r = sb_api_rule_parse(c->value, origin, &rules, &n, &err);
		bool ok = r == 0 && n == c->n && !err;

		for (size_t j = 0; ok && j < n; j++)
			ok = rules[j].deny == c->deny && rules[j].kind == c->kinds[j] &&
			     streq_ptr(target_name(&rules[j]), c->targets[j]) &&
			     rules[j].origin.line == 7 && streq(rules[j].origin.file, "profile");
		tap_ok(ok, "parse '%s' (r=%d n=%zu err=%s)", c->value, r, n, err ? err : "-");
	}

	/* Rules accumulate across lines. */
	{
		_cleanup_free_ struct sb_api_rule *rules = NULL;
		size_t n = 0;

		sb_api_rule_parse("ALLOW:threads", origin, &rules, &n, NULL);
		sb_api_rule_parse("DENY:os.system, os.fork", origin, &rules, &n, NULL);
		tap_ok(n == 3 && !rules[0].deny && rules[1].deny && rules[2].deny &&
			   streq(rules[2].function->qualname, "os.fork"),
		       "rules accumulate (n=%zu)", n);
	}
}

struct parse_bad {
	const char *value;
	const char *want[2]; /* key words of the message */
};

static const struct parse_bad parse_bad_cases[] = {
    /* spec §10 item 12 */
    {"ALLOW:threadz", {"unknown category 'threadz'", "closest known name is 'threads'"}},
    {"ALLOW:os.systemm", {"unknown function", "closest known name is 'os.system'"}},
    {"threads", {"missing action", "ALLOW"}},
    {"PERMIT:threads", {"unknown action 'PERMIT'", "ALLOW or DENY"}},
    {"ALLOW:threads,DENY:os.system", {"one action per line", "DENY:os.system"}},
    {"ALLOW:", {"empty target", NULL}},
    {"ALLOW:threads,", {"empty target", NULL}},
    {"", {"empty", "python-api="}},
    /* more */
    {"   ", {"empty", NULL}},
    {"allow:threads", {"unknown action 'allow'", "upper case"}},
    {":threads", {"unknown action ''", NULL}},
    {"ALLOW:threads,,native", {"empty target", NULL}},
    {"ALLOW:,threads", {"empty target", NULL}},
    {"ALLOW:threads, DENY", {"one action per line", NULL}},
    {"ALLOW:threads,ALLOW:native", {"one action per line", NULL}},
    {"DENY:subprocess.popen", {"closest known name is 'subprocess.Popen'", NULL}},
    {"ALLOW:proces-exec", {"closest known name is 'process-exec'", NULL}},
    {"ALLOW:pickle.Unpickler", {"unknown function", "pickle"}},
    {"ALLOW:os._exit", {"unknown function", NULL}},
    {"ALLOW:completely-unrelated-word", {"unknown category", "process-exec, process-control"}},
    {"ALLOW:threads,threadz", {"unknown category 'threadz'", NULL}},
    {"ALLOW:**", {"unknown category '**'", NULL}},
};

static void test_parse_bad(void)
{
	for (size_t i = 0; i < ELEMENTSOF(parse_bad_cases); i++) {
		const struct parse_bad *c = &parse_bad_cases[i];
		struct sb_api_rule *rules = NULL;
		_cleanup_free_ char *err = NULL;
		size_t n = 0;
		int r = sb_api_rule_parse(c->value, origin, &rules, &n, &err);
		bool ok = r == -EINVAL && err && n == 0 && !rules;

		for (size_t j = 0; ok && j < ELEMENTSOF(c->want) && c->want[j]; j++)
			ok = strstr(err, c->want[j]) != NULL;
		tap_ok(ok, "'python-api=%s' -> error (r=%d, \"%s\")", c->value, r,
		       err ? err : "(null)");
		free(rules);
	}

	/* A failing line leaves earlier rules alone and appends nothing. */
	{
		_cleanup_free_ struct sb_api_rule *rules = NULL;
		_cleanup_free_ char *err = NULL;
		size_t n = 0;

		int r;

		sb_api_rule_parse("ALLOW:threads", origin, &rules, &n, NULL);
		/* TAP_IS_INT evaluates its argument twice: call once. */
		r = sb_api_rule_parse("ALLOW:native,threadz", origin, &rules, &n, &err);
		TAP_IS_INT(r, -EINVAL, "bad second line");
		TAP_IS_INT(n, 1, "nothing appended by a bad line");
	}
	/* "not close enough" gives no suggestion rather than a silly one. */
	{
		_cleanup_free_ struct sb_api_rule *rules = NULL;
		_cleanup_free_ char *err = NULL;
		size_t n = 0;

		sb_api_rule_parse("ALLOW:zzzzzzzzzzzzzzzz", origin, &rules, &n, &err);
		tap_ok(err && !strstr(err, "closest"), "no suggestion for a far word: %s",
		       err ? err : "(null)");
	}
}

/* Decisions of spec §4 and §10 items 10-11. */
struct decision {
	const char *lines[3];
	const char *qualname;
	bool allowed;
	int decider; /* index of the deciding rule, -1 for the implicit default */
};

static const struct decision decisions[] = {
    {{NULL}, "os.system", false, -1},
    /* item 10 */
    {{"ALLOW:threads", "DENY:threading.settrace"}, "threading.settrace", false, 1},
    {{"ALLOW:threads", "DENY:threading.settrace"}, "threading.Thread.start", true, 0},
    {{"DENY:threading.settrace", "ALLOW:threads"}, "threading.settrace", false, 0},
    {{"DENY:threading.settrace", "ALLOW:threads"}, "threading.Thread.start", true, 1},
    {{"DENY:threads", "ALLOW:threading.settrace"}, "threading.settrace", true, 1},
    {{"DENY:threads", "ALLOW:threading.settrace"}, "threading.Thread.start", false, 0},
    {{"ALLOW:threading.settrace", "DENY:threads"}, "threading.settrace", true, 0},
    /* item 11 */
    {{"ALLOW:os.system", "DENY:os.system"}, "os.system", false, 1},
    {{"DENY:os.system", "ALLOW:os.system"}, "os.system", false, 0},
    {{"ALLOW:*", "DENY:os.system"}, "os.system", false, 1},
    {{"ALLOW:*", "DENY:os.system"}, "posix.system", true, 0},
    {{"ALLOW:*", "DENY:os.system"}, "pickle.loads", true, 0},
    {{"ALLOW:*", "DENY:*"}, "os.system", false, 1},
    {{"DENY:*", "ALLOW:*"}, "ctypes.cast", false, 0},
    /* §10 item 4 */
    {{"ALLOW:os.system,posix.system"}, "posix.system", true, 1},
    {{"ALLOW:os.system,posix.system"}, "os.popen", false, -1},
    /* category beats '*' */
    {{"DENY:*", "ALLOW:native"}, "ctypes.CDLL", true, 1},
    {{"ALLOW:*", "DENY:native"}, "ctypes.CDLL", false, 1},
    {{"ALLOW:native"}, "os.fork", false, -1},
    /* function beats category, whatever the action */
    {{"ALLOW:process-exec", "DENY:process-exec", "ALLOW:subprocess.Popen"},
     "subprocess.Popen",
     true,
     2},
    {{"ALLOW:process-exec", "DENY:process-exec", "ALLOW:subprocess.Popen"},
     "subprocess.run",
     false,
     1},
    {{"ALLOW:dynamic-code"}, "builtins.eval", true, 0},
};

static void test_decisions(void)
{
	for (size_t i = 0; i < ELEMENTSOF(decisions); i++) {
		const struct decision *d = &decisions[i];
		_cleanup_free_ struct sb_api_rule *rules = NULL;
		const struct sb_api_rule *decider = (const void *)1;
		const struct sb_api_function *fn = sb_api_lookup(d->qualname);
		size_t n = 0;
		bool allowed;
		int got_decider;

		for (size_t j = 0; j < ELEMENTSOF(d->lines) && d->lines[j]; j++)
			if (sb_api_rule_parse(d->lines[j], origin, &rules, &n, NULL) < 0)
				tap_ok(false, "line %s", d->lines[j]);
		if (!fn) {
			tap_ok(false, "%s in registry", d->qualname);
			continue;
		}
		allowed = sb_api_is_allowed(rules, n, fn, &decider);
		got_decider = decider ? (int)(decider - rules) : -1;
		/* A multi-target line gives several rules: map the rule index back
		 * to the line only for the single-target lines used above. */
		if (n > 0 && d->lines[0] && strchr(d->lines[0], ','))
			got_decider = decider ? (decider - rules < 2 ? 1 : 2) : -1;
		tap_ok(allowed == d->allowed && got_decider == d->decider,
		       "[%s | %s | %s] %s -> %s by rule %d (got %s by %d)",
		       d->lines[0] ? d->lines[0] : "", d->lines[1] ? d->lines[1] : "",
		       d->lines[2] ? d->lines[2] : "", d->qualname,
		       d->allowed ? "allowed" : "denied", d->decider,
		       allowed ? "allowed" : "denied", got_decider);
	}

	/* A function rule matches a registry row by identity and a function
	 * from elsewhere (a copy) by name; never another row. */
	{
		_cleanup_free_ struct sb_api_rule *rules = NULL;
		struct sb_api_function copy = sb_api_registry[SB_API_FN_os_system];
		const struct sb_api_function other = {"os.systemx", SB_API_PROCESS_EXEC};
		size_t n = 0;

		TAP_IS_INT(sb_api_rule_parse("ALLOW:os.system", origin, &rules, &n, NULL), 0,
			   "parse ALLOW:os.system");
		tap_ok(sb_api_is_allowed(rules, n, &sb_api_registry[SB_API_FN_os_system], NULL),
		       "the row itself");
		tap_ok(sb_api_is_allowed(rules, n, &copy, NULL), "a copy of the row, by name");
		tap_ok(!sb_api_is_allowed(rules, n, &sb_api_registry[SB_API_FN_posix_system], NULL),
		       "another row");
		tap_ok(!sb_api_is_allowed(rules, n, &other, NULL), "another name");

		/* A rule naming a copy still matches the row by name. */
		rules[0].function = &copy;
		tap_ok(sb_api_is_allowed(rules, n, &sb_api_registry[SB_API_FN_os_system], NULL),
		       "a rule naming a copy of the row");
		tap_ok(!sb_api_is_allowed(rules, n, &sb_api_registry[SB_API_FN_posix_system], NULL),
		       "a rule naming a copy, another row");
	}

	/* A NULL ret_rule is allowed. */
	{
		_cleanup_free_ struct sb_api_rule *rules = NULL;
		size_t n = 0;

		bool allowed;

		sb_api_rule_parse("ALLOW:threads", origin, &rules, &n, NULL);
		allowed = sb_api_is_allowed(rules, n, sb_api_lookup("_thread.start_new"), NULL);
		TAP_IS_INT(allowed, 1, "NULL ret_rule");
	}
	/* Every registry function is denied with no rules and allowed by ALLOW:*. */
	{
		_cleanup_free_ struct sb_api_rule *rules = NULL;
		size_t n = 0, n_denied = 0, n_allowed = 0;

		sb_api_rule_parse("ALLOW:*", origin, &rules, &n, NULL);
		for (size_t i = 0; i < sb_api_registry_size; i++) {
			n_denied += !sb_api_is_allowed(NULL, 0, &sb_api_registry[i], NULL);
			n_allowed += sb_api_is_allowed(rules, n, &sb_api_registry[i], NULL);
		}
		TAP_IS_INT(n_denied, sb_api_registry_size, "no rule: all denied");
		TAP_IS_INT(n_allowed, sb_api_registry_size, "ALLOW:*: all allowed");
	}
}

int main(void)
{
	test_registry();
	test_ids_and_index();
	test_categories();
	test_parse_ok();
	test_parse_bad();
	test_decisions();
	return tap_done();
}
