"""Start the hosted relay from ``Settings``: what ``relay serve`` runs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
import sys
from collections.abc import Callable

from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from relay.config import Settings
from relay.grants import GrantStore, MemoryGrants
from relay.server.app import CONNECTIONS, build_app
from relay.server.connections import RUNNER_OPTIONS, GuardedSite
from relay.server.limits import limits_of
from relay.slack.provider import SlackProvider, SlackTarget
from relay.store.base import AskStore
from relay.store.memory import MemoryStore
from relay.tuning import tune_gc

__all__ = ["RedactingFilter", "configure_logging", "run", "serve"]

_log = logging.getLogger("relay.server")
_SLACK_TOKEN = re.compile(r"\b(xox[abposr]|xapp)-[A-Za-z0-9-]+")


class RedactingFilter(logging.Filter):
    """Blanks Slack tokens and the relay's API tokens out of every log line."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self._secrets = tuple(s for s in secrets if s)

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record's message with secrets replaced; never drops a record."""
        message = record.getMessage()
        cleaned = _SLACK_TOKEN.sub(lambda m: f"{m.group(1)}-(redacted)", message)
        for secret in self._secrets:
            cleaned = cleaned.replace(secret, "(redacted)")
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def configure_logging(settings: Settings) -> None:
    """One line per record on stderr at the configured level, with secrets redacted."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    secrets = (settings.bot_token, settings.app_token or "", settings.signing_secret or "")
    handler.addFilter(RedactingFilter((*secrets, *settings.api_tokens)))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
    if settings.log_level != "debug":
        # Bolt and the SDK are chatty at INFO about every request; keep their warnings.
        for name in ("slack_bolt", "slack_sdk", "aiohttp.access"):
            logging.getLogger(name).setLevel(logging.WARNING)


def _grants(settings: Settings) -> GrantStore:
    if settings.redis_url is None:
        return MemoryGrants()
    from relay.grants.redis import RedisGrants

    return RedisGrants(url=settings.redis_url)


async def _store(settings: Settings) -> AskStore:
    if settings.redis_url is None:
        return MemoryStore(
            retention=settings.retention,
            retention_bytes=settings.retention_bytes,
            max_pending_per_owner=settings.max_pending,
        )
    from relay.store.redis import RedisStore

    return RedisStore(
        url=settings.redis_url,
        retention=settings.retention,
        max_pending_per_owner=settings.max_pending,
    )


def _no_default_channel(_: object) -> SlackTarget:
    # No RELAY_CHANNEL: every API request must name its channel (the provider says so).
    return SlackTarget(channel="")


async def serve(
    settings: Settings,
    *,
    ready: asyncio.Event | None = None,
    extend: Callable[[web.Application], None] | None = None,
) -> None:
    """Run the relay until SIGTERM/SIGINT (or cancellation), then shut down cleanly.

    ``extend`` may add routes and hooks to the application before it starts (the sandbox's
    page does); the relay's own routes are unchanged."""
    store = await _store(settings)
    client = AsyncWebClient(
        token=settings.bot_token, base_url=settings.slack_api_url or AsyncWebClient.BASE_URL
    )
    provider = SlackProvider(
        client=client,
        signing_secret=settings.signing_secret,
        channel=settings.channel,
        route=None if settings.channel else _no_default_channel,
        timeout=settings.timeout,
        allowed_users=settings.allowed_users,
        allowed_groups=settings.allowed_groups,
        # An API client may narrow who answers its ask, never widen it past the operator's.
        policy_users=settings.allowed_users,
        policy_groups=settings.allowed_groups,
        store=store,
        sweep_interval=1.0 if store.durable else None,
        max_timeout=settings.max_timeout,
    )
    grants = _grants(settings)
    app = build_app(
        provider=provider,
        grants=grants,
        mcp_progress_interval=settings.mcp_progress_interval,
        api_tokens=settings.api_tokens,
        max_wait=settings.max_wait,
        max_body=settings.max_body,
        serve_slack_events=not settings.socket_mode,
        **limits_of(settings),
    )
    if extend is not None:
        extend(app)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, **RUNNER_OPTIONS)
    await runner.setup()
    site = GuardedSite(runner, settings.host, settings.port, connections=app[CONNECTIONS])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await site.start()
        provider.start_expiry()
        provider.prefetch_identity()
        if settings.app_token:
            await provider.connect_socket_mode(settings.app_token)
        mode = "Socket Mode" if settings.socket_mode else "HTTP mode (POST /slack/events)"
        _log.info(
            "relay listening on %s:%d in %s; store=%s",
            settings.host,
            settings.port,
            mode,
            "redis" if settings.redis_url else "memory",
        )
        if ready is not None:
            ready.set()
        await stop.wait()
        _log.info("shutting down")
    finally:
        await provider.aclose()
        await runner.cleanup()
        await store.aclose()
        await grants.aclose()


def run(settings: Settings) -> None:
    """Configure logging and serve until stopped (the body of ``relay serve``)."""
    configure_logging(settings)
    if settings.gc_threshold is not None:
        tune_gc(settings.gc_threshold)  # many pending asks make CPython's defaults costly
    asyncio.run(serve(settings))
