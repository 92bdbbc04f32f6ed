"""The only Bolt code: listeners that hand relay clicks to the provider, and the aiohttp app.

Over HTTP, a signed relay click is handed to the provider straight from the aiohttp handler
(``RelayClicks``), without Bolt's generic dispatch: Bolt re-parses the form with a pure-Python
decoder, runs its middleware chain and builds listener arguments by introspection, which
costs more than answering the click. Everything else, and relay clicks once anyone added
middleware to the Bolt app, goes through Bolt as before; Socket Mode always does.
"""

from __future__ import annotations

import json
import logging
import re
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_bolt.request.payload_utils import (
    is_block_actions,
    to_action,
    to_command,
    to_event,
    to_message,
    to_options,
    to_shortcut,
    to_step,
    to_view,
)
from slack_sdk.signature import SignatureVerifier

from relay.slack.parse import parse_click
from relay.slack.render import ACTION_PREFIX

if TYPE_CHECKING:
    from relay.slack.provider import SlackProvider

__all__ = ["RelayClicks", "build_bolt_app", "build_web_app", "slack_handler"]

_log = logging.getLogger("relay.slack")
# What reading a request body the way Bolt does raises on a body Slack never sends.
_UNREADABLE = (ValueError, LookupError, TypeError, AttributeError, RecursionError)


class RelayClicks:
    """Answers signed relay clicks arriving over HTTP without Bolt's generic dispatch.

    ``handle`` returns ``None`` for anything it does not answer (not a relay click, a bad
    signature, middleware added to the Bolt app since it was built), and Bolt then serves
    the request exactly as before, 401s included.
    """

    def __init__(self, provider: SlackProvider, *, app: AsyncApp, signing_secret: str) -> None:
        self._provider = provider
        self._app = app
        self._verifier = SignatureVerifier(signing_secret)
        self._middleware = self._middleware_count()

    def _middleware_count(self) -> int | None:
        # Bolt keeps no public record of its middleware; without one, always defer to Bolt.
        middleware = getattr(self._app, "_async_middleware_list", None)
        return len(middleware) if isinstance(middleware, list) else None

    async def handle(self, request: web.Request, *, timestamp: str) -> web.Response | None:
        """Answer ``request`` if it is a signed relay click; ``None`` to leave it to Bolt."""
        if self._middleware is None or self._middleware_count() != self._middleware:
            return None  # someone's middleware must see every request: Bolt runs it
        if request.content_type != "application/x-www-form-urlencoded":
            return None
        raw = await request.read()  # aiohttp keeps it: Bolt can read it again
        if b"relay" not in raw:
            return None  # cheaply skips the app's other interactions
        signature = request.headers.get("X-Slack-Signature", "")
        try:
            if not self._verifier.is_valid(
                body=raw.decode(), timestamp=timestamp, signature=signature
            ):
                return None  # Bolt refuses it with its usual 401
            form = await request.post()  # aiohttp's form decoder is C-accelerated (yarl)
            payload = form.get("payload")
            click = parse_click(json.loads(payload)) if isinstance(payload, str) else None
        except (ValueError, LookupError, RecursionError):  # unreadable: Bolt's to answer (400)
            return None
        if click is None:
            return None
        try:
            await self._provider.handle_click(click)
        except Exception:
            # As Bolt's default listener error handler does: log, and answer 500.
            _log.exception("failed to handle a click on ask %s", click.ask_id)
            return web.Response(status=500)
        return web.Response(status=200)


# The fast path of each Bolt app built here, for slack_handler to find.
_RELAY_CLICKS: weakref.WeakKeyDictionary[AsyncApp, RelayClicks] = weakref.WeakKeyDictionary()


class _Drop(logging.Filter):
    """Drops one exact log message."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self._message = message

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != self._message


def build_bolt_app(provider: SlackProvider, *, signing_secret: str | None) -> AsyncApp:
    """A Bolt app whose action listener feeds every relay click to ``provider``."""
    # Bolt reads SLACK_BOT_TOKEN itself and warns on every start that the client given wins,
    # which it should: the warning tells an operator nothing.
    quiet = _Drop(warning_client_prioritized_and_token_skipped())
    _log.addFilter(quiet)
    try:
        app = _bolt_app(provider, signing_secret)
    finally:
        _log.removeFilter(quiet)
    if signing_secret is not None:
        _RELAY_CLICKS[app] = RelayClicks(provider, app=app, signing_secret=signing_secret)
    return app


def _bolt_app(provider: SlackProvider, signing_secret: str | None) -> AsyncApp:
    app = AsyncApp(
        client=provider.client,
        signing_secret=signing_secret or "",
        # Without a secret only Socket Mode is served; web_app() refuses to start.
        request_verification_enabled=signing_secret is not None,
        # The listener finishes before the HTTP response: the answer reaches the waiting
        # agent before Slack even sees the ack, and slow Slack calls run in the background.
        process_before_response=True,
        logger=_log,
    )

    @app.action(re.compile("^" + re.escape(ACTION_PREFIX)))
    async def on_relay_action(ack: AsyncAck, body: dict[str, Any]) -> None:
        click = parse_click(body)
        try:
            if click is not None:
                await provider.handle_click(click)
        finally:
            await ack()

    return app


def slack_handler(app: AsyncApp) -> Callable[[web.Request], Awaitable[web.Response]]:
    """An aiohttp handler dispatching Slack requests to ``app``, which checks signatures
    (relay clicks take ``RelayClicks``' fast path when ``app`` came from ``build_bolt_app``)."""
    clicks = _RELAY_CLICKS.get(app)

    async def slack_events(request: web.Request) -> web.Response:
        # Bolt's verifier raises (a 500) on a blank, non-numeric or non-ASCII timestamp (int()
        # rejects "²") or a non-ASCII signature (compare_digest rejects it); refuse them here.
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "").strip()
        signature = request.headers.get("X-Slack-Signature", "")
        if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
            return web.Response(status=401, text="invalid request")
        if not signature.isascii():
            return web.Response(status=401, text="invalid request")
        if clicks is not None:
            answered = await clicks.handle(request, timestamp=timestamp)
            if answered is not None:
                return answered
        try:
            bolt_request = await to_bolt_request(request)
        except _UNREADABLE:
            # Bolt parses the body before it checks the signature, and raises on bytes that
            # are not UTF-8, JSON that is not JSON or nests too deep, a body that is no object.
            return web.Response(status=400, text="invalid request")
        if not _routable(bolt_request.body):
            return web.Response(status=400, text="invalid request")
        bolt_response = await app.async_dispatch(bolt_request)
        return await to_aiohttp_response(bolt_response)

    return slack_events


def _routable(body: dict[str, Any]) -> bool:
    """Whether Bolt can route ``body`` without raising (and answering 500): every listener
    match runs Bolt's payload readers, and its middleware, action matcher and "unhandled
    request" warning read a few fields trusting their type. Slack never sends a body that
    fails this."""
    try:
        for read in _PAYLOAD_READERS:
            read(body)
        action_id = body["actions"][0]["action_id"] if is_block_actions(body) else None
    except _UNREADABLE:
        return False
    event, view = body.get("event", {}), body.get("view", {})
    ids = (action_id, body.get("action_id"), body.get("callback_id"))
    return (
        isinstance(event, dict)
        and isinstance(view, dict)
        and isinstance(event.get("function", {}), dict)
        and all(isinstance(i, str | None) for i in ids)
    )


_PAYLOAD_READERS = (
    to_options,
    to_shortcut,
    to_action,
    to_view,
    to_command,
    to_event,
    to_message,
    to_step,
)


def build_web_app(app: AsyncApp, *, path: str = "/slack/events") -> web.Application:
    """An aiohttp application that serves Slack requests at ``path``."""
    web_app = web.Application()
    web_app.router.add_post(path, slack_handler(app))
    return web_app
