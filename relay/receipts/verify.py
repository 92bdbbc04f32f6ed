"""Checking receipts offline: each one's signature against a JWK Set, and a chain's links.

A receipt passes when its header names a published key (``kid``) whose Ed25519 signature
holds, its payload is exactly its own JCS form (so a re-encoded payload, even one that means
the same JSON, fails), and the payload's ``kid`` and ``v`` are the header's and this
relay's. A chain passes when each receipt's ``seq`` is one past the one before and its
``prev`` is the digest of that receipt's compact JWS: a receipt dropped, moved, duplicated
or from a fork breaks one of the two. A chain whose first receipt is not at place 1 has lost
its head, unless a checkpoint says it was trimmed there.

A checkpoint (``relay.receipts.checkpoint``) passes when its signature holds like a
receipt's and its ``typ`` says checkpoint; checked against a chain, the chain must start
where the latest checkpoint given says (its first receipt naming the checkpoint's ``base``)
and reach each checkpoint's last place with that receipt's digest its ``head``: a cut head or
tail, or a chain rewritten since an auditor kept a checkpoint, fails. A checkpoint's RFC 3161
timestamp is checked as ``openssl ts -verify -CAfile`` would: signed by a certificate that
chains to the TSA's CA, for time stamping, over the SHA-256 of the checkpoint.

An *error receipt* (``error.code`` ``record_not_receiptable``: the relay could not receipt
that ask's record, and signed this in its place) is a valid receipt and a valid link;
``quarantined`` names them so that a report can list them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature

from relay.receipts.checkpoint import TYPE as CHECKPOINT_TYPE
from relay.receipts.jcs import canonical
from relay.receipts.jws import BadJWS, parse
from relay.receipts.keys import PublicKeys
from relay.receipts.payload import ERROR_CODE, VERSION, digest

__all__ = [
    "Checked",
    "Failure",
    "Mark",
    "check_all",
    "check_checkpoint",
    "check_timestamp",
    "quarantined",
]


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


def check_chain(receipts: list[Checked], *, start: int = 1) -> list[Failure]:
    """Where ``receipts`` (in export order) do not link: gaps, moves, forks, duplicates, and
    a first receipt after place ``start`` (where the chain is known to start: 1, or where a
    checkpoint says it was trimmed to)."""
    failures: list[Failure] = []
    if receipts:
        first = receipts[0].payload.get("seq")
        if isinstance(first, int) and first > start:
            cause = (
                "the chain's head is cut"
                if start == 1
                else "receipts the checkpoint holds are missing"
            )
            failures.append(
                Failure(
                    receipts[0].name,
                    f"is first but sits at place {first}: places {start} to {first - 1}"
                    f" are missing ({cause}; a chain trimmed by retention starts where its"
                    " latest checkpoint says: give it with --checkpoint)",
                )
            )
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
            if seq == start == 1 and prev is not None:
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


def verify_all(
    tokens: list[tuple[str, str]],
    keys: PublicKeys,
    *,
    chain: bool,
    marks: list[Mark] | None = None,
) -> list[Failure]:
    """Every failure among ``tokens`` (``(name, compact JWS)``, in export order); with
    ``chain``, also where they do not link, and where they fall short of the checked
    checkpoints ``marks``. Empty when all hold."""
    return check_all(tokens, keys, chain=chain, marks=marks)[0]


def check_all(
    tokens: list[tuple[str, str]],
    keys: PublicKeys,
    *,
    chain: bool,
    marks: list[Mark] | None = None,
) -> tuple[list[Failure], list[Checked]]:
    """``verify_all``'s failures, and the receipts whose signatures held (each checked
    once, its payload kept)."""
    failures: list[Failure] = []
    checked: list[Checked] = []
    for name, token in tokens:
        result = check_receipt(token, keys, name=name)
        if isinstance(result, Failure):
            failures.append(result)
        else:
            checked.append(result)
    if chain:
        start = max((m.first for m in marks or ()), default=1)
        failures.extend(check_chain(checked, start=start))
        failures.extend(check_marks(checked, marks or []))
    return failures, checked


@dataclass(frozen=True, slots=True)
class Mark:
    """A checkpoint whose signature held: the chain's places ``first`` to ``last``, the
    digest the first names as ``prev`` (``base``) and the last's (``head``), and when."""

    name: str
    token: str
    first: int
    base: str | None
    last: int
    head: str | None
    at: str


def check_checkpoint(token: str, keys: PublicKeys, *, name: str) -> Mark | Failure:
    """``token`` checked as a checkpoint against ``keys``."""
    checked = check_receipt(token, keys, name=name)
    if isinstance(checked, Failure):
        return Failure(name, checked.problem.replace("a receipt", "a checkpoint"))
    if parse(token).header.get("typ") != CHECKPOINT_TYPE:
        return Failure(name, f"is not a checkpoint (its typ is not {CHECKPOINT_TYPE})")
    p = checked.payload
    fields = (p.get("first"), p.get("last"), p.get("count"))
    if not all(isinstance(f, int) and not isinstance(f, bool) for f in fields):
        return Failure(name, "has no first, last and count places")
    first, last, count = (int(f) for f in fields)  # type: ignore[arg-type]
    if first < 1 or last < first - 1 or count != last - first + 1:
        return Failure(name, f"is inconsistent (first {first}, last {last}, count {count})")
    base, head, at = p.get("base"), p.get("head"), p.get("at")
    if (base is None) != (first == 1) or not isinstance(head, str) or not isinstance(at, str):
        return Failure(name, "has no base, head or time where it should")
    return Mark(name, token.strip(), first, base, last, head, at)


def check_marks(receipts: list[Checked], marks: list[Mark]) -> list[Failure]:
    """Where ``receipts`` (a chain) fall short of the checkpoints ``marks``: a place a
    checkpoint covers that is missing, or a receipt whose digest is not the one it names."""
    failures: list[Failure] = []
    at: dict[int, Checked] = {}
    for here in receipts:
        seq = here.payload.get("seq")
        if isinstance(seq, int):
            at.setdefault(seq, here)
    start = max((m.first for m in marks), default=1)
    last_held = max(at, default=start - 1)
    for mark in marks:
        # Its head: the first receipt it covers still held names its base.
        if mark.first == start and start in at and at[start].payload.get("prev") != mark.base:
            failures.append(
                Failure(
                    mark.name,
                    f"says place {start} follows {mark.base}, but that receipt names"
                    " another prev (the chain was rewritten at its head)",
                )
            )
        # Its tail: the chain reaches its last place, whose digest is its head.
        if mark.last < start - 1:
            continue  # trimmed past since (a later checkpoint signs where the chain starts)
        if mark.last == start - 1:
            later = next((m for m in marks if m.first == start), None)
            if later is not None and later.base != mark.head:
                failures.append(
                    Failure(
                        mark.name,
                        f"ends at place {mark.last} with a receipt the chain kept after"
                        " trimming does not follow (the chain was rewritten since)",
                    )
                )
            continue
        if mark.last > last_held:
            failures.append(
                Failure(
                    mark.name,
                    f"covers places up to {mark.last}, but the chain ends at place"
                    f" {last_held}: its tail is cut (receipts"
                    f" {last_held + 1} to {mark.last} are missing)",
                )
            )
        elif mark.last in at and digest(at[mark.last].token.encode("ascii")) != mark.head:
            failures.append(
                Failure(
                    mark.name,
                    f"names another receipt at place {mark.last} than"
                    f" {at[mark.last].name} (the chain was rewritten since it was signed)",
                )
            )
    return failures


def check_timestamp(mark: Mark, response: bytes, roots: list[x509.Certificate]) -> str | None:
    """Why the RFC 3161 ``response`` is not a valid timestamp of ``mark`` by a TSA whose
    certificate chains to one of ``roots``; ``None`` when it is."""
    from rfc3161_client import VerificationError, VerifierBuilder, decode_timestamp_response

    try:
        decoded = decode_timestamp_response(response)
    except ValueError:
        return "its timestamp is not an RFC 3161 TimeStampResp"
    builder = VerifierBuilder()
    for root in roots:
        builder = builder.add_root_certificate(root)
    try:
        builder.build().verify_message(decoded, mark.token.encode("ascii"))
    except VerificationError as exc:
        return f"its timestamp does not verify ({exc})"
    except ValueError as exc:
        return f"its timestamp does not verify ({exc})"
    return None


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
