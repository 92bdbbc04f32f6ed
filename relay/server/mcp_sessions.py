"""MCP sessions on ``/mcp``: how many each token may hold, how many in all, and whose they are.

A 2025 (session) client opens a session with ``initialize`` and the SDK keeps it, with a
server task and its streams, until the client deletes it or it has been idle for
``SessionLimits.idle`` seconds. Each one costs memory, so the relay bounds them: a token may
hold ``per_token`` sessions (past that, ``429 TOO_MANY_SESSIONS``) and the relay ``total``
(past that, ``503 MCP_SESSIONS_FULL``), and ``per_token`` is less than ``total``, so that one
token can never take every place. A request that would open a session holds a place while it
is served, so a burst of them cannot overshoot between the check and the SDK's admission.

``Sessions`` also answers which session a request belongs to: only one the relay issued, to
the token that sends it, over the session protocol. A 2026-07-28 request has no session, and
an ``Mcp-Session-Id`` header it carries is the client's invention: grants are not offered on it.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from relay.errors import ErrorCode
from relay.server.errors import ApiError
from relay.server.mcp_mount import SessionLimits

__all__ = ["Sessions", "SessionsManager", "opens_session"]

_log = logging.getLogger("relay.mcp")
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"


def _legacy(headers: Mapping[str, str]) -> bool:
    # The SDK's own routing: no version header, or a handshake version, is the session era.
    version = headers.get(VERSION_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


def opens_session(method: str, headers: Mapping[str, str]) -> bool:
    """Whether the SDK would open a new session for this request."""
    return method == "POST" and headers.get(SESSION_HEADER) is None and _legacy(headers)


class _Slot:
    """The place one opening request holds, until its session is admitted."""

    __slots__ = ("admitted", "owner")

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.admitted = False


# The place the request being served holds: the SDK admits its session further down the
# same call (``SessionsManager._admit_session``), with no way to pass it along.
_OPENING: contextvars.ContextVar[_Slot | None] = contextvars.ContextVar(
    "relay_mcp_opening", default=None
)


class Sessions:
    """The sessions the relay issued, by owner (the token's fingerprint), within limits."""

    def __init__(self, limits: SessionLimits) -> None:
        self.limits = limits
        self._owners: dict[str, str] = {}  # session id -> owner
        self._held: Counter[str] = Counter()  # owner -> sessions open
        self._opening: Counter[str] = Counter()  # owner -> opening requests in flight

    def __len__(self) -> int:
        return len(self._owners)

    @contextlib.contextmanager
    def opening(self, owner: str) -> Iterator[None]:
        """Hold a place for a request that opens a session, or raise ``ApiError``."""
        limits = self.limits
        if self._held[owner] + self._opening[owner] >= limits.per_token:
            raise ApiError(
                ErrorCode.TOO_MANY_SESSIONS,
                f"this token already holds {limits.per_token} MCP sessions"
                " (RELAY_MCP_SESSIONS_PER_TOKEN); end one (DELETE /mcp with its"
                " Mcp-Session-Id) or wait until an idle one is closed",
                status=429,
            )
        if len(self._owners) + self._opening.total() >= limits.total:
            raise ApiError(
                ErrorCode.MCP_SESSIONS_FULL,
                f"the relay holds its most MCP sessions ({limits.total},"
                " RELAY_MCP_MAX_SESSIONS); retry shortly, as idle ones are closed",
                status=503,
            )
        self._opening[owner] += 1
        slot = _Slot(owner)
        reset = _OPENING.set(slot)
        try:
            yield
        finally:
            _OPENING.reset(reset)
            if not slot.admitted:
                self._release(owner)

    def _release(self, owner: str) -> None:
        self._opening[owner] -= 1
        if not self._opening[owner]:
            del self._opening[owner]

    def opened(self, session_id: str, owner: str) -> None:
        """The SDK admitted ``session_id`` for ``owner``: the place its request held is now
        the session's (counted once, not twice, while the request is still being served)."""
        self._owners[session_id] = owner
        self._held[owner] += 1
        slot = _OPENING.get()
        if slot is not None and slot.owner == owner and not slot.admitted:
            slot.admitted = True
            self._release(owner)

    def closed(self, session_id: str) -> bool:
        """``session_id`` ended (deleted, idle, failed to open, or the relay stopping);
        whether it was open until now."""
        owner = self._owners.pop(session_id, None)
        if owner is None:
            return False
        self._held[owner] -= 1
        if not self._held[owner]:
            del self._held[owner]
        return True

    def session_of(self, headers: Mapping[str, str], owner: str) -> str | None:
        """The session this request runs in: one the relay issued to ``owner``, over the
        session protocol; otherwise ``None`` (no session, so no session grants)."""
        session_id = headers.get(SESSION_HEADER)
        if session_id is None or not _legacy(headers):
            return None
        return session_id if self._owners.get(session_id) == owner else None


class SessionsManager(StreamableHTTPSessionManager):
    """The SDK's session manager, telling ``sessions`` each session it opens and ends.

    It overrides the manager's two session hooks (``_admit_session``, ``_discard_session``):
    the SDK has no public callback for either, and both are where the session dict changes.
    """

    def __init__(self, app: Any, *, sessions: Sessions, max_request_body_size: int) -> None:
        limits = sessions.limits
        super().__init__(
            app=app,
            max_request_body_size=max_request_body_size,
            session_idle_timeout=limits.idle,
            max_sessions=limits.total,
        )
        self.sessions = sessions

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            owner = requestor["client_id"] if requestor is not None else ""
            self.sessions.opened(transport.mcp_session_id, owner)
        return transport

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        idle = transport.idle_scope is not None and transport.idle_scope.cancel_called
        if self.sessions.closed(session_id) and idle:
            _log.info(
                "MCP session idle, closed (RELAY_MCP_SESSION_IDLE); sessions open: %d",
                len(self.sessions),
            )
        await super()._discard_session(session_id, transport)
