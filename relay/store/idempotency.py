"""Idempotency keys: a create sent twice (its reply lost) makes one ask, not two.

A key is claimed atomically in the store before the ask is created, with a short lease
while the create is in flight, then bound to the ask id for the idempotency window. Keys
are per API token (``owner``), so two tokens never see each other's keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

__all__ = ["IdempotencyStore", "KeyClaim", "KeyOutcome"]

KeyOutcome = Literal["new", "same", "conflict"]


@dataclass(frozen=True, slots=True)
class KeyClaim:
    """What claiming a key found: ``new`` (the caller creates the ask), ``same`` (the same
    request under this key: ``ask_id`` once created, ``None`` while still in flight) or
    ``conflict`` (the key was used with another request)."""

    outcome: KeyOutcome
    ask_id: str | None = None


@runtime_checkable
class IdempotencyStore(Protocol):
    """Where idempotency keys live (a seam ``Protocol``); every method is atomic."""

    async def claim_key(self, *, owner: str, key: str, fingerprint: str, lease: float) -> KeyClaim:
        """Claim ``key`` for the request ``fingerprint``; a new claim lasts ``lease`` seconds
        unless it is bound."""
        ...

    async def bind_key(
        self, *, owner: str, key: str, fingerprint: str, ask_id: str, window: float
    ) -> None:
        """Point a claimed key at the ask it created, for ``window`` seconds."""
        ...

    async def release_key(self, *, owner: str, key: str, fingerprint: str) -> None:
        """Drop an unbound claim (its create failed), so the same request may try again."""
        ...
