"""The only Bolt code: listeners that hand relay clicks to the provider, and the aiohttp app."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncAck, AsyncApp

from relay.slack.parse import parse_click
from relay.slack.render import ACTION_PREFIX

if TYPE_CHECKING:
    from relay.slack.provider import SlackProvider

__all__ = ["build_bolt_app", "build_web_app", "slack_handler"]

_log = logging.getLogger("relay.slack")


def build_bolt_app(provider: SlackProvider, *, signing_secret: str | None) -> AsyncApp:
    """A Bolt app whose action listener feeds every relay click to ``provider``."""
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
    """An aiohttp handler dispatching Slack requests to ``app``, which checks signatures."""

    async def slack_events(request: web.Request) -> web.Response:
        # Bolt's verifier raises (a 500) on a blank or non-numeric timestamp; refuse it here.
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "").strip()
        if not timestamp.isdigit() or len(timestamp) > 12:
            return web.Response(status=401, text="invalid request")
        bolt_response = await app.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(bolt_response)

    return slack_events


def build_web_app(app: AsyncApp, *, path: str = "/slack/events") -> web.Application:
    """An aiohttp application that serves Slack requests at ``path``."""
    web_app = web.Application()
    web_app.router.add_post(path, slack_handler(app))
    return web_app
