"""Which tests start a process, drive a browser or run an agent's CLI, read from their code.

``bash scripts/test --quick`` leaves these kinds out (``-m "not subprocess and ..."``). The
markers are set at collection from what a test calls: its function, its class's methods, its
fixtures (those it names and those a fixture asks for by name with ``getfixturevalue``) and,
transitively, the helpers under tests/ that these call. A test needs no marker by hand unless
it starts a process through relay's own code; ``ProcessWatch`` fails such a test, so that a
marker cannot silently go missing.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import CodeType, FunctionType, ModuleType
from typing import Any

import pytest

__all__ = ["KINDS", "ProcessWatch", "kinds_of", "reaches"]

TESTS = Path(__file__).resolve().parent

KINDS = {
    "subprocess": "starts a process (relay serve, redis-server, a CLI): not in --quick",
    "browser": "drives headless Chromium: not in --quick",
    "cli": "runs a real agent CLI (Codex, Claude Code): not in --quick",
}

# The helpers that mean a kind besides "subprocess": (module's last name, function name).
_HELPERS = {
    ("cli_harness", "start_cli"): "cli",
    ("browser", "start_chromium"): "browser",
}
# Names in a code object that start a process: asyncio's and subprocess's spawners, and
# ``sys.executable`` (a Python run as a child, by the test or by the relay code it drives).
_SPAWNS = frozenset({"create_subprocess_exec", "create_subprocess_shell", "subprocess", "Popen"})
# Process creation as Python's audit hooks report it (asyncio's goes through subprocess.Popen).
_SPAWN_EVENTS = frozenset(
    {"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty", "os.exec", "os.system"}
)
_PARAMS_WITHOUT_PROCESS = frozenset({"memory"})  # a store fixture's in-process kind


def _in_tests(obj: Any) -> bool:
    module = obj if isinstance(obj, ModuleType) else sys.modules.get(obj.__module__ or "")
    path = getattr(module, "__file__", None)
    return path is not None and Path(path).resolve().is_relative_to(TESTS)


class _Reader:
    """Walks code objects, following names into the functions and classes under tests/."""

    def __init__(self) -> None:
        self._done: dict[int, frozenset[str]] = {}

    def of(self, obj: Any) -> frozenset[str]:
        """The kinds ``obj`` (a function, class or fixture) reaches."""
        obj = inspect.unwrap(getattr(obj, "_get_wrapped_function", lambda: obj)())
        key = id(obj)
        if key in self._done:
            return self._done[key]
        self._done[key] = frozenset()  # (a cycle reaches nothing new)
        kinds: set[str] = set()
        helper = (getattr(obj, "__module__", "").rpartition(".")[2], getattr(obj, "__name__", ""))
        if helper in _HELPERS:
            kinds |= {_HELPERS[helper], "subprocess"}
        if isinstance(obj, FunctionType) and _in_tests(obj):
            kinds |= self._code(obj.__code__, obj.__globals__)
        elif isinstance(obj, type) and _in_tests(obj):
            for value in vars(obj).values():
                kinds |= self.of(getattr(value, "__func__", value))
        self._done[key] = frozenset(kinds)
        return self._done[key]

    def _code(self, code: CodeType, names: dict[str, Any]) -> set[str]:
        used = set(code.co_names)
        kinds = {"subprocess"} if used & _SPAWNS or {"sys", "executable"} <= used else set()
        # A helper module imported whole (``server_env.relay_server``): its names too.
        modules = [names[n] for n in used if isinstance(names.get(n), ModuleType)]
        spaces = [names, *(vars(m) for m in modules if _in_tests(m))]
        for name in used:
            for space in spaces:
                if name in space:
                    kinds |= self.of(space[name])
        for const in code.co_consts:
            if isinstance(const, CodeType):
                kinds |= self._code(const, names)
        return kinds

    def fixture_names(self, obj: Any) -> Iterator[str]:
        """The names a fixture asks for with ``request.getfixturevalue("name")``."""
        obj = inspect.unwrap(getattr(obj, "_get_wrapped_function", lambda: obj)())
        code = getattr(obj, "__code__", None)
        if code is None or "getfixturevalue" not in code.co_names:
            return
        yield from (c for c in code.co_consts if isinstance(c, str) and c.isidentifier())


_reader = _Reader()


def reaches(obj: Any) -> frozenset[str]:
    """The kinds a function or class under tests/ reaches through its code."""
    return _reader.of(obj)


def kinds_of(item: pytest.Item, fixturenames: Iterable[str] | None = None) -> frozenset[str]:
    """The kinds of ``item``: what its code reaches, with its fixtures' (``fixturenames``:
    those active at run time; by default those known at collection)."""
    kinds: set[str] = set()
    if TESTS / "browser" in Path(str(item.path)).parents:
        kinds.add("browser")
    kinds |= _reader.of(getattr(item, "obj", None))
    if getattr(item, "cls", None) is not None:
        kinds |= _reader.of(item.cls)
    params = getattr(getattr(item, "callspec", None), "params", {})
    manager = item.session._fixturemanager
    pending, seen = list(fixturenames or getattr(item, "fixturenames", ())), set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for fixture in manager.getfixturedefs(name, item) or ():
            kinds |= _reader.of(fixture.func)
            if params.get(name) not in _PARAMS_WITHOUT_PROCESS:
                pending.extend(_reader.fixture_names(fixture.func))
            pending.extend(fixture.argnames)
    if kinds & {"browser", "cli"}:
        kinds.add("subprocess")
    return frozenset(kinds)


class ProcessWatch:
    """Notes each process started while a test runs (from Python's audit events)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.watching = False
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.watching and event in _SPAWN_EVENTS:
            self.started.append(f"{event} {args[:2]!r}"[:200])
