"""GitHub Copilot's ``permissionRequest`` and ``preToolUse`` command hooks (CLI and cloud
agent; ``.github/hooks/*.json``, ``version: 1``).

What Copilot CLI 1.0.102 sends (recorded, ``tests/payloads/hooks/copilot-*.json``):
``permissionRequest`` gets ``hookName``, ``sessionId``, ``timestamp``, ``cwd``, ``toolName``
(``bash``) and the tool's input as ``toolInput``, also when configured under the PascalCase
name; camelCase ``preToolUse`` gets no event name and the input as ``toolArgs`` (an object, or
the arguments as a JSON string); PascalCase ``PreToolUse`` gets the VS Code compatible
``hook_event_name``, ``session_id``, ``tool_name`` (``Bash``) and ``tool_input``. GitHub's
CLI hooks reference: ``permissionRequest`` answers ``{behavior: allow|deny, message}`` and
short-circuits the permission flow (empty output falls through to it; exit 2 denies);
``preToolUse`` answers ``{permissionDecision: allow|deny|ask, permissionDecisionReason}``
(plus ``modifiedArgs``, the arguments the tool runs with instead: how a reviewer's edit is
run; ``permissionRequest`` and the PascalCase events take none), and a failing hook there
is skipped, so a deny is always JSON. A hook that times out (``timeoutSec``, 30 s by
default) is skipped, so this one decides before its own deadline.

The event is the input's ``hook_event_name`` or ``hookName``; an input naming none is
``preToolUse``'s (``--event`` says otherwise, for a Copilot that sends another).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from relay.hooks.common import BadHookInput, Decided, HookCall, Reply, one_line, refusal, shown
from relay.hooks.fields import EventFields, read_call

__all__ = ["COPILOT", "EVENTS", "FIELDS"]


def _permission_request(decision: Decided | None) -> Reply:
    if decision is None:
        return Reply()
    body: dict[str, Any] = {"behavior": decision.behavior}
    if not decision.allowed:
        body["message"] = decision.message
    return Reply(body)


def _pre_tool_use(decision: Decided | None) -> Reply:
    if decision is None:
        return Reply()
    return Reply(
        {"permissionDecision": decision.behavior, "permissionDecisionReason": decision.message}
    )


def _pre_tool_use_edited(decision: Decided | None) -> Reply:
    """camelCase ``preToolUse``: an allowed edit goes back as ``modifiedArgs``, the arguments
    the tool then runs with (Copilot CLI 1.0.102, as the SDK's ``onPreToolUse``)."""
    if decision is None or not decision.allowed or decision.updated_input is None:
        return _pre_tool_use(decision)
    return Reply(
        {
            "permissionDecision": decision.behavior,
            "permissionDecisionReason": decision.message,
            "modifiedArgs": dict(decision.updated_input),
        }
    )


# Copilot's shell tool is ``Bash`` to the rules, as in every other harness.
_RENAMES = {"bash": "Bash"}
FIELDS: dict[str, EventFields] = {
    "permissionRequest": EventFields(
        input="toolInput",
        answer=_permission_request,
        tool="toolName",
        session=("sessionId",),
        cwd=("cwd",),
        renames=_RENAMES,
    ),
    "preToolUse": EventFields(
        input="toolArgs",
        answer=_pre_tool_use_edited,
        tool="toolName",
        session=("sessionId",),
        cwd=("cwd",),
        renames=_RENAMES,
        edits=True,
    ),
    "PreToolUse": EventFields(
        input="tool_input",
        answer=_pre_tool_use,
        session=("session_id",),
        cwd=("cwd",),
        renames=_RENAMES,
    ),
    # Not sent by 1.0.102 (its PascalCase PermissionRequest gets the camelCase input): the
    # VS Code compatible names, as for every other PascalCase event.
    "PermissionRequest": EventFields(
        input="tool_input",
        answer=_permission_request,
        session=("session_id",),
        cwd=("cwd",),
        renames=_RENAMES,
    ),
}
EVENTS = ("permissionRequest", "preToolUse")
_NAMED_BY = {"hook_event_name": ("PreToolUse", "PermissionRequest"), "hookName": EVENTS}


class Copilot:
    """``relay hook copilot``."""

    name = "copilot"
    label = "Copilot"
    help = "GitHub Copilot's permissionRequest and preToolUse hooks (CLI and cloud agent)"

    def edits_on(self, event: str) -> bool:
        """Whether an edited input answered for ``event`` is the one that runs."""
        return FIELDS[event].edits

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """``--event``: for an input that does not name its event."""
        parser.add_argument(
            "--event",
            choices=EVENTS,
            help="the event this hook is configured for, when the input does not name it"
            " (default: preToolUse, the one event Copilot CLI sends without its name)",
        )

    def read(self, data: Mapping[str, Any], args: argparse.Namespace) -> HookCall:
        """Copilot's hook input, camelCase or VS Code compatible."""
        event = getattr(args, "event", None) or "preToolUse"
        for key, known in _NAMED_BY.items():
            if key in data:
                named = data[key]
                if not isinstance(named, str) or named not in known:
                    raise BadHookInput(
                        f"{key} is {shown(named)}; relay hook copilot handles permissionRequest"
                        " and preToolUse (check the event in .github/hooks/)"
                    )
                event = named
                break
        return read_call(data, event, FIELDS[event], self.label)

    def reply(self, call: HookCall, decision: Decided | None) -> Reply:
        """The event's decision fields, exit 0; nothing for no opinion."""
        return FIELDS[call.event].answer(decision)

    def refuse(self, message: str) -> Reply:
        """A deny both events read (whichever it was for): each takes its own fields. Not
        exit 2, which ``preToolUse`` skips as a failed hook."""
        reason = f"relay: BAD_HOOK_INPUT: {one_line(message)}"
        output = {
            "behavior": "deny",
            "message": reason,
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
        return Reply(output, 0, refusal(message))


COPILOT = Copilot()
