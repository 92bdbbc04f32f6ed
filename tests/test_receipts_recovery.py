"""Every ended ask has a receipt, whatever replica dies when: ``relay serve`` A is SIGKILLed
as soon as Redis runs an ask's end, its debt note (before it signs and appends), or its append
(before it learns the outcome), each in turn, while B keeps running; and a record stored
before the boundary refused lone surrogates sits among them. B's sweep, with no reader
asking, receipts every ended ask (the poisoned one with an error receipt), and
``relay verify --chain`` passes on the chain and lists the error receipt.

The kill lands when the test sees the command in ``MONITOR``: A may get a little further
first, so each case also records what it left (a debt without a receipt, or both)."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import time
from pathlib import Path

from redis.asyncio import Redis
from redis_server import RedisServer

from relay.seam.questions import AskUserQuestionItem
from relay.store.redis import RedisStore
from relay.testing import FakeSlack
from tests.replica_env import ASK
from tests.server_env import SECRET, Relay, free_port, relay_env, start_relay
from tests.test_receipts import ask as pending_ask
from tests.test_receipts import click
from tests.test_receipts_serve import chain, key_file, raw, relay_verify

# What A's Redis commands look like when it notes a debt, and when it appends.
STEPS = {
    "after the debt note": lambda line, ask: ask in line and "owed" in line and "eyJ" not in line,
    "during the append": lambda line, ask: ask in line and "eyJ" in line,
}


async def kill_at_the_end(store: RedisStore, relay: Relay, ask_id: str) -> None:
    """End ``ask_id`` on ``relay`` and SIGKILL it as soon as the store shows it ended (before
    its end is followed by anything of the receipt's, or just after): the debt noted when the
    ask was created is what leaves its receipt to another replica."""
    ending = asyncio.create_task(relay.request("DELETE", f"/v1/asks/{ask_id}"))
    while True:  # polled as fast as Redis answers: the kill must land right at the end
        record = await store.get(ask_id=ask_id)
        if record is None or not record.pending:
            break
    await relay.stop(signal.SIGKILL)
    await asyncio.gather(ending, return_exceptions=True)


async def kill_when(redis_url: str, relay: Relay, ask_id: str, step: str) -> None:
    """End ``ask_id`` on ``relay`` and SIGKILL it as soon as Redis runs ``step``'s command."""
    matches = STEPS[step]
    monitor_client = Redis.from_url(redis_url)
    try:
        async with monitor_client.monitor() as monitor:
            ending = asyncio.create_task(relay.request("DELETE", f"/v1/asks/{ask_id}"))
            while True:
                seen = await monitor.next_command()
                if matches(str(seen.get("command", "")), ask_id):
                    break
            await relay.stop(signal.SIGKILL)
            await asyncio.gather(ending, return_exceptions=True)
    finally:
        await monitor_client.aclose()


async def poison(store: RedisStore, owner: str) -> str:
    """An ended ask whose question holds a lone surrogate, with its debt noted long ago, as
    one stored before the doors refused such text would be."""
    record = pending_ask()
    (question,) = record.request.questions
    bad: AskUserQuestionItem = dataclasses.replace(question, question="Deploy \ud800?")
    request = dataclasses.replace(record.request, questions=(bad,))
    record = dataclasses.replace(record, request=request, owner=owner)
    await store.create(record=record)
    result = await store.answer(ask_id=record.id, index=0, item=click())
    assert result.record is not None
    assert not result.record.pending
    await store.receipt_owe(ask_id=record.id, at=1.0)
    return record.id


async def test_every_ended_ask_is_receipted_after_a_writer_is_killed_at_each_step(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    key = key_file(tmp_path)
    env = {"REDIS_URL": redis_server.url, "RELAY_RECEIPT_KEY_FILE": key}
    store = RedisStore(url=redis_server.url)
    async with FakeSlack(signing_secret=SECRET, rate_limits=False) as slack:
        b = await start_relay(relay_env(slack, free_port(), **env))
        try:
            status, first = await b.request("POST", "/v1/asks", json=ASK)
            assert status == 201, first
            record = await store.get(ask_id=first["id"])
            assert record is not None
            poisoned = await poison(store, record.owner or "")
            ended = [poisoned]
            left: dict[str, tuple[bool, bool]] = {}
            for step in ("at the end", *STEPS):
                a = await start_relay(relay_env(slack, free_port(), **env))
                status, made = await a.request("POST", "/v1/asks", json=ASK)
                assert status == 201, made
                # The debt is noted when the ask is created, before anything ends it.
                while True:
                    if made["id"] in await store.receipt_owed(before=float("inf"), limit=1000):
                        break
                if step == "at the end":
                    await kill_at_the_end(store, a, made["id"])
                else:
                    await kill_when(redis_server.url, a, made["id"], step)
                ended.append(made["id"])
                owed = await store.receipt_owed(before=float("inf"), limit=1000)
                receipted = await store.receipt_of(ask_id=made["id"]) is not None
                left[step] = (made["id"] in owed, receipted)
            # Each kill left a debt, or a receipt (whose append settles the debt with it).
            assert all(debt or receipted for debt, receipted in left.values()), left
            # One more ask ended on B, after all that: its receipt is not held up.
            status, _ = await b.request("DELETE", f"/v1/asks/{first['id']}")
            assert status == 200
            ended.append(first["id"])

            # B's sweep, with nobody reading a receipt, writes what A owed.
            deadline = time.monotonic() + 60
            items = await chain(b)
            while {i["ask"] for i in items} != set(ended):
                assert time.monotonic() < deadline, (left, [i["ask"] for i in items], ended)
                await asyncio.sleep(0.1)
                items = await chain(b)
            assert sorted(i["seq"] for i in items) == list(range(1, len(ended) + 1))
            errors = [i for i in items if i["ask"] == poisoned]
            assert len(errors) == 1
            code, out = relay_verify(tmp_path, items, f"{b.url}/.well-known/jwks.json")
            assert code == 0, out
            assert f"an error receipt: ask {poisoned} could not be receipted" in out, out
            assert "1 error receipt among them" in out, out
            # The poisoned ask's own reader gets its error receipt, not a 500.
            status, kind, token = await raw(b, f"/v1/asks/{poisoned}/receipt")
            assert status == 200, token
            assert token.strip() == next(i["receipt"] for i in errors), (kind, token)
            assert await store.receipt_owed(before=float("inf"), limit=1000) == []
        finally:
            await b.stop()
            await store.aclose()
