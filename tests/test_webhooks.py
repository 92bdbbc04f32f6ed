"""Signed outcome webhooks: signatures, the SSRF policy, retries, and deliveries that
survive a replica's restart, against a real aiohttp receiver."""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
import signal
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from redis_server import RedisServer

from relay.asks.events import AskEvent
from relay.client import verify_webhook
from relay.config.settings import Settings
from relay.errors import RelayConfigError
from relay.receipts.keys import write_signing_key
from relay.seam.questions import AgentRef, AskUserQuestionItem, AskUserQuestionRequest
from relay.server.metrics import Metrics
from relay.store.memory import MemoryStore
from relay.store.record import AskError, AskRecord, AskStatus, Target
from relay.testing import FakeSlack
from relay.webhooks import (
    CallbackRefused,
    HostPolicy,
    Subscription,
    Webhooks,
    WebhookSettings,
    sign,
    token_secret,
)
from relay.webhooks.policy import parse_networks
from relay.webhooks.signing import owner_secret
from tests.documented import assert_documented
from tests.server_env import TOKEN, Relay, free_port, relay_env, relay_server, start_relay
from tests.webhook_env import Receiver

KEY = "webhook-key-for-tests-0123456789abcdef"
LOOPBACK = HostPolicy(hosts=frozenset({"127.0.0.1"}), networks=parse_networks(["127.0.0.1/32"]))


# -- signatures -------------------------------------------------------------------------


def test_a_signature_verifies_only_for_its_body_secret_and_time() -> None:
    body = b'{"id":"evt_1"}'
    header = sign(body, "s3cret", at=1_700_000_000)
    assert verify_webhook(body, header, "s3cret", now=1_700_000_100)
    assert verify_webhook(body.decode(), header, "s3cret", now=1_700_000_100)
    assert not verify_webhook(body + b" ", header, "s3cret", now=1_700_000_100)
    assert not verify_webhook(body, header, "other", now=1_700_000_100)
    assert not verify_webhook(body, header, "s3cret", now=1_700_000_301)  # replayed late
    assert not verify_webhook(body, header, "s3cret", tolerance=10, now=1_700_000_100)
    for bad in (None, "", "v1=abc", "t=1700000000", "t=soon,v1=00", "garbage"):
        assert not verify_webhook(body, bad, "s3cret", now=1_700_000_000)
    # A rotated secret: either signature of several passes.
    both = header + "," + sign(body, "new", at=1_700_000_000).split(",")[1]
    assert verify_webhook(body, both, "new", now=1_700_000_000)


def test_each_token_has_its_own_secret_that_the_token_alone_does_not_give() -> None:
    assert token_secret(KEY, "token-a") == token_secret(KEY, "token-a")
    assert token_secret(KEY, "token-a") != token_secret(KEY, "token-b")
    assert token_secret(KEY, "token-a") != token_secret("another-key" * 4, "token-a")


# -- the SSRF policy ------------------------------------------------------------------------


def test_only_allowlisted_hosts_and_public_addresses_may_be_called() -> None:
    policy = HostPolicy(hosts=frozenset({"hooks.example.com", "*.corp.example", "10.1.2.3"}))
    assert policy.check_url("https://hooks.example.com/relay") == "hooks.example.com"
    assert policy.check_url("https://ci.corp.example:8443/x") == "ci.corp.example"
    for url, why in (
        ("ftp://hooks.example.com/", r"http\(s\)"),
        ("https://user:pw@hooks.example.com/", "password"),
        ("https://evil.example/", "allowlist"),
        ("https://corp.example/", "allowlist"),  # *.corp.example is subdomains only
        ("https://hooks.example.com.evil.example/", "allowlist"),
        ("https://10.1.2.3/", "not a public address"),  # listed, but private
        ("https://hooks.example.com:99999/", "not a URL"),
    ):
        with pytest.raises(CallbackRefused, match=why):
            policy.check_url(url)
    for address in (
        "127.0.0.1",
        "10.0.0.1",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # the cloud metadata service
        "100.64.0.1",
        "0.0.0.0",  # noqa: S104 - an address to refuse, not one to bind
        "::1",
        "fe80::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "224.0.0.1",
        # IPv6 forms that embed, or route to, a non-public IPv4 address.
        "::127.0.0.1",  # IPv4-compatible
        "::a9fe:a9fe",  # IPv4-compatible 169.254.169.254
        "::ffff:10.0.0.1",
        "64:ff9b::7f00:1",  # NAT64 (RFC 6052) to 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 to the metadata service
        "64:ff9b:1::5db8:d822",  # local-use NAT64 (RFC 8215)
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2002:c0a8:101::1",  # 6to4 of 192.168.1.1
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
        "2001:0:4136:e378:8000:63bf:a2d4:29cb",  # Teredo with a public client
        "fec0::1",  # site-local
        "fefe::1",  # site-local
    ):
        with pytest.raises(CallbackRefused, match="not a public address"):
            policy.check_address(ipaddress.ip_address(address), "h")
    policy.check_address(ipaddress.ip_address("93.184.216.34"), "h")
    # The same public IPv4 address through NAT64, 6to4 or IPv4-mapped is allowed.
    for address in ("64:ff9b::5db8:d822", "2002:5db8:d822::1", "::ffff:93.184.216.34"):
        policy.check_address(ipaddress.ip_address(address), "h")
    policy.check_address(ipaddress.ip_address("2606:4700::6810:84e5"), "h")
    allowed = HostPolicy(hosts=frozenset(), networks=parse_networks(["10.0.0.0/8"]))
    allowed.check_address(ipaddress.ip_address("10.9.9.9"), "h")
    allowed.check_address(ipaddress.ip_address("::ffff:10.9.9.9"), "h")
    allowed.check_address(ipaddress.ip_address("64:ff9b::a09:909"), "h")


# -- the sender, in process ---------------------------------------------------------------


def ended(owner: str = "owner-1") -> AskRecord:
    question = AskUserQuestionItem(id="go", question="Ship?")
    return AskRecord(
        id=uuid.uuid4().hex,
        request=AskUserQuestionRequest((question,), agent=AgentRef("agent-1")),
        target=Target(channel="C1", timeout=60),
        created_at=datetime.now(UTC),
        messages=(None,),
        responses=(None,),
        owner=owner,
    )


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver() as running:
        yield running


async def sender(store: MemoryStore, policy: HostPolicy = LOOPBACK, **extra: float) -> Webhooks:
    settings = WebhookSettings(
        key=KEY, policy=policy, backoff=0.05, poll_interval=0.05, sweep_interval=0.1, **extra
    )
    webhooks = Webhooks(store=store, settings=settings)
    webhooks.start()
    return webhooks


async def end(store: MemoryStore, webhooks: Webhooks, record: AskRecord, url: str) -> None:
    await store.create(record=record)
    await webhooks.subscribe(record, Subscription(url))
    error = AskError("ASK_ABORTED", "aborted", "aborted")
    await store.finish(
        ask_id=record.id, status=AskStatus.ABORTED, error=error, at=record.created_at
    )
    webhooks.observe(AskEvent("aborted", record.id))


async def test_a_failing_receiver_gets_the_same_event_again_until_it_succeeds(
    receiver: Receiver,
) -> None:
    store = MemoryStore()
    webhooks = await sender(store)
    results: list[str] = []
    webhooks.on_result = results.append  # (the relay_webhook_deliveries_total counter)
    receiver.fail = 3
    record = ended()
    try:
        await end(store, webhooks, record, f"{receiver.url}/hook")
        got = await receiver.wait_for(4)
    finally:
        await webhooks.aclose()
    assert results == ["retried"] * 3 + ["delivered"]
    assert len({r.headers["X-Relay-Event-Id"] for r in got}) == 1
    assert len({r.body for r in got}) == 1  # the same event, re-signed each time
    last = got[-1]
    secret = token_secret(KEY, "unused")  # (a wrong secret fails)
    assert not verify_webhook(last.body, last.headers["X-Relay-Signature"], secret)

    assert verify_webhook(
        last.body, last.headers["X-Relay-Signature"], owner_secret(KEY, "owner-1")
    )
    assert last.json["type"] == "ask.aborted"
    assert last.json["ask"]["id"] == record.id
    assert last.json["ask"]["error"]["reason"] == "aborted"
    state = await store.hook_state(event_id=last.headers["X-Relay-Event-Id"])
    assert state is not None
    assert (state["state"], state["attempts"]) == ("sent", "4")


async def test_an_end_seen_twice_is_sent_once(receiver: Receiver) -> None:
    store = MemoryStore()
    webhooks = await sender(store)
    record = ended()
    try:
        await end(store, webhooks, record, f"{receiver.url}/hook")
        webhooks.observe(AskEvent("aborted", record.id))  # a second replica's event, say
        await webhooks.subscribe(record, Subscription(f"{receiver.url}/hook"))  # a replay
        await receiver.wait_for(1)
    finally:
        await webhooks.aclose()
    assert len(receiver.received) == 1
    assert len(store._outbox) == 1  # one delivery owed, however often the end was seen
    assert await store.hook_watched() == []  # and no sweep will enqueue it again


async def test_a_delivery_gives_up_after_its_time(receiver: Receiver) -> None:
    store = MemoryStore()
    webhooks = await sender(store, retry_for=0.3)
    metrics = Metrics(store=store)
    webhooks.on_result = metrics.webhook_result
    receiver.fail = 1000
    record = ended()
    try:
        await end(store, webhooks, record, f"{receiver.url}/hook")
        await receiver.wait_for(2)
        event_id = receiver.received[0].headers["X-Relay-Event-Id"]
        deadline = time.monotonic() + 10
        while (state := await store.hook_state(event_id=event_id)) and state["state"] != "failed":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
    finally:
        await webhooks.aclose()
    assert state is not None
    assert state["error"] == "HTTP 500"
    text = (await metrics.render()).decode()
    assert 'relay_webhook_deliveries_total{result="failed"} 1.0' in text
    assert 'relay_webhook_deliveries_total{result="retried"}' in text


async def test_redirects_are_not_followed(receiver: Receiver) -> None:
    store = MemoryStore()
    webhooks = await sender(store)
    receiver.redirect_to = f"{receiver.url}/elsewhere"
    try:
        await end(store, webhooks, ended(), f"{receiver.url}/hook")
        await receiver.wait_for(2)
    finally:
        await webhooks.aclose()
    assert {r.path for r in receiver.received} == {"/hook"}


async def test_a_name_that_resolves_to_loopback_is_refused(receiver: Receiver) -> None:
    store = MemoryStore()
    port = receiver.url.rsplit(":", 1)[1]
    policy = HostPolicy(hosts=frozenset({"localhost"}))  # allowlisted, but not its address
    webhooks = await sender(store, policy)
    record = ended()
    try:
        await end(store, webhooks, record, f"http://localhost:{port}/hook")
        deadline = time.monotonic() + 10
        while True:
            watched = await store.hook_watched()
            states = [d.state for d in store._outbox.values()]
            if states == ["failed"]:
                break
            assert time.monotonic() < deadline, (watched, states)
            await asyncio.sleep(0.05)
    finally:
        await webhooks.aclose()
    assert receiver.received == []
    (delivery,) = store._outbox.values()
    assert "not a public address" in (delivery.error or "")


# -- the relay, end to end ------------------------------------------------------------------

ASK = {"questions": [{"id": "go", "question": "Ship?", "options": [{"label": "yes"}]}]}


def webhook_env(**extra: str) -> dict[str, str]:
    return {
        "RELAY_WEBHOOK_KEY": KEY,
        "RELAY_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
        "RELAY_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
        "RELAY_WEBHOOK_BACKOFF": "0.2",
        **extra,
    }


async def test_an_answered_ask_is_posted_signed_to_its_callback(receiver: Receiver) -> None:
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        slack.add_user("U0ALICE", name="alice")
        async with relay_server(slack, **webhook_env()) as relay:
            body = {**ASK, "callback_url": f"{receiver.url}/relay"}
            status, made = await relay.request("POST", "/v1/asks", json=body)
            assert status == 201, made
            await slack.click(await slack.wait_for_message(), "yes", user="U0ALICE")
            (got,) = await receiver.wait_for(1)
            # Aborted and timed-out asks say so too.
            _, aborted = await relay.request("POST", "/v1/asks", json=body)
            await relay.request("DELETE", f"/v1/asks/{aborted['id']}")
            timing = {**body, "slack": {"timeout_s": 0.2}}
            _, timed = await relay.request("POST", "/v1/asks", json=timing)
            more = await receiver.wait_for(3)
    secret = token_secret(KEY, TOKEN)
    assert verify_webhook(got.body, got.headers["X-Relay-Signature"], secret)
    for delivered in more:
        assert_documented(delivered.json, "WebhookEvent")
    assert got.headers["X-Relay-Event-Type"] == "ask.answered"
    event = got.json
    assert event["id"] == got.headers["X-Relay-Event-Id"]
    assert event["ask"]["id"] == made["id"]
    assert event["ask"]["answered_by"] == {"id": "U0ALICE", "name": "alice"}
    assert event["ask"]["questions"] == ASK["questions"]
    kinds = {r.json["ask"]["id"]: r.json["type"] for r in more}
    assert kinds[aborted["id"]] == "ask.aborted"
    assert kinds[timed["id"]] == "ask.timed_out"


async def test_an_approval_with_a_callback_posts_its_end_as_an_ask_does(receiver: Receiver) -> None:
    approval = {
        "tool": "Bash",
        "input": {"command": "npm test"},
        "agent": {"id": "claude-code:s1", "name": "Claude Code"},
        "callback_url": f"{receiver.url}/relay",
    }
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        slack.add_user("U0ALICE", name="alice")
        async with relay_server(slack, **webhook_env()) as relay:
            status, made = await relay.request("POST", "/v1/approvals", json=approval)
            assert status == 201, made
            await slack.click(await slack.wait_for_message(), "Allow once", user="U0ALICE")
            (got,) = await receiver.wait_for(1)
            refused = {**approval, "callback_url": "http://evil.example/hook"}
            status, body = await relay.request("POST", "/v1/approvals", json=refused)
            assert (status, body["error"]["code"]) == (400, "CALLBACK_NOT_ALLOWED")
            assert len(slack.calls_to("chat.postMessage")) == 1  # the refused one posted nothing
    assert verify_webhook(got.body, got.headers["X-Relay-Signature"], token_secret(KEY, TOKEN))
    assert_documented(got.json, "WebhookEvent")
    assert (got.json["type"], got.json["ask"]["id"]) == ("ask.answered", made["id"])
    assert got.json["ask"]["answered_by"] == {"id": "U0ALICE", "name": "alice"}


async def test_a_callback_off_the_allowlist_is_refused_before_anything_is_posted() -> None:
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        async with relay_server(slack, **webhook_env()) as relay:
            for url in (
                "http://169.254.169.254/latest/meta-data",
                "http://evil.example/hook",
                "file:///etc/passwd",
                "http://localhost:3000/",
            ):
                status, body = await relay.request(
                    "POST", "/v1/asks", json={**ASK, "callback_url": url}
                )
                assert (status, body["error"]["code"]) == (400, "CALLBACK_NOT_ALLOWED"), url
            status, body = await relay.request(
                "POST",
                "/v1/asks",
                json={**ASK, "callback_url": "http://127.0.0.1/", "callback_events": ["votes"]},
            )
            assert (status, body["error"]["code"]) == (400, "CALLBACK_NOT_ALLOWED")
        async with relay_server(slack) as plain:
            status, body = await plain.request(
                "POST", "/v1/asks", json={**ASK, "callback_url": "https://hooks.example.com/"}
            )
            assert (status, body["error"]["code"]) == (400, "CALLBACK_NOT_ALLOWED")
            assert "RELAY_WEBHOOK_KEY" in body["error"]["message"]
        assert slack.calls_to("chat.postMessage") == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
async def test_a_pending_delivery_survives_the_replica_and_is_sent_once(
    redis_server: RedisServer, receiver: Receiver, sig: int
) -> None:
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        slack.add_user("U0ALICE", name="alice")
        env = relay_env(slack, free_port(), REDIS_URL=redis_server.url, **webhook_env())
        a: Relay = await start_relay(env)
        b: Relay | None = None
        try:
            slack.interactivity_url = f"{a.url}/slack/events"
            receiver.fail = 10_000  # down: the delivery stays owed
            body = {**ASK, "callback_url": f"{receiver.url}/relay"}
            _, made = await a.request("POST", "/v1/asks", json=body)
            await slack.click(await slack.wait_for_message(), "yes", user="U0ALICE")
            await a.wait_for_log("webhook failed")
            await a.stop(sig)
            receiver.fail = 0
            failed = len(receiver.received)
            # Two replicas come up on the same Redis: the delivery is sent, by one of them.
            a = await start_relay(env)
            b = await start_relay(
                relay_env(slack, free_port(), REDIS_URL=redis_server.url, **webhook_env())
            )
            got = await receiver.wait_for(failed + 1, timeout=60)
            await asyncio.sleep(1.0)  # (proving an absence: no second send)
        finally:
            await a.stop()
            if b is not None:
                await b.stop()
    assert len(receiver.received) == failed + 1
    last = got[-1]
    assert last.json["ask"]["id"] == made["id"]
    assert verify_webhook(last.body, last.headers["X-Relay-Signature"], token_secret(KEY, TOKEN))
    assert {r.headers["X-Relay-Event-Id"] for r in receiver.received} == {
        last.headers["X-Relay-Event-Id"]
    }


async def test_two_replicas_send_each_delivery_once(
    redis_server: RedisServer, receiver: Receiver
) -> None:
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        env = {"REDIS_URL": redis_server.url, **webhook_env()}
        a = await start_relay(relay_env(slack, free_port(), **env))
        b = await start_relay(relay_env(slack, free_port(), **env))
        try:
            body = {**ASK, "callback_url": f"{receiver.url}/relay"}
            ids = []
            for i in range(6):
                replica = a if i % 2 else b
                _, made = await replica.request("POST", "/v1/asks", json=body)
                ids.append(made["id"])
                await (b if i % 2 else a).request("DELETE", f"/v1/asks/{made['id']}")
            await receiver.wait_for(6)
            await asyncio.sleep(1.0)  # (proving an absence: no duplicates follow)
        finally:
            await a.stop()
            await b.stop()
    assert sorted(r.json["ask"]["id"] for r in receiver.received) == sorted(ids)
    assert all(json.loads(r.body)["type"] == "ask.aborted" for r in receiver.received)


# -- the operator's settings ------------------------------------------------------------


def settings_with(**env: str) -> Settings:
    base = {
        "SLACK_BOT_TOKEN": "xoxb-1",
        "SLACK_SIGNING_SECRET": "s",
        "RELAY_API_TOKENS": "t" * 20,
    }
    return Settings.from_env({**base, **env})


def test_webhook_settings_are_all_or_nothing_and_checked() -> None:
    assert settings_with().webhook_key is None
    good = settings_with(
        RELAY_WEBHOOK_KEY=KEY,
        RELAY_WEBHOOK_ALLOWED_HOSTS="Hooks.Example.com, *.corp.example",
        RELAY_WEBHOOK_ALLOWED_NETWORKS="10.0.0.0/8",
    )
    assert good.webhook_hosts == frozenset({"hooks.example.com", "*.corp.example"})
    assert good.webhook_networks == ("10.0.0.0/8",)
    assert KEY not in repr(good)
    for env, setting in (
        ({"RELAY_WEBHOOK_ALLOWED_HOSTS": "hooks.example.com"}, "RELAY_WEBHOOK_KEY"),
        ({"RELAY_WEBHOOK_KEY": "short", "RELAY_WEBHOOK_ALLOWED_HOSTS": "h"}, "RELAY_WEBHOOK_KEY"),
        ({"RELAY_WEBHOOK_KEY": KEY}, "RELAY_WEBHOOK_ALLOWED_HOSTS"),
        (
            {"RELAY_WEBHOOK_KEY": KEY, "RELAY_WEBHOOK_ALLOWED_HOSTS": "https://h.example/x"},
            "RELAY_WEBHOOK_ALLOWED_HOSTS",
        ),
        (
            {
                "RELAY_WEBHOOK_KEY": KEY,
                "RELAY_WEBHOOK_ALLOWED_HOSTS": "h.example",
                "RELAY_WEBHOOK_ALLOWED_NETWORKS": "intranet",
            },
            "RELAY_WEBHOOK_ALLOWED_NETWORKS",
        ),
    ):
        with pytest.raises(RelayConfigError) as info:
            settings_with(**env)
        assert info.value.setting == setting


def test_relay_webhook_secret_prints_the_tokens_secret() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "relay.cli", "webhook-secret"],
        env={"PATH": "/usr/bin:/bin", "RELAY_WEBHOOK_KEY": KEY, "RELAY_TOKEN": TOKEN},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, token_secret(KEY, TOKEN))
    missing = subprocess.run(
        [sys.executable, "-m", "relay.cli", "webhook-secret"],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2
    assert "RELAY_WEBHOOK_KEY" in missing.stderr


# -- the outbox, on each store ----------------------------------------------------------


@pytest.fixture
def outboxes(replica_stores: list[Any]) -> list[Any]:
    """The store's outbox, and (for Redis) a second replica's view of it."""
    return replica_stores


async def test_a_delivery_is_owed_once_and_leased_to_one_replica(outboxes: list[Any]) -> None:
    a, b = outboxes
    record = ended()
    await a.create(record=record)
    await a.hook_subscribe(ask_id=record.id, subscription='{"url": "u"}', ttl=60)
    assert await b.hook_watched() == [record.id]
    now = time.time()
    assert await a.hook_enqueue(event_id="e1", ask_id=record.id, delivery="d", due=now, final=True)
    assert not await b.hook_enqueue(
        event_id="e1", ask_id=record.id, delivery="d", due=now, final=True
    )
    assert await b.hook_watched() == []
    # Claimed by A: B gets nothing until A's lease passes.
    (claimed,) = await a.hook_claim(now=now, lease=30, limit=10)
    assert (claimed.event_id, claimed.delivery, claimed.attempts) == ("e1", "d", 0)
    assert await b.hook_claim(now=now + 29, lease=30, limit=10) == []
    (taken,) = await b.hook_claim(now=now + 31, lease=30, limit=10)  # A died mid-send
    assert taken.event_id == "e1"
    await b.hook_retry(event_id="e1", due=now + 40, error="HTTP 500")
    assert await a.hook_claim(now=now + 39, lease=30, limit=10) == []
    (again,) = await a.hook_claim(now=now + 40, lease=30, limit=10)
    assert again.attempts == 1
    await a.hook_settle(event_id="e1", outcome="sent", error=None, keep=60)
    assert await b.hook_claim(now=now + 1000, lease=30, limit=10) == []
    state = await b.hook_state(event_id="e1")
    assert state is not None
    assert (state["state"], state["attempts"]) == ("sent", "2")
    # A settled event id is remembered: seeing the end again owes nothing.
    assert not await b.hook_enqueue(
        event_id="e1", ask_id=record.id, delivery="d", due=now, final=True
    )


async def test_progress_events_are_sent_only_when_asked_for_once_each(receiver: Receiver) -> None:
    store = MemoryStore()
    webhooks = await sender(store)
    asked, unasked = ended(), ended()
    url = f"{receiver.url}/hook"
    try:
        for record, events in ((asked, ("voted", "reminded")), (unasked, ())):
            await store.create(record=record)
            await webhooks.subscribe(record, Subscription(url, events))
            vote = AskEvent("voted", record.id, {"question": "go", "by": "U0ALICE", "votes": 1})
            webhooks.observe(vote)
            webhooks.observe(vote)  # seen twice (say, by two replicas): owed once
            webhooks.observe(AskEvent("reminded", record.id, {"reminder": 1}))
        progress = await receiver.wait_for(2)
        for record in (asked, unasked):
            error = AskError("ASK_ABORTED", "aborted", "aborted")
            await store.finish(
                ask_id=record.id, status=AskStatus.ABORTED, error=error, at=record.created_at
            )
            webhooks.observe(AskEvent("aborted", record.id))
        got = await receiver.wait_for(4)
    finally:
        await webhooks.aclose()
    assert sorted(r.json["type"] for r in progress) == ["ask.reminded", "ask.vote"]
    assert {r.json["ask"]["id"] for r in progress} == {asked.id}
    (vote_hook,) = [r for r in progress if r.json["type"] == "ask.vote"]
    assert vote_hook.json["event"] == {
        "name": "voted",
        "question": "go",
        "by": "U0ALICE",
        "votes": 1,
    }
    assert sorted(r.json["type"] for r in got) == [
        "ask.aborted",
        "ask.aborted",
        "ask.reminded",
        "ask.vote",
    ]


async def test_an_ends_body_carries_the_asks_signed_receipt(
    receiver: Receiver, tmp_path: Path
) -> None:
    key = tmp_path / "receipt-key.pem"
    write_signing_key(key)
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        env = webhook_env(RELAY_RECEIPT_KEY_FILE=str(key))
        async with relay_server(slack, **env) as relay:
            body = {**ASK, "callback_url": f"{receiver.url}/relay"}
            _, made = await relay.request("POST", "/v1/asks", json=body)
            await relay.request("DELETE", f"/v1/asks/{made['id']}")
            (got,) = await receiver.wait_for(1)
            _, served = await relay.request("GET", f"/v1/asks/{made['id']}/receipt")
    assert_documented(got.json, "WebhookEvent")
    assert got.json["type"] == "ask.aborted"
    assert got.json["receipt"] == served
    part = served.split(".")[1]
    payload = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    assert payload["ask"] == made["id"]
    assert payload["outcome"]["status"] == "aborted"
