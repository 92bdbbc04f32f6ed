"""Signed webhooks: the ``X-Relay-Signature`` header, made and checked.

The header is ``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`` (Slack's and
Stripe's scheme): the timestamp is signed with the body, so a captured request cannot be
replayed after ``tolerance`` seconds. Each API token has its own secret, derived from the
operator's ``RELAY_WEBHOOK_KEY``: a receiver holding one token's secret can verify (and forge)
that token's events only, and an agent holding the token alone can forge none.
"""

from __future__ import annotations

import hashlib
import hmac
import time

__all__ = ["SIGNATURE_HEADER", "sign", "token_secret", "verify_webhook"]

SIGNATURE_HEADER = "X-Relay-Signature"


def token_secret(key: str, token: str) -> str:
    """The webhook secret of API ``token`` under the operator's ``key``."""
    owner = hashlib.sha256(token.encode()).hexdigest()[:32]  # as relay.server.auth names it
    return owner_secret(key, owner)


def owner_secret(key: str, owner: str) -> str:
    """The webhook secret of the token whose fingerprint is ``owner``."""
    return hmac.new(key.encode(), f"relay-webhook-v1:{owner}".encode(), hashlib.sha256).hexdigest()


def sign(body: bytes, secret: str, *, at: int | None = None) -> str:
    """The ``X-Relay-Signature`` value for ``body``, timestamped ``at`` (default now)."""
    stamp = int(time.time()) if at is None else at
    return f"t={stamp},v1={_mac(secret, stamp, body)}"


def verify_webhook(
    body: bytes | str,
    header: str | None,
    secret: str,
    tolerance: float = 300,
    *,
    now: float | None = None,
) -> bool:
    """Whether ``header`` (``X-Relay-Signature``) signs ``body`` (the raw bytes received)
    with ``secret`` within ``tolerance`` seconds of ``now``. Check it before trusting a
    webhook; deduplicate by the ``X-Relay-Event-Id`` header (deliveries are at least once)."""
    if not header:
        return False
    raw = body.encode() if isinstance(body, str) else body
    stamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t" and value.isdigit():
            stamp = int(value)
        elif name == "v1":
            signatures.append(value)
    if stamp is None or not signatures:
        return False
    current = time.time() if now is None else now
    if abs(current - stamp) > tolerance:
        return False
    expected = _mac(secret, stamp, raw)
    # Several v1 entries may come (a rotated secret); compare each in constant time.
    return any(hmac.compare_digest(expected, candidate) for candidate in signatures)


def _mac(secret: str, stamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
