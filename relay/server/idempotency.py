"""``Idempotency-Key`` on the API's creates: a request sent again makes no second ask.

The key is claimed in the store (atomically, so also across replicas on one Redis) before
anything is posted; the same key with the same body then answers with the ask the first
request created, also while that first request is still posting (the second one waits for
it); the same key with another body is refused with ``IDEMPOTENCY_KEY_REUSED``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from aiohttp import web

from relay.errors import ErrorCode
from relay.server.errors import ApiError
from relay.store.idempotency import IdempotencyStore

__all__ = ["DEFAULT_WINDOW", "HEADER", "MAX_KEY_LENGTH", "CreateKeys", "fingerprint", "read_key"]

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
DEFAULT_WINDOW = 24 * 3600.0
# How long an unfinished create holds its key (posting to Slack retries for well under
# this); a replica that dies mid-create frees the key for a retry once it passes.
_LEASE = 120.0
# How long a repeated request waits for the first one, still in flight, to finish.
_IN_FLIGHT_WAIT = 30.0
_IN_FLIGHT_POLL = 0.05


def fingerprint(route: str, body: object) -> str:
    """A digest of the request as parsed: the route and the body, key order ignored."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{route}\n{canonical}".encode()).hexdigest()


def read_key(request: web.Request) -> str | None:
    """The request's ``Idempotency-Key``, or ``None``; ``BAD_REQUEST`` when malformed."""
    raw = request.headers.get(HEADER)
    if raw is None:
        return None
    key = raw.strip()
    if not key or len(key) > MAX_KEY_LENGTH or not all(" " < c <= "~" for c in key):
        raise ApiError(
            ErrorCode.BAD_REQUEST,
            f"{HEADER} must be 1 to {MAX_KEY_LENGTH} printable ASCII characters without"
            " spaces (a UUID is a good key)",
        )
    return key


@dataclass
class KeySlot:
    """One create under a key: ``replay`` names the ask an earlier request created (answer
    with it); else the caller creates the ask and calls ``bind`` with its id."""

    replay: str | None
    ask_id: str | None = None

    def bind(self, ask_id: str) -> None:
        """Record the ask this request created."""
        self.ask_id = ask_id


class CreateKeys:
    """Claims, binds and releases idempotency keys for one kind of create."""

    def __init__(self, *, store: IdempotencyStore | None, window: float = DEFAULT_WINDOW) -> None:
        self._store = store
        self.window = window

    @asynccontextmanager
    async def create(
        self, request: web.Request, *, owner: str, route: str, body: object
    ) -> AsyncIterator[KeySlot | None]:
        """Around a create: ``None`` without a key; else a ``KeySlot``. A create that
        raises (or binds nothing) releases the key, so the same request may be retried."""
        key = read_key(request)
        if key is None:
            yield None
            return
        if self._store is None:
            raise ApiError(ErrorCode.BAD_REQUEST, f"this relay's store does not keep {HEADER}s")
        store = self._store
        digest = fingerprint(route, body)
        replay = await self._claim(store, owner=owner, key=key, digest=digest)
        slot = KeySlot(replay)
        if replay is not None:
            yield slot
            return
        try:
            yield slot
        except BaseException:
            await asyncio.shield(store.release_key(owner=owner, key=key, fingerprint=digest))
            raise
        if slot.ask_id is None:
            await store.release_key(owner=owner, key=key, fingerprint=digest)
        else:
            await store.bind_key(
                owner=owner, key=key, fingerprint=digest, ask_id=slot.ask_id, window=self.window
            )

    async def _claim(
        self, store: IdempotencyStore, *, owner: str, key: str, digest: str
    ) -> str | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _IN_FLIGHT_WAIT
        while True:
            claim = await store.claim_key(owner=owner, key=key, fingerprint=digest, lease=_LEASE)
            if claim.outcome == "new":
                return None
            if claim.outcome == "conflict":
                raise ApiError(
                    ErrorCode.IDEMPOTENCY_KEY_REUSED,
                    f"this {HEADER} was used with a different request in the last"
                    f" {self.window:g} s; send a new key for a new request, or the same body"
                    " to get the first request's result",
                )
            if claim.ask_id is not None:
                return claim.ask_id
            if loop.time() >= deadline:
                raise ApiError(
                    ErrorCode.IDEMPOTENCY_IN_FLIGHT,
                    f"a request with this {HEADER} is still being created; retry in a few"
                    " seconds to get its result",
                )
            # The first request is still posting (on this replica or another): wait for it.
            await asyncio.sleep(_IN_FLIGHT_POLL)
