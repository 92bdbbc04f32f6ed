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

from relay.hooks.common import BadHookInput, Decided, HookCall, Reply, refusal, shown
from relay.hooks.fields import EventFields, read_call

__all__ = ["CODEX", "EVENTS", "FIELDS"]


def _permission_request(decision: Decided | None) -> Reply:
    if decision is None:
        return Reply()
    body: dict[str, Any] = {"behavior": decision.behavior}
    if not decision.allowed:
        body["message"] = decision.message
    return Reply({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": body}})


def _pre_tool_use(decision: Decided | None) -> Reply:
    if decision is None or decision.allowed:
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


# Recorded from Codex 0.169.0 (tests/payloads/hooks/codex-*.json). PermissionRequest has no
# tool_use_id: its turn_id stands in for one.
FIELDS: dict[str, EventFields] = {
    "PermissionRequest": EventFields(
        input="tool_input",
        answer=_permission_request,
        session=("session_id",),
        cwd=("cwd",),
        tool_use_id=("turn_id",),
    ),
    "PreToolUse": EventFields(
        input="tool_input",
        answer=_pre_tool_use,
        session=("session_id",),
        cwd=("cwd",),
        tool_use_id=("tool_use_id", "turn_id"),
    ),
}
EVENTS = tuple(FIELDS)


class Codex:
    """``relay hook codex``."""

    name = "codex"
    label = "Codex"
    help = "Codex's PermissionRequest (allow or deny) and PreToolUse (deny only) hooks"

    def edits_on(self, event: str) -> bool:
        """Never (Codex's PermissionRequest refuses ``updatedInput`` and fails closed).
        Whether an edited input answered for ``event`` is the one that runs."""
        return FIELDS[event].edits

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """None beyond the shared ones."""

    def read(self, data: Mapping[str, Any], args: argparse.Namespace) -> HookCall:
        """Codex's hook input."""
        event = data.get("hook_event_name")
        if not isinstance(event, str) or event not in FIELDS:
            raise BadHookInput(
                f"hook_event_name is {shown(event)}; relay hook codex handles"
                f" {' and '.join(EVENTS)} (check the event in Codex's hooks.json)"
            )
        return read_call(data, event, FIELDS[event], self.label)

    def reply(self, call: HookCall, decision: Decided | None) -> Reply:
        """The event's ``hookSpecificOutput``; nothing for no opinion or a PreToolUse allow."""
        return FIELDS[call.event].answer(decision)

    def refuse(self, message: str) -> Reply:
        """Exit 2 with the reason on stderr: a deny for either event."""
        return Reply(None, 2, refusal(message))


CODEX = Codex()
