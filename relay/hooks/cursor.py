"""Cursor's ``beforeShellExecution`` and ``beforeMCPExecution`` hooks (``.cursor/hooks.json``,
``version: 1``).

Cursor's hooks docs (cursor.com/docs/agent/hooks) and the hook runtime npm ``@cursor/sdk``
1.0.18 ships (which builds the inputs): every event gets ``hook_event_name``,
``conversation_id``, ``generation_id`` and ``workspace_roots``; ``beforeShellExecution``
adds ``command`` and ``cwd``; ``beforeMCPExecution`` adds ``tool_name``, ``tool_input``
(the runtime sends a JSON string; the docs show an object) and the server's ``url`` or
``command``. Both answer
``{permission: allow|deny|ask, user_message, agent_message}``. Only ``deny`` is reliably
honoured (an ``allow`` may still prompt), and a hook that fails or times out lets the call
through unless its entry sets ``failClosed: true``: the configuration in
docs/harnesses/cursor.md does.

A shell command is ``Bash`` to the rules, as in every other harness; an MCP tool keeps its
name.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from relay.hooks.common import BadHookInput, Decided, HookCall, Reply, one_line, refusal, shown
from relay.hooks.fields import EventFields, read_call

__all__ = ["CURSOR", "EVENTS", "FIELDS", "Cursor"]


def _permission(decision: Decided | None) -> Reply:
    if decision is None:
        return Reply()
    if decision.allowed:
        return Reply({"permission": "allow"})
    return Reply(
        {"permission": "deny", "user_message": decision.message, "agent_message": decision.message}
    )


# The shell's input is its command line alone; a session is a conversation; the cwd falls
# back to the first workspace root.
FIELDS: dict[str, EventFields] = {
    "beforeShellExecution": EventFields(
        input="command",
        answer=_permission,
        tool=None,
        tool_named="Bash",
        input_is_text=True,
        session=("conversation_id",),
        cwd=("cwd", "workspace_roots"),
    ),
    "beforeMCPExecution": EventFields(
        input="tool_input",
        answer=_permission,
        session=("conversation_id",),
        cwd=("cwd", "workspace_roots"),
    ),
}
EVENTS = tuple(FIELDS)


class Cursor:
    """``relay hook cursor``."""

    name = "cursor"
    label = "Cursor"
    edits = False  # no field for an edited input
    help = "Cursor's beforeShellExecution and beforeMCPExecution hooks"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """None beyond the shared ones."""

    def read(self, data: Mapping[str, Any], args: argparse.Namespace) -> HookCall:
        """Cursor's hook input."""
        event = data.get("hook_event_name")
        if not isinstance(event, str) or event not in FIELDS:
            raise BadHookInput(
                f"hook_event_name is {shown(event)}; relay hook cursor handles"
                f" {' and '.join(EVENTS)} (check the event in .cursor/hooks.json)"
            )
        return read_call(data, event, FIELDS[event], self.label)

    def reply(self, call: HookCall, decision: Decided | None) -> Reply:
        """``permission`` and the messages, exit 0; nothing for no opinion."""
        return FIELDS[call.event].answer(decision)

    def refuse(self, message: str) -> Reply:
        """A deny (JSON, exit 0) with the reason for the person and the agent."""
        reason = f"relay: BAD_HOOK_INPUT: {one_line(message)}"
        return Reply(
            {"permission": "deny", "user_message": reason, "agent_message": reason},
            0,
            refusal(message),
        )


CURSOR = Cursor()
