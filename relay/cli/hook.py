"""``relay hook claude-code``: a Claude Code ``PreToolUse`` / ``PermissionRequest`` hook.

Reads the hook's JSON on stdin, decides by the rules file (allow or deny outright, or ask
the team in Slack), and writes the decision JSON on stdout, exiting 0. It fails closed: a
missing or broken configuration, an unreachable relay, a timeout or a crash all deny, with
a reason Claude sees; anything that escapes even that exits 2, which blocks the tool call.

Claude Code's hooks reference (code.claude.com/docs/en/hooks): a command hook gets
``hook_event_name``, ``session_id``, ``cwd``, ``tool_name``, ``tool_input`` (and, for
``PreToolUse``, ``tool_use_id``) on stdin; JSON on stdout is read only on exit 0; exit 2
blocks and feeds stderr to Claude; any other exit code is a non-blocking error (the call
goes ahead). ``PreToolUse`` decides with ``hookSpecificOutput.permissionDecision``
(``allow``/``deny``/``ask``) and ``permissionDecisionReason`` (shown to Claude on deny);
``PermissionRequest`` with ``hookSpecificOutput.decision.behavior`` (``allow``/``deny``) and
``decision.message`` (the deny's reason) — the decision table quoted in
anthropics/claude-code#41261. A hook that times out does not block the call unless the hook
sets ``"onFailure": "block"`` (Claude Code 2.1.295), so this one decides before its own
deadline (the rules' timeout plus a margin) and the README's snippet sets both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Mapping
from typing import Any

from relay.abort import AbortController
from relay.cli.backend import add_backend_flags, open_backend
from relay.cli.common import Commands
from relay.gate.approval import Decision
from relay.gate.context import requester, who_asks
from relay.gate.gate import Gate, ToolUse
from relay.gate.rules import Rules, load_rules
from relay.questions import AgentRef

__all__ = ["EVENTS", "add_hook", "hook_output"]

EVENTS = ("PreToolUse", "PermissionRequest")
# Seconds past the reviewer's time for the hook to withdraw the question and answer.
_MARGIN = 15.0


def add_hook(commands: Commands) -> None:
    """Register ``relay hook``."""
    parser = commands.add_parser(
        "hook",
        help="a permission hook for coding agents (relay hook claude-code)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    harnesses = parser.add_subparsers(title="harnesses", metavar="HARNESS", required=True)
    claude = harnesses.add_parser(
        "claude-code",
        help="Claude Code's PreToolUse and PermissionRequest hooks (hook JSON on stdin)",
        description="Decide one Claude Code tool use; hook JSON in, decision JSON out.",
    )
    add_backend_flags(claude)
    claude.add_argument(
        "--rules",
        metavar="FILE",
        default=os.environ.get("RELAY_RULES"),
        help="the rules file (or RELAY_RULES); without one, every use is asked about",
    )
    claude.set_defaults(handler=_run_claude_code)


def hook_output(event: str, decision: Decision | None) -> dict[str, Any] | None:
    """The JSON Claude Code reads for ``event`` (``None``: no opinion, print nothing)."""
    if decision is None:
        return None
    if event == "PermissionRequest":
        body: dict[str, Any] = {"behavior": decision.behavior}
        if not decision.allowed:
            body["message"] = decision.message
        return {"hookSpecificOutput": {"hookEventName": event, "decision": body}}
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision.behavior,
            "permissionDecisionReason": decision.message,
        }
    }


class _BadInput(Exception):
    """The hook's stdin is not a tool event this hook understands."""


def _read_event(text: str) -> tuple[str, Mapping[str, Any]]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _BadInput(f"the hook input is not JSON ({exc})") from None
    if not isinstance(data, Mapping):
        raise _BadInput("the hook input is not a JSON object")
    event = data.get("hook_event_name")
    if event not in EVENTS:
        raise _BadInput(
            f"hook_event_name is {event!r}; relay hook claude-code handles"
            f" {' and '.join(EVENTS)} (check the event in .claude/settings.json)"
        )
    if not isinstance(data.get("tool_name"), str) or not isinstance(
        data.get("tool_input", {}), Mapping
    ):
        raise _BadInput("the hook input has no tool_name and tool_input")
    return event, data


async def _decide(args: argparse.Namespace, data: Mapping[str, Any]) -> Decision | None:
    rules = load_rules(args.rules) if args.rules else Rules()
    raw_cwd = data.get("cwd")
    cwd: str = raw_cwd if isinstance(raw_cwd, str) and raw_cwd else os.getcwd()
    session = data.get("session_id") if isinstance(data.get("session_id"), str) else None
    who = requester()
    use = ToolUse(
        tool=data["tool_name"],
        input=dict(data.get("tool_input") or {}),
        # A grant "for this session" is for this Claude Code session only.
        agent=AgentRef(id=f"claude-code:{session or who}", name=f"Claude Code ({who})"),
        tool_use_id=data.get("tool_use_id") if isinstance(data.get("tool_use_id"), str) else None,
        cwd=cwd,
        context=who_asks(os.environ, cwd),
    )
    gate = Gate(rules=rules, approver=_NoApprover())
    verdict = gate.verdict(use)
    if verdict.action != "ask" and verdict.action != "pass":
        return await gate.decide(use)  # decided by the rules alone: no connection needed
    if verdict.action == "pass":
        return None
    timeout = rules.timeout_for(verdict)
    backend = await open_backend(args, timeout=timeout)
    controller = AbortController()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        # Claude Code stops a hook it no longer needs: withdraw the question, then deny.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, controller.abort, "stopped")
    try:
        gate = Gate(rules=backend.fill(rules), approver=backend.approver)
        async with asyncio.timeout(timeout + _MARGIN):
            return await gate.decide(use, signal=controller.signal, allow_pass=True)
    except TimeoutError:
        return Decision.deny(
            f"relay got no decision within {timeout + _MARGIN:g} s, so this is denied (it"
            " fails closed)",
            "timed_out",
        )
    finally:
        await backend.close()


class _NoApprover:
    async def approve(self, request: Any, *, signal: Any = None) -> Decision:
        raise AssertionError("rules-only decisions never ask")

    async def aclose(self) -> None:
        return None


def _run_claude_code(args: argparse.Namespace) -> int:
    event = "PreToolUse"
    try:
        event, data = _read_event(sys.stdin.read())
        decision = asyncio.run(_decide(args, data))
    except _BadInput as exc:
        # Exit 2 blocks the call and shows Claude this line: still closed, and says why.
        sys.stderr.write(f"relay: error: BAD_HOOK_INPUT: {exc}\n")
        return 2
    except (Exception, KeyboardInterrupt) as exc:  # an interrupted hook denies too
        code = getattr(exc, "code", type(exc).__name__)
        decision = Decision.deny(
            f"relay could not decide this tool use ({code}: {exc}), so it is denied (relay"
            " fails closed)",
            "failed",
        )
    output = hook_output(event, decision)
    if output is not None:
        sys.stdout.write(json.dumps(output) + "\n")
        sys.stdout.flush()
    return 0
