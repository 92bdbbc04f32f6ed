"""Start the hosted relay from ``Settings``: what ``relay serve`` runs."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from relay.asks.events import Events
from relay.asks.lifecycle import AskLifecycle
from relay.config.settings import Settings
from relay.config.tuning import freeze_startup, tune_gc
from relay.errors import RelayConfigError
from relay.gate.decider import Decider
from relay.gate.policy import Policy, load_policy
from relay.gate.rules import RulesError
from relay.grants import GrantStore, MemoryGrants
from relay.receipts import ReceiptWriter, SigningKey
from relay.receipts.checkpoint import Checkpointer, checkpointer_for
from relay.seam.tasks import stop_the_rest
from relay.server.app import CONNECTIONS, build_app, operator_rulings
from relay.server.channel import ChannelFactory, ServedChannel
from relay.server.connections import RUNNER_OPTIONS, GuardedSite
from relay.server.limits import limits_of
from relay.server.logs import LogFormatter, OneLineFilter, ProtocolLog
from relay.store.base import AskStore
from relay.store.memory import MemoryStore
from relay.store.outbox import WebhookOutbox
from relay.store.receipts import ReceiptChain
from relay.webhooks.policy import HostPolicy, parse_networks
from relay.webhooks.sender import Webhooks, WebhookSettings

if TYPE_CHECKING:
    from relay.store.redis_connect import RedisTLS

__all__ = ["configure_logging", "run", "serve"]

_log = logging.getLogger("relay.server")
SHUTDOWN_TIMEOUT = 10.0
"""Seconds a stopping relay gives requests in flight (posts to Slack, mostly) once every
long-poll was answered, and then again the Slack updates it still owes: inside Kubernetes'
default 30 s grace period."""
_TOKEN_CHECK_WAIT = 5.0  # seconds the start waits for auth.test's first answer
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
    """One line per record on stderr at the configured level, with secrets redacted and
    control characters escaped (tracebacks follow on lines marked ``| ``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LogFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    secrets = (
        settings.bot_token,
        settings.app_token or "",
        settings.signing_secret or "",
        settings.webhook_key or "",
    )
    tokens = (*settings.api_tokens, *settings.operator_tokens)
    handler.addFilter(RedactingFilter((*secrets, *tokens)))
    handler.addFilter(OneLineFilter())  # after redacting: a secret cut in two is still hidden
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
    if settings.log_level != "debug":
        # Bolt and the SDK are chatty at INFO about every request; keep their warnings.
        for name in ("slack_bolt", "slack_sdk", "aiohttp.access", "mcp"):
            logging.getLogger(name).setLevel(logging.WARNING)


def _policy(settings: Settings) -> Policy | None:
    """The operator's rules (``RELAY_RULES_FILE``); a broken file stops the relay."""
    if settings.rules_file is None:
        return None
    try:
        return load_policy(settings.rules_file)
    except RulesError as exc:
        raise RelayConfigError(str(exc), setting="RELAY_RULES_FILE") from None


def _grants(settings: Settings) -> GrantStore:
    if settings.redis_url is None:
        return MemoryGrants()
    from relay.grants.redis import RedisGrants

    return RedisGrants(url=settings.redis_url, tls=_redis_tls(settings))


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
        tls=_redis_tls(settings),
        retention=settings.retention,
        max_pending_per_owner=settings.max_pending,
        max_connections=settings.redis_max_connections,
    )


def _redis_tls(settings: Settings) -> RedisTLS:
    from relay.store.redis_connect import RedisTLS

    return RedisTLS(
        ca_file=settings.redis_ca_file,
        cert_file=settings.redis_cert_file,
        key_file=settings.redis_key_file,
    )


def _webhooks(settings: Settings, store: AskStore) -> Webhooks | None:
    if settings.webhook_key is None:
        return None
    if not isinstance(store, WebhookOutbox):
        raise RelayConfigError("this store keeps no webhook outbox", setting="REDIS_URL")
    policy = HostPolicy(
        hosts=frozenset(h.strip("[]") for h in settings.webhook_hosts),
        networks=parse_networks(settings.webhook_networks),
    )
    return Webhooks(
        store=store,
        settings=WebhookSettings(
            key=settings.webhook_key,
            policy=policy,
            retry_for=settings.webhook_retry_for,
            backoff=settings.webhook_backoff,
            keep=settings.retention,
        ),
    )


def _receipts(
    settings: Settings, store: AskStore, generated: SigningKey | None
) -> ReceiptWriter | None:
    """The receipt writer, when a key is configured (or the sandbox generated one)."""
    from relay.receipts.keys import ReceiptKeyError, load_signing_key, public_keys_from

    if settings.receipt_key_file is None and generated is None:
        return None
    if not isinstance(store, ReceiptChain):
        raise RelayConfigError("this store keeps no receipt chain", setting="REDIS_URL")
    setting = "RELAY_RECEIPT_KEY_FILE"
    try:
        key = generated
        if settings.receipt_key_file is not None:
            key = load_signing_key(settings.receipt_key_file)
        retired = None
        if settings.receipt_retired_keys_file is not None:
            setting = "RELAY_RECEIPT_RETIRED_KEYS_FILE"
            try:
                with open(settings.receipt_retired_keys_file, "rb") as file:
                    data = file.read()
            except OSError as exc:
                raise ReceiptKeyError(f"cannot read it ({exc.strerror})") from None
            retired = public_keys_from(data)
    except ReceiptKeyError as exc:
        raise RelayConfigError(f"{setting}: {exc}", setting=setting) from None
    assert key is not None
    return ReceiptWriter(store=store, key=key, issuer=settings.receipt_issuer, retired=retired)


@dataclass(frozen=True, slots=True)
class _Relay:
    """What ``serve`` composed: the state, the channel over the lifecycle, the evidence."""

    store: AskStore
    grants: GrantStore
    channel: ServedChannel
    receipts: ReceiptWriter | None
    checkpoints: Checkpointer | None
    webhooks: Webhooks | None
    decider: Decider


async def serve(
    settings: Settings,
    *,
    channel: ChannelFactory,
    ready: asyncio.Event | None = None,
    extend: Callable[[web.Application], None] | None = None,
    receipt_key: SigningKey | None = None,
) -> None:
    """Run the relay until SIGTERM/SIGINT (or cancellation), then shut down cleanly.

    ``channel`` builds the channel that shows the asks (``relay.slack.serving.
    slack_channel``) over the lifecycle built here. ``extend`` may add routes and hooks to
    the application before it starts (the sandbox's page does); the relay's own routes are
    unchanged. ``receipt_key`` signs receipts when ``RELAY_RECEIPT_KEY_FILE`` names none
    (the sandbox's generated key)."""
    relay = await _compose(settings, channel, receipt_key)
    app = _application(settings, relay)
    if extend is not None:
        extend(app)
    app.on_response_prepare.append(_close_when_stopping(relay.channel))
    runner = web.AppRunner(
        app,
        access_log=None,
        handle_signals=False,
        shutdown_timeout=SHUTDOWN_TIMEOUT,
        logger=ProtocolLog(),  # a malformed request is one INFO line, not an ERROR alert
        **RUNNER_OPTIONS,
    )
    await runner.setup()
    site = GuardedSite(runner, settings.host, settings.port, connections=app[CONNECTIONS])
    stop = _stop_on_signals()
    loop = asyncio.get_running_loop()
    listening = False
    try:
        await _listen(site, settings)
        listening = True
        await _open(settings, relay)
        if ready is not None:
            ready.set()
        await _until_stopped(stop, relay.channel)
        _log.info("shutting down")
    finally:
        started = loop.time()
        await _shut_down(relay, runner)
        if listening:
            _log.info("stopped in %.1f s", loop.time() - started)


async def _compose(
    settings: Settings, channel: ChannelFactory, receipt_key: SigningKey | None
) -> _Relay:
    """The composition root: the store, the ask's lifecycle over it, the channel showing
    the asks, the grants, and the receipts and webhooks fed by the asks' events."""
    store = await _store(settings)
    # The operator's rules, decided in one place: the Decider behind /v1 and /mcp, and the
    # Edit form holding each edit to them before it is recorded.
    rulings = operator_rulings(_policy(settings), settings.team.approvals_required)
    lifecycle = AskLifecycle(
        store=store, events=Events(), sweep_interval=1.0 if store.durable else None
    )
    grants = _grants(settings)
    # The one Decider: a plan's message reaches its plan decisions, and /v1 and /mcp (built
    # after the channel) have it ask people through the channel.
    receipts = _receipts(settings, store, receipt_key)
    # (with receipts, each call it decides at once, without a person, gets one too)
    decider = Decider(rulings=rulings, grants=grants, plan_ttl=settings.plan_ttl, witness=receipts)
    served = channel(settings, lifecycle, rulings.edit_terms, decider)
    if receipts is not None:
        served.events.subscribe(receipts.observe)
    checkpoints = checkpointer_for(settings, store, receipts)
    webhooks = _webhooks(settings, store)
    if webhooks is not None:
        webhooks.receipts = receipts
        served.events.subscribe(webhooks.observe)
    return _Relay(store, grants, served, receipts, checkpoints, webhooks, decider)


def _application(settings: Settings, relay: _Relay) -> web.Application:
    """The server's application over what ``_compose`` built."""
    return build_app(
        channel=relay.channel,
        decider=relay.decider,
        mcp_progress_interval=settings.mcp_progress_interval,
        mcp=settings.mcp,
        api_tokens=settings.api_tokens,
        operator_tokens=settings.operator_tokens,
        max_wait=settings.max_wait,
        max_body=settings.max_body,
        idempotency_window=settings.idempotency_window,
        webhooks=relay.webhooks,
        receipts=relay.receipts,
        checkpoints=relay.checkpoints,
        **limits_of(settings),
    )


def _stop_on_signals() -> asyncio.Event:
    """An event SIGTERM and SIGINT set (where the loop can handle signals)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


async def _open(settings: Settings, relay: _Relay) -> None:
    """Listening: open the channel (a refused token stops the start here, in one line; an
    unreachable Slack is retried in the background), start the senders, say so."""
    await relay.channel.open(within=_TOKEN_CHECK_WAIT)
    if relay.webhooks is not None:
        relay.webhooks.start()
    if relay.receipts is not None:
        relay.receipts.start()
    if relay.checkpoints is not None:
        relay.checkpoints.start()
    mode = "Socket Mode" if settings.socket_mode else "HTTP mode (POST /slack/events)"
    _log.info(
        "relay listening on %s:%d in %s; store=%s",
        settings.host,
        settings.port,
        mode,
        "redis" if settings.redis_url else "memory",
    )
    if settings.gc_threshold is not None:
        freeze_startup()  # the app, Bolt and the clients now exist: out of the collector's way


async def _shut_down(relay: _Relay, runner: web.AppRunner) -> None:
    """Answer the long-polls, stop serving, then send what is still owed, within bounds."""
    # Long-polls first: each is answered now with its record (pending, on a durable
    # store) instead of holding the process for its whole ?wait= (Kubernetes allows 30 s).
    await relay.channel.stop_asking()
    await runner.cleanup()
    try:
        async with asyncio.timeout(SHUTDOWN_TIMEOUT):
            await relay.channel.aclose()  # the withdrawals and updates still owed to Slack
    except TimeoutError:
        _log.warning("stopped before every Slack update was sent (Slack too slow?)")
    if relay.webhooks is not None:
        # Deliveries in flight get a moment; the rest stay owed in the store.
        await relay.webhooks.aclose(grace=SHUTDOWN_TIMEOUT / 4)
    if relay.checkpoints is not None:
        await relay.checkpoints.aclose()
    if relay.receipts is not None:
        try:  # the receipts being signed (a missed one is written by its first reader)
            async with asyncio.timeout(SHUTDOWN_TIMEOUT / 4):
                await relay.receipts.aclose()
        except TimeoutError:
            _log.warning("stopped before every receipt was written")
    try:
        async with asyncio.timeout(SHUTDOWN_TIMEOUT / 2):
            await relay.store.aclose()
            await relay.grants.aclose()
    except TimeoutError:
        _log.warning("stopped before the store's connections were closed")


async def _until_stopped(stop: asyncio.Event, channel: ServedChannel) -> None:
    """Wait for SIGTERM/SIGINT; raise ``RelayConfigError`` if the channel's token is refused."""
    waits: set[asyncio.Future[Any]] = {
        asyncio.ensure_future(stop.wait()),
        asyncio.ensure_future(channel.refused()),
    }
    try:
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
    for finished in done:
        result = finished.result()
        if isinstance(result, RelayConfigError):
            raise result


def _close_when_stopping(
    channel: ServedChannel,
) -> Callable[[web.Request, web.StreamResponse], Awaitable[None]]:
    """A response hook: once stopping, each response closes its connection, so the client
    sends its next request (another long-poll) on a new connection, to another replica."""

    async def close_connection(_: web.Request, response: web.StreamResponse) -> None:
        if channel.stopping:
            response.force_close()  # the server hangs up after this response
            response.headers["Connection"] = "close"  # and says so (headers are set by now)

    return close_connection


async def _listen(site: web.TCPSite, settings: Settings) -> None:
    """Start listening, or say in one line which setting to change (a busy port, mostly)."""
    try:
        await site.start()
    except OSError as exc:
        reason = (os.strerror(exc.errno) if exc.errno else str(exc)).lower()
        if exc.errno == errno.EADDRINUSE:
            advice = "stop the other process or choose another port with PORT (or --port)"
        elif exc.errno == errno.EACCES:
            advice = "ports below 1024 need privileges: choose another with PORT (or --port)"
        else:
            advice = "check RELAY_HOST (or --host) and PORT (or --port)"
        raise RelayConfigError(
            f"cannot listen on {settings.host}:{settings.port}: {reason}; {advice}",
            setting="PORT",
        ) from None


def run(settings: Settings, *, channel: ChannelFactory) -> None:
    """Configure logging and serve until stopped (the body of ``relay serve``)."""
    configure_logging(settings)
    if settings.gc_threshold is not None:
        tune_gc(settings.gc_threshold)  # many pending asks make CPython's defaults costly
    asyncio.run(_serve_alone(settings, channel))


async def _serve_alone(settings: Settings, channel: ChannelFactory) -> None:
    """``serve`` as the process's one job: what still runs after it has stopped is stopped
    too, so that nothing holds the exit (see ``stop_the_rest``)."""
    try:
        await serve(settings, channel=channel)
    finally:
        await stop_the_rest()
