"""``relay exec -- CMD ARGS…``: ask the team before running a command; run it only if allowed.

The reviewer sees the command, the directory, who asks (user@host) and the CI job if there
is one. Allowed: the command runs with this process's stdin, stdout and stderr, SIGTERM,
SIGHUP and SIGINT are forwarded to it (SIGINT only when there is no terminal, which sends
it to both already), and its exit status is passed through (a command killed by a signal
kills relay exec with the same signal).

Exit codes of relay exec itself, used only when the command did not run:
  100 denied (by a reviewer or a rule)   101 no reviewer answered in time
  102 the decision failed (relay or Slack unreachable or refusing, or no answer by the
      reviewer's time plus 15 s because the relay stopped answering; fails closed)
  2   bad usage or configuration         126 not executable   127 not found
  128+N stopped by signal N while waiting (the question is withdrawn)
A command can exit with any of these itself; relay exec's own outcome always prints one
``relay: …`` line on stderr first, so check for it when the codes collide.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Mapping
from types import FrameType
from typing import Any

from relay.cli.backend import add_backend_flags, open_backend
from relay.cli.common import USAGE, CommandError, Commands, error_line, plain
from relay.errors import ErrorCode
from relay.gate.approval import DECISION_GRACE, Decision, gave_up
from relay.gate.client_gate import ClientGate, ToolUse
from relay.gate.context import ci_job, requester, who_asks
from relay.gate.rules import Rules, load_rules
from relay.seam.abort import AbortController
from relay.seam.questions import AgentRef

__all__ = ["EXIT_FAILED", "EXIT_TIMED_OUT", "add_exec"]

EXIT_DENIED = 100
EXIT_TIMED_OUT = 101
EXIT_FAILED = 102
_FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def add_exec(commands: Commands) -> None:
    """Register ``relay exec``."""
    parser = commands.add_parser(
        "exec",
        help="ask the team in Slack before running a command (a gate for CI and agents)",
        description=plain(__doc__),
    )
    add_backend_flags(parser)
    parser.add_argument(
        "--rules",
        metavar="FILE",
        default=os.environ.get("RELAY_RULES"),
        help="the rules file: allow or deny outright, who approves, timeout (default:"
        " RELAY_RULES, if set; else every command is asked about)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="the reviewer's time, over the rules' (default: the rules' timeout, 300 unless set)",
    )
    parser.add_argument(
        "--session",
        default=os.environ.get("RELAY_SESSION"),
        help="who a grant is for (default: RELAY_SESSION, else the CI job, else this terminal)",
    )
    parser.add_argument(
        "command", nargs=argparse.REMAINDER, help="-- then the command and its arguments"
    )
    parser.set_defaults(handler=_run_exec)


def _session(args: argparse.Namespace) -> str:
    if args.session:
        return str(args.session)
    job = ci_job(os.environ)
    if job is not None:
        return job[0]
    # The terminal session: commands run from one shell share grants, another shell's don't.
    return f"{requester()}:sid{os.getsid(0)}"


async def _decide(args: argparse.Namespace, argv: list[str]) -> Decision:
    rules = load_rules(args.rules) if args.rules else Rules()
    cwd = os.getcwd()
    command = shlex.join(argv)
    use = ToolUse(
        tool="exec",
        input={"command": command, "cwd": cwd},
        agent=AgentRef(id=f"exec:{_session(args)}", name=f"relay exec ({requester()})"),
        cwd=cwd,
        context=who_asks(os.environ, cwd),
        # A reviewer may edit the command (not where it runs): see ``edited_argv``.
        editable=True,
    )
    verdict = ClientGate(rules=rules, approver=_Unused()).verdict(use)
    # Through a hosted relay, an allow of this rules file is the relay's to confirm (its
    # operator's RELAY_RULES_FILE may ask or deny): the file may be in the agent's reach.
    confirm = verdict.action == "allow" and bool(args.relay_url or os.environ.get("RELAY_URL"))
    if verdict.action == "deny" or (verdict.action == "allow" and not confirm):
        decision = await ClientGate(rules=rules, approver=_Unused()).decide(use)
        assert decision is not None
        return decision
    if args.timeout is not None:
        rules = dataclasses.replace(
            rules,
            timeout=args.timeout,
            rules=tuple(dataclasses.replace(r, timeout=None) for r in rules.rules),
        )
    timeout = rules.timeout_for(verdict)
    backend = await open_backend(args, timeout=timeout, rules=rules)
    controller = AbortController()
    loop = asyncio.get_running_loop()
    stopped: list[int] = []

    def stop(sig: int) -> None:
        stopped.append(sig)
        controller.abort("stopped")

    for sig in _FORWARDED:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop, sig)
    try:
        # The relay decides at the timeout; past it and the grace, the relay is gone.
        async with asyncio.timeout(timeout + DECISION_GRACE):
            decision = await ClientGate(
                rules=backend.fill(rules), approver=backend.approver
            ).decide(use, signal=controller.signal, confirm_allow=confirm)
    except TimeoutError:
        decision = gave_up(timeout + DECISION_GRACE)
    finally:
        await backend.close()
    if stopped:
        raise _Stopped(stopped[0])
    assert decision is not None
    return decision


class _Stopped(Exception):
    def __init__(self, sig: int) -> None:
        super().__init__(sig)
        self.sig = sig


class _Unused:
    async def approve(self, request: object, *, signal: object = None) -> Decision:
        raise AssertionError("rules-only decisions never ask")

    async def aclose(self) -> None:
        return None


def _run(argv: list[str]) -> int:
    terminal = sys.stdin.isatty()
    child: subprocess.Popen[bytes] | None = None
    early: list[int] = []

    def forward(sig: int, _frame: FrameType | None) -> None:
        if child is None:
            early.append(sig)  # arrived while the command was starting: sent once it is
            return
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(sig)

    # Installed before the command starts: a signal sent the moment it prints its first
    # line must reach it, not kill relay exec and orphan it.
    for sig in _FORWARDED:
        if sig == signal.SIGINT and terminal:
            # The terminal sends Ctrl-C to the whole foreground group: the child has it.
            signal.signal(sig, signal.SIG_IGN)
        else:
            signal.signal(sig, forward)
    try:
        child = subprocess.Popen(argv)  # noqa: S603 - running it is the point, once approved
    except FileNotFoundError:
        sys.stderr.write(error_line(ErrorCode.NOT_FOUND, f"{argv[0]}: command not found"))
        return 127
    except PermissionError:
        sys.stderr.write(error_line(ErrorCode.NOT_EXECUTABLE, f"{argv[0]}: permission denied"))
        return 126
    for number in early:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(number)
    code = child.wait()
    if code < 0:
        # Killed by a signal: die of the same one, so our caller sees what the shell would.
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


def _run_exec(args: argparse.Namespace) -> int:
    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise CommandError(USAGE, "say what to run: relay exec [options] -- COMMAND [ARGS…]")
    try:
        decision = asyncio.run(_decide(args, argv))
    except _Stopped as stop:
        sys.stderr.write(
            error_line(
                ErrorCode.ABORTED, f"stopped by signal {stop.sig}; the question was withdrawn"
            )
        )
        return 128 + stop.sig
    if not decision.allowed:
        code = {"timed_out": EXIT_TIMED_OUT, "failed": EXIT_FAILED}.get(
            decision.outcome, EXIT_DENIED
        )
        label = {EXIT_TIMED_OUT: "TIMED_OUT", EXIT_FAILED: "FAILED"}.get(code, "DENIED")
        line = f"{decision.message}; {shlex.join(argv)} did not run"
        # A decision (denied, nobody in time) is a verdict line; a failure to decide is an
        # error, in the one format every command prints its errors in.
        failed = code == EXIT_FAILED
        sys.stderr.write(error_line(label, line) if failed else f"relay: {label}: {line}\n")
        return code
    if decision.updated_input is not None:
        edited = edited_argv(decision.updated_input, os.getcwd())
        if edited is None:
            sys.stderr.write(
                f"relay: DENIED: {decision.message}, but the edit is not a command to run here"
                f" (exec takes an edited command, not another directory); {shlex.join(argv)}"
                " did not run\n"
            )
            return EXIT_DENIED
        sys.stderr.write(f"relay: ALLOWED: {decision.message}: {shlex.join(edited)}\n")
        sys.stderr.flush()
        return _run(edited)
    sys.stderr.write(f"relay: ALLOWED: {decision.message}\n")
    sys.stderr.flush()
    return _run(argv)


def edited_argv(edited: Mapping[str, Any], cwd: str) -> list[str] | None:
    """The argv a reviewer's edit runs: its ``command`` split as a shell splits words (no
    shell runs it), in the same directory; ``None`` when the edit is anything else."""
    command = edited.get("command")
    if set(edited) - {"command", "cwd"} or edited.get("cwd", cwd) != cwd:
        return None
    if not isinstance(command, str):
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    return argv or None
