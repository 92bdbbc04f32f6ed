"""Checking receipts offline: each one's signature against a JWK Set, and a chain's links.

A receipt passes when its header names a published key (``kid``) whose Ed25519 signature
holds, its payload is exactly its own JCS form (so a re-encoded payload, even one that means
the same JSON, fails), and the payload's ``kid`` and ``v`` are the header's and this
relay's. A chain passes when each receipt's ``seq`` is one past the one before and its
``prev`` is the digest of that receipt's compact JWS: a receipt dropped, moved, duplicated
or from a fork breaks one of the two.

An *error receipt* (``error.code`` ``record_not_receiptable``: the relay could not receipt
that ask's record, and signed this in its place) is a valid receipt and a valid link;
``quarantined`` names them so that a report can list them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature

from relay.receipts.jcs import canonical
from relay.receipts.jws import BadJWS, parse
from relay.receipts.keys import PublicKeys
from relay.receipts.payload import VERSION, digest

# The error code of an error receipt (relay.receipts.writer writes it).
ERROR_CODE = "record_not_receiptable"

__all__ = ["Checked", "Failure", "check_chain", "check_receipt", "quarantined", "verify_all"]


@dataclass(frozen=True, slots=True)
class Failure:
    """What is wrong with one receipt (``name``: its id, or its line when unreadable)."""

    name: str
    problem: str

    def __str__(self) -> str:
        return f"{self.name}: {self.problem}"


@dataclass(frozen=True, slots=True)
class Checked:
    """A receipt whose signature held: its compact JWS and payload."""

    token: str
    payload: dict[str, Any]

    @property
    def name(self) -> str:
        """The receipt's id."""
        return str(self.payload.get("jti", "?"))


def check_receipt(token: str, keys: PublicKeys, *, name: str) -> Checked | Failure:
    """``token`` checked against ``keys``; ``name`` names it in a failure before its id is
    known."""
    try:
        parsed = parse(token)
    except BadJWS as exc:
        return Failure(name, f"not a receipt ({exc})")
    kid = parsed.header.get("kid")
    key = keys.by_kid.get(kid) if isinstance(kid, str) else None
    if key is None:
        return Failure(name, f"signed with key {kid!r}, which the key set does not hold")
    try:
        key.verify(parsed.signature, parsed.signing_input)
    except InvalidSignature:
        return Failure(name, "the signature does not verify (altered, or signed by another key)")
    try:
        payload = json.loads(parsed.payload)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return Failure(name, "the payload is not JSON")
    if not isinstance(payload, dict):
        return Failure(name, "the payload is not a JSON object")
    name = str(payload.get("jti", name))
    try:
        exact = canonical(payload) == parsed.payload
    except ValueError:
        exact = False
    if not exact:
        return Failure(name, "the payload is not in its JCS canonical form (re-encoded)")
    if payload.get("kid") != kid:
        return Failure(name, "the payload's kid is not the header's")
    if payload.get("v") != VERSION:
        return Failure(name, f"receipt version {payload.get('v')!r} is not {VERSION}")
    return Checked(token.strip(), payload)


def check_chain(receipts: list[Checked]) -> list[Failure]:
    """Where ``receipts`` (in export order) do not link: gaps, moves, forks, duplicates."""
    failures: list[Failure] = []
    seen: dict[object, str] = {}
    before: Checked | None = None
    for here in receipts:
        seq, prev = here.payload.get("seq"), here.payload.get("prev")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
            failures.append(Failure(here.name, f"has no place in a chain (seq {seq!r})"))
            before = here
            continue
        if seq in seen:
            # Reported once: what follows is checked against the chain it forked from.
            failures.append(Failure(here.name, f"takes place {seq} of {seen[seq]} (a fork)"))
            continue
        seen[seq] = here.name
        if before is None:
            if seq == 1 and prev is not None:
                failures.append(Failure(here.name, "is first in the chain but names a prev"))
        else:
            expected = before.payload.get("seq")
            if isinstance(expected, int) and seq != expected + 1:
                kind = "missing" if seq > expected + 1 else "out of order"
                failures.append(
                    Failure(
                        here.name,
                        f"is at place {seq} right after place {expected}"
                        f" (receipts {kind} in between)",
                    )
                )
            elif prev != digest(before.token.encode("ascii")):
                failures.append(
                    Failure(
                        here.name,
                        f"names a prev that is not the digest of {before.name} before it"
                        " (a fork or an altered chain)",
                    )
                )
        before = here
    return failures


def verify_all(tokens: list[tuple[str, str]], keys: PublicKeys, *, chain: bool) -> list[Failure]:
    """Every failure among ``tokens`` (``(name, compact JWS)``, in export order); with
    ``chain``, also where they do not link. Empty when all hold."""
    failures: list[Failure] = []
    checked: list[Checked] = []
    for name, token in tokens:
        result = check_receipt(token, keys, name=name)
        if isinstance(result, Failure):
            failures.append(result)
        else:
            checked.append(result)
    if chain:
        failures.extend(check_chain(checked))
    return failures


def quarantined(tokens: list[tuple[str, str]]) -> list[str]:
    """One line for each error receipt among ``tokens`` (``(name, compact JWS)``): its id,
    its ask and why the relay could not receipt that ask. Reads payloads only: pair it with
    ``verify_all``, which says whether they hold."""
    lines: list[str] = []
    for name, token in tokens:
        try:
            payload = json.loads(parse(token).payload)
        except (BadJWS, UnicodeDecodeError, json.JSONDecodeError):
            continue  # verify_all reports it
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict) and error.get("code") == ERROR_CODE:
            lines.append(
                f"{payload.get('jti', name)}: an error receipt: ask {payload.get('ask')}"
                f" could not be receipted: {error.get('reason')}"
            )
    return lines
