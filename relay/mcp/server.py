"""The relay's MCP server (the official ``mcp`` SDK's low-level ``Server``).

Each tool call runs as a task of its own while the handler reports progress every
``progress_interval`` seconds (only when the client sent a ``progressToken``: the SDK's
``report_progress`` is a no-op otherwise), so that clients with request timeouts that are
reset by progress do not give up while a human thinks. When the call is cancelled
(``notifications/cancelled``, the response stream closing, the client going away) the task's
abort signal fires, which withdraws the question in Slack; the handler waits, shielded, for
the withdrawal to land before it lets the cancellation through.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_INFO_META_KEY

from relay import __version__
from relay.abort import AbortController, AbortSignal
from relay.events import AskEvent
from relay.gate.approval import Decision, decide_error
from relay.gate.gate import ToolUse
from relay.mcp.asgi import GONE_KEY
from relay.mcp.tools import (
    APPROVE_TOOL_USE,
    ASK_USER_QUESTION,
    TOOLS,
    ApproveArguments,
    decision_result,
    read_approve_arguments,
    refused_arguments,
    tool_result,
)
from relay.questions import AgentRef
from relay.receipts.payload import receipt_id
from relay.service import UserInteractionService
from relay.tool import run_ask_user_question

__all__ = ["RECEIPT_META_KEY", "Toolbox", "ToolboxFor", "build_server", "client_name"]

_log = logging.getLogger("relay.mcp")
T = TypeVar("T")
Context = ServerRequestContext[Any, Any]
# How long a cancelled call may take to withdraw its question before it gives up waiting.
_WITHDRAW_WITHIN = 20.0


@dataclass(frozen=True, slots=True)
class Toolbox:
    """What a tool call works with: the seam, the approvals door, who asks, what to show."""

    service: UserInteractionService
    # The door into the Decider for ``approve_tool_use`` (a client's ``Gate`` on stdio, the
    # relay's own Decider on ``/mcp``).
    approve: Callable[[ToolUse, AbortSignal], Coroutine[Any, Any, Decision]]
    agent: AgentRef
    context: Mapping[str, str] = field(default_factory=dict)
    receipts: bool = False
    """Whether the relay signs receipts: a result's ``_meta`` then names its ask's receipt."""


# The asks a tool call made, noted by ``note_asked`` (an ``Events`` observer, called in the
# task that creates the ask, which inherits the tool call's context).
_ASKED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "relay_mcp_asked", default=None
)


def note_asked(event: AskEvent) -> None:
    """An ``Events`` observer: remember an ask created for the tool call running here."""
    if event.name == "created" and (asked := _ASKED.get()) is not None:
        asked.append(event.ask_id)


ToolboxFor = Callable[[Context], Toolbox]


def client_name(ctx: Context) -> str | None:
    """The MCP client's name (``clientInfo.name``), as the handshake or the request says."""
    params = ctx.session.client_params
    if params is not None and params.client_info is not None and params.client_info.name:
        return params.client_info.name
    meta: Mapping[str, Any] = ctx.meta or {}
    info = meta.get(CLIENT_INFO_META_KEY)
    if isinstance(info, Mapping) and isinstance(info.get("name"), str):
        return str(info["name"])
    return None


def _gone(ctx: Context) -> asyncio.Event | None:
    """The event set once the HTTP request carrying this call has ended (``relay.server.mcp``);
    ``None`` over stdio."""
    scope = getattr(ctx.request, "scope", None) or {}
    gone = scope.get(GONE_KEY) if isinstance(scope, Mapping) else None
    return gone if isinstance(gone, asyncio.Event) else None


async def _with_progress(
    ctx: Context, interval: float, work: Callable[[AbortSignal], Coroutine[Any, Any, T]]
) -> T:
    controller = AbortController()
    loop = asyncio.get_running_loop()
    task = loop.create_task(work(controller.signal))
    started = loop.time()
    gone = _gone(ctx)
    # A 2025 session runs the call apart from the request that carried it: if that request
    # ends first (the client hung up), nobody will read the answer, so withdraw the question.
    hung_up = loop.create_task(gone.wait()) if gone is not None else None
    try:
        while True:
            waiting: set[asyncio.Future[Any]] = {task}
            if hung_up is not None and not controller.signal.aborted:
                waiting.add(hung_up)
            done, _ = await asyncio.wait(waiting, timeout=interval, return_when="FIRST_COMPLETED")
            if task in done:
                return task.result()
            if hung_up is not None and hung_up in done:
                controller.abort("the MCP client went away")
                continue
            waited = loop.time() - started
            with contextlib.suppress(Exception):
                await ctx.session.report_progress(
                    waited, None, f"Waiting for a reviewer in Slack ({waited:.0f} s)"
                )
    except BaseException:
        controller.abort("the MCP request was cancelled")
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(_WITHDRAW_WITHIN),
            contextlib.suppress(BaseException),
        ):
            await task
        if not task.done():
            task.cancel()
        raise
    finally:
        if hung_up is not None:
            hung_up.cancel()


async def _approve(box: Toolbox, args: ApproveArguments, signal: AbortSignal) -> Decision:
    use = ToolUse(
        tool=args.tool,
        input=args.input,
        agent=box.agent,
        tool_use_id=args.tool_use_id,
        context=box.context,
        # Claude Code's permission prompt tool runs the updatedInput it is given.
        editable=True,
    )
    try:
        return await box.approve(use, signal)
    except Exception as exc:
        return decide_error(exc)


RECEIPT_META_KEY = "relay/receipt"
"""The key of a tool result's ``_meta`` that names its ask's receipt id (``rcpt_…``)."""


def _with_receipt(result: types.CallToolResult, ask_id: str) -> types.CallToolResult:
    """``result`` naming its ask's receipt (signed once the ask ended; ``GET
    /v1/asks/{id}/receipt`` has it then) in its ``_meta``: the content, which the model
    reads, stays exactly what ``relay mcp`` returns for the same decision."""
    meta = {**(result.meta or {}), RECEIPT_META_KEY: receipt_id(ask_id)}
    return result.model_copy(update={"meta": meta})


def build_server(toolbox_for: ToolboxFor, *, progress_interval: float = 10.0) -> Server[Any]:
    """The MCP server: ``ask_user_question`` and ``approve_tool_use``, asked through
    whatever ``toolbox_for`` gives each request (a hosted relay, Slack, the serving relay)."""

    async def list_tools(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(TOOLS))

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        box = toolbox_for(ctx)
        arguments = params.arguments or {}
        if params.name == ASK_USER_QUESTION:
            if (refused := refused_arguments(arguments)) is not None:
                return refused
            asked: list[str] = []
            noting = _ASKED.set(asked)
            try:
                result = await _with_progress(
                    ctx,
                    progress_interval,
                    lambda signal: run_ask_user_question(
                        box.service, arguments, agent=box.agent, signal=signal
                    ),
                )
            finally:
                _ASKED.reset(noting)
            if box.receipts and asked:
                return _with_receipt(tool_result(result), asked[-1])
            return tool_result(result)
        if params.name == APPROVE_TOOL_USE:
            args = read_approve_arguments(arguments)
            if isinstance(args, str):
                # Fail closed, in the shape the harness reads, saying what was wrong.
                denied = Decision.deny(f"relay could not read the permission request: {args}")
                return decision_result(denied, {})
            asked = []
            noting = _ASKED.set(asked)
            try:
                decision = await _with_progress(
                    ctx, progress_interval, lambda signal: _approve(box, args, signal)
                )
            finally:
                _ASKED.reset(noting)
            _log.info(
                "approve_tool_use %s for %s: %s (%s)",
                args.tool,
                box.agent.id,
                decision.behavior,
                decision.outcome,
            )
            if box.receipts and asked:
                return _with_receipt(decision_result(decision, args.input), asked[-1])
            return decision_result(decision, args.input)
        raise MCPError(
            types.INVALID_PARAMS,
            f"unknown tool {params.name!r}; this server has {ASK_USER_QUESTION} and"
            f" {APPROVE_TOOL_USE}",
        )

    return Server(
        "relay",
        version=__version__,
        title="relay: ask your team in Slack",
        instructions=(
            "Use ask_user_question when you need a human's decision or missing information;"
            " a person on the team answers in Slack, which can take minutes."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
