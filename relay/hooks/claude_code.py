"""Claude Code's ``PreToolUse`` and ``PermissionRequest`` command hooks.

Claude Code's hooks reference (code.claude.com/docs/en/hooks): a command hook gets
``hook_event_name``, ``session_id``, ``cwd``, ``tool_name``, ``tool_input`` (and, for
``PreToolUse``, ``tool_use_id``) on stdin; JSON on stdout is read only on exit 0; exit 2
blocks and feeds stderr to Claude; any other exit code is a non-blocking error (the call
goes ahead). ``PreToolUse`` decides with ``hookSpecificOutput.permissionDecision``
(``allow``/``deny``/``ask``/``defer``) and ``permissionDecisionReason`` (shown to Claude on
deny); ``PermissionRequest`` (2.0.45+, in ``-p`` from 2.1.198) with
``hookSpecificOutput.decision.behavior`` (``allow``/``deny``) and ``decision.message``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from relay.hooks.common import BadHookInput, Decided, HookCall, Reply, refusal, shown
from relay.hooks.fields import EventFields, read_call

__all__ = ["CLAUDE_CODE", "EVENTS", "FIELDS"]


def claude_code_output(event: str, decision: Decided | None) -> dict[str, Any] | None:
    """The JSON Claude Code reads for ``event`` (``None``: no opinion, print nothing)."""
    if decision is None:
        return None
    edited = decision.updated_input if decision.allowed else None
    if event == "PermissionRequest":
        body: dict[str, Any] = {"behavior": decision.behavior}
        if not decision.allowed:
            body["message"] = decision.message
        if edited is not None:  # replaces the whole input: the call the reviewer allowed
            body["updatedInput"] = dict(edited)
        return {"hookSpecificOutput": {"hookEventName": event, "decision": body}}
    out: dict[str, Any] = {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision.behavior,
        "permissionDecisionReason": decision.message,
    }
    if edited is not None:
        out["updatedInput"] = dict(edited)
    return {"hookSpecificOutput": out}


def _pre_tool_use(decision: Decided | None) -> Reply:
    return Reply(claude_code_output("PreToolUse", decision))


def _permission_request(decision: Decided | None) -> Reply:
    return Reply(claude_code_output("PermissionRequest", decision))


# Recorded from Claude Code 2.1.332 (tests/payloads/hooks/claude-code-*.json).
FIELDS: dict[str, EventFields] = {
    "PreToolUse": EventFields(
        input="tool_input",
        answer=_pre_tool_use,
        session=("session_id",),
        cwd=("cwd",),
        tool_use_id=("tool_use_id",),
        edits=True,
    ),
    "PermissionRequest": EventFields(
        input="tool_input",
        answer=_permission_request,
        session=("session_id",),
        cwd=("cwd",),
        edits=True,
    ),
}
EVENTS = tuple(FIELDS)


class ClaudeCode:
    """``relay hook claude-code``."""

    name = "claude-code"
    label = "Claude Code"
    help = "Claude Code's PreToolUse and PermissionRequest hooks"

    def edits_on(self, event: str) -> bool:
        """Whether an edited input answered for ``event`` is the one that runs."""
        return FIELDS[event].edits

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """``--defer-after``: headless runs hand a long wait back to Claude Code."""
        parser.add_argument(
            "--defer-after",
            metavar="SECONDS",
            type=float,
            help="for headless runs (claude -p) through a hosted relay: if nobody has decided"
            " within SECONDS, pause the run and keep the question open; claude -p --resume"
            " then gets the team's decision without asking again (default: wait for the"
            " decision)",
        )

    def read(self, data: Mapping[str, Any], args: argparse.Namespace) -> HookCall:
        """Claude Code's hook input."""
        event = data.get("hook_event_name")
        if not isinstance(event, str) or event not in FIELDS:
            raise BadHookInput(
                f"hook_event_name is {shown(event)}; relay hook claude-code handles"
                f" {' and '.join(EVENTS)} (check the event in .claude/settings.json)"
            )
        return read_call(data, event, FIELDS[event], self.label)

    def reply(self, call: HookCall, decision: Decided | None) -> Reply:
        """``hookSpecificOutput`` for the event, exit 0."""
        return FIELDS[call.event].answer(decision)

    def deferred(self, message: str) -> Reply:
        """``defer`` (``PreToolUse`` in ``-p`` only): the run ends, the call waits for
        ``--resume``."""
        return Reply(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "defer",
                    "permissionDecisionReason": message,
                }
            }
        )

    def refuse(self, message: str) -> Reply:
        """Exit 2 blocks the call and shows Claude the line: still closed, and says why."""
        return Reply(None, 2, refusal(message))


CLAUDE_CODE = ClaudeCode()
