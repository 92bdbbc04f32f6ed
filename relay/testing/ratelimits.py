"""Slack's published rate limits, applied per method per workspace, and ``chat.postMessage``'s
own rule of about one message per second per channel.

From docs.slack.dev/apis/web-api/rate-limits: Tier 1 allows 1+ calls a minute, Tier 2 20+,
Tier 3 50+, Tier 4 100+, "per API method per workspace per app", bursts tolerated; the special
tier of ``chat.postMessage`` allows "one message per second per channel" with short bursts,
and "several hundred" a minute across the workspace. Each method's tier is from its reference
page. The figures are minimums Slack promises; the fake refuses just above them (the
conservative side), letting one minute's allowance come as a burst, since Slack documents
bursts without a size.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from .faults import ApiReply

__all__ = [
    "METHOD_TIERS",
    "POST_MESSAGE_BURST",
    "POST_MESSAGE_PER_MINUTE",
    "TIER_PER_MINUTE",
    "TierLimiter",
]

TIER_PER_MINUTE = {1: 1, 2: 20, 3: 50, 4: 100}
"""Calls a minute each tier allows per method per workspace (Slack's published minimums)."""

METHOD_TIERS = {
    "apps.connections.open": 1,
    "usergroups.users.list": 2,
    "chat.update": 3,
    "chat.delete": 3,
    "conversations.open": 3,
    "chat.postEphemeral": 4,
    "users.info": 4,
    "views.open": 4,
    "views.push": 4,
    "views.update": 4,
    # Special tier, limits undocumented beyond "generous": held to Tier 4 (conservative).
    "auth.test": 4,
    "chat.getPermalink": 4,
}
"""Each Web API method's tier; ``chat.postMessage`` has its own rule."""

POST_MESSAGE_PER_MINUTE = 200
"""``chat.postMessage`` calls a minute across the workspace ("several hundred": the low end)."""
POST_MESSAGE_BURST = 5
"""Messages one channel takes at once before the one-per-second rule applies (Slack: "short
bursts >1 allowed", no figure given)."""
_TIER_1_BURST = 10  # Tier 1: "a small amount of burst behavior is tolerated" (no figure)


@dataclass(kw_only=True)
class _Bucket:
    capacity: float
    per_second: float
    tokens: float
    updated: float

    def take(self, now: float) -> float:
        """Take one call; 0 when allowed, else the seconds until one is allowed."""
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.per_second)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.per_second


class TierLimiter:
    """Token buckets per method for the workspace, and per channel for ``chat.postMessage``:
    a call over its budget is answered 429 with ``Retry-After`` in whole seconds."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[tuple[str, str], _Bucket] = {}

    def check(self, method: str, channel: str) -> ApiReply | None:
        """Count one call of ``method`` (to ``channel``); a 429 answer when over the limit."""
        now = self._clock()
        if method == "chat.postMessage":
            waits = [
                self._bucket(("chat.postMessage", ""), POST_MESSAGE_PER_MINUTE, 60.0, now),
                self._bucket(("chat.postMessage", channel), POST_MESSAGE_BURST, 1.0, now),
            ]
            # A call refused by one bucket still counts in the other (the fake's
            # simplification, on the strict side); the answer gives the longer wait.
            wait = max(bucket.take(now) for bucket in waits)
        elif method in METHOD_TIERS:
            per_minute = TIER_PER_MINUTE[METHOD_TIERS[method]]
            capacity = _TIER_1_BURST if per_minute == 1 else per_minute
            wait = self._bucket((method, ""), capacity, per_minute / 60.0, now).take(now)
        else:
            return None
        if wait <= 0:
            return None
        return ApiReply.rate_limited(max(1, math.ceil(wait)))

    def _bucket(
        self, key: tuple[str, str], capacity: float, per_second: float, now: float
    ) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(capacity=capacity, per_second=per_second, tokens=capacity, updated=now)
            self._buckets[key] = bucket
        return bucket
