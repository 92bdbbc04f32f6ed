"""Cursor's ``beforeShellExecution``, ``beforeMCPExecution`` and ``preToolUse`` hooks
(``.cursor/hooks.json``, ``version: 1``).

Cursor's hooks docs (cursor.com/docs/agent/hooks) and the hook runtime npm ``@cursor/sdk``
1.0.18 ships (which builds the inputs): every event gets ``hook_event_name``,
``conversation_id``, ``generation_id`` and ``workspace_roots``; ``beforeShellExecution``
adds ``command`` and ``cwd``; the generic ``preToolUse`` adds ``tool_name``, ``tool_input``
(an object), ``tool_use_id`` and ``cwd``, and besides ``permission`` and the messages takes
``updated_input``, merged into the call's arguments before it runs (a reviewer's edit);
``beforeMCPExecution`` adds ``tool_name``, ``tool_input``
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

__all__ = ["CURSOR", "EVENTS", "FIELDS"]


def _permission(decision: Decided | None) -> Reply:
    if decision is None:
        return Reply()
    if decision.allowed:
        return Reply({"permission": "allow"})
    return Reply(
        {"permission": "deny", "user_message": decision.message, "agent_message": decision.message}
    )


def _pre_tool_use(decision: Decided | None, asked: Mapping[str, Any]) -> Reply:
    """Generic ``preToolUse``: an allowed edit goes back as ``updated_input``. Cursor merges
    it key by key into the call's arguments, so an edit that drops a key cannot be run as
    approved: that is a deny, never a different call."""
    if decision is None or not decision.allowed or decision.updated_input is None:
        return _permission(decision)
    edited = dict(decision.updated_input)
    dropped = sorted(k for k in asked if k not in edited)
    if dropped:
        reason = (
            f"a reviewer's edit removed {', '.join(shown(k) for k in dropped[:3])}, which"
            " Cursor cannot remove from a call, so it is denied; ask again"
        )
        return Reply({"permission": "deny", "user_message": reason, "agent_message": reason})
    return Reply({"permission": "allow", "updated_input": edited})


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
    # The generic event, for every tool: ``reply`` writes its answer, edits included.
    "preToolUse": EventFields(
        input="tool_input",
        answer=_permission,
        session=("conversation_id",),
        cwd=("cwd", "workspace_roots"),
        tool_use_id=("tool_use_id",),
        renames={"Shell": "Bash"},  # its runtime maps Claude Code's Bash to Shell
        edits=True,
    ),
}
EVENTS = tuple(FIELDS)


class Cursor:
    """``relay hook cursor``."""

    name = "cursor"
    label = "Cursor"
    help = "Cursor's beforeShellExecution, beforeMCPExecution and preToolUse hooks"

    def edits_on(self, event: str) -> bool:
        """Whether an edited input answered for ``event`` is the one that runs."""
        return FIELDS[event].edits

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """None beyond the shared ones."""

    def read(self, data: Mapping[str, Any], args: argparse.Namespace) -> HookCall:
        """Cursor's hook input."""
        event = data.get("hook_event_name")
        if not isinstance(event, str) or event not in FIELDS:
            raise BadHookInput(
                f"hook_event_name is {shown(event)}; relay hook cursor handles"
                f" {', '.join(EVENTS)} (check the event in .cursor/hooks.json)"
            )
        return read_call(data, event, FIELDS[event], self.label)

    def reply(self, call: HookCall, decision: Decided | None) -> Reply:
        """``permission`` and the messages (and ``updated_input`` for an edit on
        ``preToolUse``), exit 0; nothing for no opinion."""
        if call.event == "preToolUse":
            return _pre_tool_use(decision, call.input)
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
