/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

/* The python-sb command line, split as CPython splits it (spec section 2):
 * everything before the first -c, -m, script or "--" is scanned; every
 * "--key[=value]" there that is not a CPython long option or one of ours is a
 * sandbox rule; CPython options are collected unchanged, in order, for the
 * embedded interpreter; what follows the command/module/script is untouched. */

enum sb_run_mode {
	SB_RUN_REPL,	/* no command: interactive (or stdin if not a tty) */
	SB_RUN_COMMAND, /* -c cmd */
	SB_RUN_MODULE,	/* -m mod */
	SB_RUN_SCRIPT,	/* path (or "-" for stdin) */
};

struct sb_cli {
	char **rules;		 /* "key=value" for each --key[=value]; "key=" without '=' */
	char *config_path;	 /* --pysandboxes-config FILE / --pysandboxes-config=FILE */
	bool explain;		 /* --explain: print the effective policy and exit */
	bool denials;		 /* --denials: list every refusal at exit */
	bool no_denials_summary; /* --no-denials-summary: no line at exit */
	/* --pysandboxes-no-learn: learning (a missing rule file, learn=) is an
	 * error; python-sb serve's runs (hidden) */
	bool no_learn;
	char *worker; /* --pysandboxes-worker=FD: serve partial-mode calls (hidden) */
	char *zygote; /* --pysandboxes-zygote=FD: python-sb serve's fork server (hidden) */
	/* --pysandboxes-inside=FD: started by python-sb itself under a wrapper
	 * provider, FD being the handover record (wrap.h; hidden). */
	char *inside;
	char *report;	   /* --report=FILE: write the run report there */
	char *report_fd;   /* --report-fd=N: write it to this inherited descriptor */
	bool help;	   /* -h, -?, --help */
	bool version;	   /* -V or --version (count in version_level) */
	int version_level; /* -V once: 1, -VV: 2 */

	/* argv for the embedded interpreter: argv[0] is the program name, then the
	 * CPython options exactly as given (e.g. "-I", "-W", "error", "-X", "dev"),
	 * then the mode ("-c" cmd / "-m" mod / script path) and its arguments. */
	char **python_argv;

	enum sb_run_mode mode;
	char *target; /* command text, module name or script path; NULL for REPL */

	/* CPython flags the launcher must know before the interpreter parses them. */
	bool isolated;	   /* -I */
	bool ignore_env;   /* -E (also set by -I) */
	bool no_user_site; /* -s (also set by -I) */
	bool safe_path;	   /* -P (also set by -I) */
	bool interactive;  /* -i */
	bool quiet;	   /* -q */
	bool no_site;	   /* -S */
};

/* Parses argv. Returns 0; -EINVAL for a usage error with *reterr set to the
 * message to print (for example "Argument expected for the -c option");
 * -ENOMEM. *ret is filled only on success. */
int sb_cli_parse(int argc, char *const *argv, struct sb_cli *ret, char **reterr);
void sb_cli_done(struct sb_cli *cli);
