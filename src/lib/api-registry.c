/* SPDX-License-Identifier: MIT */
#include "api-registry.h"

#include <stdarg.h>
#include <strings.h>

#include "util.h"

/* Linux only: the Windows spellings (nt.*, os.startfile, _winapi.CreateProcess)
 * are left out, since no profile for this launcher can run there. Every
 * function is listed under each name it can be reached by: a guard on os.system
 * alone is walked around with `import posix`. */
const struct sb_api_function sb_api_registry[] = {
    /* process-exec */
    {"os.system", SB_API_PROCESS_EXEC},
    {"posix.system", SB_API_PROCESS_EXEC},
    {"os.popen", SB_API_PROCESS_EXEC},
    {"os.execv", SB_API_PROCESS_EXEC},
    {"posix.execv", SB_API_PROCESS_EXEC},
    {"os.execve", SB_API_PROCESS_EXEC},
    {"posix.execve", SB_API_PROCESS_EXEC},
    {"os.execl", SB_API_PROCESS_EXEC},
    {"os.execle", SB_API_PROCESS_EXEC},
    {"os.execlp", SB_API_PROCESS_EXEC},
    {"os.execlpe", SB_API_PROCESS_EXEC},
    {"os.execvp", SB_API_PROCESS_EXEC},
    {"os.execvpe", SB_API_PROCESS_EXEC},
    {"os.spawnv", SB_API_PROCESS_EXEC},
    {"os.spawnve", SB_API_PROCESS_EXEC},
    {"os.spawnvp", SB_API_PROCESS_EXEC},
    {"os.spawnvpe", SB_API_PROCESS_EXEC},
    {"os.spawnl", SB_API_PROCESS_EXEC},
    {"os.spawnle", SB_API_PROCESS_EXEC},
    {"os.spawnlp", SB_API_PROCESS_EXEC},
    {"os.spawnlpe", SB_API_PROCESS_EXEC},
    {"os.posix_spawn", SB_API_PROCESS_EXEC},
    {"posix.posix_spawn", SB_API_PROCESS_EXEC},
    {"os.posix_spawnp", SB_API_PROCESS_EXEC},
    {"posix.posix_spawnp", SB_API_PROCESS_EXEC},
    {"os.fork", SB_API_PROCESS_EXEC},
    {"posix.fork", SB_API_PROCESS_EXEC},
    {"os.forkpty", SB_API_PROCESS_EXEC},
    {"posix.forkpty", SB_API_PROCESS_EXEC},
    {"subprocess.Popen", SB_API_PROCESS_EXEC},
    {"subprocess.run", SB_API_PROCESS_EXEC},
    {"subprocess.call", SB_API_PROCESS_EXEC},
    {"subprocess.check_call", SB_API_PROCESS_EXEC},
    {"subprocess.check_output", SB_API_PROCESS_EXEC},
    {"subprocess.getoutput", SB_API_PROCESS_EXEC},
    {"subprocess.getstatusoutput", SB_API_PROCESS_EXEC},
    /* subprocess keeps its own reference to fork_exec (3.13+). */
    {"subprocess._fork_exec", SB_API_PROCESS_EXEC},
    {"_posixsubprocess.fork_exec", SB_API_PROCESS_EXEC},
    {"pty.spawn", SB_API_PROCESS_EXEC},
    {"pty.fork", SB_API_PROCESS_EXEC},
    {"multiprocessing.Process.start", SB_API_PROCESS_EXEC},
    /* get_context("spawn").Process derives from BaseProcess, not from
     * multiprocessing.Process: the context classes need their own names. */
    {"multiprocessing.process.BaseProcess.start", SB_API_PROCESS_EXEC},
    {"multiprocessing.context.Process.start", SB_API_PROCESS_EXEC},
    {"multiprocessing.context.ForkProcess.start", SB_API_PROCESS_EXEC},
    {"multiprocessing.context.SpawnProcess.start", SB_API_PROCESS_EXEC},
    {"multiprocessing.context.ForkServerProcess.start", SB_API_PROCESS_EXEC},
    /* Subinterpreters: _xxsubinterpreters (3.11-3.12), _interpreters (3.13+),
     * concurrent.interpreters (3.14). */
    {"_xxsubinterpreters.create", SB_API_PROCESS_EXEC},
    {"_interpreters.create", SB_API_PROCESS_EXEC},
    {"concurrent.interpreters.create", SB_API_PROCESS_EXEC},

    /* process-control; os._exit is absent on purpose (it only ends the
     * calling process, and the framework needs it), and so is signal.signal
     * (installing a handler emits nothing). */
    {"os.kill", SB_API_PROCESS_CONTROL},
    {"posix.kill", SB_API_PROCESS_CONTROL},
    {"os.killpg", SB_API_PROCESS_CONTROL},
    {"posix.killpg", SB_API_PROCESS_CONTROL},
    {"os.nice", SB_API_PROCESS_CONTROL},
    {"posix.nice", SB_API_PROCESS_CONTROL},
    {"os.setpriority", SB_API_PROCESS_CONTROL},
    {"posix.setpriority", SB_API_PROCESS_CONTROL},
    {"os.abort", SB_API_PROCESS_CONTROL},
    {"posix.abort", SB_API_PROCESS_CONTROL},
    {"os.setsid", SB_API_PROCESS_CONTROL},
    {"posix.setsid", SB_API_PROCESS_CONTROL},
    {"os.setpgid", SB_API_PROCESS_CONTROL},
    {"posix.setpgid", SB_API_PROCESS_CONTROL},
    {"os.setpgrp", SB_API_PROCESS_CONTROL},
    {"posix.setpgrp", SB_API_PROCESS_CONTROL},
    {"signal.alarm", SB_API_PROCESS_CONTROL},
    {"_signal.alarm", SB_API_PROCESS_CONTROL},
    {"signal.setitimer", SB_API_PROCESS_CONTROL},
    {"_signal.setitimer", SB_API_PROCESS_CONTROL},
    {"signal.raise_signal", SB_API_PROCESS_CONTROL},
    {"_signal.raise_signal", SB_API_PROCESS_CONTROL},
    {"signal.pthread_kill", SB_API_PROCESS_CONTROL},
    {"_signal.pthread_kill", SB_API_PROCESS_CONTROL},
    {"resource.setrlimit", SB_API_PROCESS_CONTROL},
    {"resource.prlimit", SB_API_PROCESS_CONTROL},

    /* privileges; chroot is a file-system operation, judged by the file guard. */
    {"os.setuid", SB_API_PRIVILEGES},
    {"posix.setuid", SB_API_PRIVILEGES},
    {"os.setgid", SB_API_PRIVILEGES},
    {"posix.setgid", SB_API_PRIVILEGES},
    {"os.seteuid", SB_API_PRIVILEGES},
    {"posix.seteuid", SB_API_PRIVILEGES},
    {"os.setegid", SB_API_PRIVILEGES},
    {"posix.setegid", SB_API_PRIVILEGES},
    {"os.setreuid", SB_API_PRIVILEGES},
    {"posix.setreuid", SB_API_PRIVILEGES},
    {"os.setregid", SB_API_PRIVILEGES},
    {"posix.setregid", SB_API_PRIVILEGES},
    {"os.setresuid", SB_API_PRIVILEGES},
    {"posix.setresuid", SB_API_PRIVILEGES},
    {"os.setresgid", SB_API_PRIVILEGES},
    {"posix.setresgid", SB_API_PRIVILEGES},
    {"os.setgroups", SB_API_PRIVILEGES},
    {"posix.setgroups", SB_API_PRIVILEGES},
    {"os.initgroups", SB_API_PRIVILEGES},
    {"posix.initgroups", SB_API_PRIVILEGES},
    {"os.umask", SB_API_PRIVILEGES},
    {"posix.umask", SB_API_PRIVILEGES},
    {"os.unshare", SB_API_PRIVILEGES},
    {"posix.unshare", SB_API_PRIVILEGES},
    {"os.setns", SB_API_PRIVILEGES},
    {"posix.setns", SB_API_PRIVILEGES},

    /* threads; the launch primitive moved in 3.13 (threading._start_new_thread
     * became threading._start_joinable_thread): both are listed so that a
     * profile stays portable across 3.11-3.14. */
    {"_thread.start_new_thread", SB_API_THREADS},
    {"_thread.start_new", SB_API_THREADS},
    {"_thread.start_joinable_thread", SB_API_THREADS},
    {"threading._start_joinable_thread", SB_API_THREADS},
    {"threading._start_new_thread", SB_API_THREADS},
    {"threading.Thread.start", SB_API_THREADS},
    {"_thread.interrupt_main", SB_API_THREADS},
    {"threading.settrace", SB_API_THREADS},
    {"threading.setprofile", SB_API_THREADS},
    {"threading.settrace_all_threads", SB_API_THREADS},
    {"threading.setprofile_all_threads", SB_API_THREADS},
    {"sys._settraceallthreads", SB_API_THREADS},
    {"sys._setprofileallthreads", SB_API_THREADS},
    {"threading.stack_size", SB_API_THREADS},
    {"_thread.stack_size", SB_API_THREADS},

    /* native; ctypes.PyDLL inherits CDLL.__init__, so CDLL covers it. */
    {"ctypes.CDLL", SB_API_NATIVE},
    {"ctypes.cast", SB_API_NATIVE},
    {"ctypes.string_at", SB_API_NATIVE},
    {"ctypes.wstring_at", SB_API_NATIVE},

    /* introspection */
    {"importlib.reload", SB_API_INTROSPECTION},
    {"sys._getframe", SB_API_INTROSPECTION},
    {"sys._getframemodulename", SB_API_INTROSPECTION},
    {"sys._current_frames", SB_API_INTROSPECTION},
    {"sys._current_exceptions", SB_API_INTROSPECTION},
    {"sys.settrace", SB_API_INTROSPECTION},
    {"sys.setprofile", SB_API_INTROSPECTION},
    {"sys.addaudithook", SB_API_INTROSPECTION},
    {"sys.monitoring.use_tool_id", SB_API_INTROSPECTION},
    {"sys.monitoring.register_callback", SB_API_INTROSPECTION},
    {"sys.monitoring.set_events", SB_API_INTROSPECTION},
    {"sys.monitoring.set_local_events", SB_API_INTROSPECTION},
    {"sys.remote_exec", SB_API_INTROSPECTION},
    {"gc.get_objects", SB_API_INTROSPECTION},
    {"gc.get_referrers", SB_API_INTROSPECTION},
    {"gc.get_referents", SB_API_INTROSPECTION},
    {"inspect.currentframe", SB_API_INTROSPECTION},
    {"inspect.stack", SB_API_INTROSPECTION},
    {"inspect.trace", SB_API_INTROSPECTION},
    {"faulthandler.enable", SB_API_INTROSPECTION},

    /* dynamic-code: registered so that ALLOW:dynamic-code can be written,
     * but enforced by the eval guard. */
    {"builtins.eval", SB_API_DYNAMIC_CODE},
    {"builtins.exec", SB_API_DYNAMIC_CODE},
    {"builtins.compile", SB_API_DYNAMIC_CODE},

    /* deserialization; pickle.Unpickler is an immutable C type and cannot be
     * guarded, the pure-Python _Unpickler can. */
    {"pickle.loads", SB_API_DESERIALIZATION},
    {"pickle.load", SB_API_DESERIALIZATION},
    {"_pickle.loads", SB_API_DESERIALIZATION},
    {"_pickle.load", SB_API_DESERIALIZATION},
    {"pickle._loads", SB_API_DESERIALIZATION},
    {"pickle._load", SB_API_DESERIALIZATION},
    {"pickle._Unpickler", SB_API_DESERIALIZATION},
};

const size_t sb_api_registry_size = ELEMENTSOF(sb_api_registry);

static const char *const sb_api_category_names[SB_API_CATEGORY__N] = {
    [SB_API_PROCESS_EXEC] = "process-exec",
    [SB_API_PROCESS_CONTROL] = "process-control",
    [SB_API_PRIVILEGES] = "privileges",
    [SB_API_THREADS] = "threads",
    [SB_API_NATIVE] = "native",
    [SB_API_INTROSPECTION] = "introspection",
    [SB_API_DYNAMIC_CODE] = "dynamic-code",
    [SB_API_DESERIALIZATION] = "deserialization",
};

const char *sb_api_category_name(enum sb_api_category c)
{
	if ((unsigned)c >= SB_API_CATEGORY__N)
		return NULL;
	return sb_api_category_names[c];
}

int sb_api_category_from_name(const char *name)
{
	for (size_t i = 0; i < SB_API_CATEGORY__N; i++)
		if (streq(sb_api_category_names[i], name))
			return (int)i;
	return -EINVAL;
}

static int cmp_qualname(const void *a, const void *b)
{
	return strcmp((*(const struct sb_api_function *const *)a)->qualname,
		      (*(const struct sb_api_function *const *)b)->qualname);
}

const struct sb_api_function *sb_api_lookup(const char *qualname)
{
	/* A sorted index, built once: the guard looks up every wrapped name at
	 * start-up, and a linear scan of the registry for each showed up as 1 %
	 * of a `-c pass` run. Single-threaded by construction (the launcher
	 * prepares its guard before any thread exists). */
	static const struct sb_api_function *index[512];
	static size_t n_index;
	const struct sb_api_function key = {.qualname = qualname}, *kp = &key, **found;

	if (n_index == 0 && sb_api_registry_size <= ELEMENTSOF(index)) {
		for (size_t i = 0; i < sb_api_registry_size; i++)
			index[i] = &sb_api_registry[i];
		qsort(index, sb_api_registry_size, sizeof(index[0]), cmp_qualname);
		n_index = sb_api_registry_size;
	}
	if (n_index == 0) {
		for (size_t i = 0; i < sb_api_registry_size; i++)
			if (streq(sb_api_registry[i].qualname, qualname))
				return &sb_api_registry[i];
		return NULL;
	}
	found = bsearch(&kp, index, n_index, sizeof(index[0]), cmp_qualname);
	return found ? *found : NULL;
}

/* "closest known name is 'threads'" over the categories and every qualname;
 * NULL when nothing is close enough to be a plausible typo. */
static const char *sb_api_closest(const char *target)
{
	_cleanup_free_ const char **names = NULL;
	size_t n = 0, max_distance = strlen(target) / 3 + 1;

	names = malloc((SB_API_CATEGORY__N + sb_api_registry_size) * sizeof(*names));
	if (!names)
		return NULL;
	for (size_t i = 0; i < SB_API_CATEGORY__N; i++)
		names[n++] = sb_api_category_names[i];
	for (size_t i = 0; i < sb_api_registry_size; i++)
		names[n++] = sb_api_registry[i].qualname;
	if (max_distance < 2)
		max_distance = 2;
	return sb_closest_name(target, names, n, max_distance);
}

static int sb_api_unknown_target(const char *value, const char *target, char **reterr)
{
	const char *closest = sb_api_closest(target);
	/* A dotted name can only be meant as a function; a bare one as a category. */
	const char *what =
	    strchr(target, '.') ? "function (not in the sensitive-API registry)" : "category";

	if (closest)
		return sb_error(reterr, -EINVAL,
				"in 'python-api=%s': unknown %s '%s', closest known name "
				"is '%s'",
				value, what, target, closest);
	return sb_error(reterr, -EINVAL,
			"in 'python-api=%s': unknown %s '%s'; the categories are process-exec, "
			"process-control, privileges, threads, native, introspection, "
			"dynamic-code and deserialization",
			value, what, target);
}

static bool sb_api_is_action_word(const char *s)
{
	return strcasecmp(s, "ALLOW") == 0 || strcasecmp(s, "DENY") == 0;
}

int sb_api_rule_parse(const char *value, struct sb_origin origin, struct sb_api_rule **rules,
		      size_t *n_rules, char **reterr)
{
	_cleanup_free_ char *copy = NULL;
	_cleanup_free_ struct sb_api_rule *parsed = NULL;
	struct sb_api_rule *grown;
	char *text, *colon, *action, *targets;
	size_t n_parsed = 0, cap;
	bool deny;

	copy = strdup(value ? value : "");
	if (!copy)
		return -ENOMEM;
	text = sb_strstrip(copy);
	if (!*text)
		return sb_error(reterr, -EINVAL,
				"empty 'python-api=' value, expected ALLOW:<targets> or "
				"DENY:<targets>");

	colon = strchr(text, ':');
	if (!colon)
		return sb_error(reterr, -EINVAL,
				"in 'python-api=%s': missing action, expected the form "
				"ALLOW:<targets> or DENY:<targets>",
				text);
	*colon = '\0';
	action = sb_strstrip(text);
	targets = colon + 1;
	/* Upper case only, as the reference implementation: "allow" is most
	 * likely a typo of the keyword, and the message says how to fix it. */
	if (streq(action, "ALLOW"))
		deny = false;
	else if (streq(action, "DENY"))
		deny = true;
	else
		return sb_error(reterr, -EINVAL,
				"in 'python-api=%s:%s': unknown action '%s', expected ALLOW or "
				"DENY (upper case)",
				action, targets, action);

	cap = 1;
	for (const char *p = targets; *p; p++)
		if (*p == ',')
			cap++;
	parsed = calloc(cap, sizeof(*parsed));
	if (!parsed)
		return -ENOMEM;

	for (char *item = targets, *next; item; item = next) {
		struct sb_api_rule rule = {.deny = deny, .origin = origin};
		char *target;
		int c;

		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		target = sb_strstrip(item);
		if (!*target)
			return sb_error(reterr, -EINVAL,
					"in 'python-api=%s': empty target; list categories or "
					"functions separated by commas",
					value);
		/* "ALLOW:threads,DENY:os.system" would silently grant or refuse
		 * the wrong thing if the second half were read as a name. */
		if (strchr(target, ':') || sb_api_is_action_word(target))
			return sb_error(reterr, -EINVAL,
					"in 'python-api=%s': one action per line, do not mix "
					"ALLOW and DENY; put '%s' on a python-api= line of its own",
					value, target);
		if (streq(target, "*")) {
			rule.kind = SB_API_TARGET_ALL;
		} else if ((c = sb_api_category_from_name(target)) >= 0) {
			rule.kind = SB_API_TARGET_CATEGORY;
			rule.category = (enum sb_api_category)c;
		} else if ((rule.function = sb_api_lookup(target))) {
			rule.kind = SB_API_TARGET_FUNCTION;
			rule.category = rule.function->category;
		} else {
			return sb_api_unknown_target(value, target, reterr);
		}
		parsed[n_parsed++] = rule;
	}

	/* Nothing is appended unless the whole line is valid. */
	grown = realloc(*rules, (*n_rules + n_parsed) * sizeof(**rules));
	if (!grown)
		return -ENOMEM;
	memcpy(grown + *n_rules, parsed, n_parsed * sizeof(*parsed));
	*rules = grown;
	*n_rules += n_parsed;
	return 0;
}

static unsigned sb_api_rule_specificity(const struct sb_api_rule *rule,
					const struct sb_api_function *fn)
{
	switch (rule->kind) {
	case SB_API_TARGET_FUNCTION:
		return rule->function && (rule->function == fn ||
					  streq(rule->function->qualname, fn->qualname))
			   ? 3
			   : 0;
	case SB_API_TARGET_CATEGORY:
		return rule->category == fn->category ? 2 : 0;
	case SB_API_TARGET_ALL:
		return 1;
	}
	return 0;
}

bool sb_api_is_allowed(const struct sb_api_rule *rules, size_t n_rules,
		       const struct sb_api_function *fn, const struct sb_api_rule **ret_rule)
{
	const struct sb_api_rule *decider = NULL;
	unsigned best = 0;

	/* Line order never matters: the most specific matching rule decides, and
	 * among equally specific ones a DENY beats an ALLOW. */
	for (size_t i = 0; i < n_rules; i++) {
		unsigned s = sb_api_rule_specificity(&rules[i], fn);

		if (s == 0 || s < best)
			continue;
		if (s > best || (rules[i].deny && !decider->deny)) {
			best = s;
			decider = &rules[i];
		}
	}
	if (ret_rule)
		*ret_rule = decider;
	return decider && !decider->deny;
}
