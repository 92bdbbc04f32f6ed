"""Tests use relay's public surface, or say in one line why they must look inside.

A test file that imports a private name from ``relay`` or reads a private attribute of
something relay made carries a ``# Looks inside: <why>`` line; a new reach into the internals
fails here until its file says why (issue 50)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MARK = "# Looks inside: "
# The standard library's and pytest's own internals, used to walk a parser or a session.
_NOT_RELAYS = {"_actions", "_SubParsersAction", "_HelpAction", "_fixturemanager", "_send_tests"}


def _defined_in_tests() -> set[str]:
    """Private names the tests define themselves (their helpers' own attributes)."""
    names: set[str] = set()
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                names.add(node.attr)
    return {name for name in names if name.startswith("_")}


def reaches(source: str, own: set[str]) -> set[str]:
    """The private names of relay's that ``source`` reaches for."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("relay"):
            found |= {a.name for a in node.names if a.name.startswith("_") and a.name[1] != "_"}
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if node.attr.startswith("__") or node.attr in _NOT_RELAYS | own:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            found.add(node.attr)
    return found


def test_the_scan_finds_a_reach() -> None:
    assert reaches("from relay.x import _y\nstore._redis.get()", set()) == {"_y", "_redis"}
    assert reaches("self._mine = 1\nparser._actions", set()) == set()


def test_each_file_that_looks_inside_says_why() -> None:
    own = _defined_in_tests()
    silent = []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        inside = reaches(text, own)
        if inside and MARK not in text:
            silent.append(f"{path.relative_to(TESTS)}: {sorted(inside)}")
    assert not silent, "add a '# Looks inside: <why>' line to:\n" + "\n".join(silent)
