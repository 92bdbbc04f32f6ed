"""Idempotency keys on Redis (``relay.store.idempotency``): ``{prefix}idem:{owner}:{sha256(key)}``,
a hash of the request's fingerprint and the ask id it created ('' while in flight)."""

from __future__ import annotations

import hashlib
import math

from relay.store.idempotency import KeyClaim, KeyOutcome
from relay.store.redis.base import RedisBase, translated
from relay.store.redis.codec import as_text, wire


class RedisIdempotency(RedisBase):
    """Idempotency keys, claimed and bound by one script each, across every replica."""

    def _idem_key(self, owner: str, key: str) -> str | bytes:
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return wire(f"{self._prefix}idem:{owner}:{digest}")

    @translated
    async def claim_key(self, *, owner: str, key: str, fingerprint: str, lease: float) -> KeyClaim:
        """Claim ``key`` for ``fingerprint`` atomically, across every replica."""
        script = self._script("key_claim")
        reply = await script(
            keys=[self._idem_key(owner, key)], args=[fingerprint, max(1, math.ceil(lease * 1000))]
        )
        outcome: KeyOutcome = as_text(reply[0])  # type: ignore[assignment]
        return KeyClaim(outcome, as_text(reply[1]) or None)

    @translated
    async def bind_key(
        self, *, owner: str, key: str, fingerprint: str, ask_id: str, window: float
    ) -> None:
        """Point the claimed key at ``ask_id`` for ``window`` seconds."""
        script = self._script("key_bind")
        await script(
            keys=[self._idem_key(owner, key)],
            args=[fingerprint, ask_id, max(1, math.ceil(window * 1000))],
        )

    @translated
    async def release_key(self, *, owner: str, key: str, fingerprint: str) -> None:
        """Drop an unbound claim."""
        script = self._script("key_release")
        await script(keys=[self._idem_key(owner, key)], args=[fingerprint])

    # The audit index (relay.store.listing): ``{prefix}owned:{owner}``, a sorted set of the
    # owner's ask ids by creation time. An id whose ask hash expired is dropped when a listing
    # meets it, and a few of the oldest are checked now and then on create, so the index
