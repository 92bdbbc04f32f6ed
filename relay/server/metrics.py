"""Prometheus metrics, fed by the provider's ask events."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from relay.asks.events import AskEvent
from relay.server.connections import Connections
from relay.server.limits import Limiter
from relay.store.base import AskStore

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
_OUTCOMES = {"answered", "defaulted", "timed_out", "aborted", "closed", "failed"}


class Metrics:
    """The relay's metrics in a registry of their own (several apps can share a process)."""

    def __init__(
        self,
        *,
        store: AskStore,
        limiter: Limiter | None = None,
        connections: Connections | None = None,
    ) -> None:
        self._store = store
        self._limiter = limiter
        self._connections = connections
        self.registry = CollectorRegistry()
        self.created = Counter(
            "relay_asks_started", "Asks created and posted to Slack.", registry=self.registry
        )
        self.outcomes = Counter(
            "relay_asks", "Asks ended, by outcome.", ["outcome"], registry=self.registry
        )
        self.pending = Gauge(
            "relay_asks_pending",
            "Asks waiting for an answer (in the store).",
            registry=self.registry,
        )
        self.time_to_answer = Histogram(
            "relay_time_to_answer_seconds",
            "From posting the question to the answer that completed the ask.",
            buckets=(1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 4 * 3600, 24 * 3600),
            registry=self.registry,
        )
        self.slack_errors = Counter(
            "relay_slack_api_errors",
            "Slack Web API calls that failed after retries, by method.",
            ["method"],
            registry=self.registry,
        )
        self.refused = Counter(
            "relay_api_rate_limited",
            "API requests refused with 429 RATE_LIMITED, by the per-token limit they hit"
            " (rate, long_polls, pending).",
            ["limit"],
            registry=self.registry,
        )
        self.long_polls = Gauge(
            "relay_long_polls", "API requests held open with ?wait= now.", registry=self.registry
        )
        self.connections = Gauge(
            "relay_client_connections", "Client connections open now.", registry=self.registry
        )
        self.connections_closed = Counter(
            "relay_client_connections_closed",
            "Client connections the relay closed: a request head not sent in time (timeout),"
            " or the oldest waiting one, to make room under RELAY_MAX_CONNECTIONS (evicted).",
            ["why"],
            registry=self.registry,
        )
        self.swept = Counter(
            "relay_messages_swept",
            "Messages whose final update had not landed (Slack down, a replica killed first),"
            " updated by the sweep.",
            registry=self.registry,
        )
        self.webhook_deliveries = Counter(
            "relay_webhook_deliveries",
            "Webhook delivery attempts, by result: delivered, retried (failed, tried again"
            " later), failed (given up).",
            ["result"],
            registry=self.registry,
        )
        if connections is not None:
            connections.on_close = lambda why: self.connections_closed.labels(why=why).inc()

    def observe(self, event: AskEvent) -> None:
        """Count one ask event (an ``Events`` observer)."""
        if event.name == "created":
            self.created.inc()
        elif event.name in _OUTCOMES:
            self.outcomes.labels(outcome=event.name).inc()
            if event.name == "answered" and isinstance(event.fields.get("waited"), float):
                self.time_to_answer.observe(event.fields["waited"])
        elif event.name == "swept":
            self.swept.inc()
        if event.name in ("slack_error", "failed") and event.fields.get("method"):
            self.slack_errors.labels(method=str(event.fields["method"])).inc()

    def webhook_result(self, result: str) -> None:
        """Count one webhook delivery attempt (``Webhooks.on_result``)."""
        self.webhook_deliveries.labels(result=result).inc()

    async def render(self) -> bytes:
        """The text exposition, with the pending gauge read from the store now."""
        self.pending.set(await self._store.count_pending())
        if self._limiter is not None:
            self.long_polls.set(self._limiter.open_polls)
        if self._connections is not None:
            self.connections.set(len(self._connections))
        return generate_latest(self.registry)
