"""Stopping `relay serve` the way Kubernetes does (SIGTERM, 30 s grace) loses no ask."""

from __future__ import annotations

# Looks inside: no waiter may be left behind at shutdown, and only the provider knows its waiters.
import asyncio
import signal
import time
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import aiohttp
import pytest

from relay import AskUserQuestionRequest
from relay.client import RelayProvider
from relay.testing import FakeSlack
from tests.proxy import Proxy
from tests.server_env import SECRET, TOKEN, Relay, free_port, relay_env, start_relay
from tests.slack_env import question, slack_env

T = TypeVar("T")
ASK = {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(signing_secret=SECRET) as fake:
        fake.add_user("U0ALICE", name="alice")
        yield fake


async def start_pair(slack: FakeSlack, redis_url: str, **extra: str) -> tuple[Relay, Relay]:
    """Two replicas on one Redis; Slack delivers every click to B."""
    env = {"REDIS_URL": redis_url, "RELAY_LOG_LEVEL": "debug", **extra}
    a = await start_relay(relay_env(slack, free_port(), **env))
    b = await start_relay(relay_env(slack, free_port(), **env))
    slack.interactivity_url = f"{b.url}/slack/events"
    return a, b


async def answered(relay: Relay, polls: Awaitable[T], within: float = 5.0) -> T:
    """What the long-polls got, which must be at once (the log says why not)."""
    try:
        return await asyncio.wait_for(polls, within)
    except TimeoutError:
        raise AssertionError(
            f"still polling after {within} s; log:\n{''.join(relay.log)}"
        ) from None


async def stop_all(*relays: Relay) -> None:
    for relay in relays:
        if relay.process.returncode is None:
            await relay.stop(signal.SIGKILL)


async def test_sigterm_on_redis_leaves_api_asks_pending_for_the_other_replica(
    slack: FakeSlack, redis_url: str
) -> None:
    a, b = await start_pair(slack, redis_url)
    try:
        ids = [(await a.request("POST", "/v1/asks", json=ASK))[1]["id"] for _ in range(10)]
        await slack.wait_for_message(count=10)
        assert await a.stop(signal.SIGTERM) == 0  # a rolling deploy stops A
        assert not slack.calls_to("chat.update")  # no question was withdrawn
        for ask_id in ids:
            status, record = await b.request("GET", f"/v1/asks/{ask_id}")
            assert (status, record["status"]) == (200, "pending")
        for message in slack.messages:
            await slack.click(message, "yes", user="U0ALICE")  # delivered to B
        for ask_id in ids:
            _, record = await b.request("GET", f"/v1/asks/{ask_id}?wait=10")
            assert record["status"] == "answered"
    finally:
        await stop_all(a, b)


async def test_relay_provider_gets_its_answer_after_its_replica_is_terminated(
    slack: FakeSlack, redis_url: str
) -> None:
    a, b = await start_pair(slack, redis_url, RELAY_MAX_WAIT="60")
    try:
        async with Proxy(a.url) as proxy:
            provider = RelayProvider(proxy.url, TOKEN, poll=60.0)
            task = asyncio.create_task(provider.ask(AskUserQuestionRequest([question()])))
            try:
                message = await slack.wait_for_message()
                await a.wait_for_log("long-poll ask=")  # A holds the agent's 60 s long-poll
                proxy.backend = b.url  # the balancer stops routing to A, then A gets SIGTERM
                stopping = time.monotonic()
                # (This also caught a hang in closing Redis when SIGTERM landed while the
                # first long-poll subscribed: redis-py had swallowed the cancellation.)
                assert await a.stop(signal.SIGTERM) == 0
                assert time.monotonic() - stopping < 5.0  # well inside Kubernetes' 30 s grace
                await slack.click(message, "prod", user="U0ALICE")
                answer = await asyncio.wait_for(task, 20)
                assert answer.answers[0].selected == ("prod",)
                await slack.wait_until(lambda: message.updated)
                assert message.text == "Deploy where? — answered"  # and never withdrawn
            finally:
                task.cancel()
                await provider.aclose()
    finally:
        await stop_all(a, b)


async def test_sigterm_answers_an_open_long_poll_at_once_with_the_pending_record(
    slack: FakeSlack, redis_url: str
) -> None:
    a, b = await start_pair(slack, redis_url, RELAY_MAX_WAIT="60")
    try:
        # Ten asks owned by B, long-polled on A; and one created on A with ?wait=60.
        ids = [(await b.request("POST", "/v1/asks", json=ASK))[1]["id"] for _ in range(10)]
        polls = [a.request("GET", f"/v1/asks/{ask_id}?wait=60") for ask_id in ids]
        posting = asyncio.create_task(a.request("POST", "/v1/asks?wait=60", json=ASK))
        polling = asyncio.gather(*polls)
        for ask_id in ids:
            await a.wait_for_log(f"long-poll ask={ask_id}")
        await slack.wait_for_message(count=11)
        stopping = time.monotonic()
        a.process.send_signal(signal.SIGTERM)
        got = await answered(a, polling)
        post_status, posted = await answered(a, posting)
        assert [(status, record["status"]) for status, record in got] == [(200, "pending")] * 10
        assert (post_status, posted["status"]) == (201, "pending")
        assert await asyncio.wait_for(a.process.wait(), 5) == 0
        took = time.monotonic() - stopping
        assert took < 3.0, f"exit took {took:.1f} s with 60 s long-polls open"
        # Every ask lives on: answerable through B.
        for ask_id in (*ids, posted["id"]):
            assert (await b.request("GET", f"/v1/asks/{ask_id}"))[1]["status"] == "pending"
    finally:
        await stop_all(a, b)


async def test_memory_store_sigterm_still_closes_every_pending_ask(slack: FakeSlack) -> None:
    # Nothing survives a memory store: the waiting client learns so at once.
    relay = await start_relay(
        relay_env(slack, free_port(), RELAY_MAX_WAIT="60", RELAY_LOG_LEVEL="debug")
    )
    try:
        _, created = await relay.request("POST", "/v1/asks", json=ASK)
        message = await slack.wait_for_message()
        poll = asyncio.create_task(relay.request("GET", f"/v1/asks/{created['id']}?wait=60"))
        await relay.wait_for_log("long-poll ask=")
        relay.process.send_signal(signal.SIGTERM)
        _, record = await asyncio.wait_for(poll, 5)
        assert record["status"] == "aborted"
        assert record["error"]["reason"] == "closed"
        assert await asyncio.wait_for(relay.process.wait(), 5) == 0
        await slack.wait_until(lambda: message.updated)  # withdrawn in Slack
    finally:
        await stop_all(relay)


async def test_a_stopping_relay_closes_the_connection_of_a_released_long_poll(
    slack: FakeSlack, redis_url: str
) -> None:
    # The client must not reuse a connection to a replica that is going away.
    a, b = await start_pair(slack, redis_url, RELAY_MAX_WAIT="60")
    try:
        _, created = await b.request("POST", "/v1/asks", json=ASK)
        async with aiohttp.ClientSession(headers=a.headers()) as session:
            poll = asyncio.create_task(session.get(f"{a.url}/v1/asks/{created['id']}?wait=60"))
            await a.wait_for_log("long-poll ask=")
            a.process.send_signal(signal.SIGTERM)
            response = await asyncio.wait_for(poll, 5)
            assert response.headers.get("Connection", "").lower() == "close"
            response.release()
    finally:
        await stop_all(a, b)


async def test_api_asks_leave_no_trace_in_the_provider_that_made_them() -> None:
    # start() alone (the API's path) must not be remembered as an in-process wait: the set
    # grew by one id per API ask for the life of the process, and closing aborted them all.
    async with slack_env() as env:
        request = AskUserQuestionRequest([question()])
        records = [await env.provider.start(request) for _ in range(20)]
        for message in env.slack.messages[:10]:
            await env.slack.click(message, "prod", user="U0ALICE")
        for record in records[10:]:
            await env.provider.abort(record.id)
        assert env.provider._waiting == set()
        # An in-process ask() is remembered while it waits, and forgotten after.
        task = env.ask(question())
        message = await env.message(count=21)
        await env.slack.wait_until(lambda: len(env.provider._waiting) == 1)
        await env.slack.click(message, "prod", user="U0ALICE")
        await asyncio.wait_for(task, 5)
        assert env.provider._waiting == set()
