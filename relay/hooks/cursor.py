"""Cursor's ``beforeShellExecution`` and ``beforeMCPExecution`` hooks (``.cursor/hooks.json``,
``version: 1``).

Cursor's hooks docs (cursor.com/docs/agent/hooks): every event gets ``hook_event_name``,
``conversation_id``, ``generation_id`` and ``workspace_roots``; ``beforeShellExecution``
adds ``command`` and ``cwd``; ``beforeMCPExecution`` adds ``tool_name``, ``tool_input``
(an object or a JSON string) and the server's ``url`` or ``command``. Both answer
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

from relay.hooks.common import BadHookInput, Decided, HookCall, Reply, object_input, text_field

__all__ = ["CURSOR", "EVENTS", "Cursor"]

EVENTS = ("beforeShellExecution", "beforeMCPExecution")


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
        if event not in EVENTS:
            raise BadHookInput(
                f"hook_event_name is {event!r}; relay hook cursor handles"
                f" {' and '.join(EVENTS)} (check the event in .cursor/hooks.json)"
            )
        roots = data.get("workspace_roots")
        root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) else None
        cwd = text_field(data, "cwd") or root
        session = text_field(data, "conversation_id")
        if event == "beforeShellExecution":
            command = data.get("command")
            if not isinstance(command, str):
                raise BadHookInput("the hook input has no command")
            return HookCall(
                event=event, tool="Bash", input={"command": command}, session=session, cwd=cwd
            )
        tool = text_field(data, "tool_name")
        if tool is None:
            raise BadHookInput("the hook input has no tool_name")
        return HookCall(
            event=event,
            tool=tool,
            input=object_input(data.get("tool_input"), "tool_input"),
            session=session,
            cwd=cwd,
        )

    def reply(self, call: HookCall, decision: Decided | None) -> Reply:
        """``permission`` and the messages, exit 0; nothing for no opinion."""
        if decision is None:
            return Reply()
        if decision.allowed:
            return Reply({"permission": "allow"})
        return Reply(
            {
                "permission": "deny",
                "user_message": decision.message,
                "agent_message": decision.message,
            }
        )

    def refuse(self, message: str) -> Reply:
        """A deny (JSON, exit 0) with the reason for the person and the agent."""
        reason = f"relay: BAD_HOOK_INPUT: {message}"
        return Reply({"permission": "deny", "user_message": reason, "agent_message": reason})


CURSOR = Cursor()
