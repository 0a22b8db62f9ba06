/* SPDX-License-Identifier: MIT */
/* Learning of eval-* rules (src/eval/eval-learn.c) and the grammar it reads
 * (eval-grammar.c): groups only when every node was seen, never a pattern,
 * nothing the profile already allows or explicitly denies. */
#include "eval-grammar.h"
#include "eval-learn.h"
#include "eval-rules.h"
#include "tap.h"
#include "util.h"

static const struct sb_origin origin = {"profile", 1};

/* The lines learned from records ("kind profile name", kind a letter as
 * eval-learn.c writes them: n c a i m x) against the profile lines given. */
static char *learned(const char *const *records, const char *const *profile_lines, size_t *rules)
{
	struct sb_eval_learned l = {0};
	struct sb_eval_config cfg = {0};
	struct sb_diags diags = {0};
	const struct sb_eval_config *configs[] = {&cfg, NULL};
	_cleanup_strv_free_ char **lines = NULL;
	struct sb_buf out = {0};
	static const char kinds[] = "ncaimx";

	for (const char *const *p = profile_lines; p && *p; p += 2)
		sb_eval_config_add(&cfg, p[0], p[1], origin, &diags);
	for (const char *const *r = records; r && *r; r++) {
		char profile[32] = "", name[64] = "";
		const char *k = strchr(kinds, (*r)[0]);

		sscanf(*r + 2, "%31s %63s", profile, name);
		if (!k || sb_eval_learned_add(&l, (enum sb_eval_learn_kind)(k - kinds),
					      streq(profile, "-") ? NULL : profile, name) < 0)
			tap_diag("cannot record %s", *r);
	}
	*rules = 0;
	if (sb_eval_learned_lines(&l, configs, ELEMENTSOF(configs), &lines, rules) < 0)
		return NULL;
	for (char **s = lines; s && *s; s++)
		sb_buf_printf(&out, "%s%s", out.len ? "|" : "", *s);
	sb_eval_learned_done(&l);
	sb_eval_config_done(&cfg);
	sb_diags_done(&diags);
	return out.data ? sb_buf_steal(&out) : strdup("");
}

static void check(const char *name, const char *const *records, const char *const *profile,
		  const char *want, size_t want_rules)
{
	size_t rules;
	_cleanup_free_ char *got = learned(records, profile, &rules);

	tap_ok(got && streq(got, want) && rules == want_rules, "%s: '%s' (%zu rules)", name,
	       got ? got : "(error)", rules);
}

static void test_lines(void)
{
	/* spec §10 item 22 */
	check("sum of a comprehension",
	      (const char *[]){"n - Expression", "n - Call", "n - Name", "n - Load", "n - ListComp",
			       "n - BinOp", "n - Mult", "n - Constant", "n - comprehension",
			       "n - Store", "c - sum", "c - range", NULL},
	      NULL, "eval-syntax=BinOp, ListComp, comprehension|eval-call=range, sum", 2);
	/* A group replaces its nodes only when every one of them was seen. */
	check("whole group",
	      (const char *[]){"n - For", "n - While", "n - Break", "n - Continue", "n - If", NULL},
	      NULL, "eval-syntax=loop, If", 1);
	check("part of a group", (const char *[]){"n - For", "n - While", NULL}, NULL,
	      "eval-syntax=For, While", 1);
	/* What the profile allows already, or denies, is not written. */
	check("already allowed",
	      (const char *[]){"n - BinOp", "n - Compare", "c - len", "c - abs", NULL},
	      (const char *[]){"eval-syntax", "arith", "eval-call", "len*", NULL},
	      "eval-syntax=Compare|eval-call=abs", 2);
	check("explicitly denied", (const char *[]){"a - encode", "a - upper", NULL},
	      (const char *[]){"eval-attribute", "DENY:encode", NULL}, "eval-attribute=upper", 1);
	/* One line per key and profile, the named profiles after the default. */
	check("named profiles",
	      (const char *[]){"n llm BinOp", "m llm __name__", "i - json", "a - split", NULL},
	      NULL,
	      "eval-attribute=split|eval-import=json|eval-syntax:llm=BinOp|eval-magic:llm=__name__",
	      4);
	/* A namespace from the call site is a comment, not a rule. */
	check("caller namespace", (const char *[]){"x - s.py:3", "c - helper", NULL}, NULL,
	      "# 'eval() at s.py:3' used the caller's namespace (eval-namespace=adaptive): "
	      "eval-call lists what the code calls; eval-namespace=closed would declare the "
	      "whole namespace here|eval-call=helper",
	      1);
	check("nothing", (const char *[]){"n - Name", "n - Load", NULL}, NULL, "", 0);
}

static void test_records(void)
{
	struct sb_eval_learned l = {0};

	TAP_IS_INT(sb_eval_learned_add(&l, SB_EVAL_LEARN_CALL, NULL, "len"), 0, "a record");
	TAP_IS_INT(sb_eval_learned_add(&l, SB_EVAL_LEARN_CALL, "", "len"), 0, "the same again");
	TAP_IS_INT(sb_strv_length(l.records), 1, "kept once");
	TAP_IS_INT(sb_eval_learned_add(&l, SB_EVAL_LEARN_CALL, NULL, "a b"), -EINVAL,
		   "a name no rule could hold");
	TAP_IS_INT(sb_eval_learned_add(&l, SB_EVAL_LEARN__N, NULL, "x"), -EINVAL, "no such kind");
	/* getattr(o, "*") names what a pattern would match: every attribute. */
	TAP_IS_INT(sb_eval_learned_add(&l, SB_EVAL_LEARN_ATTRIBUTE, NULL, "*"), -EINVAL,
		   "a pattern is no attribute name");
	TAP_IS_INT(sb_eval_learned_add(&l, SB_EVAL_LEARN_ATTRIBUTE, NULL, "a,b"), -EINVAL,
		   "nor a list");
	TAP_IS_INT(sb_eval_learned_add(&l, SB_EVAL_LEARN_MAGIC, NULL, "__x#"), -EINVAL,
		   "nor a comment");
	TAP_IS_INT(sb_eval_learned_add(&l, SB_EVAL_LEARN_IMPORT, NULL, "os.*"), -EINVAL,
		   "nor a module pattern");
	TAP_IS_INT(sb_eval_learned_add(&l, SB_EVAL_LEARN_IMPORT, NULL, "os.path"), 0,
		   "a dotted module name is one");
	TAP_IS_INT(sb_eval_learned_add(&l, SB_EVAL_LEARN_ATTRIBUTE, NULL, "caf\xc3\xa9"), 0,
		   "a non-ASCII identifier is one");
	TAP_IS_INT(sb_eval_learned_add(&l, SB_EVAL_LEARN_CONTEXT, NULL, "/a/b.py:3"), 0,
		   "a call site (a comment) is no identifier");
	sb_eval_learned_done(&l);
}

static void test_grammar(void)
{
	size_t in_groups = 0;
	bool groups_known = true;

	for (size_t i = 0; i < sb_eval_n_nodes; i++) {
		in_groups += sb_eval_nodes[i].group != NULL;
		if (sb_eval_nodes[i].group)
			groups_known =
			    groups_known && sb_eval_is_syntax_group(sb_eval_nodes[i].group);
		if (i > 0 && sb_eval_node_find(sb_eval_nodes[i].name) != (int)i)
			tap_diag("duplicate node %s", sb_eval_nodes[i].name);
	}
	tap_ok(groups_known, "every node's group is a group");
	TAP_IS_INT(in_groups, 47, "nodes in a group (spec section 5)");
	tap_ok(sb_eval_nodes[sb_eval_node_find("Constant")].flags & SB_EVAL_NODE_CORE, "core");
	tap_ok(sb_eval_nodes[sb_eval_node_find("Call")].flags & SB_EVAL_NODE_GATED, "gated");
	tap_ok(!sb_eval_node_implicit((size_t)sb_eval_node_find("Match")), "Match needs a rule");
	TAP_IS_INT(sb_eval_node_find("Num"), -1, "deprecated aliases are not nodes");
	tap_ok(sb_eval_is_dunder("__x__") && !sb_eval_is_dunder("__") &&
		   !sb_eval_is_dunder("_x_") && !sb_eval_is_dunder("__x"),
	       "dunders");
	tap_ok(sb_eval_is_frame_attribute("gi_frame") && sb_eval_is_frame_attribute("tb_next") &&
		   !sb_eval_is_frame_attribute("f_code"),
	       "the frame attributes of the spec");
	tap_ok(sb_eval_is_namespace_attribute("__globals__") &&
		   sb_eval_is_namespace_attribute("__builtins__"),
	       "the namespace attributes");
	tap_ok(sb_eval_import_warning("os") && !sb_eval_import_warning("json"), "import warnings");
}

int main(void)
{
	test_lines();
	test_records();
	test_grammar();
	return tap_done();
}
