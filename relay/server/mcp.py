"""``/mcp`` on ``relay serve``: the MCP server over Streamable HTTP, behind the API's tokens.

The SDK's ``StreamableHTTPSessionManager`` runs in a task of its own for the application's
life and serves each request through the ASGI bridge. A request needs the same bearer token
as ``/v1``; the token's fingerprint is the owner of every ask and approval the session makes
(so ``/v1`` sees them, and nobody else's grants apply) and the SDK binds each MCP session to
it, so another token cannot use a session id it learned.

``/mcp`` is held to what ``/v1`` is: Origin and Host checked first (``relay.server.mcp_origins``),
then the token, its rate limit, the body read whole within the read deadline, and the
session bounds (``relay.server.mcp_sessions``). When the request carrying a tool call ends before
its answer (the client hung up, on either protocol), the call's question is withdrawn.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import web
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from relay.asks.channel import AskChannel
from relay.errors import ErrorCode
from relay.gate.approval import ApprovalRequest, Decision
from relay.gate.client_gate import ToolUse
from relay.gate.decider import Decider, Proposal
from relay.gate.local import ChannelAsks
from relay.mcp.asgi import GONE_KEY, serve_asgi
from relay.mcp.boundary import refused_message
from relay.mcp.server import (
    Context,
    RelayServer,
    Toolbox,
    build_server,
    client_name,
    note_asked,
)
from relay.seam.abort import AbortSignal
from relay.seam.questions import AgentRef
from relay.seam.service import UserInteractionService
from relay.server.auth import Authenticator
from relay.server.bodies import read_body
from relay.server.errors import error_response
from relay.server.limits import Limiter
from relay.server.mcp_mount import SessionLimits
from relay.server.mcp_origins import OriginPolicy
from relay.server.mcp_sessions import Sessions, SessionsManager, opens_session

__all__ = ["open_door"]
OWNER_KEY = "relay.owner"  # the ASGI scope key carrying the token's fingerprint
_MAX_BODY = 1024 * 1024
# Seconds a tool call in flight at shutdown has to send its result before its stream ends.
_RESULTS_GRACE = 2.0


def _toolbox_for(
    provider: AskChannel, decider: Decider, sessions: Sessions, *, receipts: bool
) -> Any:
    def toolbox(ctx: Context) -> Toolbox:
        request = ctx.request
        scope = getattr(request, "scope", {}) or {}
        owner = scope.get(OWNER_KEY)
        if not isinstance(owner, str):
            raise RuntimeError("an MCP request reached the relay without its owner")
        headers = getattr(request, "headers", None)
        # Only a session the relay issued to this token counts: a header is the client's word.
        session_id = sessions.session_of(headers, owner) if headers is not None else None
        name = client_name(ctx) or "an MCP client"
        # One MCP session is one agent for grants. A 2026-07-28 request has no session, and
        # nothing else that tells one agent from another under the token: offer no grants.
        agent = AgentRef(id=f"mcp:{session_id or name}", name=name)
        service = UserInteractionService()
        service.register_provider(ChannelAsks(provider, owner=owner))

        async def approve(use: ToolUse, signal: AbortSignal) -> Decision:
            request = ApprovalRequest(
                tool=use.tool,
                input=use.input,
                agent=use.agent,
                tool_use_id=use.tool_use_id,
                context=dict(use.context or {}),
                session_grants=session_id is not None,
                grant_minutes=30 if session_id is not None else 0,
                editable=use.editable,
                input_schema=use.input_schema,
            )
            # No rules of the client's own: the operator's decide (ask without any).
            proposal = Proposal(request, owner=owner, client="pass")
            return await decider.decide(proposal, signal=signal)

        return Toolbox(
            service=service, approve=approve, agent=agent, receipts=receipts, owner=owner
        )

    return toolbox


async def open_door(
    *,
    provider: AskChannel,
    decider: Decider,
    auth: Authenticator,
    progress_interval: float = 10.0,
    receipts: bool = False,
    limiter: Limiter | None = None,
    session_limits: SessionLimits | None = None,
    origins: OriginPolicy | None = None,
    read_timeout: float = 10.0,
) -> McpDoor:
    """The MCP server for ``/mcp``, its session manager running (until
    ``end_sessions``); ``approve_tool_use`` is decided by ``decider`` (the relay's, as for
    ``/v1/approvals``); ``receipts``: the relay signs them, so a tool result names its
    ask's receipt. (``relay.server.mcp_mount`` opens it at the first request.)"""
    if receipts:
        provider.events.subscribe(note_asked)
    sessions = Sessions(session_limits or SessionLimits())
    server = build_server(
        _toolbox_for(provider, decider, sessions, receipts=receipts),
        progress_interval=progress_interval,
    )
    manager: StreamableHTTPSessionManager = SessionsManager(
        server, sessions=sessions, max_request_body_size=_MAX_BODY
    )
    door = McpDoor(
        server,
        manager,
        auth=auth,
        sessions=sessions,
        policy=origins or OriginPolicy(),
        limiter=limiter,
        read_timeout=read_timeout,
    )
    await door.start()
    return door


class McpDoor:
    """``/mcp``: each request checked (origin, token, rate, body) and handed to the SDK's
    session manager, which runs for the application's life."""

    def __init__(
        self,
        server: RelayServer,
        manager: StreamableHTTPSessionManager,
        *,
        auth: Authenticator,
        sessions: Sessions,
        policy: OriginPolicy,
        limiter: Limiter | None,
        read_timeout: float,
    ) -> None:
        self.server, self.manager, self.auth = server, manager, auth
        self.sessions, self.policy, self.limiter = sessions, policy, limiter
        self.read_timeout = read_timeout
        self.stop = asyncio.Event()
        self.running: list[asyncio.Task[None]] = []
        # POSTs in flight carry tool calls; their results are written before the streams end.
        self.calls: set[asyncio.Task[Any]] = set()

    async def end_sessions(self, app: web.Application) -> None:
        # Before aiohttp waits for open requests: open MCP streams end now, not at its timeout.
        # The relay stops asking first (relay.server.main), so a tool call in flight has its
        # result (an error: the relay is stopping) and needs a moment to send it.
        pending = [task for task in self.calls if not task.done()]
        if pending and not self.stop.is_set():
            await asyncio.wait(pending, timeout=_RESULTS_GRACE)
        self.stop.set()
        await self.server.tasks.close()  # questions still waiting as tasks are withdrawn
        for task in self.running:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def start(self) -> None:
        """Start the SDK's session manager (raises why it could not start)."""
        started = asyncio.Event()

        async def run() -> None:
            # The manager's task group must be entered and left in one task: this one.
            async with self.manager.run():
                started.set()
                await self.stop.wait()

        task = asyncio.get_running_loop().create_task(run(), name="relay-mcp-sessions")
        self.running.append(task)
        waiting = asyncio.ensure_future(started.wait())
        done, _ = await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if task in done:
            task.result()  # failed to start: raise why

    async def handle(self, request: web.Request) -> web.StreamResponse:
        refused = self.policy.refusal(request.headers)
        if refused is not None:
            return refused
        owner = self.auth.owner(request.headers.get("Authorization"))
        if owner is None:
            return error_response(
                ErrorCode.UNAUTHORIZED,
                "send a valid relay API token as 'Authorization: Bearer <token>'",
                headers={"WWW-Authenticate": 'Bearer realm="relay"'},
            )
        if self.limiter is not None:
            self.limiter.hit(owner)  # RateLimited: the app answers 429, as on /v1
        body = None
        if request.method == "POST":
            body = await read_body(
                request, limit=_MAX_BODY, timeout=self.read_timeout, hint="; send smaller messages"
            )
            if (unfit := refused_message(body)) is not None:
                return web.json_response(unfit, status=400)  # (nothing read, nothing asked)
        opening = (
            self.sessions.opening(owner) if opens_session(request.method, request.headers) else None
        )
        with opening or contextlib.nullcontext():
            return await self._serve(request, owner, body)

    async def _serve(
        self, request: web.Request, owner: str, body: bytes | None
    ) -> web.StreamResponse:
        # The SDK binds each session to this principal; the token itself is not needed.
        principal = AccessToken(token="(redacted)", client_id=owner, scopes=[])  # noqa: S106
        user = AuthenticatedUser(principal)
        task = asyncio.current_task()
        if request.method == "POST" and task is not None:
            self.calls.add(task)
        # Set when this request ends, however it ends: a tool call still waiting for its
        # answer then has nobody to answer, and withdraws its question.
        gone = asyncio.Event()
        try:
            return await serve_asgi(
                self.manager.handle_request,
                request,
                {"user": user, OWNER_KEY: owner, GONE_KEY: gone},
                body=body,
            )
        finally:
            gone.set()
            if task is not None:
                self.calls.discard(task)
