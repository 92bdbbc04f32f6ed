"""Bearer-token authentication of the relay API, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

__all__ = ["Authenticator"]


class Authenticator:
    """Checks ``Authorization: Bearer <token>`` against the agents' tokens (``owner``) and,
    apart, the operators' (``operator``: they read receipts only)."""

    def __init__(self, tokens: Iterable[str], operators: Iterable[str] = ()) -> None:
        self._tokens = tuple(t.encode() for t in tokens)
        self._operators = tuple(t.encode() for t in operators)
        if not self._tokens:
            raise ValueError("at least one API token is required")
        if set(self._tokens) & set(self._operators):
            raise ValueError("an operator token must not also be an agent's API token")

    def owner(self, header: str | None) -> str | None:
        """The owner id (a fingerprint of the token) if ``header`` carries an agent's token."""
        return _match(header, self._tokens)

    def operator(self, header: str | None) -> str | None:
        """The operator's fingerprint if ``header`` carries an operator's token."""
        return _match(header, self._operators) if self._operators else None


def _match(header: str | None, tokens: tuple[bytes, ...]) -> str | None:
    if not header:
        return None
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer" or not presented.strip():
        return None
    candidate = presented.strip().encode()
    matched: bytes | None = None
    # Compare against every token, always, so timing reveals neither which nor whether.
    for token in tokens:
        if hmac.compare_digest(candidate, token):
            matched = token
    if matched is None:
        return None
    return hashlib.sha256(matched).hexdigest()[:32]
