"""``ClickClaims``: a click's checks and claim in one step, on every store and topology.

The click path (``relay.slack.intake.clicks``) claims through ``claim_click`` when the store
holds the ask's unchanging part (``known``): the store itself refuses a click from another
message than the question's, an ask no longer pending and a question answered already, in the
same step as the claim. On Redis that step is one script; the last tests count the commands a
click makes.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as aioredis

from relay.store import AskStatus, MessageRef
from relay.store.base import ClickClaims
from relay.store.memory import MemoryStore
from relay.store.record import AskRecord
from relay.store.redis import RedisStore
from tests import test_store_contract as contract
from tests.slack_env import ask_id_of, first_button, question, result, slack_env
from tests.test_store_contract import (
    Stores,
    aborted,
    audit,
    eventually,
    new_ask,
    reply,
    still_waiting,
)

stores = contract.stores  # the contract's fixture: every store kind and Redis topology

HERE = ("C0123", "1700000000.000200")


def claims(store: object) -> ClickClaims:
    assert isinstance(store, ClickClaims)
    return store


async def test_a_click_on_an_unknown_ask_claims_nothing(stores: Stores) -> None:
    got = await claims(stores.main).claim_click(ask_id="nope", index=0, item=reply(), message=HERE)
    assert (got.outcome, got.record) == ("unknown", None)
    assert claims(stores.main).known(ask_id="nope") is None


async def test_known_holds_the_unchanging_part_of_an_ask_created_here(stores: Stores) -> None:
    record = new_ask()
    await stores.main.create(record=record)
    known = claims(stores.main).known(ask_id=record.id)
    assert known is not None
    assert (known.id, known.request, known.target, known.created_at, known.owner) == (
        record.id,
        record.request,
        record.target,
        record.created_at,
        record.owner,
    )
    assert known.meta == record.meta


async def test_a_click_from_another_message_is_refused_and_records_nothing(
    stores: Stores,
) -> None:
    record = new_ask()
    await stores.main.create(record=record)
    await stores.main.set_message(ask_id=record.id, index=0, message=MessageRef(*HERE))
    for elsewhere in (("C0123", "1700000000.999999"), ("C0OTHER", HERE[1]), (None, None)):
        got = await claims(stores.main).claim_click(
            ask_id=record.id, index=0, item=reply(), message=elsewhere
        )
        assert (got.outcome, got.record) == ("message_mismatch", None)
    current = await stores.replica().get(ask_id=record.id)
    assert current is not None
    assert current.pending
    assert current.responses == (None,)


async def test_a_click_from_its_message_claims_and_wakes_waiters_everywhere(
    stores: Stores,
) -> None:
    record = new_ask(questions=2)
    await stores.main.create(record=record)
    await stores.main.set_message(ask_id=record.id, index=1, message=MessageRef(*HERE))
    here = asyncio.create_task(stores.main.wait(ask_id=record.id, within=30))
    there = asyncio.create_task(stores.replica().wait(ask_id=record.id, within=30))
    first = await claims(stores.main).claim_click(
        ask_id=record.id,
        index=0,
        item=reply(0),
        message=HERE,  # (no message recorded: any)
    )
    assert first.outcome == "accepted"
    assert await still_waiting(here)
    click = reply(1, by="U2", label="No")
    last = await claims(stores.main).claim_click(
        ask_id=record.id, index=1, item=click, message=HERE
    )
    assert last.outcome == "completed"
    assert last.record is not None
    assert last.record.status is AskStatus.ANSWERED
    assert audit(last.record)[1] == (click.answered_by, click.answered_at)
    for waiter in (here, there):
        assert await asyncio.wait_for(waiter, 5) == last.record


async def test_a_click_on_an_answered_question_or_an_ended_ask_gets_the_record(
    stores: Stores,
) -> None:
    record = new_ask(questions=2)
    await stores.main.create(record=record)
    await claims(stores.main).claim_click(ask_id=record.id, index=0, item=reply(0), message=HERE)
    again = await claims(stores.replica()).claim_click(
        ask_id=record.id, index=0, item=reply(0, by="U2", label="No"), message=HERE
    )
    assert again.outcome == "already_answered"
    assert again.record is not None
    assert again.record.responses[0] is not None
    assert again.record.responses[0].selected == ("Yes",)
    await stores.main.finish(
        ask_id=record.id, status=AskStatus.ABORTED, error=aborted(), at=datetime.now(UTC)
    )
    late = await claims(stores.main).claim_click(
        ask_id=record.id, index=1, item=reply(1), message=HERE
    )
    assert late.outcome == "not_pending"
    assert late.record is not None
    assert late.record.status is AskStatus.ABORTED


async def _commands(client: aioredis.Redis) -> dict[str, int]:
    stats: dict[str, Any] = await client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(s["calls"]) for name, s in stats.items()}


# What the claim script itself calls (commandstats counts them too).
_IN_THE_SCRIPT = {"exists", "hget", "hsetnx", "hexists", "hset", "zrem", "pexpire", "publish"}
_IN_THE_SCRIPT |= {"hincrby", "hdel", "hgetall", "zadd"}  # (zadd: the unsettled index)


async def test_a_click_on_redis_is_one_script_and_nothing_else(redis_url: str) -> None:
    store = RedisStore(url=redis_url, prefix="oneclick:")
    admin = aioredis.Redis.from_url(redis_url)
    try:
        async with slack_env(store=store) as env:
            first = env.ask(question())
            await env.slack.click(await env.message(), "prod", user="U0ALICE")
            await result(first)  # (Redis has the script now: no NOSCRIPT, no SCRIPT LOAD)
            task = env.ask(question())
            message = await env.message(2)
            ask_id = ask_id_of(message)

            async def idle() -> bool:
                # Posted, and the agent's wait has read the ask once.
                watch = store._watches.get(ask_id)
                reader = store._reader
                return watch is not None and not watch.reading and (reader is None or reader.done())

            await eventually(idle, within=5)
            # The answered message's update is refused, so the store is not told afterwards
            # that it landed (the stale-message sweep's one script): only the click counts.
            env.slack.fail("chat.update", error="message_not_found", times=10)
            await admin.config_resetstat()
            await env.slack.click(message, "prod", user="U0ALICE")
            assert (await result(task)).answers[0].selected == ("prod",)
            await env.provider.drain()  # (the answered message's chat.update, too)
            calls = await _commands(admin)
        outside = {name: n for name, n in calls.items() if name not in _IN_THE_SCRIPT}
        outside.pop("config|resetstat", None)
        # The expiry task, woken when an ask ends, reads its indexes (when the sweep is next
        # due): its own commands, in the background, not the click's.
        outside.pop("zrange", None)
        outside.pop("zrangebyscore", None)
        outside.pop("info", None)
        assert outside == {"evalsha": 1}
        # The script reads the ask once (HGETALL), checks that copy and writes once: every
        # command inside it costs Redis more when its caches are cold (BENCHMARKS.md).
        assert calls["hgetall"] == 1
        assert calls["hset"] == 1
        assert calls.get("hget", 0) <= 1  # (the owner's, shared with the other end scripts)
        assert not {"exists", "hsetnx", "hexists"} & calls.keys()
    finally:
        await admin.aclose()


async def test_a_click_on_redis_still_refuses_a_forged_message(redis_url: str) -> None:
    store = RedisStore(url=redis_url, prefix="forged:")
    async with slack_env(store=store) as env:
        task = env.ask(question())
        message = await env.message()
        refused: list[dict[str, Any]] = []
        env.provider.events.subscribe(
            lambda event: refused.append(event.fields) if event.name == "refused" else None
        )
        payload = env.slack.build_block_actions(message, first_button(message), user="U0ALICE")
        payload["container"]["message_ts"] = "1.000000"  # signed, but not that question's
        assert (await env.slack.post_interaction(payload)).status == 200
        await env.slack.wait_until(lambda: bool(refused))
        assert refused[0]["why"] == "message_mismatch"
        assert not task.done()
        current = await store.get(ask_id=ask_id_of(message))
        assert current is not None
        assert current.pending
        await env.slack.click(message, "prod", user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("prod",)


class _EndsWhilePosting(MemoryStore):
    """An abort that lands while the question's post is in flight: the ask has ended by the
    time its message is recorded, so the ending could not withdraw that message."""

    async def set_message(
        self, *, ask_id: str, index: int, message: MessageRef
    ) -> AskRecord | None:
        await self.finish(ask_id=ask_id, status=AskStatus.ABORTED, error=None, at=datetime.now(UTC))
        return await super().set_message(ask_id=ask_id, index=index, message=message)


async def test_a_message_recorded_after_its_ask_ended_is_withdrawn_at_once() -> None:
    # The poster learns it from what set_message returns (no read of the ask after).
    async with slack_env(store=_EndsWhilePosting()) as env:
        task = env.ask(question())
        message = await env.message()
        await asyncio.gather(asyncio.wait_for(task, 5), return_exceptions=True)
        assert [c.args.get("ts") for c in env.slack.calls_to("chat.update")] == [message.ts]
        assert message.updated
        assert "staging" not in str(message.blocks)  # the buttons are gone
