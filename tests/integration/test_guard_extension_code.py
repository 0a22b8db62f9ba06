# SPDX-License-Identifier: MIT
"""A Cython-built extension module of site-packages builds a code object for
each of its functions while it initialises (for its tracebacks): Cython 0.29
on CPython 3.11 calls PyCode_NewEmpty() then code.replace() from C, Cython
3's limited API calls the code type; both raise "code.__new__" with no
bytecode and a name of the extension's own source ("yaml/_yaml.pyx"), not a
site-packages path. That is the extension's act, not the program's: under
python-import=* (no dynamic-code grant) `import yaml` must work
(src/guard/guard-api.c: extension_traceback_code()).

What stays refused: the program building such a code object itself
(CodeType(), replace(), with the same ".pyx" name and no bytecode), the
extension's C function doing it when the program calls it later, an
extension that builds code with bytecode while it initialises, and a C
callable the program planted as a finalizer that gc runs during the
extension's initialisation (it runs under the same frames as the
extension's C code). A code object with no bytecode is never run, whatever
the grants. Everything runs as root and as nobody."""

import os
import shutil
import subprocess
import sysconfig

import pytest

API = "RuleApiPermissionError"

# The extension, built against this interpreter's headers. SBCY_MODE picks
# how the module is made (multi-phase: the code objects in the exec slot, as
# Cython's PEP 489 modules do; single-phase: in PyInit) and what it builds.
EXT_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Cython 0.29 on 3.11: PyCode_NewEmpty(), then replace() with its fields. */
static PyObject *code_by_replace(const char *file, const char *name, PyObject *bytecode)
{
    PyCodeObject *empty = PyCode_NewEmpty(file, name, 2);
    PyObject *replace = NULL, *kw = NULL, *none = NULL, *result = NULL;

    if (!empty)
        return NULL;
    if (!(replace = PyObject_GetAttrString((PyObject *)empty, "replace")) ||
        !(kw = Py_BuildValue("{s:i,s:O}", "co_flags", 3, "co_code", bytecode)) ||
        !(none = PyTuple_New(0)))
        goto out;
    result = PyObject_Call(replace, none, kw);
out:
    Py_XDECREF(none);
    Py_XDECREF(kw);
    Py_XDECREF(replace);
    Py_DECREF(empty);
    return result;
}

/* Cython 3's limited API: the code type called from C. */
static PyObject *code_by_type(const char *file, const char *name, PyObject *bytecode)
{
    return PyObject_CallFunction((PyObject *)&PyCode_Type, "iiiiiiONNNNNNiNN", 0, 0, 0, 0, 0, 3,
                                 bytecode, PyTuple_New(0), PyTuple_New(0), PyTuple_New(0),
                                 PyUnicode_FromString(file), PyUnicode_FromString(name),
                                 PyUnicode_FromString(name), 2, PyBytes_FromStringAndSize("", 0),
                                 PyBytes_FromStringAndSize("", 0));
}

/* What the module does while it initialises: its traceback code objects,
 * stored on it as the tuple `codes`. */
static int build_codes(PyObject *module)
{
    const char *mode = MODE;
    PyObject *bytecode, *a = NULL, *b = NULL, *codes;

    /* gc striking during the initialisation runs what the program planted. */
    if (strstr(mode, "gc")) {
        PyObject *gc = PyImport_ImportModule("gc"), *r;

        if (!gc)
            return -1;
        r = PyObject_CallMethod(gc, "collect", NULL);
        Py_DECREF(gc);
        if (!r)
            return -1;
        Py_DECREF(r);
    }
    /* RETURN_VALUE of a constant: code that would run. */
    bytecode = strstr(mode, "bytecode") ? PyBytes_FromStringAndSize("\x97\x00\x64\x00\x53\x00", 6)
                                        : PyBytes_FromStringAndSize("", 0);
    if (!bytecode)
        return -1;
    a = code_by_replace(NAME "/_ext.pyx", "f", bytecode);
    if (a)
        b = code_by_type("stringsource", "__pyx_unpickle_g", bytecode);
    Py_DECREF(bytecode);
    if (!a || !b) {
        Py_XDECREF(a);
        return -1;
    }
    codes = PyTuple_Pack(2, a, b);
    Py_DECREF(a);
    Py_DECREF(b);
    if (!codes)
        return -1;
    return PyModule_AddObject(module, "codes", codes) < 0 ? (Py_DECREF(codes), -1) : 0;
}

/* The same C code called by the program once the module is made. */
static PyObject *make(PyObject *self, PyObject *bytecode)
{
    (void)self;
    return code_by_type(NAME "/_ext.pyx", "made", bytecode);
}

static PyMethodDef methods[] = {
    {"make", make, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

#ifdef SINGLE_PHASE
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, NAME, NULL, -1, methods};

PyMODINIT_FUNC INIT(void)
{
    PyObject *m = PyModule_Create(&def);

    if (m && build_codes(m) < 0)
        Py_CLEAR(m);
    return m;
}
#else
static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, (void *)build_codes},
    {0, NULL},
};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, NAME, NULL, 0, methods, slots};

PyMODINIT_FUNC INIT(void)
{
    return PyModuleDef_Init(&def);
}
#endif
"""

# name -> (SINGLE_PHASE?, mode)
EXTENSIONS = {
    "sbcy_multi": (False, "plain"),
    "sbcy_single": (True, "plain"),
    "sbcy_bytecode": (False, "bytecode"),
    "sbcy_gc": (False, "gc"),
}


@pytest.fixture(scope="module")
def ext_dir(tmp_path_factory):
    """The extensions, compiled once with gcc against this interpreter."""
    include = sysconfig.get_paths()["include"]
    if not shutil.which("gcc") or not os.path.exists(os.path.join(include, "Python.h")):
        pytest.skip("no gcc or no Python.h to build a test extension")
    out = tmp_path_factory.mktemp("sbcy")
    src = out / "ext.c"
    src.write_text(EXT_SOURCE)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for name, (single, mode) in EXTENSIONS.items():
        cmd = ["gcc", "-shared", "-fPIC", "-O1", f"-I{include}", f"-DNAME=\"{name}\"",
               f"-DINIT=PyInit_{name}", f"-DMODE=\"{mode}\"", str(src), "-o",
               str(out / (name + suffix))]
        if single:
            cmd.insert(1, "-DSINGLE_PHASE")
        subprocess.run(cmd, check=True, capture_output=True)
    return out


@pytest.fixture(params=["root", "nobody"])
def box(request):
    return request.getfixturevalue("sb" if request.param == "root" else "sb_nobody")


def _run(box, ext_dir, script, extra=""):
    """script under python-import=* with the extensions in a site-packages
    directory of the box's own (on sys.path through PYTHONPATH: the guard
    exempts it as it does the system's)."""
    site = box.mkdir("lib/site-packages")
    for so in ext_dir.glob("*.so"):
        shutil.copy(so, site / so.name)
        box._chown(site / so.name)
    profile = "python-import=*\nenv=PYTHONPATH=${PYTHONPATH}\n" + extra
    return box.run_code(profile, script, env={"PYTHONPATH": str(site)})


@pytest.mark.parametrize("name", ["sbcy_multi", "sbcy_single"])
def test_extension_builds_its_traceback_code_while_it_initialises(box, ext_dir, name):
    r = _run(box, ext_dir, f"""\
        import {name}
        for c in {name}.codes:
            print('CODE', c.co_filename, c.co_name, len(c.co_code))
        """)
    assert r.returncode == 0, r
    assert f"CODE {name}/_ext.pyx f 0" in r.stdout, r
    assert "CODE stringsource __pyx_unpickle_g 0" in r.stdout, r


def test_the_program_building_the_same_code_is_refused(box, ext_dir):
    r = _run(box, ext_dir, """\
        import types, sbcy_multi
        c = sbcy_multi.codes[0]
        def probe(what, fn):
            try:
                fn()
            except BaseException as e:
                print('PROBE', what, type(e).__name__, e, flush=True)
            else:
                print('PROBE', what, 'ALLOWED', flush=True)
        probe('replace', lambda: c.replace(co_name='g'))
        probe('type', lambda: types.CodeType(0, 0, 0, 1, 0, 3, b'', (), (), (),
                                             'sbcy_multi/_ext.pyx', 'g', 'g', 2, b'', b''))
        probe('make', lambda: sbcy_multi.make(b''))
        """)
    assert r.returncode == 0, r
    for what in ("replace", "type", "make"):
        assert f"PROBE {what} {API}" in r.stdout, r
        assert "code.__new__() (building a code object) is denied" in r.stdout, r
    assert "ALLOWED" not in r.stdout, r


def test_an_extension_building_code_with_bytecode_is_refused(box, ext_dir):
    r = _run(box, ext_dir, "import sbcy_bytecode\n")
    assert r.returncode != 0, r
    assert API in r.stderr, r
    assert "code.__new__() (building a code object) is denied" in r.stderr, r


PLANTED = """\
import functools, gc, sys, types
gc.disable()
made = []
c = (lambda: 42).__code__
fields = (c.co_argcount, c.co_posonlyargcount, c.co_kwonlyargcount, c.co_nlocals,
          c.co_stacksize, c.co_flags, BYTECODE, c.co_consts, c.co_names, c.co_varnames,
          'sbcy_gc/_ext.pyx', 'x', 'x', 1, c.co_linetable, c.co_exceptiontable)
class Planted:
    # A C callable, no Python frame: partial has no __get__, so gc calls it
    # with no argument, under the frames of whatever runs at that moment.
    __del__ = functools.partial(list.extend, made, map(types.CodeType, *[[f] for f in fields]))
p = Planted()
p.cycle = p
del p
try:
    import sbcy_gc
except BaseException as e:
    print('IMPORT', type(e).__name__, flush=True)
print('MADE', [len(m.co_code) for m in made], flush=True)
for m in made:
    try:
        exec(m)
    except BaseException as e:
        print('EXEC', type(e).__name__, e, flush=True)
    else:
        print('EXEC ALLOWED', flush=True)
"""


def test_a_finalizer_the_program_plants_gets_no_bytecode(box, ext_dir):
    # gc runs the finalizer during the extension's initialisation (the
    # extension calls gc.collect(), as any allocation of its might): it
    # runs under the frames of the extension's C code, so only code with
    # no bytecode may come of it.
    r = _run(box, ext_dir, PLANTED.replace("BYTECODE", "c.co_code"))
    assert r.returncode == 0, r
    assert "MADE []" in r.stdout, r
    assert "code.__new__() (building a code object) is denied" in r.stderr, r


def test_a_python_finalizer_in_the_window_is_the_programs(box, ext_dir):
    # Python code of the program running during the extension's
    # initialisation has a frame of its own: its code objects are its own,
    # with no bytecode and the extension's name too, and through the import
    # machinery's own function that calls what it is handed.
    script = PLANTED.replace("BYTECODE", "b''").replace(
        "    __del__ = functools.partial(list.extend, made, map(types.CodeType, "
        "*[[f] for f in fields]))",
        "    def __del__(self):\n"
        "        import importlib._bootstrap as b\n"
        "        for how in (types.CodeType, lambda *a: b._call_with_frames_removed(\n"
        "                types.CodeType, *a)):\n"
        "            try:\n"
        "                made.append(how(*fields))\n"
        "            except BaseException as e:\n"
        "                print('DEL', type(e).__name__, e, flush=True)")
    assert "def __del__" in script
    r = _run(box, ext_dir, script)
    assert r.returncode == 0, r
    assert "MADE []" in r.stdout, r
    assert r.stdout.count(f"DEL {API}") == 2, r
    assert "code.__new__() (building a code object) is denied" in r.stdout, r


def test_a_code_object_with_no_bytecode_never_runs(box, ext_dir):
    # The finalizer's bytecode-less code, and the extension's own, with
    # exec granted: the interpreter would read past the object's end.
    r = _run(box, ext_dir, PLANTED.replace("BYTECODE", "b''") + """\
import sbcy_multi
for m in sbcy_multi.codes:
    try:
        exec(m)
    except BaseException as e:
        print('EXEC', type(e).__name__, e, flush=True)
    else:
        print('EXEC ALLOWED', flush=True)
""", extra="python-api=ALLOW:builtins.exec\n")
    assert r.returncode == 0, r
    assert "MADE [0]" in r.stdout, r
    assert r.stdout.count(f"EXEC {API}") == 3, r
    assert "running a code object with no bytecode" in r.stdout, r
    assert "EXEC ALLOWED" not in r.stdout, r


def test_debian_yaml_imports(box):
    """Debian's python3-yaml: its _yaml extension is Cython 0.29."""
    import glob
    if not glob.glob("/usr/lib/python3/dist-packages/yaml/_yaml.cpython-*.so"):
        pytest.skip("python3-yaml with its C extension is not installed")
    box.profile("python-import=*\n")
    s = box.script("""\
        import yaml
        print(yaml.__with_libyaml__, yaml.load('a: [1, 2]', Loader=yaml.CSafeLoader),
              yaml.dump({'b': 3}, Dumper=yaml.CSafeDumper).strip())
        """)
    r = box.run(s)
    assert r.returncode == 0, r
    assert "True {'a': [1, 2]} b: 3" in r.stdout, r
