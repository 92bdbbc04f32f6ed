"""Per-token limits of the relay API: request rate and concurrent long-polls (per replica).

One API token must not starve the others. Each token (its owner fingerprint) gets a token
bucket of ``rate`` requests per second (bursts up to ``rate`` at once) and at most
``long_polls`` open ``?wait=`` requests; past either, ``RateLimited`` (429 ``RATE_LIMITED``
with ``Retry-After``). The pending-asks limit lives in the store, which counts across every
replica (``PendingLimitReached``).

A bucket is a few floats, refilled lazily when a request arrives: no task, no lock (one
event loop). ``limits`` and ``aiolimiter`` were considered: the first spawns tasks and threads
to expire its in-memory counters, the second makes callers wait instead of refusing them.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relay.errors import HarnessError, RelayException
from relay.server.errors import ApiError
from relay.store import PendingLimitReached

if TYPE_CHECKING:
    from relay.config.settings import Settings

__all__ = [
    "Limiter",
    "RateLimited",
    "TokenLimits",
    "limits_of",
    "retry_after_header",
    "start_refused",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenLimits:
    """What one API token may do on one replica (its pending asks: the store's limit)."""

    rate: float = 50.0
    """Requests per second, sustained; a burst of as many is allowed at once."""
    long_polls: int = 500
    """Requests held open with ``?wait=`` at once."""


class RateLimited(RelayException):
    """A token went past one of its limits; retry after ``retry_after`` seconds."""

    def __init__(self, limit: str, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.limit = limit
        self.message = message
        self.retry_after = retry_after


# When a token at its pending limit may try again: asks end when people answer.
_PENDING_RETRY_AFTER = 10.0


def pending_refused(exc: PendingLimitReached) -> RateLimited:
    """A token at ``RELAY_MAX_PENDING``: the same 429 on every route that posts an ask."""
    return RateLimited(
        "pending",
        f"this token has {exc.limit} asks pending, the most it may (RELAY_MAX_PENDING); wait"
        " for one to end, or DELETE one",
        retry_after=_PENDING_RETRY_AFTER,
    )


@contextlib.contextmanager
def start_refused() -> Iterator[None]:
    """Around the start of an ask (``/v1/asks``, ``/v1/approvals``, ``/v1/plans``): a seam
    error is answered as its ``ApiError``, the pending limit as ``pending_refused``."""
    try:
        yield
    except HarnessError as exc:
        raise ApiError.of(exc) from None
    except PendingLimitReached as exc:
        raise pending_refused(exc) from None


class Limiter:
    """Applies ``TokenLimits`` to each owner; ``open_polls`` counts long-polls held open."""

    def __init__(self, limits: TokenLimits, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._clock = clock
        # owner -> (tokens left, when last refilled); owners are authenticated tokens only,
        # so the dict is as small as the configured token list.
        self._buckets: dict[str, tuple[float, float]] = {}
        self._polls: dict[str, int] = {}
        self.open_polls = 0

    def hit(self, owner: str) -> None:
        """Spend one request of ``owner``'s rate, or raise ``RateLimited``."""
        rate = self.limits.rate
        now = self._clock()
        tokens, then = self._buckets.get(owner, (rate, now))
        tokens = min(rate, tokens + (now - then) * rate)
        if tokens < 1.0:
            self._buckets[owner] = (tokens, now)
            wait = (1.0 - tokens) / rate
            raise RateLimited(
                "rate",
                f"this token sent more than {rate:g} requests per second (RELAY_RATE_LIMIT);"
                f" retry in {wait:.2g} s",
                retry_after=wait,
            )
        self._buckets[owner] = (tokens - 1.0, now)

    @contextlib.contextmanager
    def long_poll(self, owner: str) -> Iterator[None]:
        """Hold one of ``owner``'s long-polls for the block, or raise ``RateLimited``."""
        held = self._polls.get(owner, 0)
        if held >= self.limits.long_polls:
            raise RateLimited(
                "long_polls",
                f"this token already holds {held} requests open with ?wait="
                " (RELAY_MAX_LONG_POLLS); wait for one to return, or poll without ?wait=",
                retry_after=1.0,
            )
        self._polls[owner] = held + 1
        self.open_polls += 1
        try:
            yield
        finally:
            self.open_polls -= 1
            left = self._polls[owner] - 1
            if left:
                self._polls[owner] = left
            else:
                del self._polls[owner]


def retry_after_header(seconds: float) -> str:
    """``Retry-After`` in whole seconds, at least 1 (HTTP has no fractions)."""
    return str(max(1, math.ceil(seconds)))


def limits_of(settings: Settings) -> dict[str, Any]:
    """``build_app``'s limit arguments from the operator's settings."""
    return {
        "limits": TokenLimits(
            rate=settings.rate_limit,
            long_polls=settings.max_long_polls,
        ),
        "read_timeout": settings.read_timeout,
        "max_connections": settings.max_connections,
    }
