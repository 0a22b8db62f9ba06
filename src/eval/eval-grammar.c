/* SPDX-License-Identifier: MIT */
#include "eval-grammar.h"

#include "util.h"

#define CORE   SB_EVAL_NODE_CORE
#define MARKER SB_EVAL_NODE_MARKER
#define GATED  SB_EVAL_NODE_GATED

/* The deprecated aliases (Num, Str, Index, Param, AugLoad...) are left out:
 * the parser never produces them and 3.14 removed them. */
const struct sb_eval_node_info sb_eval_nodes[] = {
    /* mod */
    {"Module", NULL, CORE},
    {"Interactive", NULL, CORE},
    {"Expression", NULL, CORE},
    {"FunctionType", NULL, 0},
    /* stmt */
    {"FunctionDef", "func", 0},
    {"AsyncFunctionDef", "async", 0},
    {"ClassDef", "class", 0},
    {"Return", "func", 0},
    {"Delete", NULL, 0},
    {"Assign", "assign", 0},
    {"TypeAlias", NULL, 0},
    {"AugAssign", "assign", 0},
    {"AnnAssign", "assign", 0},
    {"For", "loop", 0},
    {"AsyncFor", "async", 0},
    {"While", "loop", 0},
    {"If", "conditional", 0},
    {"With", "context", 0},
    {"AsyncWith", "async", 0},
    {"Match", NULL, 0},
    {"Raise", "exception", 0},
    {"Try", "exception", 0},
    {"TryStar", "exception", 0},
    {"Assert", NULL, 0},
    {"Import", "import", 0},
    {"ImportFrom", "import", 0},
    {"Global", NULL, 0},
    {"Nonlocal", NULL, 0},
    {"Expr", NULL, CORE},
    {"Pass", NULL, CORE},
    {"Break", "loop", 0},
    {"Continue", "loop", 0},
    /* expr */
    {"BoolOp", "compare", 0},
    {"NamedExpr", "assign", 0},
    {"BinOp", "arith", 0},
    {"UnaryOp", "arith", 0},
    {"Lambda", "func", 0},
    {"IfExp", "conditional", 0},
    {"Dict", NULL, CORE},
    {"Set", NULL, CORE},
    {"ListComp", "comprehension", 0},
    {"SetComp", "comprehension", 0},
    {"DictComp", "comprehension", 0},
    {"GeneratorExp", "comprehension", 0},
    {"Await", "async", 0},
    {"Yield", "yield", 0},
    {"YieldFrom", "yield", 0},
    {"Compare", "compare", 0},
    {"Call", NULL, GATED},
    {"FormattedValue", "fstring", 0},
    {"Interpolation", "tstring", 0},
    {"JoinedStr", "fstring", 0},
    {"TemplateStr", "tstring", 0},
    {"Constant", NULL, CORE},
    {"Attribute", NULL, GATED},
    {"Subscript", "subscript", 0},
    {"Starred", "subscript", 0},
    {"Name", NULL, CORE},
    {"List", NULL, CORE},
    {"Tuple", NULL, CORE},
    {"Slice", "subscript", 0},
    /* expr_context */
    {"Load", NULL, CORE | MARKER},
    {"Store", NULL, CORE | MARKER},
    {"Del", NULL, CORE | MARKER},
    /* boolop */
    {"And", NULL, MARKER},
    {"Or", NULL, MARKER},
    /* operator */
    {"Add", NULL, MARKER},
    {"Sub", NULL, MARKER},
    {"Mult", NULL, MARKER},
    {"MatMult", NULL, MARKER},
    {"Div", NULL, MARKER},
    {"Mod", NULL, MARKER},
    {"Pow", NULL, MARKER},
    {"LShift", NULL, MARKER},
    {"RShift", NULL, MARKER},
    {"BitOr", NULL, MARKER},
    {"BitXor", NULL, MARKER},
    {"BitAnd", NULL, MARKER},
    {"FloorDiv", NULL, MARKER},
    /* unaryop */
    {"Invert", NULL, MARKER},
    {"Not", NULL, MARKER},
    {"UAdd", NULL, MARKER},
    {"USub", NULL, MARKER},
    /* cmpop */
    {"Eq", NULL, MARKER},
    {"NotEq", NULL, MARKER},
    {"Lt", NULL, MARKER},
    {"LtE", NULL, MARKER},
    {"Gt", NULL, MARKER},
    {"GtE", NULL, MARKER},
    {"Is", NULL, MARKER},
    {"IsNot", NULL, MARKER},
    {"In", NULL, MARKER},
    {"NotIn", NULL, MARKER},
    /* helpers */
    {"comprehension", "comprehension", 0},
    {"ExceptHandler", "exception", 0},
    {"arguments", "func", 0},
    {"arg", "func", 0},
    {"keyword", NULL, GATED},
    {"alias", "import", 0},
    {"withitem", "context", 0},
    {"match_case", NULL, 0},
    {"TypeIgnore", NULL, 0},
    /* pattern */
    {"MatchValue", NULL, 0},
    {"MatchSingleton", NULL, 0},
    {"MatchSequence", NULL, 0},
    {"MatchMapping", NULL, 0},
    {"MatchClass", NULL, 0},
    {"MatchStar", NULL, 0},
    {"MatchAs", NULL, 0},
    {"MatchOr", NULL, 0},
    /* type_param */
    {"TypeVar", NULL, 0},
    {"ParamSpec", NULL, 0},
    {"TypeVarTuple", NULL, 0},
};
const size_t sb_eval_n_nodes = ELEMENTSOF(sb_eval_nodes);

const char *const sb_eval_syntax_groups[] = {
    "arith", "compare",	  "conditional", "loop",   "comprehension", "assign",  "func",	  "async",
    "class", "exception", "context",	 "import", "subscript",	    "fstring", "tstring", "yield",
};
const size_t sb_eval_n_syntax_groups = ELEMENTSOF(sb_eval_syntax_groups);

const char *const sb_eval_attribute_groups[] = {
    "str-methods",   "list-methods", "dict-methods",  "set-methods",
    "tuple-methods", "num-methods",  "bytes-methods", "date-methods",
};
const size_t sb_eval_n_attribute_groups = ELEMENTSOF(sb_eval_attribute_groups);

static bool in_table(const char *word, const char *const *table, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (streq(table[i], word))
			return true;
	return false;
}

int sb_eval_node_find(const char *name)
{
	for (size_t i = 0; i < sb_eval_n_nodes; i++)
		if (streq(sb_eval_nodes[i].name, name))
			return (int)i;
	return -1;
}

bool sb_eval_is_syntax_group(const char *name)
{
	return in_table(name, sb_eval_syntax_groups, sb_eval_n_syntax_groups);
}

bool sb_eval_is_attribute_group(const char *name)
{
	return in_table(name, sb_eval_attribute_groups, sb_eval_n_attribute_groups);
}

bool sb_eval_is_blind_attribute(const char *name)
{
	static const char *const blind[] = {"format", "format_map"};

	return in_table(name, blind, ELEMENTSOF(blind));
}

bool sb_eval_is_sensitive_call(const char *name)
{
	static const char *const sensitive[] = {
	    "getattr", "setattr", "delattr",	"hasattr", "open",    "eval",	    "exec",
	    "compile", "type",	  "__import__", "vars",	   "globals", "locals",	    "dir",
	    "input",   "help",	  "breakpoint", "exit",	   "quit",    "memoryview",
	};

	return in_table(name, sensitive, ELEMENTSOF(sensitive));
}

bool sb_eval_is_frame_attribute(const char *name)
{
	static const char *const frame[] = {
	    "gi_frame",	  "gi_code",  "gi_yieldfrom", "cr_frame",  "cr_code",
	    "cr_await",	  "ag_frame", "ag_code",      "f_globals", "f_locals",
	    "f_builtins", "f_back",   "f_trace",      "tb_frame",  "tb_next",
	};

	return in_table(name, frame, ELEMENTSOF(frame));
}

bool sb_eval_is_namespace_attribute(const char *name)
{
	return streq(name, "__builtins__") || streq(name, "__globals__");
}

bool sb_eval_is_dunder(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && name[0] == '_' && name[1] == '_' && name[n - 1] == '_' &&
	       name[n - 2] == '_';
}

const char *sb_eval_import_warning(const char *module)
{
	static const struct {
		const char *module, *warning;
	} warnings[] = {
	    {"os", "os exposes the process environment and the file system"},
	    {"posix", "posix exposes the process environment and the file system"},
	    {"sys", "sys exposes the interpreter, its modules and its frames"},
	    {"subprocess", "subprocess starts processes"},
	    {"socket", "socket opens the network"},
	    {"_socket", "_socket opens the network"},
	    {"builtins", "builtins hands over every builtin, unguarded"},
	    {"shutil", "shutil copies and removes files"},
	    {"ctypes", "ctypes calls native code"},
	    {"importlib", "importlib imports anything"},
	    {"pickle", "pickle runs code while it loads"},
	    {"marshal", "marshal builds code objects"},
	    {"inspect", "inspect reaches frames and their globals"},
	    {"gc", "gc reaches every object of the process"},
	    {"threading", "threading starts threads the eval budgets do not follow"},
	    {"signal", "signal changes the process's signal handlers"},
	};

	for (size_t i = 0; i < ELEMENTSOF(warnings); i++)
		if (streq(warnings[i].module, module))
			return warnings[i].warning;
	return NULL;
}
