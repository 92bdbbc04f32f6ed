"""Two `relay serve` replicas on one Redis: any replica answers, waits for and expires any ask."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator

import pytest
from redis_server import RedisServer

from relay.store.redis import RedisStore
from relay.testing import FakeMessage
from tests.replica_env import ASK, Cluster, post_click, running_cluster
from tests.slack_env import first_button


@pytest.fixture
async def cluster(redis_server: RedisServer) -> AsyncIterator[Cluster]:
    # C0ONCALL: a channel the API's requests may name (none may, unless listed).
    extra = {"RELAY_LOG_LEVEL": "debug", "RELAY_ALLOWED_CHANNELS": "C0ONCALL"}
    async with running_cluster(redis_server, **extra) as cluster:
        yield cluster


async def test_ask_on_a_click_on_b_answer_read_on_a(cluster: Cluster) -> None:
    _, created = await cluster.a.request("POST", "/v1/asks", json=ASK)
    message = await cluster.slack.wait_for_message()
    waiting = asyncio.create_task(cluster.a.request("GET", f"/v1/asks/{created['id']}?wait=10"))
    await cluster.slack.click(message, "yes", user="U0ALICE")
    _, record = await asyncio.wait_for(waiting, 10)
    assert record["status"] == "answered"
    assert record["answered_by"]["id"] == "U0ALICE"
    await cluster.slack.wait_until(lambda: message.updated)  # B updated A's message
    assert "Answered by <@U0ALICE>" in str(message.blocks)


async def test_a_long_poll_wakes_at_once_when_another_replica_claims(cluster: Cluster) -> None:
    # Made on B, waited for on A, answered on B: only pub/sub can tell A in time.
    _, created = await cluster.b.request("POST", "/v1/asks", json=ASK)
    message = await cluster.slack.wait_for_message()
    waiting = asyncio.create_task(cluster.a.request("GET", f"/v1/asks/{created['id']}?wait=10"))
    await cluster.a.wait_for_log(f"long-poll ask={created['id']}")
    clicked = time.monotonic()
    await cluster.slack.click(message, "no", user="U0BOB")
    _, record = await asyncio.wait_for(waiting, 10)
    assert record["status"] == "answered"
    assert time.monotonic() - clicked < 2.0  # woken by pub/sub, not by the 10 s wait running out


async def test_a_crashed_replica_loses_nothing(cluster: Cluster) -> None:
    _, created = await cluster.a.request("POST", "/v1/asks", json=ASK)
    message = await cluster.slack.wait_for_message()
    await cluster.a.stop(signal.SIGKILL)
    await cluster.slack.click(message, "yes", user="U0ALICE")
    _, record = await cluster.b.request("GET", f"/v1/asks/{created['id']}?wait=10")
    assert record["status"] == "answered"
    # A comes back and serves the same record.
    a = await cluster.restart("a")
    assert (await a.request("GET", f"/v1/asks/{created['id']}"))[1]["status"] == "answered"


async def test_expiry_happens_exactly_once_with_both_replicas_running(cluster: Cluster) -> None:
    body = {**ASK, "slack": {"timeout_s": 0.5}}
    ids = [(await cluster.a.request("POST", "/v1/asks", json=body))[1]["id"] for _ in range(5)]
    for ask_id in ids:
        _, record = await cluster.b.request("GET", f"/v1/asks/{ask_id}?wait=10")
        assert record["status"] == "timed_out"
    await cluster.slack.wait_until(lambda: all(m.updated for m in cluster.slack.messages))
    # Each message was withdrawn once: one replica won each expiry.
    assert len(cluster.slack.calls_to("chat.update")) == len(ids)


async def test_an_ask_expires_even_when_the_replica_that_made_it_is_gone(cluster: Cluster) -> None:
    _, created = await cluster.a.request(
        "POST", "/v1/asks", json={**ASK, "slack": {"timeout_s": 1}}
    )
    message = await cluster.slack.wait_for_message()
    await cluster.a.stop(signal.SIGKILL)
    _, record = await cluster.b.request("GET", f"/v1/asks/{created['id']}?wait=10")
    assert record["status"] == "timed_out"
    assert record["error"]["code"] == "ASK_ABORTED"
    await cluster.slack.wait_until(lambda: message.updated)
    assert "Timed out" in str(message.blocks)


async def test_concurrent_clicks_on_both_replicas_have_one_outcome_each(cluster: Cluster) -> None:
    count = 20
    created = [(await cluster.a.request("POST", "/v1/asks", json=ASK))[1] for _ in range(count)]
    messages: list[FakeMessage] = [
        await cluster.slack.wait_for_message(count=i + 1) for i in range(count)
    ]
    clicks = []
    for message in messages:
        for relay, user in ((cluster.a, "U0ALICE"), (cluster.b, "U0BOB")):
            payload = cluster.slack.build_block_actions(message, first_button(message), user=user)
            clicks.append(post_click(relay, payload))
    assert {status for status, _ in await asyncio.gather(*clicks)} == {200}
    winners = []
    for ask in created:
        _, record = await cluster.b.request("GET", f"/v1/asks/{ask['id']}?wait=10")
        assert record["status"] == "answered"
        winners.append(record["answered_by"]["id"])
    assert set(winners) <= {"U0ALICE", "U0BOB"}
    # Every loser was told who won, privately; nothing else changed.
    await cluster.slack.wait_until(lambda: len(cluster.slack.ephemerals) == count)
    await cluster.slack.wait_until(lambda: len(cluster.slack.calls_to("chat.update")) == count)


async def test_a_click_racing_a_delete_has_one_outcome(cluster: Cluster) -> None:
    for _ in range(10):
        _, created = await cluster.a.request("POST", "/v1/asks", json=ASK)
        message = await cluster.slack.wait_for_message(count=len(cluster.slack.messages))
        payload = cluster.slack.build_block_actions(message, first_button(message), user="U0BOB")
        _, (_, deleted) = await asyncio.gather(
            post_click(cluster.b, payload),
            cluster.a.request("DELETE", f"/v1/asks/{created['id']}"),
        )
        _, final = await cluster.b.request("GET", f"/v1/asks/{created['id']}")
        assert final["status"] in ("answered", "aborted")
        assert deleted["status"] == final["status"]  # DELETE reports the outcome that won


async def test_redis_down_fails_fast_and_service_resumes_when_it_returns(cluster: Cluster) -> None:
    _, pending = await cluster.a.request("POST", "/v1/asks", json=ASK)
    message = await cluster.slack.wait_for_message()
    cluster.redis.stop(save=True)

    started = time.monotonic()
    status, body = await cluster.a.request("POST", "/v1/asks", json=ASK)
    assert (status, body["error"]["code"]) == (502, "PROVIDER_FAILED")
    assert "cannot record new asks" in body["error"]["message"]
    assert time.monotonic() - started < 5
    assert len(cluster.slack.messages) == 1  # nothing was posted
    status, ready = await cluster.b.request("GET", "/readyz", token=None)
    assert status == 503
    assert "store" in ready
    status, body = await cluster.b.request("GET", f"/v1/asks/{pending['id']}")
    assert (status, body["error"]["code"]) == (503, "UNAVAILABLE")
    await cluster.slack.click(message, "yes", user="U0ALICE")
    notice = await cluster.slack.wait_for_ephemeral(user="U0ALICE")
    assert "cannot record answers right now" in notice.args["text"]

    cluster.redis.start()
    assert (await cluster.b.request("GET", "/readyz", token=None))[0] == 200
    await cluster.slack.click(message, "yes", user="U0ALICE")
    _, record = await cluster.a.request("GET", f"/v1/asks/{pending['id']}?wait=10")
    assert record["status"] == "answered"
    status, _ = await cluster.a.request("POST", "/v1/asks", json=ASK)
    assert status == 201


async def test_a_replica_killed_before_its_update_landed_is_swept_once_by_the_other(
    cluster: Cluster,
) -> None:
    _, created = await cluster.a.request("POST", "/v1/asks", json=ASK)
    message = await cluster.slack.wait_for_message()
    # A's withdrawal reaches Slack and hangs there; A dies before it lands.
    cluster.slack.fail("chat.update", delay=60, error="internal_error")
    status, deleted = await cluster.a.request("DELETE", f"/v1/asks/{created['id']}")
    assert (status, deleted["status"]) == (200, "aborted")
    await cluster.slack.wait_for_arrival("chat.update")
    await cluster.a.stop(signal.SIGKILL)
    # B's sweep claims it once the grace (5 s) is over, and shows the outcome.
    swept = await cluster.slack.wait_for_call("chat.update", timeout=15)
    assert swept.ok
    assert message.text == "Ship it? — withdrawn"
    assert not [b for b in message.blocks if b["type"] == "actions"]
    await cluster.b.wait_for_metric("relay_messages_swept_total", 1)  # and recorded as settled
    store = RedisStore(url=cluster.redis.url)
    try:
        assert await store.unsettled(ask_id=created["id"]) == frozenset()
        assert await store.next_unsettled(grace=0) is None  # nothing left for any sweep
    finally:
        await store.aclose()
    # Exactly once: the held call from A never landed, B's did.
    assert [c.ok for c in cluster.slack.calls_to("chat.update")] == [True]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
async def test_reminders_and_escalation_go_out_once_from_the_other_replica(
    cluster: Cluster, sig: int
) -> None:
    slack = {
        "allowed_users": ["U0ALICE"],
        "timeout_s": 30,
        "remind_after_s": 1.0,
        "escalate_after_s": 1.5,
        "escalate_users": ["U0BOB"],
        "escalate_channel": "C0ONCALL",
    }
    _, created = await cluster.a.request("POST", "/v1/asks", json={**ASK, "slack": slack})
    message = await cluster.slack.wait_for_message()
    await cluster.a.stop(sig)  # a rollout (SIGTERM) or a crash (SIGKILL): the ask stays
    escalation = await cluster.slack.wait_for_message(
        count=1, where=lambda m: m.channel == "C0ONCALL", timeout=15
    )
    assert "<@U0BOB>" in escalation.text
    reminder = await cluster.slack.wait_for_message(
        count=1, where=lambda m: m.thread_ts == message.ts and m.ts != message.ts, timeout=15
    )
    assert reminder.text.startswith(":alarm_clock: Reminder 1 of 1.")
    # Bob, added by the escalation, answers (clicks land on B); nothing more is posted for it.
    await cluster.slack.click(message, "yes", user="U0BOB")
    _, record = await cluster.b.request("GET", f"/v1/asks/{created['id']}?wait=10")
    assert record["status"] == "answered"
    assert record["answered_by"]["id"] == "U0BOB"
    assert len([m for m in cluster.slack.messages if m.channel == "C0ONCALL"]) == 1
    replies = [m for m in cluster.slack.messages if m.thread_ts == message.ts != m.ts]
    assert len(replies) == 1
