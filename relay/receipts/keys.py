"""The relay's receipt keys: the Ed25519 key it signs with, and the public keys it publishes.

The signing key is a PEM file (``RELAY_RECEIPT_KEY_FILE``; secret, never logged). Its key id
is the RFC 7638 JWK thumbprint of its public key, so it needs no configuration and changes
with the key: rotating is pointing ``RELAY_RECEIPT_KEY_FILE`` at a new key and listing the old
public keys in ``RELAY_RECEIPT_RETIRED_KEYS_FILE`` (PEM public keys, or a saved JWK Set), so
that receipts signed before still verify against the published set.

Whoever reads the key can sign any receipt, so, as ssh does with its keys, a key file that
its group or others may read is refused, and a key written here is its owner's alone (0600).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from relay.errors import RelayException
from relay.receipts.jws import BadJWS, b64url, b64url_decode

__all__ = ["PublicKeys", "ReceiptKeyError", "SigningKey", "load_signing_key", "public_keys_from"]

_PRIVATE = 0o600


class ReceiptKeyError(RelayException, ValueError):
    """A key file that cannot be read as what it should hold; the message says what to do."""


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public: Ed25519PublicKey) -> str:
    """RFC 7638 thumbprint of the key's JWK (required members, sorted, no spaces)."""
    members = {"crv": "Ed25519", "kty": "OKP", "x": b64url(_raw(public))}
    text = json.dumps(members, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(text.encode()).digest())


def jwk_of(public: Ed25519PublicKey) -> dict[str, str]:
    """The public key as an RFC 8037 JWK, with its ``kid``, ``alg`` and ``use``."""
    return {
        "kty": "OKP",
        "crv": "Ed25519",
        "x": b64url(_raw(public)),
        "kid": key_id(public),
        "alg": "EdDSA",
        "use": "sig",
    }


@dataclass(frozen=True, slots=True)
class SigningKey:
    """The private key receipts are signed with, and its key id."""

    private: Ed25519PrivateKey = field(repr=False)
    kid: str

    @classmethod
    def of(cls, private: Ed25519PrivateKey) -> SigningKey:
        """``private`` with its thumbprint as key id."""
        return cls(private, key_id(private.public_key()))

    @classmethod
    def generate(cls) -> SigningKey:
        """A new random key (the sandbox's; nothing outside the process can verify it later)."""
        return cls.of(Ed25519PrivateKey.generate())


def load_signing_key(path: str | Path) -> SigningKey:
    """The Ed25519 private key in PEM file ``path``; ``ReceiptKeyError`` says what is wrong."""
    try:
        # The mode of the file opened, not of a name that may point elsewhere a moment later.
        with open(path, "rb") as file:
            mode = stat.S_IMODE(os.fstat(file.fileno()).st_mode)
            if mode & 0o077:
                raise ReceiptKeyError(
                    f"the receipt key file {path} can be read by others (mode {mode:04o}):"
                    f" whoever reads it can sign receipts; make it private with: chmod 600 {path}"
                )
            data = file.read()
    except OSError as exc:
        raise ReceiptKeyError(f"cannot read the receipt key file ({exc.strerror})") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise ReceiptKeyError(
            "the receipt key file is not an unencrypted PEM private key; make one with"
            " `openssl genpkey -algorithm ed25519 -out receipt-key.pem`"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ReceiptKeyError(
            "the receipt key must be Ed25519; make one with"
            " `openssl genpkey -algorithm ed25519 -out receipt-key.pem`"
        )
    return SigningKey.of(key)


def write_signing_key(path: str | Path) -> SigningKey:
    """A new key, written to ``path`` (which must not exist) as PEM readable by its owner
    only (0600, whatever the umask); ``ReceiptKeyError`` if it cannot be."""
    key = SigningKey.generate()
    pem = key.private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    try:
        # Created 0600 (never readable by others, not even for a moment), then set exactly so.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _PRIVATE)
        with os.fdopen(fd, "wb") as file:
            os.fchmod(file.fileno(), _PRIVATE)
            file.write(pem)
    except OSError as exc:
        raise ReceiptKeyError(
            f"cannot write the receipt key file {path} ({exc.strerror})"
        ) from None
    return key


@dataclass(frozen=True, slots=True)
class PublicKeys:
    """Public keys by key id: what a verifier checks receipts against."""

    by_kid: Mapping[str, Ed25519PublicKey]

    @classmethod
    def of(cls, keys: Iterable[Ed25519PublicKey]) -> PublicKeys:
        """Each key under its thumbprint."""
        return cls({key_id(k): k for k in keys})

    def jwks(self) -> dict[str, Any]:
        """The RFC 7517 JWK Set (``/.well-known/jwks.json``)."""
        return {"keys": [jwk_of(k) for k in self.by_kid.values()]}

    def merged(self, other: PublicKeys) -> PublicKeys:
        """These keys and ``other``'s."""
        return PublicKeys({**self.by_kid, **other.by_kid})


def public_keys_from(data: bytes) -> PublicKeys:
    """Public keys from a JWK Set (JSON) or concatenated PEM public keys; ``ReceiptKeyError``."""
    text = data.decode("utf-8", "replace").strip()
    if text.startswith("{"):
        return _from_jwks(text)
    keys: list[Ed25519PublicKey] = []
    marker = "-----END PUBLIC KEY-----"
    for block in text.split(marker):
        if not block.strip():
            continue
        try:
            key = serialization.load_pem_public_key((block.strip() + "\n" + marker).encode())
        except ValueError:
            raise ReceiptKeyError("a block of the key file is not a PEM public key") from None
        if not isinstance(key, Ed25519PublicKey):
            raise ReceiptKeyError("a public key of the key file is not Ed25519")
        keys.append(key)
    if not keys:
        raise ReceiptKeyError("the key file holds no key: give PEM public keys or a JWK Set")
    return PublicKeys.of(keys)


def _from_jwks(text: str) -> PublicKeys:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise ReceiptKeyError("the key file is not a JSON JWK Set") from None
    found: dict[str, Ed25519PublicKey] = {}
    for jwk in data.get("keys", []) if isinstance(data, dict) else []:
        if not isinstance(jwk, dict) or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
            continue  # (a JWK Set may hold other keys; receipts are only ever Ed25519)
        try:
            key = Ed25519PublicKey.from_public_bytes(b64url_decode(str(jwk.get("x", ""))))
        except (BadJWS, ValueError):
            raise ReceiptKeyError("an Ed25519 JWK of the key set has an unreadable x") from None
        # Under the thumbprint: a kid that says otherwise would let one key pose as another.
        found[key_id(key)] = key
    if not found:
        raise ReceiptKeyError("the JWK Set holds no Ed25519 key")
    return PublicKeys(found)
