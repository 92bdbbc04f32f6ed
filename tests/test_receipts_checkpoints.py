"""Signed checkpoints of the receipt chain below the server: ``relay verify`` given one
catches a cut head or tail and a chain rewritten since an auditor kept an older one; replicas
checkpointing at once keep one per head; retention trims the chain and what remains still
verifies; an RFC 3161 timestamp from a local TSA (``openssl ts -reply``) is accepted, and one
for another checkpoint or from another CA is refused (memory, one Redis, a Redis Cluster)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from relay.cli import main
from relay.receipts import ReceiptWriter, SigningKey
from relay.receipts.checkpoint import Checkpointer, Stored, TimestampAuthority
from relay.receipts.keys import PublicKeys
from relay.receipts.payload import digest
from relay.receipts.verify import Failure, Mark, check_checkpoint, check_timestamp, verify_all
from relay.store import MemoryStore
from relay.store.receipts import ChainHead
from tests.test_receipts import KEY, ask, click, ended, keys, payload_of
from tests.tsa_env import local_tsa, openssl

DAY = 86400.0


def writer_of(store: Any) -> ReceiptWriter:
    return ReceiptWriter(store=store, key=KEY, issuer="relay.example")


def checkpointer_of(store: Any, **kw: Any) -> Checkpointer:
    return Checkpointer(store=store, key=KEY, issuer="relay.example", **kw)


async def receipted(store: Any, n: int, *, at: float | None = None) -> list[str]:
    """The chain after ``n`` more asks ended (at ``at``, epoch seconds, when given)."""
    writer = writer_of(store)
    for _ in range(n):
        if at is None:
            record = await ended(store)
        else:
            record = ask()
            await store.create(record=record)
            item = dataclasses.replace(
                click(), answered_at=datetime.fromtimestamp(at, UTC), votes=()
            )
            result = await store.answer(ask_id=record.id, index=0, item=item)
            assert result.record is not None
            record = result.record
        await writer.write(record)
    return await store.receipt_range(limit=10_000)


def mark_of(stored: Stored | None) -> Mark:
    assert stored is not None
    mark = check_checkpoint(stored.checkpoint, keys(), name="checkpoint")
    assert isinstance(mark, Mark), mark
    return mark


def problems(chain: list[str], marks: list[Mark] | None = None) -> list[str]:
    named = [(f"line {i}", t) for i, t in enumerate(chain, 1)]
    return [f.problem for f in verify_all(named, keys(), chain=True, marks=marks)]


async def test_a_checkpoint_catches_a_cut_head_or_tail(replica_stores: list[Any]) -> None:
    store, _ = replica_stores
    chain = await receipted(store, 5)
    mark = mark_of(await checkpointer_of(store).make(now=time.time()))
    assert (mark.first, mark.last, mark.base) == (1, 5, None)
    assert mark.head == digest(chain[-1].encode())
    assert problems(chain, [mark]) == []
    # Each cut the attacker tried passed before; each fails now.
    first_gone, two_gone, last_gone, alone = chain[1:], chain[2:], chain[:-1], [chain[3]]
    for cut in (first_gone, two_gone, alone):
        found = problems(cut)  # the head needs no checkpoint: a chain starts at place 1
        assert len(found) == 1
        assert "missing" in found[0]
        assert "head is cut" in found[0]
        assert any("missing" in p for p in problems(cut, [mark]))
    assert problems(last_gone) == []  # (a tail cut shows only against a checkpoint)
    tail = problems(last_gone, [mark])
    assert tail == [
        "covers places up to 5, but the chain ends at place 4: its tail is cut"
        " (receipts 5 to 5 are missing)"
    ]
    assert any("tail is cut" in p for p in problems(alone, [mark]))
    # Receipts added after the checkpoint are no problem: the chain only grows past it.
    longer = await receipted(store, 2)
    assert problems(longer, [mark]) == []


async def test_a_chain_rewritten_since_an_auditor_kept_a_checkpoint_fails() -> None:
    store = MemoryStore()
    chain = await receipted(store, 3)
    kept = mark_of(await checkpointer_of(store).make(now=time.time()))  # the auditor's
    # The relay's operator rewrites from place 3 on (signed with the relay's own key).
    forged = MemoryStore()
    forged_writer = writer_of(forged)
    fork = [*chain[:2]]
    head = ChainHead(2, digest(chain[1].encode()))
    for _ in range(3):
        token = forged_writer.sign(await ended(forged), head)
        fork.append(token)
        head = ChainHead(head.seq + 1, digest(token.encode()))
    assert problems(fork) == []  # alone it links: only the kept checkpoint shows it
    found = problems(fork, [kept])
    assert found == ["names another receipt at place 3 than" + found[0].split("than", 1)[1]]
    assert "rewritten" in found[0]


async def test_replicas_checkpointing_at_once_keep_one_per_head(
    replica_stores: list[Any],
) -> None:
    a, b = replica_stores
    await receipted(a, 4)
    made = await asyncio.gather(*(checkpointer_of(s).make(now=time.time()) for s in (a, b, a, b)))
    assert sum(m is not None for m in made) == 1
    entries = await b.checkpoint_range()
    assert len(entries) == 1
    assert await a.checkpoint_latest() == (1, entries[0])
    await receipted(a, 1)
    assert await checkpointer_of(b).make(now=time.time()) is not None
    number, entry = await a.checkpoint_latest() or (0, "")
    assert number == 2
    assert mark_of(Stored.read(entry)).last == 5


async def test_checkpoints_are_made_every_n_receipts_and_after_the_interval() -> None:
    store = MemoryStore()
    checkpointer = checkpointer_of(store, every=3, interval=60.0)
    now = time.time()
    assert await checkpointer.tick(now=now) is None  # an empty chain has nothing to sign
    await receipted(store, 2)
    assert await checkpointer.tick(now=now) is not None  # the first, once there are receipts
    await receipted(store, 2)
    assert await checkpointer.tick(now=now + 1) is None  # 2 added: fewer than 3, too soon
    await receipted(store, 1)
    assert await checkpointer.tick(now=now + 2) is not None  # 3 added
    await receipted(store, 1)
    assert await checkpointer.tick(now=now + 30) is None
    assert await checkpointer.tick(now=now + 63) is not None  # the interval passed
    assert await checkpointer.tick(now=now + 200) is None  # nothing added since
    assert len(await store.checkpoint_range()) == 3


async def test_retention_trims_the_chain_and_what_remains_verifies(
    replica_stores: list[Any],
) -> None:
    a, b = replica_stores
    cut = time.time()
    old = await receipted(a, 4, at=cut - 1)
    chain = await receipted(a, 3, at=cut)
    kept_before = mark_of(await checkpointer_of(a).make(now=cut))  # an auditor's, of 7
    checkpointer = checkpointer_of(b, retention=DAY)
    # A day after the cut, the first four are past retention; the three after are not.
    stored = await checkpointer.tick(now=cut + DAY)
    mark = mark_of(stored)
    assert (mark.first, mark.last, mark.base) == (5, 7, digest(old[3].encode()))
    remaining = await b.receipt_range(limit=100)
    assert remaining == chain[4:]
    assert await b.receipt_range(start=6, limit=1) == [chain[5]]
    assert await a.receipt_of(ask_id=payload_of(chain[4])["ask"]) == chain[4]
    assert await a.receipt_of(ask_id=payload_of(old[0])["ask"]) is None
    # What remains verifies with the checkpoint, and with the auditor's older one too.
    assert problems(remaining, [mark]) == []
    assert problems(remaining, [kept_before, mark]) == []
    # Without it the chain looks cut at its head; with a cut beyond it, it fails.
    assert "head is cut" in problems(remaining)[0]
    assert "missing" in problems(remaining[1:], [mark])[0]
    # The chain goes on after a trim, and a second trim (nothing more is due) changes nothing.
    more = await receipted(a, 2, at=cut)
    assert more[-2:] == (await a.receipt_range(start=8, limit=2))
    assert await checkpointer.trim(now=cut + DAY) == 0
    assert problems(await a.receipt_range(limit=100), [mark]) == []


async def test_a_timestamp_from_the_tsa_is_checked_as_openssl_would(tmp_path: Path) -> None:
    store = MemoryStore()
    await receipted(store, 2)
    async with (
        local_tsa(tmp_path / "tsa") as tsa,
        local_tsa(tmp_path / "other", name="Other") as other,
    ):
        checkpointer = checkpointer_of(store, tsa=TimestampAuthority(tsa.url))
        first = await checkpointer.make(now=time.time())
        assert first is not None
        assert first.timestamp is not None
        await receipted(store, 1)
        second = await checkpointer.make(now=time.time())
        assert second is not None
        assert second.timestamp is not None
        elsewhere = await TimestampAuthority(other.url).stamp(first.checkpoint.encode())
    roots = x509.load_pem_x509_certificates(tsa.ca.read_bytes())
    other_roots = x509.load_pem_x509_certificates(other.ca.read_bytes())
    mark = mark_of(first)
    assert check_timestamp(mark, first.timestamp, roots) is None
    # The same response, for another checkpoint's hash; another CA's; a garbled one.
    assert "does not verify" in (check_timestamp(mark, second.timestamp, roots) or "")
    assert "does not verify" in (check_timestamp(mark, elsewhere, roots) or "")
    assert "does not verify" in (check_timestamp(mark, first.timestamp, other_roots) or "")
    assert "not an RFC 3161" in (check_timestamp(mark, b"\x30\x03\x02\x01\x00", roots) or "")
    # openssl itself agrees (what docs/receipts.md tells an auditor to run).
    (tmp_path / "cp.jws").write_text(first.checkpoint)
    (tmp_path / "cp.tsr").write_bytes(first.timestamp)
    (tmp_path / "other.tsr").write_bytes(second.timestamp)
    for response, ok in (("cp.tsr", True), ("other.tsr", False)):
        code, err = await openssl(
            "ts",
            "-verify",
            "-in",
            str(tmp_path / response),
            "-data",
            str(tmp_path / "cp.jws"),
            "-CAfile",
            str(tsa.ca),
        )
        assert (code == 0) is ok, err


async def test_relay_verify_takes_checkpoints_and_a_tsa_ca(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = MemoryStore()
    chain = await receipted(store, 4)
    async with local_tsa(tmp_path / "tsa") as tsa:
        stored = await checkpointer_of(store, tsa=TimestampAuthority(tsa.url)).make(now=time.time())
    assert stored is not None
    keys_file = tmp_path / "jwks.json"
    keys_file.write_text(json.dumps(keys().jwks()))
    checkpoint = tmp_path / "checkpoint.json"
    checkpoint.write_text(stored.entry())
    export = tmp_path / "receipts.jsonl"

    def run(lines: list[str], *extra: str) -> tuple[int, str, str]:
        export.write_text("".join(json.dumps({"receipt": t}) + "\n" for t in lines))
        capsys.readouterr()
        code = main(["verify", "--keys", str(keys_file), "--chain", *extra, str(export)])
        out, err = capsys.readouterr()
        return code, out, err

    ca = str(tsa.ca)
    code, _, err = run(chain, "--checkpoint", str(checkpoint), "--tsa-ca", ca)
    assert (code, err) == (
        0,
        "relay: 4 receipts and 1 checkpoint verified and they link in order, timestamps checked\n",
    )
    code, out, _ = run(chain[:-1], "--checkpoint", str(checkpoint))
    assert code == 1
    assert "tail is cut" in out
    code, out, _ = run(chain[1:], "--checkpoint", str(checkpoint))
    assert code == 1
    assert "missing" in out
    # A timestamp moved onto another checkpoint, or none where a TSA CA is given, fails.
    unstamped = Stored(stored.checkpoint, None)
    checkpoint.write_text(unstamped.entry())
    code, out, _ = run(chain, "--checkpoint", str(checkpoint), "--tsa-ca", ca)
    assert code == 1
    assert "carries no timestamp" in out
    forged = json.loads(stored.entry())
    later = await checkpointer_of(store).make(now=time.time() + 1)
    assert later is None  # (nothing new to cover: the relay keeps no second one)
    await receipted(store, 1)
    later = await checkpointer_of(store).make(now=time.time())
    assert later is not None
    forged["checkpoint"] = later.checkpoint
    checkpoint.write_text(json.dumps(forged))
    code, out, _ = run(await store.receipt_range(), "--checkpoint", str(checkpoint), "--tsa-ca", ca)
    assert code == 1
    assert "timestamp does not verify" in out


async def test_a_receipt_or_another_keys_checkpoint_is_no_checkpoint() -> None:
    store = MemoryStore()
    chain = await receipted(store, 2)
    posing = check_checkpoint(chain[-1], keys(), name="given")
    assert isinstance(posing, Failure)
    assert "is not a checkpoint" in posing.problem
    other_key = SigningKey.generate()
    other = Checkpointer(store=store, key=other_key, issuer="relay.example")
    stored = await other.make(now=time.time())
    assert stored is not None
    forged = check_checkpoint(stored.checkpoint, keys(), name="given")
    assert isinstance(forged, Failure)
    assert "does not hold" in forged.problem
    mine = PublicKeys.of([other_key.private.public_key()])
    assert isinstance(check_checkpoint(stored.checkpoint, mine, name="given"), Mark)
