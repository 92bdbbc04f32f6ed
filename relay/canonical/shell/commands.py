"""A command line's simple commands, from bash's words. Pure.

Each simple command bash would run is a part: its words with ``NAME=value`` prefixes taken
out as ``env``, keywords (``if``, ``then``, ``!``, ``time``…) dropped. Commands that
substitutions, wrappers and ``sh -c``-like programs run are parts too (``nested``). A part is
``opaque`` (never allowed without a person) unless relay can prove it a plain command with
plain arguments, the very words bash passes; when relay is unsure of the line as a whole,
every part is.
"""

from __future__ import annotations

from dataclasses import replace

from relay.canonical.shell.parts import Parsed, Simple
from relay.canonical.shell.programs import unwrap
from relay.canonical.shell.script import read
from relay.canonical.shell.words import Command

__all__ = ["parse"]

# Commands inside commands (`sh -c "sudo sh -c '…'"`) are read this deep.
_DEPTH = 4
_MOVES = frozenset({"cd", "pushd", "popd"})


def parse(command: str, *, _depth: int = 0) -> Parsed:
    """The simple commands of ``command`` (see the module docstring); never raises."""
    try:
        commands, uncertain = read(command)
    except RecursionError:  # nesting past what the reader bounds: unreadable, asked
        return Parsed((Simple(tuple(command.split()), opaque=True),))
    parts: list[Simple] = []
    for one in commands:
        simple = _simple(one)
        if simple is not None:
            parts.extend(_runs(simple, _depth))
    moved = False  # after a `cd`, `./x` is another file than the rule's
    for at, part in enumerate(parts):
        program = part.words[0] if part.words else ""
        if moved and "/" in program and not program.startswith("/"):
            parts[at] = replace(part, opaque=True)
        moved = moved or part.name in _MOVES
    if uncertain:
        parts = [p if p.opaque else replace(p, opaque=True) for p in parts]
        parts = parts or [Simple((), opaque=True)]
    return Parsed(tuple(parts))


def _simple(command: Command) -> Simple | None:
    words = command.words
    prefix = 0
    while prefix < len(words) and words[prefix].assignment:
        prefix += 1
    env = tuple(w.text for w in words[:prefix])
    rest = words[prefix:]
    # A NAME=value prefix can change what runs (PATH, LD_PRELOAD, GIT_SSH_COMMAND…).
    opaque = command.opaque or command.inner or bool(env) or not all(w.plain for w in words)
    if not rest:
        # `PATH=/tmp/x` alone changes what later commands run; `> f` writes a file.
        return Simple((), env, True, nested=command.inner) if env or command.opaque else None
    expands = frozenset(i for i, w in enumerate(rest) if w.expands)
    return Simple(tuple(w.text for w in rest), env, opaque, expands, command.inner)


def _runs(part: Simple, depth: int) -> list[Simple]:
    """``part`` and what it runs."""
    part, inner, texts = unwrap(part)
    if depth >= _DEPTH:
        # Too deep to follow what it runs: then it is not plain either.
        return [part if inner is None and not texts else replace(part, opaque=True)]
    out = [part]
    if inner is not None:
        out.extend(_runs(inner, depth + 1))
    for text in texts:
        out.extend(
            replace(p, opaque=True, nested=True) for p in parse(text, _depth=depth + 1).parts
        )
    return out
