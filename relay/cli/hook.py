"""``relay hook HARNESS``: a permission hook for Claude Code, Codex, GitHub Copilot or Cursor.

Reads the harness's hook JSON on stdin, decides by the rules file (allow or deny outright,
or ask the team in Slack), and writes the decision the way that harness reads it (the
adapters in ``relay.hooks``). It fails closed: a missing or broken configuration, an
unreachable relay, a timeout or a crash all deny, with a reason the agent sees; input that
is not a tool event (or not JSON, too deep, not UTF-8: ``relay.hooks.intake``) gets the
harness's own deny (exit 2 where that blocks) and one line on stderr, never a traceback.
Harnesses that let a hook time out let the call through (Claude Code unless ``"onFailure":
"block"``, Copilot, Cursor unless ``failClosed``), so this one answers within the rules'
timeout plus ``DECISION_GRACE``, whatever the relay does, withdrawing the question first.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relay.cli.backend import add_backend_flags
from relay.cli.common import Commands, plain
from relay.hooks import ADAPTERS, Adapter, BadHookInput, HookCall, Reply
from relay.hooks.claude_code import CLAUDE_CODE, EVENTS
from relay.hooks.common import Decided, RulesDecision, one_line
from relay.hooks.intake import MAX_BYTES, load_event

if TYPE_CHECKING:
    from relay.gate.approval import Decision
    from relay.gate.rules import Rules, RuleVerdict

__all__ = ["EVENTS", "add_hook"]

# What ``relay hook --help`` says: what a user configures, not how each harness treats a
# hook that times out (that is the module docstring's, for whoever works on this file).
_DESCRIPTION = """\
relay hook HARNESS: a permission hook for Claude Code, Codex, GitHub Copilot or Cursor.

Add it to the harness's hooks configuration. It reads the hook's JSON on stdin, decides by
the rules file (allow or deny outright, or ask the team in Slack) and answers the harness
in its own format. When it cannot decide (no configuration, the relay unreachable, nobody
answered in time) it denies, with a reason the agent sees.

Run `relay hook HARNESS --help` for a harness's options.
"""


def add_hook(commands: Commands) -> None:
    """Register ``relay hook`` and one subcommand per harness."""
    parser = commands.add_parser(
        "hook",
        help="a permission hook for coding agents (relay hook claude-code|codex|copilot|cursor)",
        description=plain(_DESCRIPTION),
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
            help="the rules file (default: RELAY_RULES, if set; else every use is asked about)",
        )
        adapter.add_arguments(sub)
        sub.set_defaults(handler=_handler(adapter))


def _decide(
    args: argparse.Namespace, adapter: Adapter, call: HookCall
) -> Decided | Deferred | None:
    """The rules' decision, made here without asyncio or the gate's clients (a hook runs
    before every tool call it matches); only a use the team is asked about goes on."""
    from relay.canonical.match import subject
    from relay.gate.rules import Rules, load_rules

    rules = load_rules(args.rules) if args.rules else Rules()
    cwd: str = call.cwd or os.getcwd()
    # What ``ClientGate.verdict`` and ``ClientGate.decide`` say for a use the rules decide alone.
    verdict = rules.verdict(subject(call.tool, call.input, cwd=cwd))
    # Through a hosted relay an allow of these rules (a file the agent can write) goes to the
    # relay to confirm: its operator's rules (RELAY_RULES_FILE) may ask or deny instead.
    through_relay = bool(getattr(args, "relay_url", None) or os.environ.get("RELAY_URL"))
    if verdict.action == "deny" or (verdict.action == "allow" and not through_relay):
        return RulesDecision(verdict.action, verdict.reason(rules.source))
    if verdict.action == "pass":
        return None
    import asyncio

    # The verdict goes on with the use: one hook's rules are evaluated once.
    return asyncio.run(_ask(args, adapter, call, rules, cwd, verdict=verdict))


async def _ask(
    args: argparse.Namespace,
    adapter: Adapter,
    call: HookCall,
    rules: Rules,
    cwd: str,
    *,
    grace: float | None = None,
    verdict: RuleVerdict | None = None,
) -> Decision | Deferred | None:
    """The team's decision, within the rules' timeout plus ``grace`` (``DECISION_GRACE``)
    from here, whatever the relay does: past it, a deny."""
    import asyncio

    from relay.cli.backend import open_backend
    from relay.gate.approval import DECISION_GRACE, gave_up
    from relay.gate.client_gate import ClientGate, ToolUse
    from relay.gate.context import requester, who_asks
    from relay.gate.remote import WITHDRAW_WITHIN, RemoteApprover
    from relay.seam.abort import AbortController
    from relay.seam.questions import AgentRef

    who = requester()
    use = ToolUse(
        tool=call.tool,
        input=dict(call.input),
        # A grant "for this session" is for this agent session only.
        agent=AgentRef(id=f"{adapter.name}:{call.session or who}", name=f"{adapter.label} ({who})"),
        tool_use_id=call.tool_use_id,
        cwd=cwd,
        context=who_asks(os.environ, cwd),
        editable=adapter.edits_on(call.event),
    )
    if verdict is None:
        verdict = ClientGate(rules=rules, approver=_NoApprover()).verdict(use)
    # Through a hosted relay, an allow of these rules (a file the agent can write) is the
    # relay's to confirm: its operator's rules (RELAY_RULES_FILE) may ask or deny instead.
    confirm = verdict.action == "allow"
    timeout = rules.timeout_for(verdict)
    bound = timeout + (DECISION_GRACE if grace is None else grace)
    loop = asyncio.get_running_loop()
    # One deadline for the whole approval, not a timeout per call (those add up): the
    # decision is awaited until the time kept for withdrawing the question, which
    # RemoteApprover bounds by WITHDRAW_WITHIN.
    ends = loop.time() + bound
    controller = AbortController()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        # The harness stops a hook it no longer needs: withdraw the question, then deny.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, controller.abort, "stopped")
    backend = None
    try:
        async with asyncio.timeout_at(ends - WITHDRAW_WITHIN):
            backend = await open_backend(args, timeout=timeout, rules=rules)
            defer_after = getattr(args, "defer_after", None)
            if (
                defer_after is not None
                and call.event == "PreToolUse"
                and isinstance(backend.approver, RemoteApprover)
            ):
                # Claude Code's defer: the question stays open for the run's --resume.
                backend.approver.reattach = True
                loop.call_later(defer_after, controller.abort, "deferred")
            gate = ClientGate(rules=backend.fill(rules), approver=backend.approver)
            decision = await gate.decide(
                use,
                signal=controller.signal,
                allow_pass=True,
                confirm_allow=confirm,
                verdict=verdict,
            )
        if controller.signal.aborted and controller.signal.reason == "deferred":
            return Deferred(
                "no one on the team has decided yet: the question stays open in Slack;"
                " resume this run (claude -p --resume) for the decision"
            )
        return decision
    except TimeoutError:
        return gave_up(bound)
    finally:
        if backend is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(max(ends, loop.time() + 0.1)):
                    await backend.close()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)


@dataclass(frozen=True, slots=True)
class Deferred:
    """The call is handed back to the harness undecided; its question stays open."""

    message: str


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
        raw = sys.stdin.buffer.read(MAX_BYTES + 1)
    except (OSError, ValueError) as exc:
        reply = adapter.refuse(f"relay could not read the hook input ({type(exc).__name__})")
    else:
        reply = _reply(adapter, args, raw)
    try:
        if reply.stderr:
            sys.stderr.write(reply.stderr)
            sys.stderr.flush()
        if reply.output is not None:
            sys.stdout.write(json.dumps(reply.output) + "\n")
            sys.stdout.flush()
    except OSError:  # the harness stopped listening: nothing left to tell it
        pass
    return reply.code


def _reply(adapter: Adapter, args: argparse.Namespace, raw: bytes) -> Reply:
    """The answer to hook input ``raw``: never raises, whatever ``raw`` holds."""
    try:
        call = adapter.read(load_event(raw), args)
    except BadHookInput as exc:
        return adapter.refuse(str(exc))
    except Exception as exc:  # a reader's own failure is still a deny, on one line
        return adapter.refuse(f"relay could not read the hook input ({type(exc).__name__})")
    try:
        decision = _decide(args, adapter, call)
    except (Exception, KeyboardInterrupt) as exc:  # an interrupted hook denies too
        code = getattr(exc, "code", type(exc).__name__)
        decision = RulesDecision(
            "deny",
            f"relay could not decide this tool use ({code}: {one_line(str(exc))}), so it is denied"
            " (relay fails closed)",
        )
    if (
        decision is not None
        and not isinstance(decision, Deferred)
        and decision.updated_input is not None
        and not adapter.edits_on(call.event)
    ):  # never allow a call other than the one this harness will run
        decision = RulesDecision(
            "deny",
            f"a reviewer edited this call, but {adapter.label} cannot run an edited call,"
            " so it is denied; ask again",
        )
    if isinstance(decision, Deferred):
        return CLAUDE_CODE.deferred(decision.message)
    return adapter.reply(call, decision)
