/* SPDX-License-Identifier: MIT */
/* The profiling hooks (report-collector.h). Every event costs a clock read
 * and a probe of an open-addressed table: no allocation, no Python object
 * made, except on the first sight of a function (its names are copied into
 * the region then). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <limits.h>
#include <stdint.h>
#include <time.h>

#include "report-alloc.h"
#include "report-collector.h"
#include "report-shm.h"
#include "util.h"

/* Deeper than the interpreter's C stack allows in practice: calls below this
 * depth are counted but not timed. */
#define STACK_MAX (1u << 20)
/* Filename objects remembered with their verdict (is it the program's?): the
 * code objects of one file share one. */
#define FILE_CACHE 16

struct frame_entry {
	struct sb_report_fn *fn; /* NULL: not recorded (the table is full) */
	void *frame;		 /* the Python frame; NULL for a built-in */
	uint64_t start_ns;
	uint64_t child_ns;
	uint32_t slot;
	bool program; /* a frame of the program's own file: its lines count */
};

static struct {
	struct sb_report_shm *shm;
	bool installed, running;
	/* Until the program's own code starts: the interpreter's work in
	 * starting it (path hooks, reading the script) is not the program's. */
	bool waiting;
	char *program_abs;	  /* the name CPython gives the script's code */
	char *program_real;	  /* its real path, to match other spellings */
	const char *program_base; /* its last component */
	struct frame_entry *stack;
	size_t depth, cap, lost;
	uint32_t active[SB_REPORT_FN_SLOTS]; /* recursion depth: cumulative time once */
	bool program_slot[SB_REPORT_FN_SLOTS];
	struct {
		PyObject *name; /* kept alive by the code objects we hold */
		struct sb_report_str ref;
		bool program;
	} files[FILE_CACHE];
	unsigned next_file;
} col;

static uint32_t slot_hash(uint64_t key)
{
	return (uint32_t)(((key >> 4) * 0x9e3779b97f4a7c15ULL) >> 40) & (SB_REPORT_FN_SLOTS - 1);
}

/* The slot of key: found, or free for it (*ret_new); -1 when the table is
 * full. */
static int find_slot(uint64_t key, bool *ret_new)
{
	struct sb_report_shm *shm = col.shm;

	for (uint32_t i = slot_hash(key);; i = (i + 1) & (SB_REPORT_FN_SLOTS - 1)) {
		uint64_t k = shm->functions[i].key;

		if (k == key) {
			*ret_new = false;
			return (int)i;
		}
		if (k == 0) {
			if (shm->n_functions >= SB_REPORT_FN_MAX) {
				shm->flags |= SB_REPORT_F_FUNCTIONS_FULL;
				return -1;
			}
			*ret_new = true;
			return (int)i;
		}
	}
}

static void add_str(const char *s, size_t n, struct sb_report_str *ret)
{
	if (!sb_report_shm_str_add(col.shm, s, n, ret))
		*ret = (struct sb_report_str){0};
}

static void add_cstr(const char *s, struct sb_report_str *ret)
{
	add_str(s, strlen(s), ret);
}

/* Whether a code object's file is the program's. The exact name first; a
 * real path comparison only for names that end like the program's. */
static bool is_program_file(const char *name)
{
	_cleanup_free_ char *real = NULL;
	const char *base;

	if (!col.program_abs)
		return false;
	if (streq(name, col.program_abs))
		return true;
	if (!col.program_real || name[0] != '/')
		return false;
	base = strrchr(name, '/');
	if (!base || !streq(base + 1, col.program_base))
		return false;
	real = realpath(name, NULL);
	return real && streq(real, col.program_real);
}

/* The file of a new function: from the cache, or copied once per file. */
static void file_of(PyObject *filename, struct sb_report_str *ret, bool *ret_program)
{
	const char *utf8;
	Py_ssize_t n;
	unsigned i;

	for (i = 0; i < FILE_CACHE; i++)
		if (col.files[i].name == filename) {
			*ret = col.files[i].ref;
			*ret_program = col.files[i].program;
			return;
		}
	utf8 = PyUnicode_Check(filename) ? PyUnicode_AsUTF8AndSize(filename, &n) : NULL;
	if (!utf8) {
		PyErr_Clear();
		utf8 = "?";
		n = 1;
	}
	add_str(utf8, (size_t)n, ret);
	*ret_program = is_program_file(utf8);
	i = col.next_file++ % FILE_CACHE;
	col.files[i].name = filename;
	col.files[i].ref = *ret;
	col.files[i].program = *ret_program;
}

static void name_of(PyObject *name, struct sb_report_str *ret)
{
	const char *utf8;
	Py_ssize_t n;

	utf8 = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &n) : NULL;
	if (!utf8) {
		PyErr_Clear();
		add_cstr("?", ret);
		return;
	}
	add_str(utf8, (size_t)n, ret);
}

/* A function seen for the first time: its names go into the region, and the
 * key is written last, so that a slot with a key is complete. */
static void fill_python(int slot, PyCodeObject *code)
{
	struct sb_report_fn *fn = &col.shm->functions[slot];
	PyObject *type, *value, *tb;
	bool program = false;

	/* Python calls below may fail (and so clear): what the program has
	 * pending is not ours to drop. */
	PyErr_Fetch(&type, &value, &tb);
	name_of(code->co_qualname, &fn->name);
	file_of(code->co_filename, &fn->file, &program);
	PyErr_Restore(type, value, tb);
	fn->line = (uint32_t)(code->co_firstlineno > 0 ? code->co_firstlineno : 0);
	fn->kind = SB_REPORT_FN_PYTHON;
	col.program_slot[slot] = program;
	__atomic_store_n(&fn->key, (uint64_t)(uintptr_t)code, __ATOMIC_RELEASE);
	col.shm->fn_used[col.shm->n_functions++] = (uint16_t)slot;
	/* Held for the run: its address stays its own, never another's. */
	Py_INCREF(code);
}

static void fill_builtin(int slot, PyObject *func)
{
	struct sb_report_fn *fn = &col.shm->functions[slot];
	PyCFunctionObject *cf = (PyCFunctionObject *)func;
	PyObject *self = cf->m_self, *type, *value, *tb;
	const char *owner = NULL;
	char name[256];

	PyErr_Fetch(&type, &value, &tb);
	if (self && PyModule_Check(self))
		owner = PyModule_GetName(self);
	else if (self && PyType_Check(self))
		owner = ((PyTypeObject *)self)->tp_name;
	else if (self)
		owner = Py_TYPE(self)->tp_name;
	if (!owner)
		PyErr_Clear();
	PyErr_Restore(type, value, tb);
	snprintf(name, sizeof(name), "%s%s%s", owner ? owner : "", owner ? "." : "",
		 cf->m_ml->ml_name);
	add_cstr(name, &fn->name);
	add_cstr("<built-in>", &fn->file);
	fn->kind = SB_REPORT_FN_BUILTIN;
	__atomic_store_n(&fn->key, (uint64_t)(uintptr_t)cf->m_ml, __ATOMIC_RELEASE);
	col.shm->fn_used[col.shm->n_functions++] = (uint16_t)slot;
}

static struct frame_entry *push(void)
{
	if (col.depth == col.cap) {
		size_t ncap = col.cap ? col.cap * 2 : 256;
		struct frame_entry *n;

		if (ncap > STACK_MAX || !(n = realloc(col.stack, ncap * sizeof(*n)))) {
			col.shm->flags |= SB_REPORT_F_STACK_PARTIAL;
			col.lost++;
			return NULL;
		}
		col.stack = n;
		col.cap = ncap;
	}
	return &col.stack[col.depth++];
}

static void finish(struct frame_entry *e, uint64_t now)
{
	uint64_t elapsed = now > e->start_ns ? now - e->start_ns : 0;

	if (e->fn) {
		e->fn->own_ns += elapsed > e->child_ns ? elapsed - e->child_ns : 0;
		/* A recursive function's time counts once, at its outermost
		 * call, as cProfile counts it. */
		if (col.active[e->slot] > 0 && --col.active[e->slot] == 0)
			e->fn->cum_ns += elapsed;
	}
	col.depth--;
	if (col.depth > 0)
		col.stack[col.depth - 1].child_ns += elapsed;
}

static void enter(int slot, void *frame)
{
	struct frame_entry *e = push();

	col.shm->calls_total++;
	if (!e)
		return;
	*e = (struct frame_entry){.frame = frame, .slot = slot >= 0 ? (uint32_t)slot : 0};
	if (slot >= 0) {
		e->fn = &col.shm->functions[slot];
		e->fn->calls++;
		e->program = col.program_slot[slot];
		col.active[slot]++;
	}
	/* Last, so that the bookkeeping above is not charged to the function. */
	e->start_ns = sb_monotonic_ns();
}

static void enter_python(PyFrameObject *frame)
{
	PyCodeObject *code = PyFrame_GetCode(frame);
	bool is_new = false;
	int slot = find_slot((uint64_t)(uintptr_t)code, &is_new);

	if (slot >= 0 && is_new)
		fill_python(slot, code);
	Py_DECREF(code);
	if (col.waiting) {
		if (slot < 0 || !col.program_slot[slot]) {
			/* Seen (its names are kept) but not counted. */
			if (slot >= 0 && is_new)
				col.shm->functions[slot].calls = 0;
			return;
		}
		col.waiting = false;
	}
	enter(slot, frame);
}

static void enter_builtin(PyObject *func)
{
	bool is_new = false;
	int slot;

	if (!PyCFunction_Check(func))
		return;
	slot = find_slot((uint64_t)(uintptr_t)((PyCFunctionObject *)func)->m_ml, &is_new);
	if (slot >= 0 && is_new)
		fill_builtin(slot, func);
	enter(slot, NULL);
}

/* Leaves the entry of frame, and any left open above it by an event the
 * hooks did not see. */
static void leave_python(void *frame)
{
	size_t i = col.depth;
	uint64_t now;

	if (col.lost > 0) {
		col.lost--;
		return;
	}
	while (i > 0 && col.stack[i - 1].frame != frame)
		i--;
	if (i == 0)
		return;
	now = sb_monotonic_ns();
	while (col.depth >= i)
		finish(&col.stack[col.depth - 1], now);
}

static void leave_builtin(void)
{
	if (col.lost > 0) {
		col.lost--;
		return;
	}
	if (col.depth > 0 && col.stack[col.depth - 1].frame == NULL)
		finish(&col.stack[col.depth - 1], sb_monotonic_ns());
}

static void count_line(PyFrameObject *frame)
{
	struct frame_entry *top;
	int line;

	if (col.depth == 0)
		return;
	top = &col.stack[col.depth - 1];
	if (!top->program || top->frame != frame)
		return;
	line = PyFrame_GetLineNumber(frame);
	if (line <= 0)
		return;
	if (line >= SB_REPORT_LINES_MAX) {
		col.shm->flags |= SB_REPORT_F_LINES_BEYOND;
		return;
	}
	if (col.shm->line_counts[line] != UINT32_MAX)
		col.shm->line_counts[line]++;
	if ((uint32_t)line > col.shm->lines_max)
		col.shm->lines_max = (uint32_t)line;
}

/* Raised here, not passing through on its way up: a traceback with one
 * entry, this frame's. */
static void count_exception(PyObject *arg)
{
	PyObject *type, *tb;

	if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != 3)
		return;
	type = PyTuple_GET_ITEM(arg, 0);
	tb = PyTuple_GET_ITEM(arg, 2);
	if (!PyTraceBack_Check(tb) || ((PyTracebackObject *)tb)->tb_next != NULL)
		return;
	col.shm->exceptions_raised++;
	if (PyType_Check(type) &&
	    PyType_IsSubtype((PyTypeObject *)type, (PyTypeObject *)PyExc_MemoryError))
		col.shm->memory_errors++;
}

static int on_trace(PyObject *obj _unused_, PyFrameObject *frame, int what, PyObject *arg)
{
	if (!col.running || (col.waiting && what != PyTrace_CALL))
		return 0;
	switch (what) {
	case PyTrace_CALL:
		enter_python(frame);
		break;
	case PyTrace_RETURN:
		leave_python(frame);
		break;
	case PyTrace_LINE:
		count_line(frame);
		break;
	case PyTrace_EXCEPTION:
		count_exception(arg);
		break;
	default:
		break;
	}
	return 0;
}

static int on_profile(PyObject *obj _unused_, PyFrameObject *frame _unused_, int what,
		      PyObject *arg)
{
	if (!col.running)
		return 0;
	if (col.waiting)
		return 0;
	switch (what) {
	case PyTrace_C_CALL:
		enter_builtin(arg);
		break;
	case PyTrace_C_RETURN:
	case PyTrace_C_EXCEPTION:
		leave_builtin();
		break;
	default:
		break;
	}
	return 0;
}

/* The name CPython 3.11 gives the code of `python script.py`: the path as
 * written when absolute, else the current directory joined to it, with no
 * other normalisation (_Py_abspath). */
static int program_names(const struct sb_cli *cli)
{
	char cwd[PATH_MAX];
	const char *base;

	switch (cli->mode) {
	case SB_RUN_COMMAND:
		col.program_abs = strdup("<string>");
		return col.program_abs ? 0 : -ENOMEM;
	case SB_RUN_SCRIPT:
		if (!cli->target || streq(cli->target, "-")) {
			col.program_abs = strdup("<stdin>");
			return col.program_abs ? 0 : -ENOMEM;
		}
		if (cli->target[0] == '/')
			col.program_abs = strdup(cli->target);
		else if (getcwd(cwd, sizeof(cwd)))
			col.program_abs = sb_path_join(cwd, cli->target);
		else
			col.program_abs = strdup(cli->target);
		if (!col.program_abs)
			return -ENOMEM;
		col.program_real = realpath(cli->target, NULL);
		if (col.program_real) {
			base = strrchr(col.program_real, '/');
			col.program_base = base ? base + 1 : col.program_real;
		}
		return 0;
	default:
		/* -m and the REPL: no single file is the program's. */
		return 0;
	}
}

bool sb_report_collector_in_program(void)
{
	return col.running && col.depth + col.lost > 0;
}

static int install_hooks(char **reterr)
{
	/* No argument object: sys.gettrace() and sys.getprofile() say None. */
	PyEval_SetProfile(on_profile, NULL);
	PyEval_SetTrace(on_trace, NULL);
	if (PyErr_Occurred()) {
		PyErr_Clear();
		return sb_error(reterr, -EPERM, "report: the profiling hooks cannot be installed");
	}
	col.installed = true;
	return 0;
}

int sb_report_collector_install(const struct sb_cli *cli, char **reterr)
{
	int r;

	if (!sb_report_region || col.installed)
		return 0;
	col.shm = sb_report_region;
	r = program_names(cli);
	if (r < 0)
		return sb_error(reterr, r, "report: out of memory");
	return install_hooks(reterr);
}

int sb_report_collector_install_idle(char **reterr)
{
	if (col.installed)
		return 0;
	return install_hooks(reterr);
}

void sb_report_collector_start(void)
{
	struct sb_report_shm *shm = col.shm;

	if (!col.installed || !shm)
		return;
	if (col.program_abs)
		add_cstr(col.program_abs, &shm->program_file);
	sb_report_alloc_start(shm);
	/* A script, -c or stdin: from its first line. -m and the REPL have no
	 * file of their own: from the start. */
	col.waiting = col.program_abs != NULL;
	shm->magic = SB_REPORT_SHM_MAGIC;
	shm->flags |= SB_REPORT_F_STARTED;
	col.running = true;
}

int sb_report_collector_begin(struct sb_report_shm *region, const char *program_file, char **reterr)
{
	const char *base;

	if (!col.installed || col.running || col.shm)
		return sb_error(reterr, -EINVAL, "report: the collector is not idle");
	col.program_abs = strdup(program_file);
	col.program_real = strdup(program_file);
	if (!col.program_abs || !col.program_real)
		return sb_error(reterr, -ENOMEM, "report: out of memory");
	base = strrchr(col.program_real, '/');
	col.program_base = base ? base + 1 : col.program_real;
	col.shm = region;
	sb_report_region = region;
	sb_report_collector_start();
	return 0;
}
