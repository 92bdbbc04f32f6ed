"""``SocketMode``: the relay's Socket Mode connection, opened and kept open in the background.

slack-sdk's ``SocketModeClient.connect()`` retries forever, with a traceback in the log each
time, and never returns while Slack is unreachable or refuses the app token; a caller awaiting
it cannot even handle SIGTERM. Here slack-sdk's client carries the messages (envelopes, acks,
pings) and this module does the connecting:

- ``apps.connections.open`` is called here, so its refusals are told apart: a permanent one
  (``invalid_auth``, ``token_revoked``…) is a ``RelayConfigError`` naming ``SLACK_APP_TOKEN``;
  anything else (Slack unreachable, ``internal_error``, a refused WebSocket handshake) is
  retried with jittered exponential backoff, one log line per failed attempt.
- Each attempt opens one session; when the session drops (or Slack asks for a refresh with a
  ``disconnect`` message) the supervisor task reconnects, with the same backoff when
  connections keep dropping young.
- Slack lets one app hold about 10 connections at once; one past the cap gets
  ``{"type": "disconnect", "reason": "too_many_websockets"}`` and is closed (bolt-js#2225,
  where Slack's maintainer states the cap; node-slack-sdk#1654; java-slack-sdk#1223).
  slack-sdk would reconnect at once, be refused again, and storm until Slack rate-limits the
  whole app (node-slack-sdk#1762); here a refused connection waits 10 s, doubling to 5
  minutes (with jitter, so refused replicas spread out), and says why. ``refresh_requested``
  still reconnects at once, as Slack asks; an accepted connection (``hello``) resets the wait.
- ``problem()`` says why the relay is not connected, for ``/readyz``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from typing import Any

import aiohttp
from aiohttp import WSMessage, WSMsgType
from slack_bolt.adapter.socket_mode.async_internals import (
    run_async_bolt_app,
    send_async_response,
)
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.web.async_client import AsyncWebClient

from relay.errors import RelayConfigError
from relay.seam.tasks import stop_task

__all__ = ["FIRST_REFUSED_RETRY", "SocketMode"]

_log = logging.getLogger("relay.slack")

# Errors of apps.connections.open that no retry fixes, with what to do (from the method's
# error table, https://api.slack.com/methods/apps.connections.open, and Slack's common
# authentication errors). Any other error is retried.
_HOW_TO_FIX = (
    "create an app-level token with the connections:write scope on your app's Basic"
    " Information page and set it as SLACK_APP_TOKEN"
)
REFUSALS: dict[str, str] = {
    "invalid_auth": f"the token is wrong or was revoked: {_HOW_TO_FIX}",
    "not_authed": f"no token reached Slack: {_HOW_TO_FIX}",
    "invalid_token": f"the token is malformed: {_HOW_TO_FIX}",
    "token_revoked": f"the token was revoked: {_HOW_TO_FIX}",
    "token_expired": f"the token expired: {_HOW_TO_FIX}",
    "account_inactive": "the app or its workspace was deleted: reinstall the app",
    "not_allowed_token_type": f"this is not an app-level (xapp-) token: {_HOW_TO_FIX}",
    "missing_scope": f"the token lacks the connections:write scope: {_HOW_TO_FIX}",
    "no_permission": "the workspace does not allow this app: ask a Slack admin",
    "access_denied": "the workspace does not allow this app: ask a Slack admin",
    "forbidden_team": "this workspace cannot use Socket Mode: ask a Slack admin",
    "team_access_not_granted": "the app is not installed in this workspace: install it",
    "enterprise_is_restricted": "the app cannot connect from an Enterprise org: ask an admin",
    "ekm_access_denied": "the workspace's admins suspended the app (EKM): ask a Slack admin",
    "two_factor_setup_required": "the workspace requires two-factor setup for the app owner",
    "missing_args": f"no token was sent: {_HOW_TO_FIX}",
}

_FIRST_DELAY = 0.5
_MAX_DELAY = 30.0
# A connection that drops sooner than this counts as a failed attempt (backoff applies), so a
# Slack that accepts and at once closes every connection is not called in a tight loop.
_SHORT_LIVED = 10.0


FIRST_REFUSED_RETRY = 10.0
"""Seconds a connection refused for ``too_many_websockets`` waits before its first retry."""
MAX_REFUSED_RETRY = 300.0
"""The longest wait between retries of a connection Slack keeps refusing for the cap."""
_TOO_MANY = "too_many_websockets"


def refused_retry(refusals: int, *, first: float = FIRST_REFUSED_RETRY) -> float:
    """Seconds to wait after ``refusals`` refusals in a row: doubling, capped, ±20 % jitter."""
    base = min(MAX_REFUSED_RETRY, first * 2.0 ** max(0, refusals - 1))
    return float(base * (0.8 + 0.4 * random.random()))  # noqa: S311 - jitter, not a secret


def _cap_refusal(data: object) -> bool:
    """Whether a WebSocket text frame is Slack's ``too_many_websockets`` disconnect."""
    if not isinstance(data, str) or _TOO_MANY not in data:
        return False
    try:
        message = json.loads(data)
    except ValueError:
        return False
    return (
        isinstance(message, dict)
        and message.get("type") == "disconnect"
        and message.get("reason") == _TOO_MANY
    )


def _backoff(attempt: int) -> float:
    """Seconds before attempt ``attempt + 1``: doubling from 0.5 s to 30 s, with jitter."""
    delay = min(_MAX_DELAY, _FIRST_DELAY * 2 ** (attempt - 1))
    return float(delay * (0.5 + random.random() / 2))  # noqa: S311 - jitter, not secrecy


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return f"Slack answered {exc.response.get('error') or exc.response.status_code}"
    if isinstance(exc, aiohttp.WSServerHandshakeError):
        return f"the WebSocket handshake was refused (HTTP {exc.status})"
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200] if text else type(exc).__name__


class _Refused(Exception):
    def __init__(self, error: RelayConfigError) -> None:
        super().__init__(str(error))
        self.error = error


class _Client(SocketModeClient):
    """slack-sdk's client with connecting taken over: ``connect`` is one attempt that raises
    when it fails, and the SDK's own reconnects ask the supervisor instead."""

    def __init__(self, *, lost: asyncio.Event, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._lost = lost
        self.over_cap = False
        """Whether Slack refused the current session for ``too_many_websockets``."""
        self.greeted = False
        """Whether Slack accepted the current session (sent ``hello``)."""
        # Runs in the receive loop as the frame arrives, before the close that follows it.
        self.on_message_listeners.append(self._note_refusal)

    async def _note_refusal(self, message: WSMessage) -> None:
        if message.type == WSMsgType.TEXT and _cap_refusal(message.data):
            self.over_cap = True
            self._lost.set()

    async def run_message_listeners(self, message: dict[str, Any], raw_message: str) -> None:
        """As slack-sdk does, noting ``hello``; a cap refusal is the supervisor's to retry."""
        if message.get("type") == "hello":
            self.greeted = True
        if message.get("type") == "disconnect" and message.get("reason") == _TOO_MANY:
            return
        await super().run_message_listeners(message, raw_message)

    async def connect(self) -> None:
        """Open one WebSocket session at ``wss_uri``; raises if that fails."""
        old = self.current_session
        self.auto_reconnect_enabled = False
        if old is not None and not old.closed:
            # Closed first, as slack-sdk does: Slack limits the connections per app.
            with contextlib.suppress(Exception):
                await old.close()
        if self.aiohttp_client_session.closed:
            self.aiohttp_client_session = aiohttp.ClientSession()
        ssl = self.web_client.ssl if self.web_client.ssl is not None else True
        session = await self.aiohttp_client_session.ws_connect(
            self.wss_uri or "",
            autoping=False,
            heartbeat=self.ping_interval,
            proxy=self.proxy,
            ssl=ssl,
        )
        self.current_session = session
        self.over_cap = self.greeted = False
        self.stale = False
        self.last_ping_pong_time = None
        self.auto_reconnect_enabled = self.default_auto_reconnect_enabled
        await session.ping(f"sdk-ping-pong:{time.time()}".encode())
        for task in (self.current_session_monitor, self.message_receiver):
            if task is not None:
                task.cancel()
        self.current_session_monitor = asyncio.ensure_future(self.monitor_current_session())
        self.message_receiver = asyncio.ensure_future(self.receive_messages())

    async def connect_to_new_endpoint(self, force: bool = False) -> None:
        """Called by slack-sdk when the session dropped, went stale or Slack asked for a
        refresh: the supervisor reconnects (with a new URL and backoff)."""
        if force or not await self.is_connected():
            self._lost.set()


class SocketMode:
    """One app's Socket Mode connection, feeding every envelope to a Bolt app."""

    def __init__(
        self,
        app: AsyncApp,
        *,
        app_token: str,
        client: AsyncWebClient,
        first_refused_retry: float = FIRST_REFUSED_RETRY,
    ) -> None:
        self._first_refused_retry = first_refused_retry
        self._app = app
        self._app_token = app_token
        self._web = client
        self._lost = asyncio.Event()
        self._connected = asyncio.Event()
        self._refusal: asyncio.Future[RelayConfigError] = asyncio.get_running_loop().create_future()
        self._client = _Client(lost=self._lost, app_token=app_token, web_client=client)
        self._client.socket_mode_request_listeners.append(self._dispatch)
        self._task: asyncio.Task[None] | None = None
        self._last_error: str | None = None
        self._ever_connected = False

    def start(self) -> None:
        """Start connecting in the background (and reconnecting whenever the link drops)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._supervise(), name="relay-socket-mode"
            )

    async def connected(self) -> None:
        """Wait until connected; raises ``RelayConfigError`` if Slack refuses the token."""
        self.start()
        connected: asyncio.Future[Any] = asyncio.ensure_future(self._connected.wait())
        refused: asyncio.Future[Any] = self._refusal
        try:
            await asyncio.wait({connected, refused}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            connected.cancel()
        if self._refusal.done():
            raise self._refusal.result()

    async def refused(self) -> RelayConfigError:
        """Wait until Slack refuses the token for good (it may never); the error to report."""
        return await asyncio.shield(self._refusal)

    @property
    def is_connected(self) -> bool:
        """Whether a session is open now."""
        session = self._client.current_session
        return self._connected.is_set() and session is not None and not session.closed

    def problem(self) -> str | None:
        """Why interactions cannot arrive now, or ``None`` when connected."""
        if self._refusal.done():
            return f"refused: {self._refusal.result()}"
        if self.is_connected:
            return None
        state = "reconnecting" if self._ever_connected else "connecting"
        last = f" (last attempt: {self._last_error})" if self._last_error else ""
        return f"not connected to Slack, {state}{last}"

    async def close(self) -> None:
        """Stop (re)connecting and close the session."""
        if self._task is not None:
            await stop_task(self._task)
        await self._client.close()  # type: ignore[no-untyped-call]

    async def _dispatch(self, client: AsyncBaseSocketModeClient, req: SocketModeRequest) -> None:
        # What slack-bolt's AsyncSocketModeHandler does with each envelope.
        started = time.time()
        response = await run_async_bolt_app(self._app, req)
        await send_async_response(client, req, response, started)

    async def _supervise(self) -> None:
        attempt = refusals = 0
        while True:
            self._lost.clear()
            try:
                await self._connect_once()
            except _Refused as exc:
                self._connected.clear()
                if self._ever_connected:  # nobody awaits connected() now: say it here
                    _log.error("Socket Mode stopped: %s", exc.error)
                self._refusal.set_result(exc.error)
                return
            except Exception as exc:  # unreachable, refused handshake, Slack's own trouble
                attempt += 1
                self._last_error = _describe(exc)
                delay = _backoff(attempt)
                _log.warning(
                    "Socket Mode: cannot connect to Slack (%s); retry %d in %.1f s",
                    self._last_error,
                    attempt,
                    delay,
                )
                await asyncio.sleep(delay)
                continue
            opened = time.monotonic()
            _log.info(
                "Socket Mode connected%s",
                f" after {attempt} failed attempt{'s' * (attempt > 1)}" if attempt else "",
            )
            self._ever_connected = True
            self._last_error = None
            self._connected.set()
            await self._lost.wait()
            self._connected.clear()
            if self._client.over_cap:
                refusals += 1
                delay = refused_retry(refusals, first=self._first_refused_retry)
                self._last_error = "refused: too_many_websockets"
                _log.warning(
                    "Slack refused this Socket Mode connection (too_many_websockets: an app may"
                    " hold about 10 at once); retrying in %.0f s. Run at most 10 Socket Mode"
                    " replicas of one app, or use HTTP mode to scale out further.",
                    delay,
                )
                await asyncio.sleep(delay)
                continue
            if self._client.greeted:
                refusals = 0
            if time.monotonic() - opened < _SHORT_LIVED:
                attempt += 1
                delay = _backoff(attempt)
                _log.warning("Socket Mode connection dropped; reconnecting in %.1f s", delay)
                await asyncio.sleep(delay)
            else:
                attempt = 0
                _log.info("Socket Mode connection dropped; reconnecting")

    async def _connect_once(self) -> None:
        try:
            response = await self._web.apps_connections_open(app_token=self._app_token)
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "")
            if error in REFUSALS:
                raise _Refused(
                    RelayConfigError(
                        f"Slack refused the Socket Mode app token (SLACK_APP_TOKEN): {error};"
                        f" {REFUSALS[error]}",
                        setting="SLACK_APP_TOKEN",
                    )
                ) from None
            raise
        self._client.wss_uri = str(response["url"])
        await self._client.connect()
