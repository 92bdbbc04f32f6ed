"""Socket Mode that backs off when Slack refuses a connection, instead of storming.

Slack lets one app hold about 10 Socket Mode connections at once; a connection past the cap
gets ``{"type": "disconnect", "reason": "too_many_websockets"}`` and is closed (bolt-js#2225,
where Slack's maintainer states the cap; node-slack-sdk#1654; java-slack-sdk#1223).
slack-sdk's ``SocketModeClient`` answers every ``disconnect`` by reconnecting at once
(``AsyncBaseSocketModeClient.run_message_listeners`` calls ``connect_to_new_endpoint(force=
True)``), and the close that follows reconnects again: an 11th replica then opens a
connection, is refused, and reconnects, several times a second, until Slack rate-limits
``apps.connections.open`` for every replica of the app (node-slack-sdk#1762 weighed the same
loop). Here a refused connection waits, 10 s doubling to 5 minutes (with jitter, so that
refused replicas spread out), and says why in the log; ``refresh_requested`` and ``warning``
still reconnect at once, as Slack asks. A ``hello`` (an accepted connection) resets the wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from typing import Any

from aiohttp import WSMessage, WSMsgType
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.socket_mode.aiohttp import SocketModeClient

__all__ = ["FIRST_RETRY", "MAX_RETRY", "PatientSocketModeClient", "socket_mode_handler"]

_log = logging.getLogger("relay.slack")

FIRST_RETRY = 10.0
"""Seconds a refused connection waits before its first retry; each refusal doubles it."""
MAX_RETRY = 300.0
"""The longest wait between retries of a refused connection."""

_REFUSED = "too_many_websockets"


def _refusal(data: object) -> bool:
    """Whether a WebSocket text frame is Slack's ``too_many_websockets`` disconnect."""
    if not isinstance(data, str) or _REFUSED not in data:
        return False
    try:
        message = json.loads(data)
    except ValueError:
        return False
    return (
        isinstance(message, dict)
        and message.get("type") == "disconnect"
        and message.get("reason") == _REFUSED
    )


class PatientSocketModeClient(SocketModeClient):
    """slack-sdk's aiohttp Socket Mode client, except that a connection Slack refuses for
    ``too_many_websockets`` is retried after a growing wait instead of at once."""

    def __init__(
        self,
        *,
        first_retry: float = FIRST_RETRY,
        max_retry: float = MAX_RETRY,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.first_retry = first_retry
        self.max_retry = max_retry
        self.refusals = 0
        """Refusals in a row since the last accepted connection."""
        self._closing = asyncio.Event()
        # Runs in the receive loop right after the frame arrives, before the close that
        # follows it is read: that close must not reconnect at once either.
        self.on_message_listeners.append(self._hold_reconnects_on_refusal)

    async def _hold_reconnects_on_refusal(self, message: WSMessage) -> None:
        if message.type == WSMsgType.TEXT and _refusal(message.data):
            self.auto_reconnect_enabled = False

    async def run_message_listeners(self, message: dict[str, Any], raw_message: str) -> None:
        """As slack-sdk does, except for ``too_many_websockets``: reconnect later."""
        if message.get("type") == "disconnect" and message.get("reason") == _REFUSED:
            await self._reconnect_later()
            return
        if message.get("type") == "hello":
            self.refusals = 0
        await super().run_message_listeners(message, raw_message)

    def next_wait(self) -> float:
        """Seconds to wait before retrying after the current run of refusals."""
        base = min(self.max_retry, self.first_retry * 2.0 ** max(0, self.refusals - 1))
        return float(base * (0.8 + 0.4 * random.random()))  # noqa: S311 - jitter, not a secret

    async def _reconnect_later(self) -> None:
        self.auto_reconnect_enabled = False
        self.refusals += 1
        wait = self.next_wait()
        _log.warning(
            "Slack refused this Socket Mode connection (too_many_websockets: an app may hold"
            " about 10 at once); retrying in %.0f s. Run at most 10 Socket Mode replicas of"
            " one app, or use HTTP mode to scale out further.",
            wait,
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), wait)
        if self.closed or self._closing.is_set():
            return
        self.auto_reconnect_enabled = self.default_auto_reconnect_enabled
        await self.connect_to_new_endpoint(force=True)

    async def close(self) -> None:
        """Close the connection, and stop any wait for a retry."""
        self._closing.set()
        await super().close()  # type: ignore[no-untyped-call]


class _Handler(AsyncSocketModeHandler):
    """Bolt's Socket Mode adapter over a ``PatientSocketModeClient``."""

    def __init__(self, app: AsyncApp, *, app_token: str, first_retry: float) -> None:
        # Not super().__init__: it would open a SocketModeClient (and its HTTP session) of
        # its own, only to be replaced.
        self.app = app
        self.app_token = app_token
        self.client = PatientSocketModeClient(
            app_token=app_token,
            logger=app.logger,
            web_client=app.client,
            first_retry=first_retry,
        )
        self.client.socket_mode_request_listeners.append(self.handle)  # type: ignore[arg-type]


def socket_mode_handler(
    app: AsyncApp, *, app_token: str, first_retry: float = FIRST_RETRY
) -> AsyncSocketModeHandler:
    """A Bolt Socket Mode handler for ``app`` that backs off when Slack refuses a connection."""
    return _Handler(app, app_token=app_token, first_retry=first_retry)
