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

from relay.hooks.common import BadHookInput, Decided, HookCall, Reply, object_input, text_field

__all__ = ["CLAUDE_CODE", "EVENTS", "ClaudeCode", "claude_code_output"]

EVENTS = ("PreToolUse", "PermissionRequest")


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


class ClaudeCode:
    """``relay hook claude-code``."""

    name = "claude-code"
    label = "Claude Code"
    edits = True  # updatedInput, on PreToolUse and PermissionRequest alike
    help = "Claude Code's PreToolUse and PermissionRequest hooks"

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
        if event not in EVENTS:
            raise BadHookInput(
                f"hook_event_name is {event!r}; relay hook claude-code handles"
                f" {' and '.join(EVENTS)} (check the event in .claude/settings.json)"
            )
        tool = data.get("tool_name")
        if not isinstance(tool, str) or not isinstance(data.get("tool_input", {}), Mapping):
            raise BadHookInput("the hook input has no tool_name and tool_input")
        return HookCall(
            event=event,
            tool=tool,
            input=object_input(data.get("tool_input"), "tool_input"),
            session=text_field(data, "session_id"),
            cwd=text_field(data, "cwd"),
            tool_use_id=text_field(data, "tool_use_id"),
        )

    def reply(self, call: HookCall, decision: Decided | None) -> Reply:
        """``hookSpecificOutput`` for the event, exit 0."""
        return Reply(claude_code_output(call.event, decision))

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
        return Reply(None, 2, f"relay: error: BAD_HOOK_INPUT: {message}\n")


CLAUDE_CODE = ClaudeCode()
