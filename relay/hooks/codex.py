"""OpenAI Codex CLI's ``PermissionRequest`` and ``PreToolUse`` command hooks.

Codex's published schemas (``codex-rs/hooks/schema/generated/`` in openai/codex, vendored
in ``tests/data/codex/``): ``PermissionRequest`` gets ``session_id``, ``turn_id``, ``cwd``,
``model``, ``permission_mode``, ``tool_name`` (``Bash`` or ``NetworkAccess``) and
``tool_input{command, description}``, and answers ``hookSpecificOutput.decision{behavior:
allow|deny, message}`` (``updatedInput``, ``updatedPermissions`` and ``interrupt`` make the
hook fail closed, so they are never sent). Any deny among the hooks wins; a quiet or
invalid hook falls back to Codex's own approval prompt; exit 2 with a reason on stderr
denies. ``PreToolUse`` (``tool_name`` ``Bash``, with ``tool_use_id``) can only block: an
allow is left unsaid and Codex goes on with its approval policy. Codex's docs add
``apply_patch`` and MCP tools to both events' matchers, so any tool input object is read.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from relay.hooks.common import BadHookInput, Decided, HookCall, Reply, object_input, text_field

__all__ = ["CODEX", "EVENTS", "Codex"]

EVENTS = ("PermissionRequest", "PreToolUse")


class Codex:
    """``relay hook codex``."""

    name = "codex"
    label = "Codex"
    edits = False  # PermissionRequest refuses updatedInput (fails closed)
    help = "Codex's PermissionRequest (allow or deny) and PreToolUse (deny only) hooks"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """None beyond the shared ones."""

    def read(self, data: Mapping[str, Any], args: argparse.Namespace) -> HookCall:
        """Codex's hook input."""
        event = data.get("hook_event_name")
        if event not in EVENTS:
            raise BadHookInput(
                f"hook_event_name is {event!r}; relay hook codex handles"
                f" {' and '.join(EVENTS)} (check the event in Codex's hooks.json)"
            )
        tool = data.get("tool_name")
        if not isinstance(tool, str) or not tool:
            raise BadHookInput("the hook input has no tool_name")
        return HookCall(
            event=event,
            tool=tool,
            input=object_input(data.get("tool_input"), "tool_input"),
            session=text_field(data, "session_id"),
            cwd=text_field(data, "cwd"),
            tool_use_id=text_field(data, "tool_use_id", "turn_id"),
        )

    def reply(self, call: HookCall, decision: Decided | None) -> Reply:
        """The event's ``hookSpecificOutput``; nothing for no opinion or a PreToolUse allow."""
        if decision is None:
            return Reply()
        if call.event == "PermissionRequest":
            body: dict[str, Any] = {"behavior": decision.behavior}
            if not decision.allowed:
                body["message"] = decision.message
            return Reply({"hookSpecificOutput": {"hookEventName": call.event, "decision": body}})
        if decision.allowed:
            return Reply()  # PreToolUse cannot allow: Codex's own policy goes on
        return Reply(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": decision.message,
                }
            }
        )

    def refuse(self, message: str) -> Reply:
        """Exit 2 with the reason on stderr: a deny for either event."""
        return Reply(None, 2, f"relay: error: BAD_HOOK_INPUT: {message}\n")


CODEX = Codex()
