"""Outcome webhooks: when an ask with a ``callback_url`` ends, POST its record, signed.

The end is seen two ways: the lifecycle's events on the replica that claimed the outcome
(at once), and a sweep of the store's watched asks (so an end that a crashed replica never
enqueued is still sent). Either enqueues the delivery in the store's outbox under an event id
made from the ask and the event, so it is owed once; every replica then claims due deliveries
with a lease, sends them, and retries failures with backoff for ``retry_for`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import aiohttp

from relay.asks.events import AskEvent
from relay.audit.trail import audit_json
from relay.receipts.writer import ReceiptWriter
from relay.seam.tasks import stop_task
from relay.store.outbox import ClaimedDelivery, WebhookOutbox
from relay.store.record import AskRecord
from relay.webhooks.policy import CallbackRefused, HostPolicy
from relay.webhooks.post import SignedPoster

__all__ = ["END_EVENTS", "Subscription", "WebhookSettings", "Webhooks"]

_log = logging.getLogger("relay.webhooks")

# The lifecycle events (relay.asks.events) after which an ask is over.
END_EVENTS = frozenset({"answered", "defaulted", "timed_out", "aborted", "closed", "failed"})
# Events during an ask that a subscriber may ask for with ``callback_events``, by the
# lifecycle's name, with the webhook type each is sent as: each vote on a question that needs
# several (quorum), each reminder posted, and the escalation. One delivery per event, by its fields.
PROGRESS_EVENTS: dict[str, str] = {
    "voted": "ask.vote",
    "reminded": "ask.reminded",
    "escalated": "ask.escalated",
}
_CLAIM_BATCH = 32
_SWEEP_BATCH = 200


class _Store(WebhookOutbox, Protocol):
    async def get(self, *, ask_id: str) -> AskRecord | None: ...


def event_type(record: AskRecord) -> str:
    """The webhook type of an ask's end: ``ask.answered``, ``ask.timed_out``,
    ``ask.aborted`` (``ask.error.reason`` says ``closed`` when the relay stopped) or
    ``ask.failed``."""
    return f"ask.{record.status.value}"


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookSettings:
    """The operator's webhook configuration."""

    key: str = field(repr=False)
    policy: HostPolicy
    retry_for: float = 24 * 3600.0
    backoff: float = 1.0
    max_backoff: float = 600.0
    timeout: float = 10.0
    lease: float = 30.0
    sweep_interval: float = 5.0
    poll_interval: float = 1.0
    keep: float = 7 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Subscription:
    """Where one ask's events go: ``url``, and which progress events beyond its end."""

    url: str
    events: tuple[str, ...] = ()

    def to_json(self, owner: str) -> str:
        """The stored form."""
        return json.dumps({"url": self.url, "events": list(self.events), "owner": owner})


class Webhooks:
    """Checks callback URLs, records subscriptions, and sends the outbox's deliveries."""

    def __init__(
        self,
        *,
        store: _Store,
        settings: WebhookSettings,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self._store = store
        self.settings = settings
        self._poster = SignedPoster(
            key=settings.key, policy=settings.policy, timeout=settings.timeout, session=session
        )
        self._woken = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._sending: dict[str, asyncio.Task[None]] = {}
        self._last_sweep = 0.0
        self._sweep_from = 0
        self._closed = False
        self.receipts: ReceiptWriter | None = None
        """Signs ended asks' receipts: each end's body then carries the ask's receipt."""
        self.on_result: Callable[[str], None] | None = None
        """Called with each attempt's result: ``delivered``, ``retried`` or ``failed`` (given
        up), for the ``relay_webhook_deliveries_total`` counter."""

    def _counted(self, result: str) -> None:
        if self.on_result is not None:
            self.on_result(result)

    def subscription(self, url: object, events: object) -> Subscription:
        """The checked subscription of an API body; ``CallbackRefused`` says what is wrong."""
        if not isinstance(url, str) or not url:
            raise CallbackRefused("callback_url must be a non-empty string: an http(s) URL")
        self.settings.policy.check_url(url)
        chosen: list[str] = []
        if events is not None:
            if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
                raise CallbackRefused("callback_events must be a list of event names")
            for name in events:
                if name not in PROGRESS_EVENTS:
                    offered = ", ".join(sorted(PROGRESS_EVENTS)) or "none yet"
                    raise CallbackRefused(
                        f"callback_events: {name!r} is not an event this relay sends (it sends"
                        f" every ask's end; progress events: {offered})"
                    )
                chosen.append(name)
        return Subscription(url, tuple(sorted(set(chosen))))

    async def subscribe(self, record: AskRecord, subscription: Subscription) -> None:
        """Send ``record``'s events to ``subscription``; if it ended already, its end too."""
        assert record.owner is not None, "API asks always have an owner"
        timeout = record.target.timeout or 366 * 24 * 3600.0
        await self._store.hook_subscribe(
            ask_id=record.id,
            subscription=subscription.to_json(record.owner),
            ttl=timeout + self.settings.keep,
        )
        # It may have ended before the subscription was stored: the end event came too early.
        current = await self._store.get(ask_id=record.id)
        if current is not None and not current.pending:
            await self._enqueue_end(current)

    def observe(self, event: AskEvent) -> None:
        """An ``Events`` observer: enqueue the deliveries an event owes (in the background)."""
        if self._closed or (event.name not in END_EVENTS and event.name not in PROGRESS_EVENTS):
            return
        task = asyncio.get_running_loop().create_task(self._on_event(event))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _on_event(self, event: AskEvent) -> None:
        try:
            # Most asks have no callback: one read of the subscription settles that.
            raw = await self._store.hook_subscription(ask_id=event.ask_id)
            if raw is None:
                return
            record = await self._store.get(ask_id=event.ask_id)
            if record is None:
                return
            if event.name in END_EVENTS:
                if not record.pending:
                    await self._enqueue_end(record, raw)
                return
            if event.name in json.loads(raw).get("events", []):
                fields = json.dumps(event.fields, sort_keys=True, default=str)
                await self._enqueue(
                    record,
                    raw,
                    PROGRESS_EVENTS[event.name],
                    key=f"{event.name}:{fields}",
                    extra={"event": {"name": event.name, **event.fields}},
                    final=False,
                )
        except Exception:
            # The sweep enqueues an end this missed; a progress event is best effort.
            _log.warning("could not enqueue the webhook of ask %s", event.ask_id, exc_info=True)

    async def _enqueue_end(self, record: AskRecord, subscription: str | None = None) -> None:
        raw = subscription or await self._store.hook_subscription(ask_id=record.id)
        if raw is not None:
            await self._enqueue(record, raw, event_type(record), key="end", extra={}, final=True)

    async def _enqueue(
        self,
        record: AskRecord,
        raw: str,
        kind: str,
        *,
        key: str,
        extra: dict[str, Any],
        final: bool,
    ) -> None:
        subscription = json.loads(raw)
        event_id = "evt_" + hashlib.sha256(f"{record.id}\n{kind}\n{key}".encode()).hexdigest()[:32]
        now = time.time()
        payload = {
            "id": event_id,
            "type": kind,
            "created_at": _iso(now),
            **extra,
            "ask": audit_json(record),
        }
        if final and self.receipts is not None:
            # Written now if no replica has yet: the end's body always carries it.
            payload["receipt"] = await self.receipts.ensure(record.id)
        delivery = {
            "url": subscription["url"],
            "owner": subscription["owner"],
            "type": kind,
            "ask_id": record.id,
            "first_at": now,
            "body": json.dumps(payload, separators=(",", ":"), ensure_ascii=False),
        }
        if await self._store.hook_enqueue(
            event_id=event_id,
            ask_id=record.id,
            delivery=json.dumps(delivery),
            due=now,
            final=final,
        ):
            _log.info("webhook queued id=%s ask=%s type=%s", event_id, record.id, kind)
            self._woken.set()

    # -- sending ------------------------------------------------------------------------

    def start(self) -> None:
        """Start sending (one background task; idempotent)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="relay-webhooks")

    async def _run(self) -> None:
        backoff = 0.5
        while not self._closed:
            try:
                await self._sweep_if_due()
                room = _CLAIM_BATCH - len(self._sending)
                claimed = (
                    await self._store.hook_claim(
                        now=time.time(), lease=self.settings.lease, limit=room
                    )
                    if room > 0
                    else []
                )
                for delivery in claimed:
                    if delivery.event_id not in self._sending:
                        self._spawn_send(delivery)
                backoff = 0.5
                if len(claimed) == room and room > 0:
                    continue  # more may be due
            except Exception as exc:
                _log.warning("webhook outbox unavailable (%s); retrying", exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            self._woken.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.poll_interval):
                    await self._woken.wait()

    def _spawn_send(self, delivery: ClaimedDelivery) -> None:
        task = asyncio.get_running_loop().create_task(self._send(delivery))
        self._sending[delivery.event_id] = task

        def sent(_: asyncio.Task[None]) -> None:
            self._sending.pop(delivery.event_id, None)

        task.add_done_callback(sent)

    async def _sweep_if_due(self) -> None:
        now = time.monotonic()
        if now - self._last_sweep < self.settings.sweep_interval:
            return
        self._last_sweep = now
        # A window of the watched asks per sweep, moving on each time: all are met in turn.
        watched = await self._store.hook_watched(limit=_SWEEP_BATCH, offset=self._sweep_from)
        self._sweep_from = self._sweep_from + len(watched) if len(watched) == _SWEEP_BATCH else 0
        for ask_id in watched:
            record = await self._store.get(ask_id=ask_id)
            if record is not None and not record.pending:
                await self._enqueue_end(record)

    async def _send(self, claimed: ClaimedDelivery) -> None:
        try:
            await self._attempt(claimed)
        except Exception as exc:
            # The store failed around the attempt: the lease passes and it is tried again.
            _log.warning(
                "webhook %s not settled (%s); retried after its lease", claimed.event_id, exc
            )

    async def _attempt(self, claimed: ClaimedDelivery) -> None:
        delivery = json.loads(claimed.delivery)
        attempt = claimed.attempts + 1
        error = await self._poster.post(claimed.event_id, delivery)
        store = self._store
        if error is None:
            await store.hook_settle(
                event_id=claimed.event_id, outcome="sent", error=None, keep=self.settings.keep
            )
            _log.info(
                "webhook delivered id=%s ask=%s type=%s attempt=%d",
                claimed.event_id,
                delivery["ask_id"],
                delivery["type"],
                attempt,
            )
            self._counted("delivered")
            return
        permanent, why = error
        delay = min(self.settings.max_backoff, self.settings.backoff * 2 ** (attempt - 1))
        delay *= 0.75 + random.random() / 2  # noqa: S311 - jitter, not a secret
        late = time.time() + delay - float(delivery["first_at"]) > self.settings.retry_for
        if permanent or late:
            await store.hook_settle(
                event_id=claimed.event_id, outcome="failed", error=why, keep=self.settings.keep
            )
            _log.warning(
                "webhook given up id=%s ask=%s after %d attempts: %s",
                claimed.event_id,
                delivery["ask_id"],
                attempt,
                why,
            )
            self._counted("failed")
            return
        await store.hook_retry(event_id=claimed.event_id, due=time.time() + delay, error=why)
        self._counted("retried")
        _log.info(
            "webhook failed id=%s ask=%s attempt=%d (%s); retrying in %.1f s",
            claimed.event_id,
            delivery["ask_id"],
            attempt,
            why,
            delay,
        )

    async def aclose(self, *, grace: float = 5.0) -> None:
        """Stop sending: deliveries in flight get ``grace`` seconds; the rest stay owed (their
        lease passes and a replica, or this one restarted, sends them)."""
        self._closed = True
        if self._task is not None:
            with contextlib.suppress(Exception):
                await stop_task(self._task)
        sending = dict(self._sending)
        pending: Sequence[asyncio.Task[Any]] = [*sending.values(), *self._background]
        if pending:
            await asyncio.wait(pending, timeout=grace)
        for event_id, task in sending.items():
            if not task.done():
                task.cancel()
                # Handed back at once rather than when the lease passes: another replica (or
                # this one, restarted) sends it. The receiver may have it already: at least once.
                with contextlib.suppress(Exception):
                    await self._store.hook_retry(
                        event_id=event_id, due=time.time(), error="the relay stopped mid-send"
                    )
        for task in self._background:
            task.cancel()
        await self._poster.aclose()


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()
