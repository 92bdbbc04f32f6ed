"""``relay hook HARNESS``: a permission hook for Claude Code, Codex, GitHub Copilot or Cursor.

Reads the harness's hook JSON on stdin, decides by the rules file (allow or deny outright,
or ask the team in Slack), and writes the decision the way that harness reads it (the
adapters in ``relay.hooks``). It fails closed: a missing or broken configuration, an
unreachable relay, a timeout or a crash all deny, with a reason the agent sees; input that
is not a tool event gets the harness's own deny (exit 2 where that blocks). Harnesses
that let a hook time out let the call through (Claude Code unless ``"onFailure":
"block"``, Copilot, Cursor unless ``failClosed``), so this one decides before its own
deadline (the rules' timeout plus a margin) and withdraws the question if it is stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from relay.cli.backend import add_backend_flags
from relay.cli.common import Commands
from relay.hooks import ADAPTERS, Adapter, BadHookInput, HookCall
from relay.hooks.claude_code import EVENTS, claude_code_output
from relay.hooks.common import load_event

if TYPE_CHECKING:
    from relay.gate.approval import Decision

__all__ = ["EVENTS", "add_hook", "hook_output"]

# Seconds past the reviewer's time for the hook to withdraw the question and answer.
_MARGIN = 15.0
# Claude Code's, kept under its old name for callers of this module.
hook_output = claude_code_output


def add_hook(commands: Commands) -> None:
    """Register ``relay hook`` and one subcommand per harness."""
    parser = commands.add_parser(
        "hook",
        help="a permission hook for coding agents (relay hook claude-code|codex|copilot|cursor)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    harnesses = parser.add_subparsers(title="harnesses", metavar="HARNESS", required=True)
    for adapter in ADAPTERS.values():
        sub = harnesses.add_parser(
            adapter.name,
            help=f"{adapter.help} (hook JSON on stdin)",
            description=f"Decide one {adapter.label} tool use; hook JSON in, decision out.",
        )
        add_backend_flags(sub)
        sub.add_argument(
            "--rules",
            metavar="FILE",
            default=os.environ.get("RELAY_RULES"),
            help="the rules file (or RELAY_RULES); without one, every use is asked about",
        )
        adapter.add_arguments(sub)
        sub.set_defaults(handler=_handler(adapter))


async def _decide(args: argparse.Namespace, adapter: Adapter, call: HookCall) -> Decision | None:
    # The gate and its rules load here, and the clients only when a person must be asked:
    # a hook the rules decide pays for neither (bench.cli_start).
    from relay.gate.context import requester, who_asks
    from relay.gate.gate import Gate, ToolUse
    from relay.gate.rules import Rules, load_rules
    from relay.questions import AgentRef

    rules = load_rules(args.rules) if args.rules else Rules()
    cwd: str = call.cwd or os.getcwd()
    who = requester()
    use = ToolUse(
        tool=call.tool,
        input=dict(call.input),
        # A grant "for this session" is for this agent session only.
        agent=AgentRef(id=f"{adapter.name}:{call.session or who}", name=f"{adapter.label} ({who})"),
        tool_use_id=call.tool_use_id,
        cwd=cwd,
        context=who_asks(os.environ, cwd),
    )
    gate = Gate(rules=rules, approver=_NoApprover())
    verdict = gate.verdict(use)
    if verdict.action != "ask" and verdict.action != "pass":
        return await gate.decide(use)  # decided by the rules alone: no connection needed
    if verdict.action == "pass":
        return None
    from relay.abort import AbortController
    from relay.cli.backend import open_backend

    timeout = rules.timeout_for(verdict)
    backend = await open_backend(args, timeout=timeout)
    controller = AbortController()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        # The harness stops a hook it no longer needs: withdraw the question, then deny.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, controller.abort, "stopped")
    try:
        gate = Gate(rules=backend.fill(rules), approver=backend.approver)
        async with asyncio.timeout(timeout + _MARGIN):
            return await gate.decide(use, signal=controller.signal, allow_pass=True)
    except TimeoutError:
        from relay.gate.approval import Decision

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


def _handler(adapter: Adapter) -> Callable[[argparse.Namespace], int]:
    def handle(args: argparse.Namespace) -> int:
        return _run(adapter, args)

    return handle


def _run(adapter: Adapter, args: argparse.Namespace) -> int:
    try:
        call = adapter.read(load_event(sys.stdin.read()), args)
    except BadHookInput as exc:
        reply = adapter.refuse(str(exc))
    else:
        try:
            decision = asyncio.run(_decide(args, adapter, call))
        except (Exception, KeyboardInterrupt) as exc:  # an interrupted hook denies too
            from relay.gate.approval import Decision

            code = getattr(exc, "code", type(exc).__name__)
            decision = Decision.deny(
                f"relay could not decide this tool use ({code}: {exc}), so it is denied"
                " (relay fails closed)",
                "failed",
            )
        reply = adapter.reply(call, decision)
    if reply.stderr:
        sys.stderr.write(reply.stderr)
    if reply.output is not None:
        sys.stdout.write(json.dumps(reply.output) + "\n")
        sys.stdout.flush()
    return reply.code
