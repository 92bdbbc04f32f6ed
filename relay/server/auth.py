"""Bearer-token authentication of the relay API, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

__all__ = ["Authenticator"]


class Authenticator:
    """Checks ``Authorization: Bearer <token>`` against the configured tokens."""

    def __init__(self, tokens: Iterable[str]) -> None:
        self._tokens = tuple(t.encode() for t in tokens)
        if not self._tokens:
            raise ValueError("at least one API token is required")

    def owner(self, header: str | None) -> str | None:
        """The owner id (a fingerprint of the token) if ``header`` carries a valid token."""
        if not header:
            return None
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            return None
        candidate = presented.strip().encode()
        matched: bytes | None = None
        # Compare against every token, always, so timing reveals neither which nor whether.
        for token in self._tokens:
            if hmac.compare_digest(candidate, token):
                matched = token
        if matched is None:
            return None
        return hashlib.sha256(matched).hexdigest()[:32]
