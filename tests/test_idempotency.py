"""``Idempotency-Key`` on creates: a request sent again (its reply lost) posts one ask."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis_server import RedisServer

from relay import AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest
from relay.client import RelayProvider
from relay.errors import UserInteractionError
from relay.store.idempotency import IdempotencyStore
from relay.testing import FakeSlack
from tests.proxy import Proxy
from tests.server_env import (
    OTHER_TOKEN,
    TOKEN,
    Relay,
    free_port,
    relay_env,
    relay_server,
    start_relay,
)

ASK = {
    "questions": [
        {"id": "go", "question": "Ship it?", "options": [{"label": "yes"}, {"label": "no"}]}
    ]
}
APPROVAL = {"tool": "Bash", "input": {"command": "make deploy"}, "agent": {"id": "ci-7"}}


def key() -> dict[str, str]:
    return {"Idempotency-Key": str(uuid.uuid4())}


@pytest.fixture
def keys(replica_stores: list[Any]) -> list[IdempotencyStore]:
    """The store's key methods, and (for Redis) a second replica's view of the same keys."""
    return replica_stores


async def test_a_key_is_claimed_once_then_bound_then_replayed(
    keys: list[IdempotencyStore],
) -> None:
    a, b = keys
    first = await a.claim_key(owner="o1", key="k", fingerprint="f", lease=30)
    assert first.outcome == "new"
    # In flight: the same request elsewhere sees it, without an ask id yet.
    assert (await b.claim_key(owner="o1", key="k", fingerprint="f", lease=30)).outcome == "same"
    assert (await b.claim_key(owner="o1", key="k", fingerprint="f", lease=30)).ask_id is None
    other = await b.claim_key(owner="o1", key="k", fingerprint="g", lease=30)
    assert other.outcome == "conflict"
    await a.bind_key(owner="o1", key="k", fingerprint="f", ask_id="A1", window=30)
    replay = await b.claim_key(owner="o1", key="k", fingerprint="f", lease=30)
    assert (replay.outcome, replay.ask_id) == ("same", "A1")
    # Keys are per token: another owner's key of the same name is a new claim.
    assert (await b.claim_key(owner="o2", key="k", fingerprint="g", lease=30)).outcome == "new"
    # A bound key is never released (only a failed create's claim is).
    await b.release_key(owner="o1", key="k", fingerprint="f")
    assert (await a.claim_key(owner="o1", key="k", fingerprint="f", lease=30)).ask_id == "A1"


async def test_a_released_or_lapsed_claim_can_be_claimed_again(
    keys: list[IdempotencyStore],
) -> None:
    a, b = keys
    await a.claim_key(owner="o", key="k", fingerprint="f", lease=30)
    await a.release_key(owner="o", key="k", fingerprint="g")  # not its claim: kept
    assert (await b.claim_key(owner="o", key="k", fingerprint="f", lease=30)).outcome == "same"
    await a.release_key(owner="o", key="k", fingerprint="f")
    assert (await b.claim_key(owner="o", key="k", fingerprint="g", lease=0.2)).outcome == "new"
    assert (await a.claim_key(owner="o", key="k", fingerprint="g", lease=30)).outcome == "same"
    # The lease of a create that died in flight passes: the key is free again.
    deadline = time.monotonic() + 5
    while (await a.claim_key(owner="o", key="k", fingerprint="f", lease=30)).outcome != "new":
        assert time.monotonic() < deadline, "the lapsed claim was never freed"
        await asyncio.sleep(0.02)


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeSlack, Relay]]:
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        slack.add_user("U0ALICE", name="alice")
        async with relay_server(slack, RELAY_LOG_LEVEL="debug") as relay:
            yield slack, relay


async def test_the_same_key_and_body_return_the_same_ask_posted_once(
    env: tuple[FakeSlack, Relay],
) -> None:
    slack, relay = env
    headers = key()
    status, first = await relay.request("POST", "/v1/asks", json=ASK, headers=headers)
    assert status == 201
    status, again = await relay.request("POST", "/v1/asks", json=ASK, headers=headers)
    assert (status, again["id"]) == (201, first["id"])
    assert len(slack.calls_to("chat.postMessage")) == 1
    # Another key, or another token with the same key, is another ask.
    _, other = await relay.request("POST", "/v1/asks", json=ASK, headers=key())
    _, theirs = await relay.request(
        "POST", "/v1/asks", json=ASK, headers=headers, token=OTHER_TOKEN
    )
    assert len({first["id"], other["id"], theirs["id"]}) == 3


async def test_the_same_key_with_another_body_is_a_409(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    headers = key()
    await relay.request("POST", "/v1/asks", json=ASK, headers=headers)
    changed = {"questions": [{**ASK["questions"][0], "question": "Ship it now?"}]}
    status, body = await relay.request("POST", "/v1/asks", json=changed, headers=headers)
    assert status == 409
    assert body["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert "new key" in body["error"]["message"]
    assert len(slack.calls_to("chat.postMessage")) == 1


async def test_a_repeat_while_the_first_is_still_posting_waits_for_it(
    env: tuple[FakeSlack, Relay],
) -> None:
    slack, relay = env
    slack.fail("chat.postMessage", delay=1.0)  # the first create is slow to post
    headers = key()
    results = await asyncio.gather(
        *(relay.request("POST", "/v1/asks", json=ASK, headers=headers) for _ in range(3))
    )
    assert {status for status, _ in results} == {201}
    assert len({body["id"] for _, body in results}) == 1
    assert len(slack.calls_to("chat.postMessage")) == 1


async def test_a_malformed_key_is_refused_and_nothing_is_posted(
    env: tuple[FakeSlack, Relay],
) -> None:
    slack, relay = env
    for bad in ("has space", "x" * 256):
        status, body = await relay.request(
            "POST", "/v1/asks", json=ASK, headers={"Idempotency-Key": bad}
        )
        assert (status, body["error"]["code"]) == (400, "BAD_REQUEST")
        # An approval the client's rules allow at once posts nothing either, and is refused
        # all the same (the fuzz found it answered 200 with the key unread).
        allowed = {**APPROVAL, "client_verdict": "allow"}
        status, body = await relay.request(
            "POST", "/v1/approvals", json=allowed, headers={"Idempotency-Key": bad}
        )
        assert (status, body["error"]["code"]) == (400, "BAD_REQUEST")
    assert slack.calls_to("chat.postMessage") == []


async def test_a_failed_create_frees_its_key_for_a_retry(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    slack.fail("chat.postMessage", error="channel_not_found")
    headers = key()
    status, body = await relay.request("POST", "/v1/asks", json=ASK, headers=headers)
    assert (status, body["error"]["code"]) == (502, "PROVIDER_FAILED")
    status, body = await relay.request("POST", "/v1/asks", json=ASK, headers=headers)
    assert (status, body["status"]) == (201, "pending")


async def test_approvals_take_a_key_too(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    headers = key()
    _, first = await relay.request("POST", "/v1/approvals", json=APPROVAL, headers=headers)
    status, again = await relay.request("POST", "/v1/approvals", json=APPROVAL, headers=headers)
    assert (status, again["id"]) == (201, first["id"])
    assert len(slack.calls_to("chat.postMessage")) == 1
    other = {**APPROVAL, "input": {"command": "make clean"}}
    status, body = await relay.request("POST", "/v1/approvals", json=other, headers=headers)
    assert (status, body["error"]["code"]) == (409, "IDEMPOTENCY_KEY_REUSED")


async def test_relay_provider_retries_a_create_whose_reply_was_lost(
    env: tuple[FakeSlack, Relay],
) -> None:
    slack, relay = env
    async with Proxy(relay.url) as proxy:
        proxy.drop_replies = 2  # the relay posts the ask; the agent hears nothing, twice
        provider = RelayProvider(proxy.url, TOKEN, poll=5.0)
        question = AskUserQuestionItem(
            id="go", question="Ship?", options=(AskUserQuestionOption("yes"),)
        )
        asking = asyncio.create_task(provider.ask(AskUserQuestionRequest([question])))
        message = await slack.wait_for_message()
        await slack.click(message, "yes", user="U0ALICE")
        answer = await asyncio.wait_for(asking, 20)
        await provider.aclose()
    assert proxy.dropped == 2
    assert answer.answers[0].selected == ("yes",)
    assert len(slack.calls_to("chat.postMessage")) == 1


async def test_two_replicas_on_one_redis_post_a_key_once(redis_server: RedisServer) -> None:
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        env = {"REDIS_URL": redis_server.url}
        a = await start_relay(relay_env(slack, free_port(), **env))
        b = await start_relay(relay_env(slack, free_port(), **env))
        try:
            slack.fail("chat.postMessage", delay=1.0)
            headers = key()
            results = await asyncio.gather(
                a.request("POST", "/v1/asks", json=ASK, headers=headers),
                b.request("POST", "/v1/asks", json=ASK, headers=headers),
                b.request("POST", "/v1/asks", json=ASK, headers=headers),
            )
            assert {status for status, _ in results} == {201}
            assert len({body["id"] for _, body in results}) == 1
            assert len(slack.calls_to("chat.postMessage")) == 1
            other = {"questions": [{**ASK["questions"][0], "question": "Other?"}]}
            status, body = await a.request("POST", "/v1/asks", json=other, headers=headers)
            assert (status, body["error"]["code"]) == (409, "IDEMPOTENCY_KEY_REUSED")
        finally:
            await a.stop()
            await b.stop()


async def test_relay_provider_gives_up_on_a_relay_that_never_answers() -> None:
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack) as relay,
        Proxy(relay.url) as proxy,
    ):
        proxy.drop_replies = 1000  # every reply is lost
        provider = RelayProvider(proxy.url, TOKEN)
        question = AskUserQuestionItem(id="go", question="Ship?")
        with pytest.raises(UserInteractionError) as info:
            await asyncio.wait_for(provider.ask(AskUserQuestionRequest([question])), 60)
        await provider.aclose()
    assert info.value.code == "PROVIDER_FAILED"
    assert "after 7 attempts" in str(info.value)
    assert proxy.dropped == 7
    assert len(slack.calls_to("chat.postMessage")) == 1  # posted once, however often sent
