"""``relay mcp``: the relay's MCP server over stdio, for a local agent's MCP configuration.

Tools: ``ask_user_question`` (ask the team a question) and ``approve_tool_use`` (Claude
Code's ``--permission-prompt-tool mcp__relay__approve_tool_use``). Reaches the team through
a hosted relay (RELAY_URL and RELAY_TOKEN; a sandbox works the same) or Slack directly
(SLACK_BOT_TOKEN and SLACK_APP_TOKEN, Socket Mode, with --channel or RELAY_CHANNEL).
``relay serve`` serves the same server over Streamable HTTP at /mcp.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import os
import secrets
import signal
import sys
from typing import TYPE_CHECKING

from relay.cli.backend import add_backend_flags, open_backend
from relay.cli.common import Commands, plain
from relay.gate.approval import Decision
from relay.gate.client_gate import ClientGate, ToolUse
from relay.gate.context import requester
from relay.gate.rules import Rules, load_rules
from relay.seam.abort import AbortSignal
from relay.seam.questions import AgentRef

if TYPE_CHECKING:
    from relay.mcp.server import Context, Toolbox

__all__ = ["add_mcp"]


def add_mcp(commands: Commands) -> None:
    """Register ``relay mcp``."""
    parser = commands.add_parser(
        "mcp",
        help="serve the MCP server over stdio (ask_user_question, approve_tool_use)",
        description=plain(__doc__),
    )
    add_backend_flags(parser)
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="give up on a question after this long (default: the relay's RELAY_TIMEOUT, 900"
        " unless set; approvals: the rules' timeout, 300 unless set)",
    )
    parser.add_argument(
        "--rules",
        metavar="FILE",
        default=os.environ.get("RELAY_RULES"),
        help="rules for approve_tool_use: allow or deny outright, who approves (default:"
        " RELAY_RULES, if set; else every use is asked about)",
    )
    parser.add_argument(
        "--progress-interval",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="report progress this often while a human thinks (default 10)",
    )
    parser.set_defaults(handler=_run_mcp)


async def _serve(args: argparse.Namespace) -> None:
    from relay.mcp.server import Toolbox, build_server, client_name
    from relay.mcp.stdio import serve_stdio  # (the MCP SDK: loaded for this command only)

    rules = load_rules(args.rules) if args.rules else Rules()
    if args.timeout is not None and not args.rules:
        rules = dataclasses.replace(rules, timeout=args.timeout)  # approvals wait as long
    backend = await open_backend(args, timeout=args.timeout, rules=rules)
    who = requester()
    # One relay mcp process is one agent session: its grants are not another's.
    session = f"mcp:{who}:{secrets.token_hex(6)}"
    # Through a relay, its operator's rules may make this file's allows stricter.
    gate = ClientGate(
        rules=backend.fill(rules),
        approver=backend.approver,
        confirm_allows=backend.mode == "relay",
    )
    context = {"Asked by": who, "Directory": os.getcwd()}

    async def approve(use: ToolUse, signal: AbortSignal) -> Decision:
        decision = await gate.decide(use, signal=signal)
        assert decision is not None  # (no pass: allow_pass is off)
        return decision

    def toolbox(ctx: Context) -> Toolbox:
        name = client_name(ctx) or "an MCP client"
        agent = AgentRef(id=session, name=f"{name} ({who})")
        return Toolbox(service=backend.service, approve=approve, agent=agent, context=context)

    server = build_server(toolbox, progress_interval=args.progress_interval)
    try:
        async with serve_stdio() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        # Questions still waiting as tasks are withdrawn: nobody can fetch their answers.
        with contextlib.suppress(BaseException):
            await asyncio.shield(server.tasks.close())
        await backend.close()


async def _main(args: argparse.Namespace) -> None:
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    assert task is not None
    for sig in (signal.SIGTERM, signal.SIGINT):
        # Stopping cancels the calls in flight, which withdraws their questions in Slack.
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await _serve(args)


def _run_mcp(args: argparse.Namespace) -> int:
    # stdout carries the protocol: everything else goes to stderr.
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="relay mcp: %(levelname)s %(message)s"
    )
    asyncio.run(_main(args))
    return 0
