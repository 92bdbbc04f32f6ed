"""The operator's settings for receipts: the signing key, checkpoints of the chain, how long
receipts are kept and the timestamp authority.

Read by ``Settings.from_env``; ``relay.receipts`` and ``relay.server.main`` apply them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from relay.config.values import read_seconds, read_url, read_whole
from relay.errors import RelayConfigError

__all__ = ["RECEIPT_ENV_VARS", "parse_duration", "receipt_settings"]

# The variables read for receipts, with what they are for
# (part of ``relay.config.settings.ENV_VARS``).
RECEIPT_ENV_VARS: dict[str, str] = {
    "RELAY_RECEIPT_KEY_FILE": "PEM file of the Ed25519 key every ended ask's receipt is signed"
    " with (secret); turns receipts on",
    "RELAY_RECEIPT_RETIRED_KEYS_FILE": "earlier receipt keys' public keys (PEM, or a saved JWK"
    " Set), still published so that their receipts verify",
    "RELAY_RECEIPT_ISSUER": "the issuer name receipts carry (default relay)",
    "RELAY_CHECKPOINT_INTERVAL": "seconds between signed checkpoints of the receipt chain, when"
    " receipts were added (default 300)",
    "RELAY_CHECKPOINT_EVERY": "receipts after which a checkpoint is signed sooner (default 1000)",
    "RELAY_RECEIPT_RETENTION": "how long receipts are kept, as 30d, 12h or 2w (at least"
    " RELAY_RETENTION; default: forever); older ones are trimmed and a checkpoint says where"
    " the chain starts",
    "RELAY_TSA_URL": "an RFC 3161 timestamp authority's URL: each checkpoint carries its token",
}

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def parse_duration(text: str) -> float:
    """Seconds in ``text``: a whole number with a unit, ``30d`` (also s, m, h, w);
    ``ValueError`` otherwise."""
    text = text.strip()
    number, unit = text[:-1], text[-1:]
    if unit not in _UNITS or not (number.isascii() and number.isdigit()) or int(number) < 1:
        raise ValueError("a duration is a whole number and a unit: 30d, 12h, 90m, 2w")
    return float(int(number) * _UNITS[unit])


def receipt_settings(get: Callable[[str], str | None]) -> dict[str, Any]:
    """The receipt chain's checkpoint, retention and timestamp settings (``Settings``'
    fields of those names), from the environment read by ``get``."""
    out: dict[str, Any] = {
        "checkpoint_interval": read_seconds(
            get("RELAY_CHECKPOINT_INTERVAL"), "RELAY_CHECKPOINT_INTERVAL", 300.0
        ),
        "checkpoint_every": max(
            1, read_whole(get("RELAY_CHECKPOINT_EVERY"), "RELAY_CHECKPOINT_EVERY", 1000)
        ),
        "tsa_url": None,
    }
    tsa = get("RELAY_TSA_URL")
    if tsa:
        # As given: a TSA's URL is often a path with no trailing slash (read_url adds one).
        read_url(tsa, "RELAY_TSA_URL")
        out["tsa_url"] = tsa
    raw = get("RELAY_RECEIPT_RETENTION")
    if raw:
        try:
            keep = parse_duration(raw)
        except ValueError as exc:
            raise RelayConfigError(
                f"RELAY_RECEIPT_RETENTION: {exc}", setting="RELAY_RECEIPT_RETENTION"
            ) from None
        asks = read_seconds(get("RELAY_RETENTION"), "RELAY_RETENTION", 7 * 24 * 3600.0)
        if keep < asks:
            # A receipt trimmed while its ask is still kept would be signed again on read.
            raise RelayConfigError(
                "RELAY_RECEIPT_RETENTION must be at least RELAY_RETENTION (receipts outlive"
                " their asks): raise it, or lower RELAY_RETENTION",
                setting="RELAY_RECEIPT_RETENTION",
            )
        out["receipt_retention"] = keep
    return out
