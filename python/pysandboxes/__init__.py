# SPDX-License-Identifier: MIT
"""py-sandboxes partial mode: run chosen functions in a sandboxed worker.

    from pysandboxes import sandbox, sandboxes

    @sandbox
    def tool(x):
        return x + 1

    with sandboxes(sandboxes_config=".py-sandboxes"):
        tool(1)          # runs in python-sb, under the profile's provider

The mechanism (the worker, its channel, the result guard) is the C extension
pysandboxes._core; this module only gives it the Python shape: decorators,
context managers and coroutines.  Inside python-sb, `pysandboxes` is the
interpreter's built-in module instead, where @sandbox calls directly.
"""

import asyncio
import functools
import inspect
import os
import sys

from . import _core
from ._core import (  # noqa: F401  (re-exported)
    ConfigSyntaxError,
    EvalInterrupted,
    EvalSyntaxRejected,
    RestrictedUnpicklingError,
    RuleApiPermissionError,
    RuleAttributeError,
    RuleEvalPermissionError,
    RuleFileNotFoundError,
    RuleModuleNotFoundError,
    RulePermissionError,
    RuleSocketConnectionRefusedError,
    SandBoxBaseExceptionError,
    SandBoxError,
    SandboxContextWarning,
    SandBoxProtocolError,
    sandbox_denials,
)

__all__ = [
    "sandbox", "sandboxes", "run", "is_in_sandbox", "sandbox_denials", "guarded_eval",
    "ConfigSyntaxError", "EvalInterrupted", "EvalSyntaxRejected", "RestrictedUnpicklingError",
    "RuleApiPermissionError", "RuleAttributeError", "RuleEvalPermissionError",
    "RuleFileNotFoundError", "RuleModuleNotFoundError", "RulePermissionError",
    "RuleSocketConnectionRefusedError", "SandBoxBaseExceptionError", "SandBoxError",
    "SandBoxProtocolError", "SandboxContextWarning",
]

_CONFIG_NAME = ".py-sandboxes"


def is_in_sandbox():
    """False: this process is the caller, not the sandbox."""
    return False


def guarded_eval(source, profile=None, names=None, mode="eval"):
    """The eval guard is python-sb's: call it inside a @sandbox function, or run
    the program under python-sb, where `pysandboxes` is the built-in module."""
    raise RuntimeError("guarded_eval() runs under python-sb's eval guard: call it inside "
                       "a @sandbox function, or run the program with python-sb")


# The modules of the @sandbox functions: the worker imports them when it
# starts, so that a module the profile does not let run fails sandboxes()
# itself, not the first call.
_modules = {}


def _check_timeout(timeout, name):
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"{name} must be a number of seconds or None, "
                        f"not {type(timeout).__name__}")
    if not timeout > 0:
        raise ValueError(f"{name} must be positive (float('inf') for no limit), "
                         f"not {timeout!r}")
    return float(timeout)


def sandbox(fn=None, *, timeout=None):
    """Run `fn` (sync or async, defined at module level) in the sandbox.

    @sandbox(timeout=5): the call may take at most 5 s (the worker running it
    is killed after that); without it, sandboxes()' call_timeout applies."""
    timeout = _check_timeout(timeout, "@sandbox(timeout=)")
    if fn is None:
        return functools.partial(sandbox, timeout=timeout)
    what = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        kind = "an async generator" if inspect.isasyncgenfunction(fn) else "a generator"
        raise TypeError(f"@sandbox cannot run {what}: it is {kind} function, and its "
                        "values would have to cross from the sandbox one by one; return a "
                        "list (or another value) instead")
    module = getattr(fn, "__module__", None)
    if isinstance(module, str) and "<locals>" not in getattr(fn, "__qualname__", ""):
        _modules.setdefault(module, None)

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_wrapper(*args, **kwargs):
            if _core.in_process():
                return await fn(*args, **kwargs)
            # The call waits on a worker in a thread: the event loop runs on,
            # and concurrent calls run in workers of their own.
            return await asyncio.to_thread(_core.call, fn, args, kwargs, timeout)
        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return _core.call(fn, args, kwargs, timeout)
    return wrapper


_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000 ** 2, "mb": 1000 ** 2,
          "mib": 1024 ** 2, "g": 1000 ** 3, "gb": 1000 ** 3, "gib": 1024 ** 3}


def _size(value, name):
    """Bytes from an int or a string with a unit ("512KiB", "2MB")."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number of bytes or a size such as '512KiB'")
    if isinstance(value, int):
        n = value
    elif isinstance(value, str):
        text = value.strip().lower()
        digits = text.rstrip("abcdefghijklmnopqrstuvwxyz").strip()
        unit = text[len(digits):].strip() if digits else None
        if not digits.isdigit() or unit not in _UNITS:
            raise ValueError(f"{name}={value!r}: expected bytes or a size such as '512KiB', "
                             "'64MiB', '1GB'")
        n = int(digits) * _UNITS[unit]
    else:
        raise TypeError(f"{name} must be a number of bytes or a size such as '512KiB', "
                        f"not {type(value).__name__}")
    if not 0 < n <= 1 << 30:
        raise ValueError(f"{name}={value!r}: must be between 1 byte and 1 GiB")
    return n


def _find_config():
    """The calling package's .py-sandboxes (spec section 3.2): the nearest
    enclosing package directory that has one, else ./.py-sandboxes."""
    frame = sys._getframe(1)
    while frame and frame.f_globals.get("__name__", "").partition(".")[0] == __name__:
        frame = frame.f_back
    start = frame.f_globals.get("__file__") if frame else None
    if start:
        d = os.path.dirname(os.path.abspath(start))
        while True:
            candidate = os.path.join(d, _CONFIG_NAME)
            if os.path.isfile(candidate):
                return candidate
            if not os.path.isfile(os.path.join(d, "__init__.py")):
                break
            d = os.path.dirname(d)
    if os.path.isfile(_CONFIG_NAME):
        return os.path.abspath(_CONFIG_NAME)
    return None


class sandboxes:
    """Starts the sandbox workers for the block (`with` or `async with`).

    Keyword rules are profile lines with '_' turned into '-' and command-line
    priority: sandboxes(os_sandbox="landlock", expose_ro={"/data", "/etc"}).
    The settings of the caller's side: call_timeout (seconds each call may
    take, None for no limit), max_result_size and max_argument_size (bytes,
    or '512KiB'), max_workers (workers running calls at the same time).
    Nested blocks share the workers of the outermost one."""

    def __init__(self, init_fn=None, sandboxes_config=None, *, envs=None, python_args=None,
                 graceful_shutdown=True, config_path=None, call_timeout=120,
                 max_result_size="512KiB", max_argument_size="64MiB", max_workers=8,
                 **rules):
        config = sandboxes_config if sandboxes_config is not None else config_path
        if config is None:
            config = _find_config()
        call_timeout = _check_timeout(call_timeout, "call_timeout")
        if isinstance(max_workers, bool) or not isinstance(max_workers, int):
            raise TypeError("max_workers must be an int")
        if not 1 <= max_workers <= 64:
            raise ValueError(f"max_workers={max_workers!r}: must be between 1 and 64")
        self._kw = dict(init_fn=init_fn, config=config, rules=rules, envs=envs,
                        python_args=python_args, graceful_shutdown=graceful_shutdown,
                        call_timeout=call_timeout or 0.0,
                        max_result_size=_size(max_result_size, "max_result_size"),
                        max_argument_size=_size(max_argument_size, "max_argument_size"),
                        max_workers=max_workers)

    def _start(self):
        _core.start(**self._kw, preload=list(_modules))

    def __enter__(self):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("It's not possible to mix synchronous and asynchronous code: "
                               "use 'async with sandboxes()' inside a coroutine")
        self._start()
        return self

    def __exit__(self, *exc):
        _core.stop()
        return False

    async def __aenter__(self):
        await asyncio.to_thread(self._start)
        return self

    async def __aexit__(self, *exc):
        await asyncio.to_thread(_core.stop)
        return False


def run(coro, *, init_fn=None, sandboxes_config=None, config_path=None, envs=None,
        python_args=None, graceful_shutdown=True, **settings_and_rules):
    """asyncio.run(coro) with the sandbox started around it."""
    if not inspect.iscoroutine(coro):
        raise ValueError(f"run() expects a coroutine, not {type(coro).__name__}")
    config = sandboxes_config if sandboxes_config is not None else config_path
    if config is None:
        config = _find_config()
    box = sandboxes(init_fn, config, envs=envs, python_args=python_args,
                    graceful_shutdown=graceful_shutdown, **settings_and_rules)

    async def main():
        async with box:
            return await coro
    return asyncio.run(main())
