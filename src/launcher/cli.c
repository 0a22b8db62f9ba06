/* SPDX-License-Identifier: MIT */
/* The python-sb command line (spec section 2).
 *
 * The scan follows CPython's own getopt (Python/getopt.c and config_parse_cmdline() in
 * Python/initconfig.c, 3.11 to 3.13) so that python-sb splits a command line exactly where the
 * embedded interpreter will: short flags may be clustered, -c/-m/-W/-X take their value attached
 * or as the next element, -c/-m end the scan, "--" ends it before the script, and a lone "-" is
 * the script read from stdin. Anything that disagrees with CPython here would let a sandbox rule
 * and a program argument be confused, so the messages are CPython's too.
 *
 * Pure parsing: no printing, no exit, no syscalls; main() reports *reterr once. */

#include <stdarg.h>
#include <stddef.h>

#include "cli.h"
#include "util.h"

enum {
	OPT_ARG = 1u << 0,     /* takes a value: attached (-Wignore) or the next element */
	OPT_LAST = 1u << 1,    /* -c/-m: the value is the target, the rest is the program's */
	OPT_OURS = 1u << 2,    /* python-sb's own: never handed to CPython */
	OPT_HELP = 1u << 3,    /* our usage; CPython too stops scanning at -h */
	OPT_VERSION = 1u << 4, /* counted: -VV also prints the build details */
	OPT_CONFIG = 1u << 5,  /* --pysandboxes-config */
	OPT_EXPLAIN = 1u << 6, /* --explain */
	OPT_WORKER = 1u << 7,  /* --pysandboxes-worker: the pysandboxes package's worker */

	/* CPython flags the launcher must know before the interpreter parses them. */
	OPT_ISOLATED = 1u << 8,
	OPT_IGNORE_ENV = 1u << 9,
	OPT_NO_USER_SITE = 1u << 10,
	OPT_SAFE_PATH = 1u << 11,
	OPT_INTERACTIVE = 1u << 12,
	OPT_QUIET = 1u << 13,
	OPT_NO_SITE = 1u << 14,
	OPT_REPORT = 1u << 15,	  /* --report=FILE: the run report (docs/report.md) */
	OPT_REPORT_FD = 1u << 16, /* --report-fd=N: the same, to a descriptor */
	OPT_ZYGOTE = 1u << 17,	  /* --pysandboxes-zygote=FD: python-sb serve's fork server */
	OPT_DENIALS = 1u << 18,	  /* --denials: every refusal listed at exit */
	OPT_NO_DENIALS_SUMMARY = 1u << 19, /* --no-denials-summary */
	OPT_INSIDE = 1u << 20,	 /* --pysandboxes-inside: re-entered under a wrapper provider */
	OPT_NO_LEARN = 1u << 21, /* --pysandboxes-no-learn: a missing rule file is an error */
};

/* CPython's SHORT_OPTS ("bBc:dEhiIJm:OPqRsStuvVW:xX:?"). 't' is still accepted, and ignored, by
 * 3.11-3.13, so it is passed through rather than refused; 'J' gets its own message. */
static const struct short_opt {
	char letter;
	unsigned flags;
} short_opts[] = {
    {'b', 0},
    {'B', 0},
    {'c', OPT_ARG | OPT_LAST},
    {'d', 0},
    {'E', OPT_IGNORE_ENV},
    {'h', OPT_OURS | OPT_HELP},
    {'i', OPT_INTERACTIVE},
    /* -I is -E -s -P plus isolation, as in CPython's config. */
    {'I', OPT_ISOLATED | OPT_IGNORE_ENV | OPT_NO_USER_SITE | OPT_SAFE_PATH},
    {'m', OPT_ARG | OPT_LAST},
    {'O', 0},
    {'P', OPT_SAFE_PATH},
    {'q', OPT_QUIET},
    {'R', 0},
    {'s', OPT_NO_USER_SITE},
    {'S', OPT_NO_SITE},
    {'t', 0},
    {'u', 0},
    {'v', 0},
    {'V', OPT_OURS | OPT_VERSION},
    {'W', OPT_ARG},
    {'x', 0},
    {'X', OPT_ARG},
    {'?', OPT_OURS | OPT_HELP},
};

/* CPython's long options and ours. Every other "--key[=value]" is a sandbox rule. */
static const struct long_opt {
	const char *name;
	unsigned flags;
} long_opts[] = {
    {"help", OPT_OURS | OPT_HELP},
    {"version", OPT_OURS | OPT_VERSION},
    {"help-env", 0},
    {"help-xoptions", 0},
    {"help-all", 0},
    {"check-hash-based-pycs", OPT_ARG},
    {"pysandboxes-config", OPT_ARG | OPT_OURS | OPT_CONFIG},
    {"explain", OPT_OURS | OPT_EXPLAIN},
    {"pysandboxes-worker", OPT_ARG | OPT_OURS | OPT_WORKER},
    {"pysandboxes-zygote", OPT_ARG | OPT_OURS | OPT_ZYGOTE},
    {"pysandboxes-inside", OPT_ARG | OPT_OURS | OPT_INSIDE},
    {"report", OPT_ARG | OPT_OURS | OPT_REPORT},
    {"report-fd", OPT_ARG | OPT_OURS | OPT_REPORT_FD},
    {"denials", OPT_OURS | OPT_DENIALS},
    {"no-denials-summary", OPT_OURS | OPT_NO_DENIALS_SUMMARY},
    {"pysandboxes-no-learn", OPT_OURS | OPT_NO_LEARN},
};

static const struct {
	unsigned flag;
	size_t offset;
} flag_fields[] = {
    {OPT_ISOLATED, offsetof(struct sb_cli, isolated)},
    {OPT_IGNORE_ENV, offsetof(struct sb_cli, ignore_env)},
    {OPT_NO_USER_SITE, offsetof(struct sb_cli, no_user_site)},
    {OPT_SAFE_PATH, offsetof(struct sb_cli, safe_path)},
    {OPT_INTERACTIVE, offsetof(struct sb_cli, interactive)},
    {OPT_QUIET, offsetof(struct sb_cli, quiet)},
    {OPT_NO_SITE, offsetof(struct sb_cli, no_site)},
};

/* What a scanned argv element means for the scan. */
enum scan_result {
	SCAN_CONTINUE,
	SCAN_STOP, /* -c/-m took the target, or help was asked: the rest is not ours */
};

struct parser {
	int argc;
	char *const *argv;
	int i; /* the element being scanned; options with a value advance it */
	unsigned flags;
	struct sb_cli cli;
	char **reterr;
};

static void parser_done(struct parser *p)
{
	sb_cli_done(&p->cli);
}

static int usage_error(struct parser *p, const char *fmt, ...) _printf_(2, 3);
static int usage_error(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	if (p->reterr)
		*p->reterr = msg;
	else
		free(msg);
	return -EINVAL;
}

static const struct short_opt *find_short(char c)
{
	for (size_t k = 0; k < ELEMENTSOF(short_opts); k++)
		if (short_opts[k].letter == c)
			return &short_opts[k];
	return NULL;
}

static const struct long_opt *find_long(const char *name, size_t len)
{
	for (size_t k = 0; k < ELEMENTSOF(long_opts); k++)
		if (strlen(long_opts[k].name) == len && strncmp(long_opts[k].name, name, len) == 0)
			return &long_opts[k];
	return NULL;
}

/* The value of an OPT_ARG option whose value was not attached: the next element, whatever it
 * looks like ("-W --learn" gives -W the value "--learn"), as getopt does. */
static const char *next_value(struct parser *p)
{
	if (p->i + 1 >= p->argc)
		return NULL;
	return p->argv[++p->i];
}

static int set_target(struct parser *p, char letter, const char *value)
{
	p->cli.mode = letter == 'c' ? SB_RUN_COMMAND : SB_RUN_MODULE;
	p->cli.target = strdup(value);
	return p->cli.target ? 0 : -ENOMEM;
}

/* Hands the rebuilt cluster kept[0..n) on to CPython. */
static int push_kept(struct parser *p, char **kept, size_t n)
{
	(*kept)[n] = '\0';
	return sb_strv_consume(&p->cli.python_argv, TAKE_PTR(*kept));
}

/* One "-abc" cluster. The CPython letters are handed on in a token rebuilt from the same
 * letters, so "-OO" or "-Wignore" stay byte for byte what the user wrote; only -h/-?/-V (ours)
 * are dropped, and a cluster ending in -c/-m is cut before it ("-Im mod" gives "-I", then the
 * canonical "-m" "mod"). */
static int scan_short(struct parser *p)
{
	const char *tok = p->argv[p->i];
	_cleanup_free_ char *kept = NULL;
	size_t n = 0;
	int r;

	kept = malloc(strlen(tok) + 1);
	if (!kept)
		return -ENOMEM;
	kept[n++] = '-';

	for (const char *c = tok + 1; *c; c++) {
		const struct short_opt *o = find_short(*c);
		const char *value;

		if (!o) {
			if (*c == 'J')
				return usage_error(p, "-J is reserved for Jython");
			return usage_error(p, "Unknown option: -%c", *c);
		}
		p->flags |= o->flags;
		if (o->flags & OPT_HELP)
			return SCAN_STOP;
		if (o->flags & OPT_VERSION)
			p->cli.version_level++;
		if (o->flags & OPT_OURS)
			continue;
		if (!(o->flags & OPT_ARG)) {
			kept[n++] = *c;
			continue;
		}

		/* The rest of the cluster, if any, is the value. */
		value = c[1] ? c + 1 : next_value(p);
		if (!value)
			return usage_error(p, "Argument expected for the -%c option", *c);
		if (o->flags & OPT_LAST) {
			if (n > 1) {
				r = push_kept(p, &kept, n);
				if (r < 0)
					return r;
			}
			r = set_target(p, *c, value);
			return r < 0 ? r : SCAN_STOP;
		}
		if (c[1]) {
			/* Attached -Wvalue: keep the whole tail, it is one token. It fits: kept
			 * holds at most the letters before c, plus c's tail. */
			size_t tail = strlen(c);

			memcpy(kept + n, c, tail);
			return push_kept(p, &kept, n + tail);
		}
		kept[n++] = *c;
		r = push_kept(p, &kept, n);
		if (r < 0)
			return r;
		return sb_strv_push(&p->cli.python_argv, value);
	}

	if (n == 1)
		return SCAN_CONTINUE; /* only our letters, e.g. "-V" */
	return push_kept(p, &kept, n);
}

/* Sandbox rule keys: lower case, so a mistyped CPython option ("--Help") is not silently taken
 * as a rule, and profile-compatible (':' for eval profiles, '.' for provider keys). */
static bool rule_key_char(char c, bool first)
{
	if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
		return true;
	return !first && (c == '.' || c == '_' || c == ':' || c == '-');
}

static bool rule_key_valid(const char *key, size_t len)
{
	if (len == 0)
		return false;
	for (size_t k = 0; k < len; k++)
		if (!rule_key_char(key[k], k == 0))
			return false;
	return true;
}

static int scan_rule(struct parser *p, const char *name, size_t len, const char *value)
{
	char *rule;

	if (!rule_key_valid(name, len))
		return usage_error(p,
				   "Invalid option: %s (a sandbox rule key must match "
				   "[a-z0-9][a-z0-9._:-]*)",
				   p->argv[p->i]);
	/* "--learn" is the rule "learn=": the empty value has its own meaning per key. */
	if (asprintf(&rule, "%.*s=%s", (int)len, name, value ? value : "") < 0)
		return -ENOMEM;
	return sb_strv_consume(&p->cli.rules, rule);
}

static int scan_long(struct parser *p)
{
	const char *tok = p->argv[p->i];
	const char *name = tok + 2;
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct long_opt *o = find_long(name, len);
	const char *value = eq ? eq + 1 : NULL;
	int r;

	if (!o)
		return scan_rule(p, name, len, value);

	if (!(o->flags & OPT_ARG)) {
		/* CPython has no "--help-all=x" either; same wording as its refusal. */
		if (eq)
			return usage_error(p, "unknown option %s", tok);
		p->flags |= o->flags;
		if (o->flags & OPT_HELP)
			return SCAN_STOP;
		if (o->flags & OPT_VERSION)
			p->cli.version_level++;
		if (o->flags & OPT_OURS)
			return SCAN_CONTINUE;
		return sb_strv_push(&p->cli.python_argv, tok);
	}

	if (!value)
		value = next_value(p);
	if (o->flags & OPT_CONFIG) {
		if (!value || !*value)
			return usage_error(p, "--pysandboxes-config requires a file name");
		/* The last one wins, as for any repeated scalar option. */
		free(p->cli.config_path);
		p->cli.config_path = strdup(value);
		return p->cli.config_path ? 0 : -ENOMEM;
	}

	if (o->flags & OPT_WORKER) {
		if (!value || !*value)
			return usage_error(p, "--pysandboxes-worker requires a descriptor number");
		free(p->cli.worker);
		p->cli.worker = strdup(value);
		return p->cli.worker ? 0 : -ENOMEM;
	}

	if (o->flags & OPT_ZYGOTE) {
		if (!value || !*value)
			return usage_error(p, "--pysandboxes-zygote requires a descriptor number");
		free(p->cli.zygote);
		p->cli.zygote = strdup(value);
		return p->cli.zygote ? 0 : -ENOMEM;
	}

	if (o->flags & OPT_INSIDE) {
		if (!value || !*value)
			return usage_error(p, "--pysandboxes-inside requires a descriptor number");
		free(p->cli.inside);
		p->cli.inside = strdup(value);
		return p->cli.inside ? 0 : -ENOMEM;
	}

	if (o->flags & (OPT_REPORT | OPT_REPORT_FD)) {
		char **field = o->flags & OPT_REPORT ? &p->cli.report : &p->cli.report_fd;

		if (!value || !*value)
			return usage_error(p, "--%s requires %s", o->name,
					   o->flags & OPT_REPORT ? "a file name"
								 : "a descriptor number");
		free(*field);
		*field = strdup(value);
		return *field ? 0 : -ENOMEM;
	}

	/* --check-hash-based-pycs: CPython's own messages, including its "options" plural. */
	if (!value)
		return usage_error(p, "Argument expected for the %s options", tok);
	if (!streq(value, "default") && !streq(value, "always") && !streq(value, "never"))
		return usage_error(p, "--check-hash-based-pycs must be one of 'default', 'always', "
				      "or 'never'");
	/* Always two tokens: CPython (up to 3.13 at least) refuses the "=MODE" spelling. */
	r = sb_strv_push(&p->cli.python_argv, "--check-hash-based-pycs");
	if (r < 0)
		return r;
	return sb_strv_push(&p->cli.python_argv, value);
}

/* The mode and what follows it, untouched. p->i is the first element after the options. */
static int finish_argv(struct parser *p, bool dashdash)
{
	int r;

	if (p->cli.mode == SB_RUN_COMMAND || p->cli.mode == SB_RUN_MODULE) {
		r = sb_strv_push(&p->cli.python_argv, p->cli.mode == SB_RUN_COMMAND ? "-c" : "-m");
		if (r < 0)
			return r;
		r = sb_strv_push(&p->cli.python_argv, p->cli.target);
		if (r < 0)
			return r;
	} else if (p->i < p->argc) {
		/* The script ("-" is stdin). "--" is handed on: without it CPython would read
		 * "-weird.py" as options. */
		if (dashdash) {
			r = sb_strv_push(&p->cli.python_argv, "--");
			if (r < 0)
				return r;
		}
		p->cli.mode = SB_RUN_SCRIPT;
		p->cli.target = strdup(p->argv[p->i]);
		if (!p->cli.target)
			return -ENOMEM;
		r = sb_strv_push(&p->cli.python_argv, p->cli.target);
		if (r < 0)
			return r;
		p->i++;
	} else
		return 0; /* the REPL: a lone "--" changes nothing, so it is not handed on */

	for (; p->i < p->argc; p->i++) {
		r = sb_strv_push(&p->cli.python_argv, p->argv[p->i]);
		if (r < 0)
			return r;
	}
	return 0;
}

int sb_cli_parse(int argc, char *const *argv, struct sb_cli *ret, char **reterr)
{
	_cleanup_(parser_done) struct parser p = {
	    .argc = argc,
	    .argv = argv,
	    .i = 1,
	    .reterr = reterr,
	};
	bool dashdash = false;
	int r;

	/* argc == 0 is possible with execve(); CPython then uses an empty program name. */
	r = sb_strv_push(&p.cli.python_argv, argc > 0 && argv[0] ? argv[0] : "");
	if (r < 0)
		return r;

	for (; p.i < argc; p.i++) {
		const char *a = argv[p.i];

		/* The script (or "-" for stdin) ends the options. */
		if (a[0] != '-' || a[1] == '\0')
			break;
		if (streq(a, "--")) {
			dashdash = true;
			p.i++;
			break;
		}
		r = a[1] == '-' ? scan_long(&p) : scan_short(&p);
		if (r < 0)
			return r;
		if (r == SCAN_STOP) {
			p.i++;
			break;
		}
	}

	/* CPython stops at -h and prints its usage whatever follows; so do we. */
	if (!(p.flags & OPT_HELP)) {
		r = finish_argv(&p, dashdash);
		if (r < 0)
			return r;
	}

	for (size_t k = 0; k < ELEMENTSOF(flag_fields); k++)
		if (p.flags & flag_fields[k].flag)
			*(bool *)((char *)&p.cli + flag_fields[k].offset) = true;
	p.cli.help = p.flags & OPT_HELP;
	p.cli.explain = p.flags & OPT_EXPLAIN;
	p.cli.denials = p.flags & OPT_DENIALS;
	p.cli.no_denials_summary = p.flags & OPT_NO_DENIALS_SUMMARY;
	p.cli.no_learn = p.flags & OPT_NO_LEARN;
	p.cli.version = p.cli.version_level > 0;

	*ret = p.cli;
	p.cli = (struct sb_cli){0};
	return 0;
}

void sb_cli_done(struct sb_cli *cli)
{
	if (!cli)
		return;
	sb_strv_free(cli->rules);
	free(cli->config_path);
	free(cli->worker);
	free(cli->zygote);
	free(cli->inside);
	free(cli->report);
	free(cli->report_fd);
	sb_strv_free(cli->python_argv);
	free(cli->target);
	*cli = (struct sb_cli){0};
}
