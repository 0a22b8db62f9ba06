/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "eval-rules.h"
#include "tap.h"
#include "util.h"

#define MAX_LINES 4

struct line {
	const char *key;
	const char *value;
};

/* One scenario: some lines into a fresh configuration, then the number of
 * errors and warnings and a key word of the first diagnostic. */
struct diag_case {
	struct line lines[MAX_LINES];
	size_t n_errors;
	size_t n_warnings;
	const char *want[2]; /* key words in the first diagnostic; NULL: none */
};

static const struct diag_case diag_cases[] = {
    /* spec §10 item 19 */
    {{{"eval-syntax", "lop"}},
     1,
     0,
     {"unknown syntax token 'lop', closest known token is 'loop'", NULL}},
    {{{"eval-namespace", "open"}}, 1, 0, {"adaptive, closed or caller", "'open'"}},
    {{{"eval-timeout", "10MB"}}, 1, 0, {"eval-timeout=10MB", "size"}},
    {{{"eval-timeout", "1s"}, {"eval-timeout", "2s"}},
     1,
     0,
     {"Multiple eval-timeout parameters", "(first at profile:1)"}},
    {{{"eval-syntax", "Bin*"}}, 1, 0, {"pattern", "eval-syntax"}},
    /* scalars */
    {{{"eval-timeout", "DENY:5s"}}, 1, 0, {"list keys only", NULL}},
    {{{"eval-max-nodes", "*"}}, 1, 0, {"list keys only", NULL}},
    {{{"eval-namespace", "DENY:closed"}}, 1, 0, {"list keys only", NULL}},
    {{{"eval-max-alloc", "5s"}}, 1, 0, {"duration", "eval-max-alloc=5s"}},
    {{{"eval-max-depth", "10MB"}}, 1, 0, {"size", NULL}},
    {{{"eval-max-iterations", "-1"}}, 1, 0, {"negative", NULL}},
    {{{"eval-max-iterations", "1e6"}}, 1, 0, {"unknown unit", NULL}},
    {{{"eval-max-iterations", "99999999999999999999999"}}, 1, 0, {"too large", NULL}},
    {{{"eval-timeout", ""}}, 1, 0, {"empty", NULL}},
    {{{"eval-namespace", ""}}, 1, 0, {"invalid eval-namespace mode", NULL}},
    {{{"eval-namespace", "Closed"}}, 1, 0, {"invalid eval-namespace mode", NULL}},
    {{{"eval-timeout", "0"}}, 1, 0, {"at least 1ms", NULL}},
    {{{"eval-max-nodes", "0"}}, 1, 0, {"at least 1", NULL}},
    {{{"eval-max-depth", "0"}}, 1, 0, {"at least 1", NULL}},
    {{{"eval-max-leaked-threads", "0"}}, 0, 0, {NULL, NULL}},
    {{{"eval-max-iterations", "0"}}, 0, 0, {NULL, NULL}},
    {{{"eval-namespace", "closed"}, {"eval-namespace", "caller"}},
     1,
     0,
     {"Multiple eval-namespace parameters", NULL}},
    /* an invalid first value still counts as the first one */
    {{{"eval-timeout", "x"}, {"eval-timeout", "2s"}}, 2, 0, {"eval-timeout=x", NULL}},
    /* different profiles are independent */
    {{{"eval-timeout", "1s"}, {"eval-timeout:llm", "2s"}}, 0, 0, {NULL, NULL}},
    {{{"eval-timeout:llm", "1s"}, {"eval-timeout:llm", "2s"}},
     1,
     0,
     {"Multiple eval-timeout parameters in profile 'llm'", NULL}},
    {{{"eval-namespace:llm", "closed"}}, 0, 1, {"does not apply to a named profile", NULL}},
    /* keys and profile names */
    {{{"eval-timout", "1s"}},
     1,
     0,
     {"unknown key 'eval-timout'", "closest known key is 'eval-timeout'"}},
    {{{"eval-foo", "x"}}, 1, 0, {"unknown key 'eval-foo'", NULL}},
    {{{"eval-frobnicate", "x"}}, 1, 0, {"unknown key 'eval-frobnicate'", NULL}},
    {{{"eval-max-node", "1"}}, 1, 0, {"closest known key is 'eval-max-nodes'", NULL}},
    {{{"eval", "1"}}, 1, 0, {"unknown key 'eval'", NULL}},
    {{{"eval-syntax:", "arith"}}, 1, 0, {"invalid eval profile name ''", NULL}},
    {{{"eval-syntax:a.b", "arith"}}, 1, 0, {"invalid eval profile name 'a.b'", NULL}},
    {{{"eval-syntax:a b", "arith"}}, 1, 0, {"invalid eval profile name", NULL}},
    {{{"eval-syntax:llm-2_x", "arith"}}, 0, 0, {NULL, NULL}},
    /* list values */
    {{{"eval-call", ""}}, 1, 0, {"empty value", NULL}},
    {{{"eval-call", "len,,abs"}}, 1, 0, {"empty item", NULL}},
    {{{"eval-call", "len,"}}, 1, 0, {"empty item", NULL}},
    {{{"eval-call", "DENY:"}}, 1, 0, {"empty item", NULL}},
    {{{"eval-call", "len, DENY:"}}, 1, 0, {"empty item", NULL}},
    {{{"eval-call", "1abc"}}, 1, 0, {"invalid name '1abc'", NULL}},
    {{{"eval-call", "a b"}}, 1, 0, {"invalid name 'a b'", NULL}},
    {{{"eval-call", "os.system"}}, 1, 0, {"invalid name", NULL}},
    {{{"eval-import", "os..path"}}, 1, 0, {"invalid module name", NULL}},
    {{{"eval-import", ".json"}}, 1, 0, {"invalid module name", NULL}},
    {{{"eval-import", "json."}}, 1, 0, {"invalid module name", NULL}},
    {{{"eval-syntax", "arith, lop, Bin"}}, 2, 0, {"'lop'", NULL}},
    {{{"eval-syntax", "Num"}}, 1, 0, {"unknown syntax token 'Num'", NULL}},
    {{{"eval-syntax", "binop"}}, 1, 0, {"closest known token is 'BinOp'", NULL}},
    {{{"eval-syntax", "*"}}, 1, 0, {"pattern", NULL}},
    {{{"eval-syntax", "DENY:*"}}, 1, 0, {"pattern", NULL}},
    {{{"eval-syntax", "zzzzzzzzzzzzzzzzzzz"}}, 1, 0, {"expected a group", NULL}},
    /* patterns */
    {{{"eval-call", "get*"}}, 0, 0, {NULL, NULL}},
    {{{"eval-call", "g*"}}, 0, 1, {"fewer than 3 fixed characters", "'g*'"}},
    {{{"eval-call", "*"}}, 0, 1, {"fewer than 3 fixed characters", NULL}},
    {{{"eval-magic", "__*__"}}, 0, 0, {NULL, NULL}},
    {{{"eval-attribute", "DENY:*"}}, 0, 1, {"fewer than 3", NULL}},
    {{{"eval-import", "xml.*"}}, 0, 0, {NULL, NULL}},
    {{{"eval-call", "g?t"}}, 1, 0, {"invalid name", NULL}},
    /* Found by fuzz-eval: Python could not read them, every evaluation failed. */
    {{{"eval-call", "le\xffn"}}, 1, 0, {"invalid name", NULL}},
    {{{"eval-attribute", "up\xc3"}}, 1, 0, {"invalid name", NULL}},
    {{{"eval-import", "js\xed\xa0\x80on"}}, 1, 0, {"invalid module name", NULL}},
    {{{"eval-magic", "__\xff*"}}, 1, 0, {"invalid pattern", NULL}},
    {{{"eval-call", "caf\xc3\xa9"}}, 0, 0, {NULL, NULL}},
    /* warnings on grants */
    {{{"eval-attribute", "format"}}, 0, 1, {"'format'", "runtime"}},
    {{{"eval-attribute", "format_map"}}, 0, 1, {"'format_map'", NULL}},
    {{{"eval-attribute", "DENY:format"}}, 0, 0, {NULL, NULL}},
    {{{"eval-call", "getattr"}}, 0, 1, {"sensitive builtin", NULL}},
    {{{"eval-call", "DENY:getattr"}}, 0, 0, {NULL, NULL}},
    {{{"eval-attribute", "gi_frame"}}, 0, 1, {"always denied", NULL}},
    {{{"eval-magic", "__sb_getattr__"}}, 0, 1, {"__sb_", NULL}},
    /* valid, no diagnostics: spec §10 items 15-18 and 20-21 profiles */
    {{{"eval-namespace", "closed"}, {"eval-syntax", "arith"}}, 0, 0, {NULL, NULL}},
    {{{"eval-syntax", "loop"}, {"eval-timeout", "1s"}, {"eval-max-iterations", "1_000_000_000"}},
     0,
     0,
     {NULL, NULL}},
    {{{"eval-syntax", "arith, func, Call"}, {"eval-max-alloc", "10MB"}}, 0, 0, {NULL, NULL}},
    {{{"eval-magic", "*"}}, 0, 1, {NULL, NULL}},
    {{{"eval-syntax", "TemplateStr, Interpolation, TypeAlias, TryStar, MatchValue, Add"}},
     0,
     0,
     {NULL, NULL}},
};

static const struct sb_origin origins[MAX_LINES] = {
    {"profile", 1},
    {"profile", 2},
    {"profile", 3},
    {"profile", 4},
};

static void run_lines(struct sb_eval_config *cfg, const struct line *lines, size_t n,
		      struct sb_diags *diags)
{
	for (size_t i = 0; i < n && lines[i].key; i++) {
		int r = sb_eval_config_add(cfg, lines[i].key, lines[i].value, origins[i], diags);

		if (r < 0)
			tap_ok(false, "sb_eval_config_add(%s) returned %d", lines[i].key, r);
	}
}

static void test_diag_cases(void)
{
	for (size_t i = 0; i < ELEMENTSOF(diag_cases); i++) {
		const struct diag_case *c = &diag_cases[i];
		struct sb_eval_config cfg = {0};
		struct sb_diags diags = {0};
		const char *first = NULL;
		bool ok;

		run_lines(&cfg, c->lines, MAX_LINES, &diags);
		if (diags.n > 0)
			first = diags.items[0].message;
		ok = diags.n_errors == c->n_errors && diags.n - diags.n_errors == c->n_warnings &&
		     cfg.any_key;
		for (size_t j = 0; ok && j < ELEMENTSOF(c->want) && c->want[j]; j++)
			ok = first && strstr(first, c->want[j]);
		tap_ok(ok, "%s=%s%s: %zu errors, %zu warnings (got %zu, %zu: \"%s\")",
		       c->lines[0].key, c->lines[0].value, c->lines[1].key ? " ..." : "",
		       c->n_errors, c->n_warnings, diags.n_errors, diags.n - diags.n_errors,
		       first ? first : "");
		sb_diags_done(&diags);
		sb_eval_config_done(&cfg);
	}
}

/* Checks the items stored for one list key: "value" or "!value" for a deny. */
static bool items_are(const struct sb_eval_profile *p, enum sb_eval_list_key k,
		      const char *const *want, size_t n)
{
	if (!p || p->n_items[k] != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool deny = want[i][0] == '!';

		if (p->items[k][i].deny != deny || !streq(p->items[k][i].value, want[i] + deny))
			return false;
	}
	return true;
}

struct items_case {
	const char *key;
	const char *value;
	enum sb_eval_list_key list;
	size_t n;
	const char *want[4];
};

static const struct items_case items_cases[] = {
    {"eval-syntax", "arith", SB_EVAL_SYNTAX, 1, {"arith"}},
    {"eval-syntax", "arith, loop , BinOp", SB_EVAL_SYNTAX, 3, {"arith", "loop", "BinOp"}},
    {"eval-syntax", "DENY:loop", SB_EVAL_SYNTAX, 1, {"!loop"}},
    {"eval-syntax", "comprehension,DENY:While", SB_EVAL_SYNTAX, 2, {"comprehension", "!While"}},
    {"eval-call", "len, DENY:eval", SB_EVAL_CALL, 2, {"len", "!eval"}},
    {"eval-call", "DENY:open, exec", SB_EVAL_CALL, 2, {"!open", "!exec"}},
    {"eval-call", "len,len, abs", SB_EVAL_CALL, 2, {"len", "abs"}},
    {"eval-call", "len, DENY:len", SB_EVAL_CALL, 2, {"len", "!len"}},
    {"eval-call", "get*", SB_EVAL_CALL, 1, {"get*"}},
    {"eval-attribute",
     "str-methods, upper, date-methods",
     SB_EVAL_ATTRIBUTE,
     3,
     {"str-methods", "upper", "date-methods"}},
    {"eval-import", "json, os.path, xml.*", SB_EVAL_IMPORT, 3, {"json", "os.path", "xml.*"}},
    {"eval-magic", "__dict__, DENY: __class__", SB_EVAL_MAGIC, 2, {"__dict__", "!__class__"}},
    {"eval-call", "  DENY: len ", SB_EVAL_CALL, 1, {"!len"}},
};

static void test_items(void)
{
	for (size_t i = 0; i < ELEMENTSOF(items_cases); i++) {
		const struct items_case *c = &items_cases[i];
		struct sb_eval_config cfg = {0};
		struct sb_diags diags = {0};
		const struct sb_eval_profile *p;

		sb_eval_config_add(&cfg, c->key, c->value, origins[0], &diags);
		p = sb_eval_config_find(&cfg, NULL);
		tap_ok(diags.n_errors == 0 && items_are(p, c->list, c->want, c->n) &&
			   p->items[c->list][0].origin.line == 1,
		       "%s=%s stores %zu items (got %zu, %zu errors)", c->key, c->value, c->n,
		       p ? p->n_items[c->list] : 0, diags.n_errors);
		sb_diags_done(&diags);
		sb_eval_config_done(&cfg);
	}

	/* A line with one bad item adds nothing at all. */
	{
		struct sb_eval_config cfg = {0};
		struct sb_diags diags = {0};
		static const char *const want[] = {"len"};

		sb_eval_config_add(&cfg, "eval-call", "len", origins[0], &diags);
		sb_eval_config_add(&cfg, "eval-call", "abs, 1x", origins[1], &diags);
		TAP_IS_INT(diags.n_errors, 1, "bad item reported");
		tap_ok(items_are(sb_eval_config_find(&cfg, NULL), SB_EVAL_CALL, want, 1),
		       "a line with a bad item is dropped whole");
		sb_diags_done(&diags);
		sb_eval_config_done(&cfg);
	}
	/* Lines accumulate. */
	{
		struct sb_eval_config cfg = {0};
		struct sb_diags diags = {0};
		static const char *const want[] = {"arith", "loop", "!While"};

		sb_eval_config_add(&cfg, "eval-syntax", "arith", origins[0], &diags);
		sb_eval_config_add(&cfg, "eval-syntax", "loop", origins[1], &diags);
		sb_eval_config_add(&cfg, "eval-syntax", "DENY:While", origins[2], &diags);
		tap_ok(items_are(sb_eval_config_find(&cfg, NULL), SB_EVAL_SYNTAX, want, 3) &&
			   sb_eval_config_find(&cfg, NULL)->items[SB_EVAL_SYNTAX][2].origin.line ==
			       3,
		       "list lines accumulate, with their origin");
		sb_diags_done(&diags);
		sb_eval_config_done(&cfg);
	}
}

static void test_scalars(void)
{
	static const struct {
		const char *key;
		const char *value;
		enum sb_eval_scalar_key k;
		unsigned long long want;
	} cases[] = {
	    {"eval-namespace", "adaptive", SB_EVAL_NAMESPACE, SB_EVAL_NAMESPACE_ADAPTIVE},
	    {"eval-namespace", "closed", SB_EVAL_NAMESPACE, SB_EVAL_NAMESPACE_CLOSED},
	    {"eval-namespace", "caller", SB_EVAL_NAMESPACE, SB_EVAL_NAMESPACE_CALLER},
	    {"eval-timeout", "1s", SB_EVAL_TIMEOUT, 1000},
	    {"eval-timeout", "250ms", SB_EVAL_TIMEOUT, 250},
	    {"eval-timeout", "2m", SB_EVAL_TIMEOUT, 120000},
	    {"eval-timeout", "3", SB_EVAL_TIMEOUT, 3000},
	    {"eval-max-iterations", "1_000_000_000", SB_EVAL_MAX_ITERATIONS, 1000000000},
	    {"eval-max-call-depth", "50", SB_EVAL_MAX_CALL_DEPTH, 50},
	    {"eval-max-depth", "30", SB_EVAL_MAX_DEPTH, 30},
	    {"eval-max-nodes", "10_000", SB_EVAL_MAX_NODES, 10000},
	    {"eval-max-alloc", "1MB", SB_EVAL_MAX_ALLOC, 1000000},
	    {"eval-max-alloc", "512", SB_EVAL_MAX_ALLOC, 512},
	    {"eval-max-leaked-threads", "8", SB_EVAL_MAX_LEAKED_THREADS, 8},
	    {"eval-timeout", " 2s ", SB_EVAL_TIMEOUT, 2000},
	};
	static const unsigned long long defaults[SB_EVAL_SCALAR__N] = {
	    [SB_EVAL_NAMESPACE] = SB_EVAL_NAMESPACE_ADAPTIVE,
	    [SB_EVAL_TIMEOUT] = 5000,
	    [SB_EVAL_MAX_ITERATIONS] = 1000000,
	    [SB_EVAL_MAX_CALL_DEPTH] = 20,
	    [SB_EVAL_MAX_DEPTH] = 20,
	    [SB_EVAL_MAX_NODES] = 5000,
	    [SB_EVAL_MAX_ALLOC] = 10000000,
	    [SB_EVAL_MAX_LEAKED_THREADS] = 4,
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct sb_eval_config cfg = {0};
		struct sb_diags diags = {0};
		const struct sb_eval_profile *p;

		sb_eval_config_add(&cfg, cases[i].key, cases[i].value, origins[2], &diags);
		p = sb_eval_config_find(&cfg, NULL);
		tap_ok(diags.n_errors == 0 && p && p->scalars[cases[i].k] == cases[i].want &&
			   p->scalar_set[cases[i].k] && p->scalar_origin[cases[i].k].line == 3,
		       "%s=%s -> %llu (got %llu)", cases[i].key, cases[i].value, cases[i].want,
		       p ? p->scalars[cases[i].k] : 0);
		/* caller turns the run-time checks off: said at load. */
		tap_ok(diags.n == (streq(cases[i].value, "caller") ? 1u : 0u),
		       "%s=%s: %zu warning(s)", cases[i].key, cases[i].value, diags.n);
		sb_diags_done(&diags);
		sb_eval_config_done(&cfg);
	}

	/* Defaults are filled in for every profile, named or not. */
	{
		struct sb_eval_config cfg = {0};
		struct sb_diags diags = {0};
		const struct sb_eval_profile *p, *llm;
		bool ok = true;

		sb_eval_config_add(&cfg, "eval-syntax", "arith", origins[0], &diags);
		sb_eval_config_add(&cfg, "eval-syntax:llm", "loop", origins[1], &diags);
		p = sb_eval_config_find(&cfg, NULL);
		llm = sb_eval_config_find(&cfg, "llm");
		for (size_t k = 0; p && llm && k < SB_EVAL_SCALAR__N; k++)
			ok = ok && p->scalars[k] == defaults[k] && llm->scalars[k] == defaults[k] &&
			     !p->scalar_set[k] && !llm->scalar_set[k];
		tap_ok(p && llm && ok, "defaults in both profiles");
		TAP_IS_INT(cfg.n_profiles, 2, "two profiles");
		tap_ok(p && !p->name && llm && streq(llm->name, "llm"), "profile names");
		tap_ok(llm && llm->n_items[SB_EVAL_SYNTAX] == 1 && p &&
			   p->n_items[SB_EVAL_SYNTAX] == 1 &&
			   streq(llm->items[SB_EVAL_SYNTAX][0].value, "loop"),
		       "no inheritance between profiles");
		tap_ok(sb_eval_config_find(&cfg, "other") == NULL, "absent profile");
		sb_diags_done(&diags);
		sb_eval_config_done(&cfg);
	}
	/* A named profile alone: the default profile does not exist. */
	{
		struct sb_eval_config cfg = {0};
		struct sb_diags diags = {0};

		sb_eval_config_add(&cfg, "eval-timeout:llm", "1s", origins[0], &diags);
		tap_ok(sb_eval_config_find(&cfg, NULL) == NULL && cfg.any_key,
		       "no default profile when only a named one is written");
		TAP_IS_INT(sb_eval_config_find(&cfg, "llm")->scalars[SB_EVAL_TIMEOUT], 1000,
			   "named profile scalar");
		sb_diags_done(&diags);
		sb_eval_config_done(&cfg);
	}
	/* An invalid value leaves the default. */
	{
		struct sb_eval_config cfg = {0};
		struct sb_diags diags = {0};
		const struct sb_eval_profile *p;

		sb_eval_config_add(&cfg, "eval-timeout", "10MB", origins[0], &diags);
		p = sb_eval_config_find(&cfg, NULL);
		TAP_IS_INT(p ? p->scalars[SB_EVAL_TIMEOUT] : 0, 5000,
			   "default kept after an error");
		sb_diags_done(&diags);
		sb_eval_config_done(&cfg);
	}
}

static void test_cli_override(void)
{
	const struct sb_origin cli = {SB_ORIGIN_CLI, 0};
	static const struct {
		bool first_cli, second_cli;
		size_t n_errors;
		unsigned long long want; /* first "1s", then "2s" */
	} cases[] = {
	    {true, false, 0, 1000},
	    {false, true, 0, 2000},
	    {true, true, 1, 1000},
	    {false, false, 1, 1000},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct sb_eval_config cfg = {0};
		struct sb_diags diags = {0};
		const struct sb_eval_profile *p;

		sb_eval_config_add(&cfg, "eval-timeout", "1s",
				   cases[i].first_cli ? cli : origins[0], &diags);
		sb_eval_config_add(&cfg, "eval-timeout", "2s",
				   cases[i].second_cli ? cli : origins[1], &diags);
		p = sb_eval_config_find(&cfg, NULL);
		tap_ok(p && diags.n_errors == cases[i].n_errors &&
			   p->scalars[SB_EVAL_TIMEOUT] == cases[i].want,
		       "timeout from %s then %s -> %llu, %zu errors (got %llu, %zu)",
		       cases[i].first_cli ? "cli" : "file", cases[i].second_cli ? "cli" : "file",
		       cases[i].want, cases[i].n_errors, p ? p->scalars[SB_EVAL_TIMEOUT] : 0,
		       diags.n_errors);
		sb_diags_done(&diags);
		sb_eval_config_done(&cfg);
	}
}

static void test_names(void)
{
	static const char *const lists[] = {"eval-syntax", "eval-call", "eval-attribute",
					    "eval-import", "eval-magic"};
	static const char *const scalars[] = {
	    "eval-namespace", "eval-timeout",	"eval-max-iterations", "eval-max-call-depth",
	    "eval-max-depth", "eval-max-nodes", "eval-max-alloc",      "eval-max-leaked-threads",
	};

	for (size_t i = 0; i < ELEMENTSOF(lists); i++)
		TAP_IS_STR(sb_eval_list_key_name((enum sb_eval_list_key)i), lists[i], "list key");
	for (size_t i = 0; i < ELEMENTSOF(scalars); i++)
		TAP_IS_STR(sb_eval_scalar_key_name((enum sb_eval_scalar_key)i), scalars[i],
			   "scalar key");
	TAP_IS_STR(sb_eval_list_key_name(SB_EVAL_LIST__N), NULL, "list key out of range");
	TAP_IS_STR(sb_eval_scalar_key_name(SB_EVAL_SCALAR__N), NULL, "scalar key out of range");

	/* Every group and a sample of node names of each Python version. */
	{
		static const char *const tokens[] = {
		    "arith",	 "compare",	  "conditional",    "loop",	    "comprehension",
		    "assign",	 "func",	  "async",	    "class",	    "exception",
		    "context",	 "import",	  "subscript",	    "fstring",	    "tstring",
		    "yield",	 "BinOp",	  "UnaryOp",	    "Compare",	    "BoolOp",
		    "ListComp",	 "comprehension", "NamedExpr",	    "arguments",    "arg",
		    "Lambda",	 "TryStar",	  "withitem",	    "alias",	    "Slice",
		    "Starred",	 "JoinedStr",	  "FormattedValue", "TemplateStr",  "Interpolation",
		    "YieldFrom", "Match",	  "MatchAs",	    "MatchOr",	    "match_case",
		    "TypeAlias", "TypeVar",	  "ParamSpec",	    "TypeVarTuple", "Mult",
		    "FloorDiv",	 "NotIn",	  "USub",	    "Load",	    "FunctionType",
		};

		for (size_t i = 0; i < ELEMENTSOF(tokens); i++) {
			struct sb_eval_config cfg = {0};
			struct sb_diags diags = {0};

			sb_eval_config_add(&cfg, "eval-syntax", tokens[i], origins[0], &diags);
			tap_ok(diags.n == 0, "eval-syntax=%s is known", tokens[i]);
			sb_diags_done(&diags);
			sb_eval_config_done(&cfg);
		}
	}
}

int main(void)
{
	test_diag_cases();
	test_items();
	test_scalars();
	test_cli_override();
	test_names();
	{
		struct sb_eval_config cfg = {0};

		sb_eval_config_done(&cfg);
		sb_eval_config_done(NULL);
		tap_ok(sb_eval_config_find(&cfg, NULL) == NULL, "empty configuration");
	}
	return tap_done();
}
