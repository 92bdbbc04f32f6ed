"""Show a tool use to a reviewer: a command as code, a file edit as a diff. Pure.

The text is markdown for the question's detail. Everything in it came from the agent; the
renderer makes it inert (a command such as ``echo <!channel>`` notifies nobody: see
``relay.slack.rendering.text``) and shows it as written. Runs of three backticks are broken with a
zero-width space so that the input cannot close its code block early.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay.plans.record import Plan

__all__ = ["describe_tool_use", "outside_plan", "safe"]

# Characters of code shown at most; the question says how much was left out. The message
# keeps well under Slack's ~13,000 characters of block text (shared/spec/slack.md).
MAX_SHOWN = 8000
_FENCE = "```"


@dataclass(frozen=True, slots=True)
class ToolUseView:
    """What a reviewer reads: a one-line summary and the markdown detail."""

    summary: str
    detail: str


def safe(text: str) -> str:
    """``text`` unable to close the code block it is shown in.

    Not escaped: the detail goes out as a ``markdown`` block, where ``&amp;`` inside code
    shows as written (a reviewer would read ``a &amp;&amp; b`` for ``a && b``); the renderer
    makes Slack's ``<…>`` tokens and broadcasts inert there (``relay.slack.rendering.text``)."""
    return text.replace(_FENCE, "``\u200b`")


def _code(text: str, language: str = "") -> str:
    shown, cut = _clip(text)
    block = f"{_FENCE}{language}\n{safe(shown)}\n{_FENCE}"
    return block + (f"\n_{cut}_" if cut else "")


def _clip(text: str) -> tuple[str, str]:
    if len(text) <= MAX_SHOWN:
        return text, ""
    shown = text[:MAX_SHOWN]
    hidden = text[MAX_SHOWN:]
    return shown, (
        f"… {len(hidden)} more characters ({hidden.count(chr(10)) + 1} lines) are not shown;"
        " deny if you need to see them"
    )


def _diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=path if old else "/dev/null",
        tofile=path,
        n=2,
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return text.rstrip("\n") or "(no change)"


def _str(tool_input: Mapping[str, Any], key: str) -> str | None:
    value = tool_input.get(key)
    return value if isinstance(value, str) else None


def _rest(tool_input: Mapping[str, Any], shown: Sequence[str]) -> str:
    """Any input not already shown, as JSON, so nothing the tool will get is hidden."""
    rest = {k: v for k, v in tool_input.items() if k not in shown}
    if not rest:
        return ""
    return "\n\nOther input:\n" + _code(json.dumps(rest, indent=2, ensure_ascii=False), "json")


def _command(tool: str, tool_input: Mapping[str, Any]) -> ToolUseView | None:
    command = _str(tool_input, "command")
    if command is None:
        return None
    parts = []
    description = _str(tool_input, "description")
    if description:
        parts.append(f"_{safe(description)}_")
    parts.append(_code(command, "sh"))
    shown = ["command", "description"]
    cwd = _str(tool_input, "cwd")
    if cwd:
        parts.append(f"in `{safe(cwd)}`")
        shown.append("cwd")
    if tool == "exec":
        shown.append("argv")
    return ToolUseView(
        summary=f"run a {'shell ' if tool == 'Bash' else ''}command",
        detail="\n".join(parts) + _rest(tool_input, shown),
    )


def _edit(tool: str, tool_input: Mapping[str, Any]) -> ToolUseView | None:
    path = _str(tool_input, "file_path")
    if path is None:
        return None
    if tool == "Write":
        content = _str(tool_input, "content")
        if content is None:
            return None
        diff, shown = _diff(path, "", content), ["file_path", "content"]
        summary = f"write the file `{path}`"
    elif tool == "Edit":
        old, new = _str(tool_input, "old_string"), _str(tool_input, "new_string")
        if old is None or new is None:
            return None
        diff = _diff(path, old, new)
        shown = ["file_path", "old_string", "new_string", "replace_all"]
        every = " (every occurrence)" if tool_input.get("replace_all") is True else ""
        summary = f"edit `{path}`{every}"
    else:  # MultiEdit
        edits = tool_input.get("edits")
        if not isinstance(edits, list) or not edits:
            return None
        pieces = []
        for edit in edits:
            if not isinstance(edit, Mapping):
                return None
            old, new = _str(edit, "old_string"), _str(edit, "new_string")
            if old is None or new is None:
                return None
            pieces.append(_diff(path, old, new))
        diff, shown = "\n".join(pieces), ["file_path", "edits"]
        summary = f"make {len(edits)} edits to `{path}`"
    return ToolUseView(summary=summary, detail=_code(diff, "diff") + _rest(tool_input, shown))


def describe_tool_use(tool: str, tool_input: Mapping[str, Any]) -> ToolUseView:
    """How the reviewer sees ``tool`` called with ``tool_input`` (never raises)."""
    view: ToolUseView | None = None
    if tool in ("Bash", "exec"):
        view = _command(tool, tool_input)
    elif tool in ("Edit", "Write", "MultiEdit"):
        view = _edit(tool, tool_input)
    if view is not None:
        return view
    text = json.dumps(dict(tool_input), indent=2, ensure_ascii=False, default=str)
    return ToolUseView(summary=f"use {tool}", detail=_code(text, "json"))


# How much of the plan an outside-the-plan question shows.
_PLAN_SHOWN = 1500


def outside_plan(plan: Plan, *, inside: bool = False) -> str:
    """The lines showing the approved plan a call is not covered by: outside its scope, or
    (``inside``) in it but needing other approvers than the plan's."""
    who = plan.approved_by.display_name if plan.approved_by is not None else "a reviewer"
    text = plan.text.strip()
    if len(text) > _PLAN_SHOWN:
        text = text[:_PLAN_SHOWN] + "…"
    quoted = "\n".join(f"> {safe(line)}" for line in text.splitlines())
    if inside:
        return (
            f"*Inside the approved plan* `{plan.id}` (approved by {safe(who)}), but the relay's"
            f" rules need other approvers for this call; the plan:\n{quoted}\n"
        )
    return (
        f"*Outside the approved plan* `{plan.id}` (approved by {safe(who)}); the plan:\n{quoted}\n"
    )
