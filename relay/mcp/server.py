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
from relay.asks.events import AskEvent
from relay.gate.approval import Decision, decide_error
from relay.gate.client_gate import ToolUse
from relay.mcp.asgi import GONE_KEY
from relay.mcp.tasks import TaskBook
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
from relay.receipts.payload import receipt_id
from relay.seam.abort import AbortController, AbortSignal
from relay.seam.questions import AgentRef
from relay.seam.service import UserInteractionService
from relay.seam.tool import run_ask_user_question

__all__ = [
    "RECEIPT_META_KEY",
    "RelayServer",
    "Toolbox",
    "ToolboxFor",
    "build_server",
    "client_name",
]

_log = logging.getLogger("relay.mcp")
T = TypeVar("T")
Context = ServerRequestContext[Any, Any]
# How long a cancelled call may take to withdraw its question before it gives up waiting.
_WITHDRAW_WITHIN = 20.0


@dataclass(frozen=True, slots=True)
class Toolbox:
    """What a tool call works with: the seam, the approvals door, who asks, what to show."""

    service: UserInteractionService
    # The door into the Decider for ``approve_tool_use`` (a client's ``ClientGate`` on stdio, the
    # relay's own Decider on ``/mcp``).
    approve: Callable[[ToolUse, AbortSignal], Coroutine[Any, Any, Decision]]
    agent: AgentRef
    context: Mapping[str, str] = field(default_factory=dict)
    receipts: bool = False
    """Whether the relay signs receipts: a result's ``_meta`` then names its ask's receipt."""
    owner: str = "local"
    """Whose MCP tasks these calls' are (the token's fingerprint on ``/mcp``)."""


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


TASKS_PROTOCOL = "2025-11-25"
"""The protocol version whose core has tasks (2026-07-28 moved them to an extension)."""
_TASKS_CAPABILITY = types.ServerTasksCapability(
    list=types.TasksListCapability(),
    cancel=types.TasksCancelCapability(),
    requests=types.ServerTasksRequestsCapability(
        tools=types.TasksToolsCapability(call=types.TasksCallCapability())
    ),
)

RECEIPT_META_KEY = "relay/receipt"
"""The key of a tool result's ``_meta`` that names its ask's receipt id (``rcpt_…``)."""


def _with_receipt(result: types.CallToolResult, ask_id: str) -> types.CallToolResult:
    """``result`` naming its ask's receipt (signed once the ask ended; ``GET
    /v1/asks/{id}/receipt`` has it then) in its ``_meta``: the content, which the model
    reads, stays exactly what ``relay mcp`` returns for the same decision."""
    meta = {**(result.meta or {}), RECEIPT_META_KEY: receipt_id(ask_id)}
    return result.model_copy(update={"meta": meta})


class RelayServer(Server[Any]):
    """The SDK's server, holding the tasks it started (``close`` them when it stops)."""

    tasks: TaskBook


def build_server(
    toolbox_for: ToolboxFor, *, progress_interval: float = 10.0, book: TaskBook | None = None
) -> RelayServer:
    """The MCP server: ``ask_user_question`` and ``approve_tool_use``, asked through
    whatever ``toolbox_for`` gives each request (a hosted relay, Slack, the serving relay)."""

    tasks = book if book is not None else TaskBook()

    async def list_tools(
        ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(TOOLS))

    async def answer(
        ctx: Context,
        box: Toolbox,
        params: types.CallToolRequestParams,
        run: Callable[
            [Callable[[AbortSignal], Coroutine[Any, Any, Any]]], Coroutine[Any, Any, Any]
        ],
    ) -> types.CallToolResult:
        # One translation of a call into its result, blocking or as a task, stdio or HTTP.
        arguments = params.arguments or {}
        if params.name == ASK_USER_QUESTION:
            if (refused := refused_arguments(arguments)) is not None:
                return refused
            asked: list[str] = []
            noting = _ASKED.set(asked)
            try:
                result = await run(
                    lambda signal: run_ask_user_question(
                        box.service, arguments, agent=box.agent, signal=signal
                    )
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
                decision = await run(lambda signal: _approve(box, args, signal))
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

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await answer(
            ctx,
            toolbox_for(ctx),
            params,
            lambda work: _with_progress(ctx, progress_interval, work),
        )

    async def task_calls(ctx: Context, call_next: Any) -> Any:
        # A task-augmented tools/call answers with its task at once; the SDK would check the
        # result against CallToolResult, so this middleware writes the response itself.
        raw = ctx.params
        if (
            ctx.method != "tools/call"
            or ctx.protocol_version != TASKS_PROTOCOL
            or not isinstance(raw, Mapping)
            or raw.get("task") is None
        ):
            return await call_next(ctx)
        params = types.CallToolRequestParams.model_validate(raw)
        if params.name not in (ASK_USER_QUESTION, APPROVE_TOOL_USE):
            return await call_next(ctx)
        box = toolbox_for(ctx)
        ttl = params.task.ttl if params.task is not None else None

        async def work(signal: AbortSignal) -> types.CallToolResult:
            async def bound(
                inner: Callable[[AbortSignal], Coroutine[Any, Any, Any]],
            ) -> Any:
                return await inner(signal)

            return await answer(ctx, box, params, bound)

        return tasks.start(box.owner, ttl, work)

    def owner_of(ctx: Context) -> str:
        return toolbox_for(ctx).owner

    async def tasks_get(ctx: Context, params: types.GetTaskRequestParams) -> dict[str, Any]:
        return tasks.get(owner_of(ctx), params.task_id)

    async def tasks_result(
        ctx: Context, params: types.GetTaskPayloadRequestParams
    ) -> dict[str, Any]:
        return await tasks.result(owner_of(ctx), params.task_id)

    async def tasks_cancel(ctx: Context, params: types.CancelTaskRequestParams) -> dict[str, Any]:
        return await tasks.cancel(owner_of(ctx), params.task_id)

    async def tasks_list(ctx: Context, params: types.PaginatedRequestParams) -> dict[str, Any]:
        return tasks.list(owner_of(ctx))

    server: RelayServer = RelayServer(
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
    server.middleware.append(task_calls)
    server.add_request_handler("tasks/get", types.GetTaskRequestParams, tasks_get)
    server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, tasks_result)
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, tasks_cancel)
    server.add_request_handler("tasks/list", types.PaginatedRequestParams, tasks_list)
    plain_capabilities = server.get_capabilities

    def capabilities(*args: Any, **kwargs: Any) -> types.ServerCapabilities:
        caps = plain_capabilities(*args, **kwargs)
        if kwargs.get("protocol_version") in (None, TASKS_PROTOCOL):
            caps = caps.model_copy(update={"tasks": _TASKS_CAPABILITY})
        return caps

    server.get_capabilities = capabilities  # type: ignore[method-assign]
    server.tasks = tasks
    return server
