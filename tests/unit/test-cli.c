/* SPDX-License-Identifier: MIT */
/* sb_cli_parse(): one row per command line, checked field by field. The expected python_argv is
 * what the embedded CPython must see for the split to agree with ours. */

#include <errno.h>

#include "cli.h"
#include "tap.h"
#include "util.h"

/* Expected booleans, as a mask so that a row lists only what is true. */
enum {
	F_HELP = 1u << 0,
	F_EXPLAIN = 1u << 1,
	F_VERSION = 1u << 2,
	F_ISOLATED = 1u << 3,
	F_IGNORE_ENV = 1u << 4,
	F_NO_USER_SITE = 1u << 5,
	F_SAFE_PATH = 1u << 6,
	F_INTERACTIVE = 1u << 7,
	F_QUIET = 1u << 8,
	F_NO_SITE = 1u << 9,
	F_I = F_ISOLATED | F_IGNORE_ENV | F_NO_USER_SITE | F_SAFE_PATH,
};

#define MAXV 16

struct cli_case {
	const char *args[MAXV]; /* argv[1..], NULL-terminated; argv[0] is always "python-sb" */
	const char *error;	/* set: -EINVAL with this message expected */
	enum sb_run_mode mode;
	const char *target;
	const char *rules[MAXV];
	const char *config;
	const char *py[MAXV]; /* python_argv[1..] */
	unsigned flags;
	int version_level;
};

static const struct cli_case cases[] = {
    /* -c / -m, attached or not, clustered or not */
    {.args = {"-mjson.tool"},
     .mode = SB_RUN_MODULE,
     .target = "json.tool",
     .py = {"-m", "json.tool"}},
    {.args = {"-cprint(1)"},
     .mode = SB_RUN_COMMAND,
     .target = "print(1)",
     .py = {"-c", "print(1)"}},
    {.args = {"-Im", "json.tool", "x"},
     .mode = SB_RUN_MODULE,
     .target = "json.tool",
     .py = {"-I", "-m", "json.tool", "x"},
     .flags = F_I},
    {.args = {"-Ibcpass", "-z"},
     .mode = SB_RUN_COMMAND,
     .target = "pass",
     .py = {"-Ib", "-c", "pass", "-z"},
     .flags = F_I},
    {.args = {"-I", "-c", "pass"},
     .mode = SB_RUN_COMMAND,
     .target = "pass",
     .py = {"-I", "-c", "pass"},
     .flags = F_I},
    {.args = {"-c", "--learn", "-I"},
     .mode = SB_RUN_COMMAND,
     .target = "--learn",
     .py = {"-c", "--learn", "-I"}},
    {.args = {"-m", "mod", "--explain", "-h"},
     .mode = SB_RUN_MODULE,
     .target = "mod",
     .py = {"-m", "mod", "--explain", "-h"}},

    /* sandbox rules */
    {.args = {"--learn", "--os-sandbox=unshare", "-m", "mod", "a", "b"},
     .mode = SB_RUN_MODULE,
     .target = "mod",
     .rules = {"learn=", "os-sandbox=unshare"},
     .py = {"-m", "mod", "a", "b"}},
    {.args = {"--expose-ro=/etc", "--python-import=json", "-c", "x"},
     .mode = SB_RUN_COMMAND,
     .target = "x",
     .rules = {"expose-ro=/etc", "python-import=json"},
     .py = {"-c", "x"}},
    {.args = {"--expose-ro=/a", "-E", "--a_b.c:d-0=", "--expose-ro=/b", "--env=A=b=c",
	      "--eval-syntax:llm=arith", "--bwrap.opt=x", "s.py"},
     .mode = SB_RUN_SCRIPT,
     .target = "s.py",
     .rules = {"expose-ro=/a", "a_b.c:d-0=", "expose-ro=/b", "env=A=b=c", "eval-syntax:llm=arith",
	       "bwrap.opt=x"},
     .py = {"-E", "s.py"},
     .flags = F_IGNORE_ENV},
    {.args = {"--learn=out.prof", "--py-sandbox=false"},
     .mode = SB_RUN_REPL,
     .rules = {"learn=out.prof", "py-sandbox=false"}},
    {.args = {"s.py", "--learn", "--os-sandbox=none"},
     .mode = SB_RUN_SCRIPT,
     .target = "s.py",
     .py = {"s.py", "--learn", "--os-sandbox=none"}},
    {.args = {"--Learn"},
     .error = "Invalid option: --Learn (a sandbox rule key must match [a-z0-9][a-z0-9._:-]*)"},
    {.args = {"--=x"},
     .error = "Invalid option: --=x (a sandbox rule key must match [a-z0-9][a-z0-9._:-]*)"},
    {.args = {"--os/sandbox=x"},
     .error = "Invalid option: --os/sandbox=x (a sandbox rule key must match "
	      "[a-z0-9][a-z0-9._:-]*)"},

    /* --pysandboxes-config, --explain */
    {.args = {"--pysandboxes-config", "p", "s.py", "--help"},
     .mode = SB_RUN_SCRIPT,
     .target = "s.py",
     .config = "p",
     .py = {"s.py", "--help"}},
    {.args = {"--pysandboxes-config=dir/p", "--explain", "-c", "x"},
     .mode = SB_RUN_COMMAND,
     .target = "x",
     .config = "dir/p",
     .py = {"-c", "x"},
     .flags = F_EXPLAIN},
    {.args = {"--pysandboxes-config"}, .error = "--pysandboxes-config requires a file name"},
    {.args = {"--pysandboxes-config="}, .error = "--pysandboxes-config requires a file name"},
    {.args = {"--explain=yes"}, .error = "unknown option --explain=yes"},

    /* -W / -X */
    {.args = {"-W", "error", "-X", "dev", "script.py", "-v"},
     .mode = SB_RUN_SCRIPT,
     .target = "script.py",
     .py = {"-W", "error", "-X", "dev", "script.py", "-v"}},
    {.args = {"-Wignore", "-Xdev", "-qW", "error", "-sXutf8", "s"},
     .mode = SB_RUN_SCRIPT,
     .target = "s",
     .py = {"-Wignore", "-Xdev", "-qW", "error", "-sXutf8", "s"},
     .flags = F_QUIET | F_NO_USER_SITE},
    {.args = {"-W", "--learn"}, .mode = SB_RUN_REPL, .py = {"-W", "--learn"}},
    {.args = {"-c"}, .error = "Argument expected for the -c option"},
    {.args = {"-Im"}, .error = "Argument expected for the -m option"},
    {.args = {"-W"}, .error = "Argument expected for the -W option"},
    {.args = {"-E", "-X"}, .error = "Argument expected for the -X option"},

    /* scripts, "--", "-" */
    {.args = {"-", "a"}, .mode = SB_RUN_SCRIPT, .target = "-", .py = {"-", "a"}},
    {.args = {"-I", "-"}, .mode = SB_RUN_SCRIPT, .target = "-", .py = {"-I", "-"}, .flags = F_I},
    {.args = {"--", "-weird.py", "arg"},
     .mode = SB_RUN_SCRIPT,
     .target = "-weird.py",
     .py = {"--", "-weird.py", "arg"}},
    {.args = {"--learn", "--", "--x.py"},
     .mode = SB_RUN_SCRIPT,
     .target = "--x.py",
     .rules = {"learn="},
     .py = {"--", "--x.py"}},
    {.args = {"--"}, .mode = SB_RUN_REPL},
    {.args = {"-i", "script.py"},
     .mode = SB_RUN_SCRIPT,
     .target = "script.py",
     .py = {"-i", "script.py"},
     .flags = F_INTERACTIVE},
    {.args = {"-OO", "-B", "-u", "s.py"},
     .mode = SB_RUN_SCRIPT,
     .target = "s.py",
     .py = {"-OO", "-B", "-u", "s.py"}},
    {.args = {"-bb", "-dtvx", "-R", "prog", "-c", "x"},
     .mode = SB_RUN_SCRIPT,
     .target = "prog",
     .py = {"-bb", "-dtvx", "-R", "prog", "-c", "x"}},
    {.args = {"-sSPq"},
     .py = {"-sSPq"},
     .flags = F_NO_USER_SITE | F_NO_SITE | F_SAFE_PATH | F_QUIET},
    {.args = {""}, .mode = SB_RUN_SCRIPT, .target = "", .py = {""}},

    /* help and version stay out of python_argv; CPython stops at -h, so do we */
    {.args = {"-VV"}, .flags = F_VERSION, .version_level = 2},
    {.args = {"-V", "--version", "-IV"},
     .py = {"-I"},
     .flags = F_VERSION | F_I,
     .version_level = 3},
    {.args = {"--version", "-c", "pass"},
     .mode = SB_RUN_COMMAND,
     .target = "pass",
     .py = {"-c", "pass"},
     .flags = F_VERSION,
     .version_level = 1},
    {.args = {"-V", "-c"}, .error = "Argument expected for the -c option"},
    {.args = {"-h"}, .flags = F_HELP},
    {.args = {"-?"}, .flags = F_HELP},
    {.args = {"--learn", "--help", "-z", "--pysandboxes-config"},
     .rules = {"learn="},
     .flags = F_HELP},
    {.args = {"-Eh", "-c"}, .flags = F_HELP | F_IGNORE_ENV},
    {.args = {"--help=x"}, .error = "unknown option --help=x"},
    {.args = {"--help-env", "--help-xoptions", "--help-all"},
     .py = {"--help-env", "--help-xoptions", "--help-all"}},

    /* --check-hash-based-pycs: CPython refuses "=MODE", so it is always handed on split */
    {.args = {"--check-hash-based-pycs", "always", "-c", "pass"},
     .mode = SB_RUN_COMMAND,
     .target = "pass",
     .py = {"--check-hash-based-pycs", "always", "-c", "pass"}},
    {.args = {"--check-hash-based-pycs=never", "s.py"},
     .mode = SB_RUN_SCRIPT,
     .target = "s.py",
     .py = {"--check-hash-based-pycs", "never", "s.py"}},
    {.args = {"--check-hash-based-pycs"},
     .error = "Argument expected for the --check-hash-based-pycs options"},
    {.args = {"--check-hash-based-pycs=sometimes"},
     .error = "--check-hash-based-pycs must be one of 'default', 'always', or 'never'"},

    /* unknown short options */
    {.args = {"-z"}, .error = "Unknown option: -z"},
    {.args = {"-Iz", "s.py"}, .error = "Unknown option: -z"},
    {.args = {"-J"}, .error = "-J is reserved for Jython"},
};

static size_t nargs(const char *const *v)
{
	size_t n = 0;

	while (n < MAXV && v[n])
		n++;
	return n;
}

static void check_strv(char *const *got, const char *const *want, size_t skip, const char *what,
		       const char *name)
{
	size_t ng = sb_strv_length(got), nw = nargs(want);
	bool same = ng == nw + skip;

	for (size_t k = 0; same && k < nw; k++)
		same = streq(got[k + skip], want[k]);
	tap_ok(same, "%s: %s", name, what);
	if (same)
		return;
	for (size_t k = skip; k < ng; k++)
		tap_diag("  got[%zu]  = \"%s\"", k, got[k]);
	for (size_t k = 0; k < nw; k++)
		tap_diag("  want[%zu] = \"%s\"", k + skip, want[k]);
}

static void check_flags(const struct sb_cli *cli, unsigned want, const char *name)
{
	unsigned got = (cli->help ? F_HELP : 0) | (cli->explain ? F_EXPLAIN : 0) |
		       (cli->version ? F_VERSION : 0) | (cli->isolated ? F_ISOLATED : 0) |
		       (cli->ignore_env ? F_IGNORE_ENV : 0) |
		       (cli->no_user_site ? F_NO_USER_SITE : 0) |
		       (cli->safe_path ? F_SAFE_PATH : 0) | (cli->interactive ? F_INTERACTIVE : 0) |
		       (cli->quiet ? F_QUIET : 0) | (cli->no_site ? F_NO_SITE : 0);

	tap_ok(got == want, "%s: flags (got %#x, want %#x)", name, got, want);
}

/* "python-sb -I -c pass" as the test name. */
static void case_name(const struct cli_case *c, char *buf, size_t size)
{
	size_t off = (size_t)snprintf(buf, size, "python-sb");

	for (size_t k = 0; c->args[k] && off < size; k++)
		off += (size_t)snprintf(buf + off, size - off, " '%s'", c->args[k]);
}

static void run_case(const struct cli_case *c)
{
	char *argv[MAXV + 2] = {"python-sb"};
	struct sb_cli cli, untouched;
	_cleanup_free_ char *err = NULL;
	char name[256];
	int argc = 1, r;

	for (size_t k = 0; c->args[k]; k++)
		argv[argc++] = (char *)c->args[k];
	case_name(c, name, sizeof(name));

	/* A failed parse must leave *ret as it was. */
	memset(&cli, 0xa5, sizeof(cli));
	untouched = cli;
	r = sb_cli_parse(argc, argv, &cli, &err);

	if (c->error) {
		TAP_IS_INT(r, -EINVAL, name);
		TAP_IS_STR(err, c->error, name);
		/* Bytes, padding included, on purpose: not one may have been written. */
		// NOLINTNEXTLINE(bugprone-suspicious-memory-comparison,cert-exp42-c,cert-flp37-c)
		tap_ok(memcmp(&cli, &untouched, sizeof(cli)) == 0, "%s: *ret untouched", name);
		if (r == 0)
			sb_cli_done(&cli);
		return;
	}
	if (!TAP_IS_INT(r, 0, name)) {
		tap_diag("  error: %s", err ? err : "(none)");
		return;
	}
	tap_ok(!err, "%s: no error message", name);
	TAP_IS_INT(cli.mode, c->mode, "  mode");
	TAP_IS_STR(cli.target, c->target, "  target");
	TAP_IS_STR(cli.config_path, c->config, "  config_path");
	check_strv(cli.rules, c->rules, 0, "rules", name);
	TAP_IS_STR(cli.python_argv ? cli.python_argv[0] : NULL, "python-sb", "  python_argv[0]");
	check_strv(cli.python_argv, c->py, 1, "python_argv", name);
	check_flags(&cli, c->flags, name);
	TAP_IS_INT(cli.version_level, c->version_level, "  version_level");

	sb_cli_done(&cli);
	tap_ok(!cli.rules && !cli.python_argv && !cli.target && !cli.config_path && !cli.help,
	       "%s: sb_cli_done() zeroes", name);
}

/* What the table cannot express: argc == 0, a NULL reterr, and sb_cli_done(NULL). */
static void test_edges(void)
{
	char *argv0[] = {NULL};
	char *argv_bad[] = {"python-sb", "-c", NULL};
	struct sb_cli cli = {0};
	int r;

	/* TAP_IS_INT evaluates its arguments twice: call first. */
	r = sb_cli_parse(0, argv0, &cli, NULL);
	TAP_IS_INT(r, 0, "argc == 0 parses");
	TAP_IS_INT(cli.mode, SB_RUN_REPL, "argc == 0 is the REPL");
	TAP_IS_STR(cli.python_argv[0], "", "argc == 0 gives an empty program name");
	sb_cli_done(&cli);

	r = sb_cli_parse(2, argv_bad, &cli, NULL);
	TAP_IS_INT(r, -EINVAL, "usage error without reterr");
	sb_cli_done(NULL);
	tap_ok(true, "sb_cli_done(NULL) is a no-op");
}

int main(void)
{
	for (size_t k = 0; k < ELEMENTSOF(cases); k++)
		run_case(&cases[k]);
	test_edges();
	return tap_done();
}
