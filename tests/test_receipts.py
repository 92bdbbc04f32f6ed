"""Receipts end to end below the server: what one says, that an independent JOSE library
verifies it, that ``relay verify`` catches every alteration, and that replicas racing to
append never fork the chain (memory, one Redis, a Redis Cluster)."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import math
import sys
import uuid
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from joserfc import jws as jose_jws
from joserfc.errors import BadSignatureError, SecurityWarning
from joserfc.jwk import KeySet

from relay import AskUserQuestionAnswerItem, AskUserQuestionItem, AskUserQuestionOption
from relay.cli import main
from relay.receipts import ReceiptWriter, SigningKey
from relay.receipts.jcs import canonical
from relay.receipts.jws import b64url, sign
from relay.receipts.keys import PublicKeys
from relay.receipts.payload import digest, receipt_id
from relay.receipts.verify import verify_all
from relay.seam.parties import AgentRef, Responder, Vote
from relay.seam.questions import AskUserQuestionRequest
from relay.store import AskRecord, MemoryStore, Target
from relay.store.receipts import ChainHead

KEY = SigningKey.generate()


def ask(*, questions: int = 1) -> AskRecord:
    """A pending ask with a team, an agent and two options per question."""
    request = AskUserQuestionRequest(
        tuple(
            AskUserQuestionItem(
                id=f"q{i}",
                question=f"Deploy build {i}?",
                options=(AskUserQuestionOption("Yes"), AskUserQuestionOption("No")),
            )
            for i in range(questions)
        ),
        agent=AgentRef("deploy-bot"),
    )
    return AskRecord(
        id=uuid.uuid4().hex,
        request=request,
        target=Target(channel="C1", timeout=600.0),
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        deadline=1767323045.0,
        messages=(None,) * questions,
        responses=(None,) * questions,
        owner="tok-fingerprint",
    )


def click(index: int = 0, *, by: str = "U1", label: str = "Yes") -> AskUserQuestionAnswerItem:
    """An answer as a signed click gives it: the Slack team, and its request's digest."""
    responder = Responder(id=by, team="T1", request=digest(f"v0:1:{by}".encode()))
    at = datetime(2026, 1, 2, 3, 5, 0, tzinfo=UTC)
    vote = Vote(by=responder, label=label, at=at)
    return AskUserQuestionAnswerItem(
        id=f"q{index}", selected=(label,), answered_by=responder, answered_at=at, votes=(vote,)
    )


async def ended(store: Any, *, questions: int = 1) -> AskRecord:
    record = ask(questions=questions)
    await store.create(record=record)
    for i in range(questions):
        result = await store.answer(ask_id=record.id, index=i, item=click(i))
    assert result.record is not None
    assert not result.record.pending
    return result.record


def payload_of(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # type: ignore[no-any-return]


def keys() -> PublicKeys:
    return PublicKeys.of([KEY.private.public_key()])


async def test_a_receipt_says_who_decided_what_on_which_request() -> None:
    store = MemoryStore()
    writer = ReceiptWriter(store=store, key=KEY, issuer="relay.example")
    record = await ended(store)
    token = await writer.write(record)
    payload = payload_of(token)
    assert payload["v"] == 1
    assert payload["iss"] == "relay.example"
    assert payload["kid"] == KEY.kid
    assert payload["jti"] == receipt_id(record.id)
    assert payload["ask"] == record.id
    assert (payload["seq"], payload["prev"]) == (1, None)
    assert payload["agent"] == {"owner": "tok-fingerprint", "name": "deploy-bot"}
    assert payload["created"] == "2026-01-02T03:04:05.000000Z"
    assert payload["options"] == [["Yes", "No"]]
    decision = payload["outcome"]["decisions"][0]
    assert decision["selected"] == ["Yes"]
    assert decision["by"] == {"team": "T1", "user": "U1", "request": digest(b"v0:1:U1")}
    assert decision["votes"][0]["label"] == "Yes"
    assert payload["outcome"]["status"] == "answered"
    expected = digest(canonical([q.to_dict() for q in record.request.questions]))
    assert payload["shown_sha256"] == expected
    assert "tok-" + "secret" not in token  # (the token itself is never known to the store)
    # One receipt per ask: writing again answers the first.
    assert await writer.write(record) == token
    assert await writer.ensure(record.id) == token
    assert await store.receipt_range() == [token]


async def test_a_receipt_verifies_with_an_independent_jose_library() -> None:
    store = MemoryStore()
    writer = ReceiptWriter(store=store, key=KEY, issuer="relay.example")
    token = await writer.write(await ended(store))
    key_set = KeySet.import_key_set(writer.published.jwks())  # type: ignore[arg-type]
    with warnings.catch_warnings():
        # joserfc flags "EdDSA" as superseded by RFC 9864's "Ed25519" (the same signature);
        # receipts say EdDSA, as RFC 8037 and every JOSE library deployed today know it.
        warnings.simplefilter("ignore", SecurityWarning)
        verified = jose_jws.deserialize_compact(token, key_set, algorithms=["EdDSA"])
    assert json.loads(verified.payload) == payload_of(token)
    assert verified.protected["kid"] == KEY.kid
    # Another key posing under the relay's kid: the signature does not hold.
    posing = PublicKeys.of([SigningKey.generate().private.public_key()]).jwks()
    posing["keys"][0]["kid"] = KEY.kid
    other = KeySet.import_key_set(posing)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecurityWarning)
        with pytest.raises(BadSignatureError):
            jose_jws.deserialize_compact(token, other, algorithms=["EdDSA"])


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, (*path, i))]
    return [path]


def _changed(payload: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    copy = json.loads(json.dumps(payload))
    holder = copy
    for step in path[:-1]:
        holder = holder[step]
    old = holder[path[-1]]
    holder[path[-1]] = (
        not old if isinstance(old, bool) else old + 1 if isinstance(old, int) else f"{old}x"
    )
    return copy  # type: ignore[no-any-return]


def _with_payload(token: str, payload: bytes) -> str:
    header, _, signature = token.split(".")
    return f"{header}.{b64url(payload)}.{signature}"


async def test_every_field_changed_re_encoded_or_re_signed_fails_verify() -> None:
    store = MemoryStore()
    writer = ReceiptWriter(store=store, key=KEY, issuer="relay.example")
    token = await writer.write(await ended(store, questions=2))
    payload = payload_of(token)
    assert verify_all([("r", token)], keys(), chain=True) == []
    paths = _leaves(payload)
    assert len(paths) > 30
    for path in paths:
        forged = _with_payload(token, canonical(_changed(payload, path)))
        failures = verify_all([("r", forged)], keys(), chain=False)
        assert [f.problem for f in failures] == [
            "the signature does not verify (altered, or signed by another key)"
        ], path
    # The same JSON in other bytes: the signature no longer covers it; signed anew by the
    # relay's own key, it is still refused for not being JCS.
    spaced = json.dumps(payload, indent=1).encode()
    assert (
        "signature"
        in verify_all([("r", _with_payload(token, spaced))], keys(), chain=False)[0].problem
    )
    resigned = sign(spaced, KEY.private, header={"alg": "EdDSA", "kid": KEY.kid})
    assert "JCS" in verify_all([("r", resigned)], keys(), chain=False)[0].problem
    # Signed by another key: under the relay's kid the signature fails; under its own, the
    # key set does not hold it.
    other = SigningKey.generate()
    posing = sign(canonical(payload), other.private, header={"alg": "EdDSA", "kid": KEY.kid})
    assert "signature" in verify_all([("r", posing)], keys(), chain=False)[0].problem
    honest = sign(
        canonical({**payload, "kid": other.kid}),
        other.private,
        header={"alg": "EdDSA", "kid": other.kid},
    )
    assert "does not hold" in verify_all([("r", honest)], keys(), chain=False)[0].problem


async def _chain(n: int) -> tuple[list[str], ReceiptWriter]:
    store = MemoryStore()
    writer = ReceiptWriter(store=store, key=KEY, issuer="relay.example")
    for _ in range(n):
        await writer.write(await ended(store))
    return await store.receipt_range(), writer


async def test_a_receipt_dropped_moved_or_duplicated_is_reported() -> None:
    chain, _ = await _chain(5)
    named = [(f"line {i}", t) for i, t in enumerate(chain, 1)]
    assert verify_all(named, keys(), chain=True) == []
    ids = [payload_of(t)["jti"] for t in chain]
    dropped = verify_all(named[:2] + named[3:], keys(), chain=True)
    assert [(f.name, "missing" in f.problem) for f in dropped] == [(ids[3], True)]
    moved = verify_all([named[0], named[2], named[1], named[3], named[4]], keys(), chain=True)
    assert {f.name for f in moved} == {ids[2], ids[1], ids[3]}
    assert all("order" in f.problem or "missing" in f.problem for f in moved)
    twice = verify_all([*named[:3], named[2], *named[3:]], keys(), chain=True)
    assert any("fork" in f.problem for f in twice)
    # Without --chain only signatures count: a dropped receipt is not visible.
    assert verify_all(named[:2] + named[3:], keys(), chain=False) == []


async def test_a_fork_signed_by_the_relay_itself_is_reported() -> None:
    chain, _writer = await _chain(3)
    # Another receipt signed after the same head as the third (what a forked append makes).
    fork_store = MemoryStore()
    fork = ReceiptWriter(store=fork_store, key=KEY, issuer="relay.example")
    second = payload_of(chain[1])
    forked = fork.sign(await ended(fork_store), ChainHead(2, digest(chain[1].encode())))
    assert second["seq"] == 2
    failures = verify_all([(str(i), t) for i, t in enumerate([*chain, forked])], keys(), chain=True)
    assert [(f.name, "fork" in f.problem) for f in failures] == [(payload_of(forked)["jti"], True)]


async def test_relay_verify_checks_an_export_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    chain, writer = await _chain(4)
    keys_file = tmp_path / "jwks.json"
    keys_file.write_text(json.dumps(writer.published.jwks()))
    export = tmp_path / "receipts.jsonl"
    lines = [json.dumps({"id": payload_of(t)["jti"], "receipt": t}) for t in chain]
    export.write_text("\n".join(lines) + "\n")
    assert main(["verify", "--keys", str(keys_file), "--chain", str(export)]) == 0
    export.write_text("\n".join([lines[0], lines[2], lines[3]]) + "\n")
    assert main(["verify", "--keys", str(keys_file), str(export)]) == 0
    capsys.readouterr()
    assert main(["verify", "--keys", str(keys_file), "--chain", str(export)]) == 1
    out, err = capsys.readouterr()
    third = payload_of(chain[2])["jti"]
    assert out.splitlines() == [
        f"{third}: is at place 3 right after place 1 (receipts missing in between)"
    ]
    assert err == "relay: 1 problem in 3 receipts\n"
    # From standard input, bare compact JWS lines as well as audit's JSON lines.
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(chain) + "\n"))
    assert main(["verify", "--keys", str(keys_file), "--chain", "-"]) == 0
    # PEM public keys work as well as a JWK Set.
    pem = KEY.private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (tmp_path / "keys.pem").write_bytes(pem)
    export.write_text(chain[0] + "\n")
    capsys.readouterr()
    assert main(["verify", "--keys", str(tmp_path / "keys.pem"), str(export)]) == 0
    assert capsys.readouterr().err == "relay: 1 receipt verified\n"


async def test_replicas_racing_to_append_never_fork_the_chain(replica_stores: list[Any]) -> None:
    a, b = replica_stores
    writers = [ReceiptWriter(store=s, key=KEY, issuer="relay.example") for s in (a, b)]
    records = [await ended(a) for _ in range(60)]
    # Each ask's receipt written by both replicas at once, and all asks at once.
    tokens = await asyncio.gather(*(w.write(r) for r in records for w in writers))
    for i, record in enumerate(records):
        assert tokens[2 * i] == tokens[2 * i + 1] == await b.receipt_of(ask_id=record.id)
    chain = await b.receipt_range(limit=1000)
    assert len(chain) == len(records)
    assert sorted(payload_of(t)["ask"] for t in chain) == sorted(r.id for r in records)
    named = [(str(i), t) for i, t in enumerate(chain)]
    assert verify_all(named, keys(), chain=True) == []
    # The click's evidence went through the store (Redis' JSON, memory's packing) intact.
    by = payload_of(chain[0])["outcome"]["decisions"][0]["by"]
    assert by == {"team": "T1", "user": "U1", "request": digest(b"v0:1:U1")}
    head = await a.receipt_head()
    assert (head.seq, head.digest) == (60, digest(chain[-1].encode()))


async def test_an_append_after_a_stale_head_or_for_a_receipted_ask_changes_nothing(
    replica_stores: list[Any],
) -> None:
    a, b = replica_stores
    first = await a.receipt_append(ask_id="ask-1", receipt="r1", seq=1, prev=None, digest="d1")
    assert first.outcome == "appended"
    # Signed after the empty chain too, on another replica: the chain moved on.
    stale = await b.receipt_append(ask_id="ask-2", receipt="r2", seq=1, prev=None, digest="d2")
    assert (stale.outcome, stale.head) == ("moved", ChainHead(1, "d1"))
    # The right place but the wrong prev (a fork of the same length): refused as well.
    forked = await b.receipt_append(ask_id="ask-2", receipt="r2", seq=2, prev="dX", digest="d2")
    assert forked.outcome == "moved"
    again = await b.receipt_append(ask_id="ask-1", receipt="r1b", seq=2, prev="d1", digest="e")
    assert (again.outcome, again.receipt) == ("exists", "r1")
    assert await a.receipt_range() == ["r1"]
    assert await b.receipt_head() == ChainHead(1, "d1")
    assert await b.receipt_of(ask_id="ask-1") == "r1"
    assert await b.receipt_of(ask_id="ask-2") is None
    second = await b.receipt_append(ask_id="ask-2", receipt="r2", seq=2, prev="d1", digest="d2")
    assert second.outcome == "appended"
    assert await a.receipt_range(start=2) == ["r2"]
    assert await a.receipt_range(start=1, limit=1) == ["r1"]


async def test_a_receipt_a_dead_replica_owed_is_written_by_anothers_sweep(
    replica_stores: list[Any],
) -> None:
    a, b = replica_stores
    record = await ended(a)
    # Replica A noted the debt, then died before signing.
    await a.receipt_owe(ask_id=record.id, at=1_000.0)
    await a.receipt_owe(ask_id="expired-unsigned", at=1_000.0)
    sweeper = ReceiptWriter(store=b, key=KEY, issuer="relay.example", grace=10.0)
    assert await sweeper.sweep(now=1_005.0) == 0  # within the grace: A may still write it
    assert await b.receipt_range() == []
    assert await sweeper.sweep(now=1_011.0) == 1
    (token,) = await b.receipt_range()
    assert payload_of(token)["ask"] == record.id
    # Both debts are settled: one by the append, the other dropped (its ask is gone).
    assert await a.receipt_owed(before=math.inf, limit=10) == []
    # A debt noted after the receipt exists is no debt.
    await a.receipt_owe(ask_id=record.id, at=2_000.0)
    assert await b.receipt_owed(before=math.inf, limit=10) == []


async def test_the_end_notes_a_debt_and_its_receipt_settles_it() -> None:
    store = MemoryStore()
    writer = ReceiptWriter(store=store, key=KEY, issuer="relay.example")
    record = await ended(store)
    await store.receipt_owe(ask_id=record.id, at=1.0)
    assert await store.receipt_owed(before=2.0, limit=10) == [record.id]
    await writer.write(record)
    assert await store.receipt_owed(before=2.0, limit=10) == []


async def test_a_debt_noted_at_creation_waits_in_line_behind_ended_asks(
    replica_stores: list[Any],
) -> None:
    a, b = replica_stores
    # Noted when each ask was created (the writer observes "created"): a sweep's batch (100)
    # of asks still pending, noted first, then one that has ended.
    pending = [ask() for _ in range(100)]
    for record in pending:
        await a.create(record=record)
        await a.receipt_owe(ask_id=record.id, at=1_000.0)
    done = await ended(a)
    await a.receipt_owe(ask_id=done.id, at=1_001.0)
    sweeper = ReceiptWriter(store=b, key=KEY, issuer="relay.example", grace=10.0)
    # The first sweep sees only pending asks and puts each back in line behind the ended
    # one, so asks pending for long never crowd the ended ones out: the next sweep signs it.
    assert await sweeper.sweep(now=1_020.0) == 0
    assert (await b.receipt_owed(before=math.inf, limit=1))[0] == done.id
    assert await sweeper.sweep(now=1_040.0) == 1
    (token,) = await b.receipt_range()
    assert payload_of(token)["ask"] == done.id
    # The pending asks still owe theirs.
    assert len(await b.receipt_owed(before=math.inf, limit=1_000)) == 100
