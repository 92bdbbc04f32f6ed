"""A plan's scope: what a reviewed plan lets the agent do without asking again. Pure.

relay derives the scope from the plan's markdown and any structured steps the client
sends; the client proposes, relay reads. Only what relay can pin down exactly is in scope,
everything else stays *ask each time* and is shown so, with why:

- **Commands** (``runs``): one plain command each, read as bash reads it
  (``relay.canonical.shell``), compared word for word. A line holding any of ``;``, ``&``,
  ``|``, ``<``, ``>``, ``(``, ``)``, ``$``, a backtick, a backslash, a glob character, a
  ``#`` comment, a control character (``\\r`` included), a ``NAME=value`` prefix, a wrapper
  that runs another command, or a relative program path is never in scope.
- **Paths written** (``writes``): canonical (``relay.canonical.paths``), inside the project
  directory the plan names; a trailing ``/`` is the folder and everything under it. A path
  with a ``..`` part, a glob character or a control character, an absolute path outside the
  project, or any path when the plan names no project directory, is never in scope.
- **Tools** and **MCP servers**: named exactly; a tool that runs commands or touches paths
  (``Bash``, ``Edit``, ``Read``…) is never in scope as a whole, only through its commands and
  paths.

From the plan's text: every line of a fenced ``bash``/``sh``/``shell``/``console`` block is
a command (a leading ``$ `` dropped); an inline code span is a command after a verb such as
*run*, a path written after *write*, *edit*, *create*, *update*…, a tool after *use* or
*call* (an MCP server when the words before say *MCP server*). Structured steps are objects
with exactly one of ``run``, ``write``, ``tool`` or ``mcp_server``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from relay.canonical.match import Subject
from relay.canonical.paths import canonical
from relay.canonical.shell import parse
from relay.plans.steps import ITEM_KINDS, MAX_ITEM_CHARS, MAX_ITEMS, ItemKind, Step, plan_steps

__all__ = ["Asked", "PlanScope", "derive_scope", "describe_scope"]

# The tools whose calls a plan's commands and written paths cover.
COMMAND_TOOLS = frozenset({"Bash", "exec"})
WRITE_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
# Tools that run commands or touch paths: in scope only through those, never as a whole.
_WHOLE_NEVER = COMMAND_TOOLS | WRITE_TOOLS | frozenset({"Read", "Glob", "Grep", "LS"})
# Anything a plain command never needs: operators, expansions, escapes, globs, comments.
_COMMAND_BAD = frozenset(";&|<>()$`\\*?[]{}~#!")
_PATH_BAD = frozenset("*?[]{}\\`$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0080-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_MCP_TOOL = re.compile(r"^mcp__([A-Za-z0-9_.-]+?)__.+$")


@dataclass(frozen=True, slots=True)
class Asked:
    """An item that stays *ask each time*, and why (a sentence for the reviewer)."""

    kind: ItemKind
    text: str
    why: str

    def to_json(self) -> dict[str, Any]:
        """The stored and API form."""
        return {"kind": self.kind, "text": self.text, "why": self.why}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Asked:
        """Read the stored form."""
        kind = data["kind"]
        if kind not in ITEM_KINDS:
            raise ValueError(f"unknown plan item kind {kind!r}")
        return cls(kind=kind, text=str(data["text"]), why=str(data["why"]))


@dataclass(frozen=True, slots=True)
class PlanScope:
    """What calls an approved plan covers. ``root`` is the project directory (canonical,
    absolute) the written paths are under; ``writes`` are relative to it (a folder ends in
    ``/``); ``runs`` are commands as bash's words; ``asked`` is what stays ask each time;
    ``calls`` are exact calls a reviewer added (``relay.canonical.match.fingerprint``)."""

    root: str | None = None
    runs: tuple[tuple[str, ...], ...] = ()
    writes: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()
    asked: tuple[Asked, ...] = ()
    calls: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        """Whether the scope covers nothing."""
        return not (self.runs or self.writes or self.tools or self.mcp_servers or self.calls)

    def covers(self, use: Subject) -> bool:
        """Whether ``use`` is inside this scope: every part of its command one of the plan's
        commands word for word, its very path under a written one, or its tool named."""
        if use.digest and use.digest in self.calls:
            return True
        if use.tool in COMMAND_TOOLS:
            return self._runs(use)
        if use.tool in WRITE_TOOLS:
            return self._writes(use)
        if use.command is not None or use.path is not None or use.tool in _WHOLE_NEVER:
            return False
        if use.tool in self.tools:
            return True
        server = _MCP_TOOL.match(use.tool)
        return server is not None and server.group(1) in self.mcp_servers

    def _runs(self, use: Subject) -> bool:
        shell = use.shell
        if shell is None or not shell.parts or shell.opaque:
            return False
        # One plain command, word for word: a compound of planned commands is asked.
        if len(shell.parts) != 1:
            return False
        part = shell.parts[0]
        return not part.env and not part.expands and not part.nested and part.words in self.runs

    def _writes(self, use: Subject) -> bool:
        if self.root is None or use.where is None or use.where.absolute is None:
            return False
        path = use.where.absolute
        base = self.root.rstrip("/")
        for written in self.writes:
            if written.endswith("/"):
                folder = f"{base}/{written.rstrip('/')}" if written != "./" else base
                if path.startswith(folder.rstrip("/") + "/"):
                    return True
            elif path == f"{base}/{written}":
                return True
        return False

    def narrowed(self, keep: Iterable[Step]) -> PlanScope:
        """This scope with only the items in ``keep`` (a reviewer's narrowing)."""
        wanted = set(keep)
        return PlanScope(
            root=self.root,
            runs=tuple(r for r in self.runs if Step("run", shlex.join(r)) in wanted),
            writes=tuple(w for w in self.writes if Step("write", w) in wanted),
            tools=tuple(t for t in self.tools if Step("tool", t) in wanted),
            mcp_servers=tuple(s for s in self.mcp_servers if Step("mcp_server", s) in wanted),
            asked=self.asked,
            calls=self.calls,
        )

    def items(self) -> list[Step]:
        """The scope's items, in the order shown."""
        return [
            *(Step("write", w) for w in self.writes),
            *(Step("run", shlex.join(r)) for r in self.runs),
            *(Step("tool", t) for t in self.tools),
            *(Step("mcp_server", s) for s in self.mcp_servers),
        ]

    def with_call(self, digest: str) -> PlanScope:
        """This scope with one exact call added (a reviewer's "add to the plan's scope")."""
        if digest in self.calls:
            return self
        return PlanScope(
            root=self.root,
            runs=self.runs,
            writes=self.writes,
            tools=self.tools,
            mcp_servers=self.mcp_servers,
            asked=self.asked,
            calls=(*self.calls, digest),
        )

    def to_json(self) -> dict[str, Any]:
        """The stored and API form."""
        return {
            "root": self.root,
            "runs": [list(r) for r in self.runs],
            "writes": list(self.writes),
            "tools": list(self.tools),
            "mcp_servers": list(self.mcp_servers),
            "ask_each_time": [a.to_json() for a in self.asked],
            "calls": list(self.calls),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlanScope:
        """Read the stored form."""
        root = data.get("root")
        return cls(
            root=root if isinstance(root, str) else None,
            runs=tuple(tuple(str(w) for w in r) for r in data.get("runs", [])),
            writes=tuple(str(w) for w in data.get("writes", [])),
            tools=tuple(str(t) for t in data.get("tools", [])),
            mcp_servers=tuple(str(s) for s in data.get("mcp_servers", [])),
            asked=tuple(Asked.from_json(a) for a in data.get("ask_each_time", [])),
            calls=tuple(str(c) for c in data.get("calls", [])),
        )


def derive_scope(plan: str, steps: Sequence[Step] = (), *, root: str | None = None) -> PlanScope:
    """The scope relay derives from ``plan`` and the client's ``steps`` for a project at
    ``root`` (absolute; ``None``: no written path is in scope)."""
    project = canonical(root) if root and root.startswith("/") and not _bad_text(root) else None
    runs: list[tuple[str, ...]] = []
    writes: list[str] = []
    tools: list[str] = []
    servers: list[str] = []
    asked: list[Asked] = []
    for step in [*plan_steps(plan), *steps][: MAX_ITEMS * 2]:
        if step.kind == "run":
            words, why = _command(step.text)
            _add(runs, words, asked, step, why)
        elif step.kind == "write":
            path, why = _path(step.text, project)
            _add(writes, path, asked, step, why)
        elif step.kind == "tool":
            name, why = _tool(step.text)
            _add(tools, name, asked, step, why)
        else:
            name, why = _server(step.text)
            _add(servers, name, asked, step, why)
    return PlanScope(
        root=project,
        runs=tuple(runs),
        writes=tuple(writes),
        tools=tuple(tools),
        mcp_servers=tuple(servers),
        asked=tuple(_unique(asked)),
    )


def _add(into: list[Any], value: Any, asked: list[Asked], step: Step, why: str) -> None:
    if value is None:
        asked.append(Asked(step.kind, step.text, why))
    elif value not in into:
        into.append(value)


def _unique(items: list[Asked]) -> list[Asked]:
    seen: set[Asked] = set()
    return [a for a in items if not (a in seen or seen.add(a))]  # type: ignore[func-returns-value]


def _bad_text(text: str) -> bool:
    return bool(_CONTROL.search(text))


def _command(text: str) -> tuple[tuple[str, ...] | None, str]:
    unsure = "relay cannot read it as one plain command with certainty"
    if len(text) > MAX_ITEM_CHARS or _bad_text(text):
        return None, "it holds a hidden or control character"
    if any(c in _COMMAND_BAD for c in text):
        return None, f"{unsure} (it holds shell operators, expansions or globs)"
    parsed = parse(text)
    if len(parsed.parts) != 1:
        return None, f"{unsure} (it runs more than one command)"
    part = parsed.parts[0]
    if part.opaque or part.env or part.expands or part.nested or not part.words:
        return None, unsure
    program = part.words[0]
    if "/" in program and not program.startswith("/"):
        return None, "its program is a relative path, which depends on the directory"
    return part.words, ""


def _path(text: str, root: str | None) -> tuple[str | None, str]:
    text = text.strip()
    if _bad_text(text) or len(text) > MAX_ITEM_CHARS:
        return None, "it holds a hidden or control character"
    if any(c in _PATH_BAD for c in text) or any(c.isspace() for c in text):
        return None, "relay cannot read it as one path (globs, escapes or spaces)"
    if ".." in text.split("/"):
        return None, "it holds `..`, which may lead outside the project"
    if root is None:
        return None, "the plan names no project directory to read it in"
    folder = text.endswith("/")
    full = canonical(text, root)
    base = root.rstrip("/")
    if full == base:
        return ("./" if folder else None), "it is the project directory itself"
    if not full.startswith(base + "/"):
        return None, "it is outside the project directory"
    relative = full[len(base) + 1 :]
    return (relative + "/" if folder else relative), ""


def _tool(text: str) -> tuple[str | None, str]:
    name = text.strip()
    if not _NAME.match(name):
        return None, "relay cannot read it as one tool name"
    if name in _WHOLE_NEVER:
        return None, f"{name} is in scope only through the commands and paths the plan names"
    return name, ""


def _server(text: str) -> tuple[str | None, str]:
    name = text.strip()
    if not _NAME.match(name) or "__" in name:
        return None, "relay cannot read it as one MCP server name"
    return name, ""


def describe_scope(scope: PlanScope) -> list[str]:
    """The scope in plain words, one markdown line each (the plan message's part under
    the plan): what runs without asking, then what stays ask each time and why."""
    lines = []
    where = scope.root or "the project"
    for written in scope.writes:
        if written == "./":
            lines.append(f"- writes anywhere under `{_shown(where)}/`")
        elif written.endswith("/"):
            lines.append(f"- writes under `{_shown(written)}` (in `{_shown(where)}`)")
        else:
            lines.append(f"- writes `{_shown(written)}` (in `{_shown(where)}`)")
    if scope.runs:
        commands = ", ".join(f"`{_shown(shlex.join(r))}`" for r in scope.runs)
        lines.append(f"- runs {commands}, each word for word")
    for tool in scope.tools:
        lines.append(f"- calls the tool `{_shown(tool)}`")
    for server in scope.mcp_servers:
        lines.append(f"- calls the tools of the MCP server `{_shown(server)}`")
    if scope.calls:
        lines.append(f"- {len(scope.calls)} exact call(s) a reviewer added")
    if not lines:
        lines.append("- nothing: every call is still asked")
    if not scope.runs:
        lines.append("- no commands")
    if not scope.writes:
        lines.append("- no file writes")
    if not scope.tools and not scope.mcp_servers:
        lines.append("- no other tools")
    for item in scope.asked:
        lines.append(f"- ask each time: {item.kind} `{_shown(item.text)}` ({item.why})")
    return lines


def _shown(text: str, limit: int = 120) -> str:
    """``text`` for a code span: control and hidden characters spelled out, no backtick."""
    out = json.dumps(text[:limit])[1:-1].replace("`", "\\u0060")
    return out + ("…" if len(text) > limit else "")
