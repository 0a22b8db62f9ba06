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


def sandbox(fn):
    """Run `fn` (sync or async, defined at module level) in the sandbox."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def async_wrapper(*args, **kwargs):
            if _core.in_process():
                return await fn(*args, **kwargs)
            # The call waits on the worker in a thread: the event loop runs on.
            return await asyncio.to_thread(_core.call, fn, args, kwargs)
        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return _core.call(fn, args, kwargs)
    return wrapper


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
    """Starts the sandbox worker for the block (`with` or `async with`).

    Keyword rules are profile lines with '_' turned into '-' and command-line
    priority: sandboxes(os_sandbox="landlock", expose_ro={"/data", "/etc"}).
    Nested blocks share one worker."""

    def __init__(self, init_fn=None, sandboxes_config=None, *, envs=None, python_args=None,
                 graceful_shutdown=True, config_path=None, **rules):
        config = sandboxes_config if sandboxes_config is not None else config_path
        if config is None:
            config = _find_config()
        self._kw = dict(init_fn=init_fn, config=config, rules=rules, envs=envs,
                        python_args=python_args, graceful_shutdown=graceful_shutdown)

    def __enter__(self):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("It's not possible to mix synchronous and asynchronous code: "
                               "use 'async with sandboxes()' inside a coroutine")
        _core.start(**self._kw)
        return self

    def __exit__(self, *exc):
        _core.stop()
        return False

    async def __aenter__(self):
        await asyncio.to_thread(_core.start, **self._kw)
        return self

    async def __aexit__(self, *exc):
        await asyncio.to_thread(_core.stop)
        return False


def run(coro, *, init_fn=None, sandboxes_config=None, config_path=None, envs=None,
        python_args=None, graceful_shutdown=True, **rules):
    """asyncio.run(coro) with the sandbox started around it."""
    if not inspect.iscoroutine(coro):
        raise ValueError(f"run() expects a coroutine, not {type(coro).__name__}")
    config = sandboxes_config if sandboxes_config is not None else config_path
    if config is None:
        config = _find_config()
    box = sandboxes(init_fn, config, envs=envs, python_args=python_args,
                    graceful_shutdown=graceful_shutdown, **rules)

    async def main():
        async with box:
            return await coro
    return asyncio.run(main())
