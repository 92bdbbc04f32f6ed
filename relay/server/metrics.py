"""Prometheus metrics, fed by the provider's ask events."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from relay.events import AskEvent
from relay.store.base import AskStore

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
_OUTCOMES = {"answered", "timed_out", "aborted", "closed", "failed"}


class Metrics:
    """The relay's metrics in a registry of their own (several apps can share a process)."""

    def __init__(self, *, store: AskStore) -> None:
        self._store = store
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

    def observe(self, event: AskEvent) -> None:
        """Count one ask event (an ``Events`` observer)."""
        if event.name == "created":
            self.created.inc()
        elif event.name in _OUTCOMES:
            self.outcomes.labels(outcome=event.name).inc()
            if event.name == "answered" and isinstance(event.fields.get("waited"), float):
                self.time_to_answer.observe(event.fields["waited"])
        if event.name in ("slack_error", "failed") and event.fields.get("method"):
            self.slack_errors.labels(method=str(event.fields["method"])).inc()

    async def render(self) -> bytes:
        """The text exposition, with the pending gauge read from the store now."""
        self.pending.set(await self._store.count_pending())
        return generate_latest(self.registry)
