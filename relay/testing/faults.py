"""Ways the fake Slack misbehaves on purpose: injected failures and a per-channel rate limit.

Both are plain bookkeeping with an injectable clock; the server decides when to ask them.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ApiReply", "Fault", "FaultPlan", "RateLimiter"]

_DEFAULT_ERRORS = {429: "ratelimited", 500: "internal_error", 503: "service_unavailable"}


@dataclass(frozen=True, kw_only=True)
class ApiReply:
    """An HTTP answer of the fake: the JSON body, the status and extra headers."""

    body: dict[str, Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def error(cls, error: str, **extra: Any) -> ApiReply:
        """Slack's usual failure: HTTP 200 with ``{"ok": false, "error": error}``."""
        return cls(body={"ok": False, "error": error, **extra})

    def warned(self, warnings: list[str]) -> ApiReply:
        """This answer with Slack's warnings added: ``warning`` (comma-separated) and
        ``response_metadata.warnings``, as Slack sends them beside a result."""
        body = dict(self.body)
        body["warning"] = ",".join(warnings)
        metadata = dict(body.get("response_metadata") or {})
        metadata["warnings"] = [*metadata.get("warnings", []), *warnings]
        body["response_metadata"] = metadata
        return ApiReply(body=body, status=self.status, headers=self.headers)

    @classmethod
    def rate_limited(cls, retry_after: int) -> ApiReply:
        """HTTP 429 with a ``Retry-After`` header, as Slack answers over its limits."""
        return cls(
            body={"ok": False, "error": "ratelimited"},
            status=429,
            headers={"Retry-After": str(retry_after)},
        )


@dataclass(frozen=True, kw_only=True)
class Fault:
    """One injected misbehaviour: an optional delay, then an error or an HTTP status (or a
    normal answer when both are ``None``)."""

    error: str | None = None
    status: int | None = None
    retry_after: int | None = None
    delay: float | None = None

    def reply(self) -> ApiReply | None:
        """The answer this fault forces, or ``None`` to let the call through (slow success)."""
        if self.status is not None:
            if self.status == 429:
                reply = ApiReply.rate_limited(self.retry_after if self.retry_after else 1)
                if self.error is None:
                    return reply
                return ApiReply(
                    body={**reply.body, "error": self.error}, status=429, headers=reply.headers
                )
            error = self.error or _DEFAULT_ERRORS.get(self.status, "fatal_error")
            return ApiReply(body={"ok": False, "error": error}, status=self.status)
        if self.error is not None:
            return ApiReply.error(self.error)
        return None


class FaultPlan:
    """The queue of injected faults per method; each call of a method takes the next one."""

    def __init__(self) -> None:
        self._queues: dict[str, deque[Fault]] = {}

    def add(self, method: str, fault: Fault, *, times: int) -> None:
        """Make the next ``times`` calls of ``method`` (after those already planned) fail."""
        if times < 1:
            raise ValueError(f"times must be at least 1, got {times}")
        if fault.error is None and fault.status is None and fault.delay is None:
            raise ValueError("fail() needs an error, a status or a delay")
        self._queues.setdefault(method, deque()).extend([fault] * times)

    def take(self, method: str) -> Fault | None:
        """The fault for this call of ``method``, if one is planned."""
        queue = self._queues.get(method)
        return queue.popleft() if queue else None

    def clear(self, method: str) -> None:
        """Plan no more failures of ``method``."""
        self._queues.pop(method, None)

    def pending(self, method: str) -> int:
        """How many calls of ``method`` will still be failed."""
        return len(self._queues.get(method, ()))


@dataclass(kw_only=True)
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """A token bucket per (method, channel), like Slack's "1 message per second per channel,
    short bursts tolerated": calls above the rate are answered 429 with the wait."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._limits: dict[str, tuple[float, int]] = {}
        self._buckets: dict[tuple[str, str], _Bucket] = {}

    def limit(self, method: str, *, per_second: float, burst: int = 1) -> None:
        """Allow ``per_second`` calls of ``method`` per channel, ``burst`` at once."""
        if per_second <= 0 or burst < 1:
            raise ValueError("per_second must be positive and burst at least 1")
        self._limits[method] = (per_second, burst)
        self._buckets = {k: v for k, v in self._buckets.items() if k[0] != method}

    def check(self, method: str, channel: str) -> ApiReply | None:
        """Take one call from the channel's budget; a 429 reply when it is spent."""
        if method not in self._limits:
            return None
        rate, burst = self._limits[method]
        now = self._clock()
        bucket = self._buckets.setdefault((method, channel), _Bucket(tokens=burst, updated=now))
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated) * rate)
        bucket.updated = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return None
        # Retry-After is whole seconds: round the wait up so a client that honours it succeeds.
        return ApiReply.rate_limited(max(1, math.ceil((1 - bucket.tokens) / rate)))
