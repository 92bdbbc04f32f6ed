"""A record the writer cannot receipt (a lone surrogate stored before the doors refused it)
is quarantined with a signed error receipt in its place in the chain: the sweep goes on to
the other asks, ``relay verify --chain`` accepts the link and lists it, and it is logged
once."""

from __future__ import annotations

import dataclasses
import logging
import math
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from relay.cli import main
from relay.receipts import ReceiptWriter
from relay.receipts.verify import quarantined, verify_all
from relay.seam.questions import AskUserQuestionItem
from relay.store import AskRecord, MemoryStore
from tests.test_receipts import KEY, click, keys, payload_of
from tests.test_receipts import ask as pending_ask


def poisoned() -> AskRecord:
    """A pending ask whose question holds a lone surrogate (JCS cannot encode it)."""
    record = pending_ask()
    (question,) = record.request.questions
    bad: AskUserQuestionItem = dataclasses.replace(question, question="Deploy \ud800?")
    request = dataclasses.replace(record.request, questions=(bad,))
    return dataclasses.replace(record, request=request)


def pem(directory: Path) -> str:
    """The receipt key's public half as a PEM file in ``directory`` (``--keys``)."""
    path = directory / "keys.pem"
    public = KEY.private.public_key()
    path.write_bytes(
        public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return str(path)


async def end(store: Any, record: AskRecord) -> AskRecord:
    await store.create(record=record)
    result = await store.answer(ask_id=record.id, index=0, item=click())
    assert result.record is not None
    assert not result.record.pending
    return result.record  # type: ignore[no-any-return]


async def test_a_record_that_cannot_be_receipted_gets_an_error_receipt_and_blocks_nobody(
    replica_stores: list[Any], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    a, b = replica_stores
    bad = await end(a, poisoned())
    good = [await end(a, pending_ask()) for _ in range(2)]
    # The poisoned debt is the oldest: the sweep meets it first.
    await a.receipt_owe(ask_id=bad.id, at=1_000.0)
    for i, record in enumerate(good):
        await a.receipt_owe(ask_id=record.id, at=1_001.0 + i)
    sweeper = ReceiptWriter(store=b, key=KEY, issuer="relay.example", grace=0.0)
    with caplog.at_level(logging.ERROR, logger="relay.receipts"):
        assert await sweeper.sweep(now=2_000.0) == 3
        # A reader of the poisoned ask (GET …/receipt) gets the same error receipt.
        again = await sweeper.ensure(bad.id)
    assert await a.receipt_owed(before=math.inf, limit=10) == []
    chain = await b.receipt_range(limit=100)
    assert [payload_of(t)["ask"] for t in chain] == [bad.id, *(r.id for r in good)]
    assert again == chain[0]
    error = payload_of(chain[0])
    assert error["error"]["code"] == "record_not_receiptable"
    assert "lone surrogate" in error["error"]["reason"]
    assert error["outcome"] == {"status": "answered"}
    assert (error["seq"], error["prev"]) == (1, None)
    assert all("error" not in payload_of(t) for t in chain[1:])
    named = [(str(i), t) for i, t in enumerate(chain)]
    assert verify_all(named, keys(), chain=True) == []
    assert len(quarantined(named)) == 1
    logged = [r for r in caplog.records if bad.id in r.getMessage()]
    assert len(logged) == 1
    assert "\ud800" not in logged[0].getMessage()

    # The CLI as an auditor runs it: a valid chain, the error receipt listed.
    export = tmp_path / "chain.jsonl"
    export.write_text("\n".join(chain) + "\n")
    assert main(["verify", "--chain", "--keys", pem(tmp_path), str(export)]) == 0


async def test_verify_lists_error_receipts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = MemoryStore()
    writer = ReceiptWriter(store=store, key=KEY, issuer="relay.example")
    bad = await end(store, poisoned())
    await writer.write(bad)
    await writer.write(await end(store, pending_ask()))
    chain = await store.receipt_range(limit=10)
    export = tmp_path / "chain.jsonl"
    export.write_text("\n".join(chain) + "\n")
    capsys.readouterr()
    assert main(["verify", "--chain", "--keys", pem(tmp_path), str(export)]) == 0
    out = capsys.readouterr()
    assert out.out.startswith(f"rcpt_{bad.id}: an error receipt: ask {bad.id} could not")
    assert out.err == (
        "relay: 2 receipts verified and they link in order, 1 error receipt among them\n"
    )
