"""GitHub Copilot's ``permissionRequest`` and ``preToolUse`` command hooks (CLI and cloud
agent; ``.github/hooks/*.json``, ``version: 1``).

GitHub's CLI hooks reference (docs.github.com, "GitHub Copilot CLI hooks reference"): the
camelCase events get ``sessionId``, ``timestamp``, ``cwd``, ``toolName`` and ``toolArgs``
(an object, or the arguments as a JSON string); the VS Code compatible PascalCase events get
``hook_event_name``, ``session_id``, ``tool_name`` and ``tool_input``. ``permissionRequest``
answers ``{behavior: allow|deny, message}`` and short-circuits the permission flow (empty
output falls through to it; exit 2 denies); ``preToolUse`` answers ``{permissionDecision:
allow|deny|ask, permissionDecisionReason}``. A hook that fails or times out (``timeoutSec``,
30 s by default) is skipped, so this one always decides before its own deadline.

The camelCase input does not name its event: ``--event`` says which one the hook is
configured for (``permissionRequest`` unless told). Copilot's shell tool ``bash`` is
``Bash`` to the rules, as in every other harness.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from relay.hooks.common import BadHookInput, Decided, HookCall, Reply, object_input, text_field

__all__ = ["COPILOT", "EVENTS", "Copilot"]

EVENTS = ("permissionRequest", "preToolUse")
_PASCAL = {"PermissionRequest": "permissionRequest", "PreToolUse": "preToolUse"}
# Copilot's tool names the rules know by another name (the shell is ``Bash`` everywhere).
_TOOLS = {"bash": "Bash"}


class Copilot:
    """``relay hook copilot``."""

    name = "copilot"
    label = "Copilot"
    edits = False  # the CLI hooks take no edited input (only the SDK has modifiedArgs)
    help = "GitHub Copilot's permissionRequest and preToolUse hooks (CLI and cloud agent)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """``--event``: the camelCase input does not say which event it is."""
        parser.add_argument(
            "--event",
            choices=EVENTS,
            default="permissionRequest",
            help="the event this hook is configured for (default: permissionRequest)",
        )

    def read(self, data: Mapping[str, Any], args: argparse.Namespace) -> HookCall:
        """Copilot's hook input, camelCase or VS Code compatible."""
        named = data.get("hook_event_name")
        if named is not None and named not in _PASCAL:
            raise BadHookInput(
                f"hook_event_name is {named!r}; relay hook copilot handles permissionRequest"
                " and preToolUse (check the event in .github/hooks/)"
            )
        event = _PASCAL[named] if named is not None else str(args.event)
        tool = text_field(data, "toolName", "tool_name")
        if tool is None:
            raise BadHookInput("the hook input has no toolName")
        raw = data["toolArgs"] if "toolArgs" in data else data.get("tool_input")
        return HookCall(
            event=event,
            tool=_TOOLS.get(tool, tool),
            input=object_input(raw, "toolArgs"),
            session=text_field(data, "sessionId", "session_id"),
            cwd=text_field(data, "cwd"),
        )

    def reply(self, call: HookCall, decision: Decided | None) -> Reply:
        """The event's decision fields, exit 0; nothing for no opinion."""
        if decision is None:
            return Reply()
        if call.event == "preToolUse":
            return Reply(
                {
                    "permissionDecision": decision.behavior,
                    "permissionDecisionReason": decision.message,
                }
            )
        body: dict[str, Any] = {"behavior": decision.behavior}
        if not decision.allowed:
            body["message"] = decision.message
        return Reply(body)

    def refuse(self, message: str) -> Reply:
        """A deny both events read (the event is unknown): each takes its own fields."""
        reason = f"relay: BAD_HOOK_INPUT: {message}"
        return Reply(
            {
                "behavior": "deny",
                "message": reason,
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        )


COPILOT = Copilot()
