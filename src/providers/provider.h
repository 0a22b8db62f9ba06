/* SPDX-License-Identifier: MIT */
#pragma once

#include "diag.h"
#include "profile.h"
#include "util.h"

/* An os-sandbox provider: what it makes the kernel enforce, how it does so,
 * which <name>.<key> parameters it takes, and what --explain says of it. One
 * file per provider (src/providers/<name>.c defines sb_provider_<name>), one
 * line in src/profile/os-sandbox-list.h; nothing else asks which provider is
 * in use, only what it does (the flags) and its hooks.
 *
 * The launcher asks the selected provider to enter its boundary before the
 * interpreter starts; a provider that was named but cannot be applied makes
 * the launch fail, it never runs the program unprotected. */

struct sb_boundary;
struct sb_interp_paths;
struct sb_wrap_net;

/* What a wrapper provider's command line must run and keep (build_argv). */
struct sb_wrap_request {
	char *const *argv;   /* the inner python-sb: its binary, then its arguments */
	const int *keep_fds; /* descriptors the inner python-sb inherits */
	size_t n_keep_fds;
	const char *cwd; /* the program's working directory */
	/* The host's environment: where the wrapper's binary is looked up
	 * (PATH); the sandbox never sees it. */
	char *const *host_env;
	/* Out: a descriptor the command line names for the tool itself (not
	 * for the program), inheritable; the caller closes it once the tool
	 * started. Stays -1 when the tool needs none. */
	int *tool_fd;
	/* Out, for a tool that boots something first (qemu): the launching side
	 * kills the tool when the inner python-sb has not reported its start
	 * within *start_timeout_ms, or has not ended *run_timeout_ms after it
	 * (the inner supervisor's timeout= comes first; this is the backstop).
	 * 0: no limit. */
	unsigned long long *start_timeout_ms, *run_timeout_ms;
	/* Out: warnings for the user (the launcher prints them). */
	char ***warnings;
	/* Out: a network namespace the launching side sets up once the tool
	 * started (wrap-net.h), filled by build_argv with sb_wrap_net_prepare()
	 * when net= ALLOW rules need one; left as it is otherwise. */
	struct sb_wrap_net *net;
	bool explain; /* for --explain: no name resolved */
};

/* What the provider makes the kernel enforce. The Python guard enforces
 * every rule whatever the provider; these are the rules the kernel holds
 * against native code too. */
enum {
	/* Runs the program under another program (build_argv). Without it the
	 * provider confines this very process (prepare, enter). */
	SB_PROVIDER_WRAPS_EXEC = 1u << 0,
	SB_PROVIDER_FILES = 1u << 1,	     /* expose-*: every other path refused */
	SB_PROVIDER_NET_TCP_PORTS = 1u << 2, /* net=: the TCP ports of the ALLOW rules */
	SB_PROVIDER_SECCOMP = 1u << 3,	     /* the seccomp filter (seccomp-filter.h) */
	SB_PROVIDER_LIMITS = 1u << 4,	     /* limit-*, timeout */
	/* A <name>.<key> parameter that python-sb does not know is passed on to
	 * the wrapped program (--key=value, --key when empty); without it an
	 * unknown key is an error. */
	SB_PROVIDER_PARAMS_PASS_THROUGH = 1u << 5,
	/* No capability left, no_new_privs, user= (privileges.h). */
	SB_PROVIDER_PRIVILEGES = 1u << 6,
	/* enter() runs the program in a child of its own and returns 1 in the
	 * parent (a PID namespace needs an init): whoever forks per run (the
	 * fork server) cannot use it. */
	SB_PROVIDER_CHILD_PROCESS = 1u << 7,
	/* build_argv() copies the handover record's content into what the tool
	 * boots (qemu's initramfs): the record is written before it, so it can
	 * carry nothing build_argv() makes (no network handover). */
	SB_PROVIDER_RECORD_IN_IMAGE = 1u << 8,
};

/* What ignore= does to native code under this provider (spec section 8). */
enum sb_ignore_enforcement {
	SB_IGNORE_GUARD_ONLY, /* the kernel cannot hide a path: only the Python guard does */
	SB_IGNORE_VANISHES,   /* the path does not exist (ENOENT) */
	SB_IGNORE_REFUSED,    /* the kernel refuses access */
	SB_IGNORE_MASKED,     /* an empty placeholder is mounted over it */
};

/* One documented <name>.<key> parameter and the values it takes. */
struct sb_provider_param_def {
	const char *key;
	enum {
		SB_PARAM_TEXT,	  /* anything */
		SB_PARAM_BOOL,	  /* true/false, yes/no, on/off, 1/0 */
		SB_PARAM_CHOICE,  /* one of choices */
		SB_PARAM_MIB,	  /* an integer of MiB, at most one suffix k, M, G, T, P, E */
		SB_PARAM_SECONDS, /* a positive number of seconds */
		/* An option of the tool the provider stands for that it cannot
		 * honour (os-sandbox=unshare runs no unshare(1)): any value is
		 * an error saying why (refused). */
		SB_PARAM_REFUSED,
	} kind;
	const char *const *choices; /* SB_PARAM_CHOICE: NULL-terminated */
	/* The spec's leniency: a bad value is a warning naming this default,
	 * which then applies; NULL: a bad value is an error. */
	const char *fallback;
	const char *refused; /* SB_PARAM_REFUSED: why */
};

struct sb_provider {
	const char *name; /* as in os-sandbox-list.h */
	unsigned flags;	  /* SB_PROVIDER_* */
	enum sb_ignore_enforcement ignore;
	/* The documented parameters, ending with {NULL}; NULL: the provider
	 * takes none (a <name>.<key> line is an error). */
	const struct sb_provider_param_def *params;

	/* --explain. summary: beside os-sandbox=, what the kernel enforces.
	 * files, net: the layer named beside expose-* and net= rules, [0] with
	 * the Python guard, [1] with py-sandbox=false; NULL: the guard's alone. */
	const char *summary;
	const char *files_layer[2];
	const char *net_layer[2];

	/* 0 when this build and this machine can apply it; otherwise -errno and
	 * *reterr says why (malloc'ed). */
	int (*probe)(char **reterr);

	/* In-process providers; each hook may be NULL (nothing to do).
	 * prepare: fills the provider's part of the boundary from the profile
	 * and what the interpreter needs (interp may be NULL), as plain data (no
	 * system call but lookups); 0 or -ENOMEM.
	 * enter: applies it to this process, before the seccomp filter and the
	 * limits; what the kernel could not enforce goes to *warnings (strings
	 * for the user); 0, or -errno with *reterr, and then the program must
	 * not run.
	 * A provider that must run the program in a child of its own (a PID
	 * namespace needs one) returns 1 from enter in the parent, once that
	 * child has ended, with its wait status in *ret_status: the parent runs
	 * nothing of the program and reports that status as its own; the child
	 * returns 0 and goes on.
	 * explain: its part of --explain's kernel section.
	 * done: frees what prepare kept in b->provider_data. */
	int (*prepare)(struct sb_boundary *b, const struct sb_profile *p,
		       const struct sb_interp_paths *interp);
	int (*enter)(const struct sb_boundary *b, char ***warnings, int *ret_status, char **reterr);
	int (*explain)(const struct sb_boundary *b, struct sb_buf *out);
	void (*done)(struct sb_boundary *b);

	/* Wrapper providers (SB_PROVIDER_WRAPS_EXEC): the command line that
	 * runs req->argv (python-sb itself, re-entered: it then loads the
	 * seccomp filter and the limits, and runs the guard, as under an
	 * in-process provider) under the provider, with the profile's
	 * <name>.<key> parameters; the boundary comes from prepare. Called in
	 * the launching python-sb only, and by --explain. 0, or -errno with
	 * *reterr (then the program must not run). */
	int (*build_argv)(const struct sb_boundary *b, const struct sb_profile *p,
			  const struct sb_wrap_request *req, char ***ret_argv, char **reterr);
};

#define SB_OS_SANDBOX(id, name) extern const struct sb_provider sb_provider_##name;
#include "os-sandbox-list.h"
#undef SB_OS_SANDBOX

/* NULL for SB_OS_UNSET and SB_OS_AUTO (not providers) and out of range. */
const struct sb_provider *sb_provider_get(enum sb_os_sandbox id);

/* Resolves "auto" (and an absent os-sandbox line) to a provider that this
 * machine can apply; a provider named literally never falls back. Learning
 * always runs under subprocess, whatever was asked (spec section 6).
 * *ret_note (may be NULL on return) explains an auto or learning choice, for
 * --explain, and for a warning when *ret_warn (the kernel is the reason).
 * 0, or -errno with *reterr. */
int sb_provider_select(enum sb_os_sandbox requested, enum sb_rules_mode mode,
		       const struct sb_provider **ret, char **ret_note, bool *ret_warn,
		       char **reterr);

/* Checks every <name>.<key> line against its provider's parameters, whether
 * that provider is the one in use or not (a typo is one either way): errors
 * and warnings go to diags. 0, -EINVAL when it added an error, -ENOMEM. */
int sb_provider_check_params(const struct sb_profile *p, struct sb_diags *diags);

/* The probe of a provider this version does not have yet: naming it stops
 * the launch rather than quietly drop to a weaker one. */
int sb_provider_probe_not_built(char **reterr);

/* The landlock provider's check, apart for its unit test: whether a kernel
 * with this Landlock ABI can enforce the boundary (TCP port rules need ABI 4);
 * -EOPNOTSUPP with *reterr when it cannot. */
int sb_provider_landlock_check_abi(const struct sb_boundary *b, int abi, char **reterr);
