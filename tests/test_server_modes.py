"""`relay serve` in Socket Mode, `relay ask` straight to Slack, and RelayProvider failing over."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator

import pytest
from redis_server import RedisServer

from relay import AskUserQuestionRequest
from relay.client import RelayProvider
from relay.store.redis import RedisStore
from relay.testing import FakeSlack
from tests.proxy import Proxy
from tests.server_env import TOKEN, free_port, relay_env, relay_server, start_relay
from tests.slack_env import question, result, slack_env

ASK = {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}


async def test_relay_serve_in_socket_mode_needs_no_public_url() -> None:
    async with (
        FakeSlack(signing_secret="unused") as slack,
        relay_server(slack, socket_mode=True) as relay,
    ):
        await slack.wait_for_socket(timeout=10)
        status, created = await relay.request("POST", "/v1/asks", json=ASK)
        assert status == 201
        message = await slack.wait_for_message()
        await slack.click(message, "yes", user="U0ALICE")  # delivered over the WebSocket
        _, record = await relay.request("GET", f"/v1/asks/{created['id']}?wait=10")
        assert record["status"] == "answered"
        # No HTTP endpoint for Slack exists in Socket Mode.
        status, _ = await relay.request("POST", "/slack/events", token=None, data="x")
        assert status == 404


async def test_relay_ask_straight_to_slack_over_socket_mode() -> None:
    async with FakeSlack(signing_secret="unused") as slack:
        env = relay_env(slack, free_port(), SLACK_APP_TOKEN="xapp-1-cli", RELAY_CHANNEL="C0CLI")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "relay.cli",
            "ask",
            "-q",
            "Proceed?",
            "-o",
            "yes",
            "-o",
            "no",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        await slack.wait_for_socket(timeout=20)
        message = await slack.wait_for_message(timeout=20)
        assert message.channel == "C0CLI"
        await slack.click(message, "no", user="U0BOB")
        out, err = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 0, err.decode()
        assert json.loads(out) == {"answers": [{"id": "answer", "selected": ["no"]}]}


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(signing_secret="server-signing-secret") as fake:
        yield fake


async def test_relay_provider_gets_its_answer_from_another_replica_when_its_own_dies(
    slack: FakeSlack, redis_server: RedisServer
) -> None:
    a = await start_relay(relay_env(slack, free_port(), REDIS_URL=redis_server.url))
    b = await start_relay(relay_env(slack, free_port(), REDIS_URL=redis_server.url))
    slack.interactivity_url = f"{b.url}/slack/events"
    try:
        async with Proxy(a.url) as proxy:
            provider = RelayProvider(proxy.url, TOKEN, poll=1.0)
            task = asyncio.create_task(provider.ask(AskUserQuestionRequest([question()])))
            message = await slack.wait_for_message()
            await asyncio.wait_for(proxy.polling.wait(), 10)  # the ask exists; A holds a poll
            await a.stop(signal.SIGKILL)  # the replica the agent talks to dies mid-wait
            proxy.backend = b.url  # the load balancer routes to the survivor
            await slack.click(message, "prod", user="U0ALICE")
            answer = await asyncio.wait_for(task, 30)
            assert answer.answers[0].selected == ("prod",)
            await provider.aclose()
    finally:
        for relay in (a, b):
            if relay.process.returncode is None:
                await relay.stop()


async def test_the_in_process_provider_works_on_redis_too(redis_server: RedisServer) -> None:
    store = RedisStore(url=redis_server.url)
    async with slack_env(store=store) as env:
        task = env.ask(question())
        message = await env.message()
        assert await store.count_pending() == 1
        await env.slack.click(message, "staging", user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("staging",)
    await store.aclose()


@pytest.mark.parametrize("socket_mode", [False, True])
async def test_a_healthy_start_logs_no_warning(socket_mode: bool) -> None:
    async with (
        FakeSlack(signing_secret="unused") as slack,
        relay_server(slack, socket_mode=socket_mode) as relay,
    ):
        if socket_mode:
            await slack.wait_for_socket(timeout=10)
        status, _ = await relay.request("GET", "/readyz", token=None)
        assert status == 200
        assert not [line for line in relay.log if " WARNING " in line or " ERROR " in line]


async def test_relay_serve_learns_its_identity_before_the_first_click() -> None:
    # The first click must not wait for auth.test: Slack wants its ack within 3 s.
    async with FakeSlack(signing_secret="unused") as slack, relay_server(slack):
        call = await slack.wait_for_call("auth.test", timeout=10)
        assert call.ok
        assert not slack.calls_to("chat.postMessage")
