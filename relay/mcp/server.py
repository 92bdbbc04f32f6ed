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
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

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
from relay.seam.asked import note_ask, noting_asks
from relay.seam.questions import AgentRef
from relay.seam.service import UserInteractionService
from relay.seam.tool import run_ask_user_question

__all__ = ["Toolbox", "build_server", "client_name"]

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
    receipts: bool | Callable[[], Awaitable[bool]] = False
    """Whether the relay signs receipts (or how to find out: ``relay mcp`` asks the hosted
    relay it asks through): a result's ``_meta`` then names its ask's receipt."""
    owner: str = "local"
    """Whose MCP tasks these calls' are (the token's fingerprint on ``/mcp``)."""


def note_asked(event: AskEvent) -> None:
    """An ``Events`` observer: note an ask created for the tool call running here (the
    observer runs in the task that creates the ask, which inherits the call's context)."""
    if event.name == "created":
        note_ask(event.ask_id)


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

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
"""The 2026-07-28 tasks extension's identifier (modelcontextprotocol/experimental-ext-tasks)."""


class UpdateTaskParams(types.RequestParams):
    """``tasks/update``'s params (the 2026-07-28 tasks extension)."""

    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] = Field(default_factory=dict, alias="inputResponses")


def _declares_tasks(params: Mapping[str, Any]) -> bool:
    """Whether a 2026-07-28 request's own capabilities (in its ``_meta``) list the tasks
    extension: the extension lets a server answer with a task only then."""
    meta = params.get("_meta")
    caps = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, Mapping) else None
    extensions = caps.get("extensions") if isinstance(caps, Mapping) else None
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


RECEIPT_META_KEY = "relay/receipt"
"""The key of a tool result's ``_meta`` that names its ask's receipt id (``rcpt_…``)."""


def _with_receipt(result: types.CallToolResult, receipt: str) -> types.CallToolResult:
    """``result`` naming its receipt in its ``_meta``: the content, which the model reads,
    stays exactly what ``relay mcp`` returns for the same decision."""
    meta = {**(result.meta or {}), RECEIPT_META_KEY: receipt}
    return result.model_copy(update={"meta": meta})


async def _receipted(
    box: Toolbox, result: types.CallToolResult, asked: list[str], at_once: str | None = None
) -> types.CallToolResult:
    """``result``, naming the receipt of the last ask made for it when the relay signs
    receipts (signed once the ask ended; ``GET /v1/asks/{id}/receipt`` has it then), or
    ``at_once``'s: the receipt of a decision made with nobody asked."""
    if at_once is not None:
        return _with_receipt(result, at_once)
    if not asked:
        return result
    signs = box.receipts if isinstance(box.receipts, bool) else await box.receipts()
    return _with_receipt(result, receipt_id(asked[-1])) if signs else result


class RelayServer(Server[Any]):
    """The SDK's server, holding the tasks it started (``close`` them when it stops)."""

    tasks: TaskBook


class _Handlers:
    """The MCP server's request handlers, over what ``toolbox_for`` gives each request."""

    def __init__(self, toolbox_for: ToolboxFor, progress_interval: float, tasks: TaskBook) -> None:
        self.toolbox_for = toolbox_for
        self.progress_interval = progress_interval
        self.tasks = tasks

    async def list_tools(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(TOOLS))

    async def answer(
        self,
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
            with noting_asks() as asked:
                result = await run(
                    lambda signal: run_ask_user_question(
                        box.service, arguments, agent=box.agent, signal=signal
                    )
                )
            return await _receipted(box, tool_result(result), asked)
        if params.name == APPROVE_TOOL_USE:
            args = read_approve_arguments(arguments)
            if isinstance(args, str):
                # Fail closed, in the shape the harness reads, saying what was wrong.
                denied = Decision.deny(f"relay could not read the permission request: {args}")
                return decision_result(denied, {})
            with noting_asks() as asked:
                decision = await run(lambda signal: _approve(box, args, signal))
            _log.info(
                "approve_tool_use %s for %s: %s (%s)",
                args.tool,
                box.agent.id,
                decision.behavior,
                decision.outcome,
            )
            result = decision_result(decision, args.input)
            return await _receipted(box, result, asked, decision.receipt)
        raise MCPError(
            types.INVALID_PARAMS,
            f"unknown tool {params.name!r}; this server has {ASK_USER_QUESTION} and"
            f" {APPROVE_TOOL_USE}",
        )

    async def call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await self.answer(
            ctx,
            self.toolbox_for(ctx),
            params,
            lambda work: _with_progress(ctx, self.progress_interval, work),
        )

    async def task_calls(self, ctx: Context, call_next: Any) -> Any:
        # A task-augmented tools/call answers with its task at once; the SDK would check the
        # result against CallToolResult, so this middleware writes the response itself.
        raw = ctx.params
        if ctx.method != "tools/call" or not isinstance(raw, Mapping):
            return await call_next(ctx)
        # 2025-11-25: the client asks for a task (params.task). 2026-07-28's extension: the
        # server decides, for a client that declares the extension on this request; a person
        # may take hours, so relay always does.
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if not (modern and _declares_tasks(raw)) and not (
            ctx.protocol_version == TASKS_PROTOCOL and raw.get("task") is not None
        ):
            return await call_next(ctx)
        params = types.CallToolRequestParams.model_validate(raw)
        if params.name not in (ASK_USER_QUESTION, APPROVE_TOOL_USE):
            return await call_next(ctx)
        box = self.toolbox_for(ctx)
        ttl = params.task.ttl if params.task is not None else None

        async def work(signal: AbortSignal) -> types.CallToolResult:
            async def bound(
                inner: Callable[[AbortSignal], Coroutine[Any, Any, Any]],
            ) -> Any:
                return await inner(signal)

            return await self.answer(ctx, box, params, bound)

        async def notify(task: dict[str, Any]) -> None:
            # On the connection's own channel (stdio, or a session's GET stream over HTTP):
            # the request that started the task has long been answered. The SDK's types
            # leave this notification out of its unions (it never sends one itself).
            status = types.TaskStatusNotification(
                params=types.TaskStatusNotificationParams.model_validate(task)
            )
            await ctx.session.send_notification(status)  # type: ignore[arg-type]

        if not modern:
            created = self.tasks.start(box.owner, ttl, work, notify)
            _log.info("MCP task %s: %s (2025-11-25)", created["task"]["taskId"], params.name)
            return created
        # (2026-07-28 delivers task status only on subscriptions/listen, which relay does
        # not serve: clients poll tasks/get.)
        task_id = self.tasks.start(box.owner, ttl, work)["task"]["taskId"]
        _log.info("MCP task %s: %s (2026-07-28 tasks extension)", task_id, params.name)
        return {"resultType": "task", **self.tasks.detailed(box.owner, task_id)}

    def owner_of(self, ctx: Context) -> str:
        return self.toolbox_for(ctx).owner

    async def tasks_get(self, ctx: Context, params: types.GetTaskRequestParams) -> dict[str, Any]:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self.tasks.detailed(self.owner_of(ctx), params.task_id)
        return self.tasks.get(self.owner_of(ctx), params.task_id)

    async def tasks_update(self, ctx: Context, params: UpdateTaskParams) -> dict[str, Any]:
        # relay's tasks never ask the client for input (people answer in Slack): nothing is
        # outstanding, so every response is ignored, as the extension says; a known task is
        # acknowledged.
        self.tasks.detailed(self.owner_of(ctx), params.task_id)
        return {}

    async def tasks_result(
        self, ctx: Context, params: types.GetTaskPayloadRequestParams
    ) -> dict[str, Any]:
        return await self.tasks.result(self.owner_of(ctx), params.task_id)

    async def tasks_cancel(
        self, ctx: Context, params: types.CancelTaskRequestParams
    ) -> dict[str, Any]:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # The extension's cancel is an empty acknowledgement, even for an ended task.
            await self.tasks.cancel(self.owner_of(ctx), params.task_id, ended_ok=True)
            return {}
        return await self.tasks.cancel(self.owner_of(ctx), params.task_id)

    async def tasks_list(
        self, ctx: Context, params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        return self.tasks.list(self.owner_of(ctx))


def build_server(
    toolbox_for: ToolboxFor, *, progress_interval: float = 10.0, book: TaskBook | None = None
) -> RelayServer:
    """The MCP server: ``ask_user_question`` and ``approve_tool_use``, asked through
    whatever ``toolbox_for`` gives each request (a hosted relay, Slack, the serving relay)."""

    tasks = book if book is not None else TaskBook()
    handlers = _Handlers(toolbox_for, progress_interval, tasks)

    server: RelayServer = RelayServer(
        "relay",
        version=__version__,
        title="relay: ask your team in Slack",
        instructions=(
            "Use ask_user_question when you need a human's decision or missing information;"
            " a person on the team answers in Slack, which can take minutes."
        ),
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
    )
    server.middleware.append(handlers.task_calls)
    server.add_request_handler("tasks/get", types.GetTaskRequestParams, handlers.tasks_get)
    server.add_request_handler(
        "tasks/result", types.GetTaskPayloadRequestParams, handlers.tasks_result
    )
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, handlers.tasks_cancel)
    server.add_request_handler("tasks/list", types.PaginatedRequestParams, handlers.tasks_list)
    server.add_request_handler("tasks/update", UpdateTaskParams, handlers.tasks_update)
    plain_capabilities = server.get_capabilities

    def capabilities(*args: Any, **kwargs: Any) -> types.ServerCapabilities:
        caps = plain_capabilities(*args, **kwargs)
        version = kwargs.get("protocol_version")
        if version in (None, TASKS_PROTOCOL):
            caps = caps.model_copy(update={"tasks": _TASKS_CAPABILITY})
        elif version in MODERN_PROTOCOL_VERSIONS:
            extensions = {**(caps.extensions or {}), TASKS_EXTENSION: {}}
            caps = caps.model_copy(update={"extensions": extensions})
        return caps

    server.get_capabilities = capabilities  # type: ignore[method-assign]
    server.tasks = tasks
    return server
