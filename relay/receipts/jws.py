"""RFC 7515 JWS in compact serialization, EdDSA over Ed25519 only (RFC 8037).

A receipt is ``BASE64URL(header) . BASE64URL(payload) . BASE64URL(signature)`` with the
protected header ``{"alg":"EdDSA","kid":…,"typ":…}``; the signature is Ed25519 over the
ASCII of the first two parts. Nothing else is accepted when reading one back (no ``none``, no
other algorithm, no unprotected header), so a verifier cannot be talked into a weaker check.
Checked against RFC 8037 appendix A.4 (tests/test_receipts_jws.py).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from relay.errors import RelayException

__all__ = ["BadJWS", "b64url", "b64url_decode", "parse", "sign", "verify"]


class BadJWS(RelayException, ValueError):
    """A compact JWS that is malformed, of another algorithm, or whose signature fails."""


def b64url(data: bytes) -> str:
    """Base64url without padding (RFC 7515 §2)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """The bytes of unpadded base64url ``text``; ``BadJWS`` when it is not that."""
    if "=" in text or not text.isascii():
        raise BadJWS("not unpadded base64url")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise BadJWS("not base64url") from exc
    if b64url(raw) != text:  # (non-canonical trailing bits: another encoding of the bytes)
        raise BadJWS("not the canonical base64url of its bytes")
    return raw


def sign(payload: bytes, key: Ed25519PrivateKey, *, header: dict[str, Any]) -> str:
    """The compact JWS of ``payload`` signed with ``key``, ``header`` protected (it must say
    ``"alg":"EdDSA"``)."""
    if header.get("alg") != "EdDSA":
        raise ValueError("only EdDSA is signed here")
    encoded = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    signing_input = f"{b64url(encoded)}.{b64url(payload)}".encode("ascii")
    return f"{signing_input.decode('ascii')}.{b64url(key.sign(signing_input))}"


@dataclass(frozen=True, slots=True)
class ParsedJws:
    """A compact JWS taken apart (not yet verified)."""

    header: dict[str, Any]
    payload: bytes
    signing_input: bytes
    signature: bytes


def parse(token: str) -> ParsedJws:
    """Take ``token`` apart; ``BadJWS`` unless it is a compact EdDSA JWS."""
    parts = token.strip().split(".")
    if len(parts) != 3:
        raise BadJWS("a compact JWS has three dot-separated parts")
    try:
        header = json.loads(b64url_decode(parts[0]))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadJWS("the protected header is not JSON") from exc
    if not isinstance(header, dict):
        raise BadJWS("the protected header is not a JSON object")
    if header.get("alg") != "EdDSA":
        raise BadJWS(f"alg {header.get('alg')!r} is not EdDSA")
    if "crit" in header:
        raise BadJWS("crit header parameters are not understood here")
    signature = b64url_decode(parts[2])
    return ParsedJws(
        header=header,
        payload=b64url_decode(parts[1]),
        signing_input=f"{parts[0]}.{parts[1]}".encode("ascii"),
        signature=signature,
    )


def verify(token: str, key: Ed25519PublicKey) -> ParsedJws:
    """``token`` parsed, if ``key`` signed it; ``BadJWS`` otherwise."""
    parsed = parse(token)
    try:
        key.verify(parsed.signature, parsed.signing_input)
    except InvalidSignature as exc:
        raise BadJWS("the signature does not verify") from exc
    return parsed
