"""What a tool use is about (its command, its path) and the patterns that match it. Pure.

A rule and a grant both say "this tool, with a command or path like this". ``Pattern`` is
that statement; ``subject`` pulls the command and path out of a tool's input the same way
for Claude Code's tools (``Bash``: ``command``; ``Edit``/``Write``/``MultiEdit``/``Read``:
``file_path``; ``NotebookEdit``: ``notebook_path``; ``Glob``/``Grep``: ``path``) and for
``relay exec`` (``command``), in canonical form: the command parsed into its simple commands
(``relay.canonical.shell``), the path resolved (``relay.canonical.paths``). A pattern matches
``strict``ly (an allow rule, a grant: every part of the command, the very path) or loosely
(a deny or ask rule: any part, the path or a folder it is in).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from relay.canonical.paths import PathGlob, Place, place
from relay.canonical.shell import CommandGlob, Parsed, Simple, parse

__all__ = ["Pattern", "Subject", "fingerprint", "subject"]

PatternKind = Literal["exact", "glob", "regex"]
_PATH_KEYS = ("file_path", "notebook_path", "path")


@dataclass(frozen=True, slots=True)
class Subject:
    """The parts of a tool use that rules and grants look at."""

    tool: str
    command: str | None = None
    path: str | None = None
    cwd: str | None = None
    digest: str = ""
    shell: Parsed | None = None
    where: Place | None = None

    def paths(self) -> tuple[str, ...]:
        """The canonical path: absolute, and relative to ``cwd`` when inside it."""
        if self.where is None:
            return ()
        return tuple(p for p in (self.where.absolute, self.where.relative) if p)


def fingerprint(tool: str, tool_input: Mapping[str, Any]) -> str:
    """A stable digest of exactly this tool and input (key order does not matter)."""
    canonical = json.dumps([tool, tool_input], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def subject(tool: str, tool_input: Mapping[str, Any], *, cwd: str | None = None) -> Subject:
    """The command and path a tool use is about, as far as its input says."""
    command = tool_input.get("command")
    path = next((v for k in _PATH_KEYS if isinstance(v := tool_input.get(k), str) and v), None)
    given_cwd = tool_input.get("cwd")
    where_cwd = given_cwd if isinstance(given_cwd, str) and given_cwd else cwd
    return Subject(
        tool=tool,
        command=command if isinstance(command, str) else None,
        path=path,
        cwd=where_cwd,
        digest=fingerprint(tool, tool_input),
        shell=parse(command) if isinstance(command, str) else None,
        where=place(path, where_cwd) if path is not None else None,
    )


def _glob(pattern: str, text: str) -> bool:
    # fnmatchcase: a rule must not match differently on macOS and Linux.
    return fnmatch.fnmatchcase(text, pattern)


def _command_words(glob: str) -> str:
    shape = CommandGlob.of(glob)
    words = " ".join(shape.words)
    if not shape.open:
        return f"`{words}`"
    return f"`{words}` followed by any words" if words else "any command"


@dataclass(frozen=True, slots=True)
class Pattern:
    """Tools (globs on the name) and, optionally, commands or paths (globs or regexes).

    It matches a use when the tool matches and, for each of commands and paths it names,
    one of them matches; an ``exact`` pattern matches only the very input it was made from.
    """

    tools: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    command_regex: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    path_regex: tuple[str, ...] = ()
    digest: str | None = None
    _compiled: tuple[tuple[re.Pattern[str], ...], tuple[re.Pattern[str], ...]] = field(
        default=((), ()), init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        compiled = (
            tuple(re.compile(r) for r in self.command_regex),
            tuple(re.compile(r) for r in self.path_regex),
        )
        object.__setattr__(self, "_compiled", compiled)

    @classmethod
    def exact(cls, tool: str, tool_input: Mapping[str, Any]) -> Pattern:
        """A pattern matching only this tool with exactly this input."""
        return cls(tools=(tool,), digest=fingerprint(tool, tool_input))

    @property
    def kind(self) -> PatternKind:
        """``exact``, ``regex`` (any regex part) or ``glob``."""
        if self.digest is not None:
            return "exact"
        return "regex" if self.command_regex or self.path_regex else "glob"

    def matches(self, use: Subject, *, strict: bool = True) -> bool:
        """Whether ``use`` is covered: ``strict`` (allow, grants) needs every part of its
        command and its very path; loose (deny, ask) any part, or a folder it is in."""
        if self.tools and not any(_glob(t, use.tool) for t in self.tools):
            return False
        if self.digest is not None:
            return use.digest == self.digest
        command_regex, path_regex = self._compiled
        if self.commands or command_regex:
            if use.shell is None or not use.shell.parts:
                return False
            globs = [CommandGlob.of(c) for c in self.commands]

            def hit(part: Simple) -> bool:
                if strict:
                    if part.opaque:
                        return False
                    # A regex sees a glob word as text, not where it stands: globs only.
                    return any(g.strict(part) for g in globs) or (
                        not part.expands and any(r.search(part.text()) for r in command_regex)
                    )
                return any(g.loose(part) for g in globs) or any(
                    r.search(part.text()) for r in command_regex
                )

            parts = use.shell.parts
            if strict and not all(hit(p) for p in parts):
                return False
            raw = use.command or ""
            if not strict and not (
                any(hit(p) for p in parts)
                or any(r.search(raw) for r in command_regex)
                or any(_glob(c, raw) for c in self.commands)
            ):
                return False
        if self.paths or path_regex:
            if use.where is None:
                return False
            where = use.where
            globs_p = [PathGlob(p) for p in self.paths]
            globbed = any(g.strict(where) if strict else g.loose(where) for g in globs_p)
            if not globbed and not any(r.search(c) for r in path_regex for c in use.paths()):
                return False
        return True

    def describe(self) -> str:
        """What the pattern covers, exactly, in words for the reviewer (not escaped)."""
        tools = ", ".join(self.tools) if self.tools else "any tool"
        if self.digest is not None:
            return f"exactly this {tools} call"
        commands = [_command_words(c) for c in self.commands]
        commands += [f"matching /{r}/" for r in self.command_regex]
        paths = [f"`{p}`" for p in self.paths] + [f"matching /{r}/" for r in self.path_regex]
        parts = []
        if commands:
            parts.append(f"commands each part of which is {' or '.join(commands)}")
        if paths:
            within = " (`*` within one folder)" if any("*" in p for p in self.paths) else ""
            parts.append(f"on paths {' or '.join(paths)}{within}")
        return f"{tools} {' and '.join(parts)}" if parts else f"every {tools} call"

    def to_json(self) -> dict[str, Any]:
        """The wire form (only the fields that are set)."""
        out: dict[str, Any] = {}
        for name in ("tools", "commands", "command_regex", "paths", "path_regex"):
            value: Sequence[str] = getattr(self, name)
            if value:
                out[name] = list(value)
        if self.digest is not None:
            out["digest"] = self.digest
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Pattern:
        """Read the wire form; raises ``ValueError`` (or ``re.error``) naming what is wrong."""
        known = {"tools", "commands", "command_regex", "paths", "path_regex", "digest"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{unknown[0]} is not a known pattern field")
        lists: dict[str, tuple[str, ...]] = {}
        for name in known - {"digest"}:
            value = data.get(name, [])
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ValueError(f"{name} must be a list of non-empty strings")
            lists[name] = tuple(value)
        digest = data.get("digest")
        if digest is not None and (not isinstance(digest, str) or not digest):
            raise ValueError("digest must be a non-empty string")
        return cls(
            tools=lists["tools"],
            commands=lists["commands"],
            command_regex=lists["command_regex"],
            paths=lists["paths"],
            path_regex=lists["path_regex"],
            digest=digest,
        )
