"""The only Bolt code: listeners that hand relay clicks to the provider, and the aiohttp app.

Over HTTP, a signed relay click is handed to the provider straight from the aiohttp handler
(``RelayClicks``), without Bolt's generic dispatch: Bolt re-parses the form with a pure-Python
decoder, runs its middleware chain and builds listener arguments by introspection, which
costs more than answering the click. Everything else, and relay clicks once anyone added
middleware to the Bolt app, goes through Bolt as before; Socket Mode always does. Either
way the signature is checked first, on the raw bytes (``SlackSignature``): Bolt parses a
form before its own check, which let unsigned 2 MiB bodies cost a quarter of a second each.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.request.internals import (
    extract_actor_enterprise_id,
    extract_actor_team_id,
    extract_actor_user_id,
    extract_channel_id,
    extract_enterprise_id,
    extract_team_id,
    extract_thread_ts,
    extract_user_id,
)
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
from slack_sdk.web.async_client import AsyncWebClient

from relay.slack.editing.form import EDIT_CALLBACK
from relay.slack.intake.parse import (
    Click,
    ClickKind,
    parse_click,
    parse_edit_submission,
    request_digest,
)
from relay.slack.rendering.render import ACTION_PREFIX

__all__ = ["build_bolt_app", "build_web_app", "slack_handler"]

_log = logging.getLogger("relay.slack")
# What reading a request body the way Bolt does raises on a body Slack never sends.
_UNREADABLE = (ValueError, LookupError, TypeError, AttributeError, RecursionError)
_MAX_SKEW = 5 * 60  # seconds a signed request's timestamp may be off


class ClickTaker(Protocol):
    """What the listeners hand clicks to (``SlackProvider``), and the client Bolt uses."""

    @property
    def client(self) -> AsyncWebClient:
        """The Web API client."""
        ...

    async def handle_click(self, click: Click) -> dict[str, str] | None:
        """Apply one relay click (a submitted edit form: its field errors, if any)."""
        ...


class SlackSignature:
    """Checks Slack's request signature on the raw body, before anything reads it.

    ``v0=`` + hex HMAC-SHA256 of ``v0:{timestamp}:{body}`` keyed with the signing secret,
    timestamps within 5 minutes (Slack's "Verifying requests from Slack"). Computed on the
    bytes as they came: slack-sdk's ``SignatureVerifier`` decodes and re-encodes the body
    first, which costs three times as much on a 2 MiB body that nobody signed.
    """

    def __init__(self, signing_secret: str, *, clock: Callable[[], float] = time.time) -> None:
        self._key = signing_secret.encode()
        self._clock = clock

    def fresh(self, timestamp: str) -> bool:
        """Whether ``timestamp`` (ASCII digits) is within 5 minutes of now."""
        return abs(self._clock() - int(timestamp)) <= _MAX_SKEW

    def valid(self, body: bytes, *, timestamp: str, signature: str) -> bool:
        """Whether ``signature`` signs ``body`` at ``timestamp`` (freshness not checked)."""
        signed = b"v0:" + timestamp.encode() + b":" + body
        expected = "v0=" + hmac.new(self._key, signed, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, signature)


class RelayClicks:
    """Answers signed relay clicks arriving over HTTP without Bolt's generic dispatch.

    ``handle`` returns ``None`` for anything it does not answer (not a relay click,
    middleware added to the Bolt app since it was built), and Bolt then serves the request
    exactly as before. The signature was checked before (``slack_handler``).
    """

    def __init__(self, provider: ClickTaker, *, app: AsyncApp) -> None:
        self._provider = provider
        self._app = app
        self._middleware = self._middleware_count()

    def _middleware_count(self) -> int | None:
        # Bolt keeps no public record of its middleware; without one, always defer to Bolt.
        middleware = getattr(self._app, "_async_middleware_list", None)
        return len(middleware) if isinstance(middleware, list) else None

    async def handle(self, request: web.Request, raw: bytes) -> web.Response | None:
        """Answer ``request`` (whose signed body is ``raw``) if it is a relay click; ``None``
        to leave it to Bolt."""
        if self._middleware is None or self._middleware_count() != self._middleware:
            return None  # someone's middleware must see every request: Bolt runs it
        if request.content_type != "application/x-www-form-urlencoded":
            return None
        if b"relay" not in raw:
            return None  # cheaply skips the app's other interactions
        try:
            form = await request.post()  # aiohttp's form decoder is C-accelerated (yarl)
            payload = form.get("payload")
            signed = request_digest(
                raw, request.headers.get("X-Slack-Request-Timestamp", "").strip()
            )
            click = (
                parse_click(_payload_of(payload), request=signed)
                if isinstance(payload, str)
                else None
            )
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


def _payload_of(text: str) -> object:
    """A click's JSON, read by orjson (less than half what ``json.loads`` takes on a click's
    ~2.4 KB), or by ``json`` where orjson refuses (NaN, a lone surrogate): what json reads is
    read. The one other difference, integers past 64 bits read as floats, never reaches a
    click: every field it reads is a string or a boolean."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


class _Intake:
    """What ``slack_handler`` knows of a Bolt app built here: its secret, its fast path."""

    __slots__ = ("clicks", "signature")

    def __init__(self, signature: SlackSignature, clicks: RelayClicks) -> None:
        self.signature = signature
        self.clicks = clicks


# The signature check and fast path of each Bolt app built here, for slack_handler to find.
_INTAKES: weakref.WeakKeyDictionary[AsyncApp, _Intake] = weakref.WeakKeyDictionary()


class _Drop(logging.Filter):
    """Drops one exact log message."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self._message = message

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != self._message


def build_bolt_app(provider: ClickTaker, *, signing_secret: str | None) -> AsyncApp:
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
        _INTAKES[app] = _Intake(SlackSignature(signing_secret), RelayClicks(provider, app=app))
    return app


def _bolt_app(provider: ClickTaker, signing_secret: str | None) -> AsyncApp:
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
        if click is not None and click.kind in (ClickKind.EDIT, ClickKind.PLAN_EDIT):
            # With process_before_response the ack leaves once this returns: opening the
            # form (membership, views.open) runs in the background (EditIntake.open).
            await ack()
            await provider.handle_click(click)
            return
        try:
            if click is not None:
                await provider.handle_click(click)
        finally:
            await ack()

    @app.view(EDIT_CALLBACK)
    async def on_edit_submitted(ack: AsyncAck, body: dict[str, Any]) -> None:
        click = parse_edit_submission(body)
        errors = await provider.handle_click(click) if click is not None else None
        if errors:
            await ack(response_action="errors", errors=errors)
        else:
            await ack()

    return app


def slack_handler(
    app: AsyncApp, *, read_timeout: float = 10.0
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """An aiohttp handler dispatching Slack requests to ``app``.

    For an ``app`` from ``build_bolt_app``, the signature is checked on the raw body before
    anything parses it (a stale timestamp before the body is even read), and relay clicks
    take ``RelayClicks``' fast path; Bolt checks any other app's requests itself.
    """
    intake = _INTAKES.get(app)

    async def slack_events(request: web.Request) -> web.Response:
        # Bolt's verifier raises (a 500) on a blank, non-numeric or non-ASCII timestamp (int()
        # rejects "²") or a non-ASCII signature (compare_digest rejects it); refuse them here.
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "").strip()
        signature = request.headers.get("X-Slack-Signature", "")
        if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
            return _refused()
        if not signature.isascii():
            return _refused()
        if intake is not None and not intake.signature.fresh(timestamp):
            return _refused()
        raw = await _read(request, read_timeout)
        if raw is None:
            return web.Response(status=408, text="the request body did not arrive in time")
        if intake is not None:
            # Unsigned bytes cost one HMAC (a millisecond for 2 MiB), never a parse.
            if not intake.signature.valid(raw, timestamp=timestamp, signature=signature):
                return _refused()
            answered = await intake.clicks.handle(request, raw)
            if answered is not None:
                return answered
        try:
            bolt_request = AsyncBoltRequest(
                body=raw.decode(),
                query=request.query_string,
                headers=request.headers,  # type: ignore[arg-type]
            )
        except _UNREADABLE:
            # Bolt parses the body before it checks the signature, and raises on bytes that
            # are not UTF-8, JSON that is not JSON or nests too deep, a body that is no object.
            return web.Response(status=400, text="invalid request")
        if not _routable(bolt_request.body):
            return web.Response(status=400, text="invalid request")
        bolt_response = await app.async_dispatch(bolt_request)
        return await to_aiohttp_response(bolt_response)

    return slack_events


def _refused() -> web.Response:
    return web.Response(status=401, text="invalid request")


async def _read(request: web.Request, timeout: float) -> bytes | None:
    """The whole body (kept by aiohttp for ``request.post()``), or ``None`` if it did not
    arrive within ``timeout``; over the application's size cap, 413 before reading."""
    limit = request.client_max_size
    if limit and request.content_length is not None and request.content_length > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=request.content_length)
    if request.content.is_eof():  # all of it came with the head (a click's usual case)
        return await request.read()  # (no timer to arm and cancel: a tenth of the handler)
    try:
        async with asyncio.timeout(timeout):
            return await request.read()
    except TimeoutError:
        return None


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
    # Bolt's context and its per-request Web API client take these as they come (a team id
    # that is an object reaches the client's query string and raises there).
    try:
        context_ids = tuple(extract(body) for extract in _CONTEXT_READERS)
    except _UNREADABLE:
        return False
    ids = (action_id, body.get("action_id"), body.get("callback_id"), *context_ids)
    return (
        isinstance(event, dict)
        and isinstance(view, dict)
        and isinstance(event.get("function", {}), dict)
        and all(isinstance(i, str | None) for i in ids)
    )


_CONTEXT_READERS = (
    extract_enterprise_id,
    extract_actor_enterprise_id,
    extract_team_id,
    extract_actor_team_id,
    extract_user_id,
    extract_actor_user_id,
    extract_channel_id,
    extract_thread_ts,
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
