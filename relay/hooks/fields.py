"""Where each harness event's hook input keeps the tool use, as data: one ``EventFields``
per event, read by one reader (``read_call``).

Harnesses name the same things differently, and differently per event (Copilot CLI 1.0.102
sends ``permissionRequest`` the input as ``toolInput`` and ``preToolUse`` as ``toolArgs``).
A table per event, checked against payloads recorded from the real harnesses
(``tests/payloads/hooks/``), says which key holds what; a renamed or missing tool input is a
deny naming the key, never a question showing an empty input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from relay.hooks.common import BadHookInput, Decided, HookCall, Reply, shown
from relay.hooks.intake import parse_object

__all__ = ["EventFields", "read_call"]


@dataclass(frozen=True, slots=True)
class EventFields:
    """One harness event: the keys its hook input holds the tool use under, and the answer
    it reads (``answer(None)``: no opinion)."""

    input: str
    """The tool's input: an object, or a JSON string of one."""
    answer: Callable[[Decided | None], Reply]
    tool: str | None = "tool_name"
    """The tool's name (``None``: the event is for ``tool_named`` only)."""
    tool_named: str | None = None
    input_is_text: bool = False
    """The input is one string (Cursor's shell ``command``): the tool input is
    ``{input: text}``."""
    session: tuple[str, ...] = ()
    cwd: tuple[str, ...] = ()
    tool_use_id: tuple[str, ...] = ()
    renames: Mapping[str, str] = field(default_factory=dict)
    """The harness's tool names the rules know by another name (Copilot's ``bash`` is
    ``Bash``, as in every other harness)."""
    edits: bool = False
    """The harness runs the edited input ``answer`` writes for this event: only then may a
    reviewer edit the call before allowing it."""


def read_call(data: Mapping[str, Any], event: str, fields: EventFields, harness: str) -> HookCall:
    """The tool use in ``data``, an ``event`` of ``harness``, read as ``fields`` say; raises
    ``BadHookInput`` (naming the key) when the tool or its input is missing or malformed."""
    if fields.tool is None:
        tool = fields.tool_named or ""
    else:
        named = data.get(fields.tool)
        if not isinstance(named, str) or not named:
            raise BadHookInput(f"the {event} input has no {fields.tool} (the tool's name)")
        tool = named
    return HookCall(
        event=event,
        tool=fields.renames.get(tool, tool),
        input=_tool_input(data, event, fields, harness),
        session=_text(data, fields.session),
        cwd=_text(data, fields.cwd),
        tool_use_id=_text(data, fields.tool_use_id),
    )


def _tool_input(
    data: Mapping[str, Any], event: str, fields: EventFields, harness: str
) -> dict[str, Any]:
    key = fields.input
    value = data.get(key)
    if value is None:
        # Asking with an empty input would have the team approve a call it cannot see.
        others = sorted(k for k in data if _looks_like_input(k))
        seen = f"; it has {', '.join(shown(k) for k in others[:3])}" if others else ""
        raise BadHookInput(
            f"the {event} input has no {key}, where {harness} sends the tool's input"
            f"{seen}; relay denies rather than ask about a call nobody can see"
        )
    if fields.input_is_text:
        if not isinstance(value, str):
            raise BadHookInput(f"the {event} input's {key} is not a string")
        return {key: value}
    if isinstance(value, str):  # the arguments as JSON text: held to the same bounds
        return parse_object(value, f"the {event} input's {key}")
    if not isinstance(value, dict):
        raise BadHookInput(f"the {event} input's {key} is not a JSON object")
    return dict(value)


def _looks_like_input(key: str) -> bool:
    """Whether ``key`` may be where a harness moved the tool input (named in the deny)."""
    lowered = key.lower()
    return any(part in lowered for part in ("input", "arg", "param"))


def _text(data: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` holding a non-empty string, or a list whose first item is one
    (Cursor's ``workspace_roots``)."""
    for key in keys:
        value = data.get(key)
        if isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, str) and value:
            return value
    return None
