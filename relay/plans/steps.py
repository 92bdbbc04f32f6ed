"""The items a plan names (``relay.plans.scope`` reads them): from its markdown, and from
the structured steps a client may send. Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ITEM_KINDS",
    "MAX_ITEMS",
    "MAX_ITEM_CHARS",
    "MAX_PLAN_CHARS",
    "ItemKind",
    "Step",
    "plan_steps",
    "read_steps",
]

ItemKind = Literal["run", "write", "tool", "mcp_server"]
ITEM_KINDS: tuple[ItemKind, ...] = ("run", "write", "tool", "mcp_server")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([A-Za-z0-9_+-]*)")
_SHELL_LANGS = frozenset({"bash", "sh", "shell", "console", "zsh", "shell-session"})
_SPAN = re.compile(r"`([^`\n]+)`")
_VERBS: dict[str, ItemKind] = {
    **dict.fromkeys(("run", "runs", "running", "execute", "executes", "executing"), "run"),
    **dict.fromkeys(
        (
            "write",
            "writes",
            "writing",
            "edit",
            "edits",
            "editing",
            "create",
            "creates",
            "creating",
            "modify",
            "modifies",
            "modifying",
            "update",
            "updates",
            "updating",
            "change",
            "changes",
            "changing",
            "add",
            "adds",
            "adding",
        ),
        "write",
    ),
    **dict.fromkeys(("use", "uses", "using", "call", "calls", "calling"), "tool"),
}
_WORD = re.compile(r"[A-Za-z]+")
# Bounds on what one plan may hold: the reviewer must be able to read it all.
MAX_ITEMS = 100
MAX_ITEM_CHARS = 500
MAX_PLAN_CHARS = 20_000  # the plan's markdown


@dataclass(frozen=True, slots=True)
class Step:
    """One item a plan names: what kind, and its text as written."""

    kind: ItemKind
    text: str


def read_steps(raw: object) -> list[Step]:
    """The client's structured steps: a list of objects, each with exactly one of ``run``,
    ``write``, ``tool``, ``mcp_server`` set to a string; ``ValueError`` says what is wrong."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError('steps must be a list of objects such as {"run": "pytest"}')
    if len(raw) > MAX_ITEMS:
        raise ValueError(f"steps may hold at most {MAX_ITEMS} items")
    steps = []
    for at, item in enumerate(raw):
        if not isinstance(item, Mapping) or len(item) != 1:
            raise ValueError(
                f"steps[{at}] must be an object with exactly one of run, write, tool, mcp_server"
            )
        ((kind, text),) = item.items()
        if kind not in ITEM_KINDS:
            raise ValueError(f"steps[{at}].{kind} is not known (run, write, tool, mcp_server)")
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_ITEM_CHARS:
            raise ValueError(f"steps[{at}].{kind} must be text of 1 to {MAX_ITEM_CHARS} chars")
        steps.append(Step(kind, text))
    return steps


def plan_steps(plan: str) -> list[Step]:
    """The items relay reads in the plan's markdown (see the module docstring)."""
    # CRLF line ends carry nothing hidden; a lone `\r` stays in its line, and is refused there.
    lines = plan.replace("\r\n", "\n").split("\n")
    out: list[Step] = []
    fence: str | None = None
    shell = False
    for line in lines:
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            elif shell and line.strip():
                text = line.strip()
                out.append(Step("run", text[2:] if text.startswith("$ ") else text))
            continue
        if opened:
            fence = opened.group(1)
            shell = opened.group(2).lower() in _SHELL_LANGS
            continue
        out.extend(_spans(line))
    return out


def _spans(line: str) -> list[Step]:
    out = []
    at = 0
    kind: ItemKind | None = None
    for span in _SPAN.finditer(line):
        before = line[at : span.start()]
        for word in _WORD.findall(before):
            kind = _VERBS.get(word.lower(), kind)
        at = span.end()
        if kind is None:
            continue
        found: ItemKind = kind
        if kind == "tool" and re.search(r"mcp\s+servers?\s*$", line[: span.start()], re.I):
            found = "mcp_server"
        out.append(Step(found, span.group(1)))
    return out
