"""Idempotency keys in memory (``relay.store.idempotency``)."""

from __future__ import annotations

import time

from relay.store.idempotency import KeyClaim
from relay.store.memory.base import MemoryBase, _Key


class MemoryIdempotency(MemoryBase):
    """Idempotency keys, per owner, expiring after their lease or window."""

    async def claim_key(self, *, owner: str, key: str, fingerprint: str, lease: float) -> KeyClaim:
        """Claim ``key`` for ``fingerprint`` (atomic: no await between read and write)."""
        now = time.monotonic()
        self._forget_keys(now)
        held = self._keys.get((owner, key))
        if held is None or held.expires <= now:
            self._keys[(owner, key)] = _Key(fingerprint, None, now + lease)
            self._key_expiry.append((now + lease, (owner, key)))
            return KeyClaim("new")
        if held.fingerprint != fingerprint:
            return KeyClaim("conflict")
        return KeyClaim("same", held.ask_id)

    async def bind_key(
        self, *, owner: str, key: str, fingerprint: str, ask_id: str, window: float
    ) -> None:
        """Point the claimed key at ``ask_id`` for ``window`` seconds."""
        held = self._keys.get((owner, key))
        if held is not None and held.fingerprint == fingerprint:
            expires = time.monotonic() + window
            self._keys[(owner, key)] = _Key(fingerprint, ask_id, expires)
            self._key_expiry.append((expires, (owner, key)))

    async def release_key(self, *, owner: str, key: str, fingerprint: str) -> None:
        """Drop an unbound claim."""
        held = self._keys.get((owner, key))
        if held is not None and held.fingerprint == fingerprint and held.ask_id is None:
            del self._keys[(owner, key)]

    def _forget_keys(self, now: float) -> None:
        while self._key_expiry and self._key_expiry[0][0] <= now:
            _, name = self._key_expiry.popleft()
            held = self._keys.get(name)
            if held is not None and held.expires <= now:
                del self._keys[name]
