"""Load: 1,000 concurrent asks and 5,000 clicks against two replicas on one Redis.

Every ask gets five clicks (three people, two of them clicking twice) sent to a random
replica in a random order, with bounded concurrency; 100 asks race their clicks against a
timeout and 100 against a DELETE. Person *i* always clicks option *i*, so that the answer
recorded shows whose click it came from. Afterwards: exactly one outcome per ask, the
recorded responder is the one whose click won, every other click was told so privately, no
ask is pending, and neither replica holds descriptors beyond those it held after a warm-up
round, but for its (bounded) pools of connections to Redis and Slack.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from redis_server import RedisServer

from relay.testing import FakeMessage, FakeSlack
from tests.replica_env import post_click, start_replicas
from tests.server_env import SECRET, TOKEN, Relay
from tests.slack_env import ask_id_of

ASKS = 1_000
CLICKS_PER_ASK = 5  # 5,000 clicks
RACING_TIMEOUT = 100
RACING_DELETE = 100
WARMUP_ASKS = 100  # fills the connection pools to the load's concurrency first
CONCURRENCY = 48
# Connections to Redis and to Slack are pooled: the pools grow with the peak concurrency,
# not with the number of asks or clicks (a leak per ask would add a thousand).
POOLED = ("redis (state 01)", "slack (state 01)")
POOL_BOUND = 2 * CONCURRENCY
PEOPLE = ("U0ANN", "U0BEN", "U0CAT")
# Who clicks each ask, in which order before shuffling: two people click twice.
CLICKERS = ("U0ANN", "U0BEN", "U0CAT", "U0ANN", "U0BEN")
OPTIONS = [{"label": f"option of {person}"} for person in PEOPLE]
OUTCOMES = ("answered", "timed_out", "aborted")
METRIC = re.compile(r'(relay_asks_total|relay_asks_pending)(?:\{outcome="(\w+)"\})? (.+)')


@dataclass
class Cluster:
    slack: FakeSlack
    replicas: tuple[Relay, Relay]
    session: aiohttp.ClientSession
    peers: dict[int, str]  # port -> what listens there, to describe descriptors


@pytest.fixture
async def cluster(redis_server: RedisServer) -> AsyncIterator[Cluster]:
    # A load test of the relay: Slack's rate limits (which 1,000 asks pass at once) are not
    # under test here, and their 429s would be recorded as extra chat.update calls.
    async with FakeSlack(signing_secret=SECRET, rate_limits=False) as slack:
        for person in PEOPLE:
            slack.add_user(person, name=person[3:].lower())
        # One token drives the whole load: lift its own limits (tests/hardening/test_requests.py
        # covers them).
        replicas = await start_replicas(
            slack,
            redis_server.url,
            RELAY_RATE_LIMIT="100000",
            RELAY_MAX_PENDING="5000",
            # Each ask names a channel of its own (load_round): the operator lists them all.
            RELAY_ALLOWED_CHANNELS=",".join(
                f"C{seed}LOAD{i:04d}"
                for seed, asks in ((1, WARMUP_ASKS), (2, ASKS))
                for i in range(asks)
            ),
        )
        connector = aiohttp.TCPConnector(limit=CONCURRENCY)
        async with aiohttp.ClientSession(connector=connector) as session:
            try:
                peers = {redis_server.port: "redis", int(slack.url.split(":")[2][:-1]): "slack"}
                yield Cluster(slack, (replicas[0], replicas[1]), session, peers)
            finally:
                for relay in replicas:
                    await relay.stop()


async def bounded(jobs: Iterable[Callable[[], Awaitable[Any]]], limit: int) -> list[Any]:
    """Run ``jobs`` in order, at most ``limit`` at a time; their results, in order."""
    queue = list(enumerate(jobs))
    results: list[Any] = [None] * len(queue)
    position = 0

    async def worker() -> None:
        nonlocal position
        while position < len(queue):
            index, job = queue[position]
            position += 1
            results[index] = await job()

    await asyncio.gather(*(worker() for _ in range(limit)))
    return results


async def api(
    cluster: Cluster, relay: Relay, method: str, path: str, **kw: Any
) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with cluster.session.request(method, relay.url + path, headers=headers, **kw) as r:
        return r.status, await r.json()


async def click(cluster: Cluster, relay: Relay, message: FakeMessage, person: str) -> int:
    """``person`` clicks their option on ``message``, delivered to ``relay`` as Slack signs it."""
    index = PEOPLE.index(person)
    action = {
        "type": "button",
        "block_id": f"relay:{ask_id_of(message)}:0:act",
        "action_id": f"relay.option.{index}",
        "value": str(index),
    }
    payload = cluster.slack.build_block_actions(message, action, user=person)
    status, _ = await post_click(relay, payload, cluster.session)
    return status


INBOUND = "inbound (state 01)"  # an established connection from this test's client


def unpooled(kinds: Counter[str]) -> Counter[str]:
    """Descriptors other than pooled connections and this test's client's connections."""
    return Counter({k: n for k, n in kinds.items() if k not in (*POOLED, INBOUND)})


def leaks(relay: Relay, ports: dict[int, str], warm: Counter[str]) -> str | None:
    """What the replica holds beyond the warm-up's descriptors, if anything."""
    now = descriptors(relay, ports)
    if unpooled(now) != unpooled(warm) or now[INBOUND]:
        return f"{dict(now)} (after the warm-up: {dict(warm)})"
    overfull = {k: now[k] for k in POOLED if now[k] > POOL_BOUND}
    return f"pools over {POOL_BOUND}: {overfull}" if overfull else None


def descriptors(relay: Relay, ports: dict[int, str]) -> Counter[str]:
    """What a replica's descriptors are: TCP connections by peer (``ports`` names them)."""
    pid = relay.process.pid
    sockets: dict[str, str] = {}
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                local, remote = (int(f.rsplit(":", 1)[1], 16) for f in fields[1:3])
                peer = "inbound" if local == relay.port else ports.get(remote, f":{remote}")
                sockets[fields[9]] = f"{peer} (state {fields[3]})"
    kinds: Counter[str] = Counter()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue
        inode = re.fullmatch(r"socket:\[(\d+)\]", target)
        kinds[sockets.get(inode.group(1), "socket") if inode else target.split(":")[0]] += 1
    return kinds


async def metrics(cluster: Cluster, relay: Relay) -> dict[str, float]:
    async with cluster.session.get(f"{relay.url}/metrics") as response:
        text = await response.text()
    found: dict[str, float] = {}
    for line in text.splitlines():
        match = re.fullmatch(
            r'(relay_asks_total|relay_asks_pending)(?:\{outcome="(\w+)"\})? (.+)', line
        )
        if match:
            name, outcome, value = match.groups()
            found[outcome or name] = float(value)
    return found


async def eventually(
    condition: Callable[[], bool], *, timeout: float, what: Callable[[], str]
) -> None:
    """Re-check ``condition`` (a count in /proc: nothing to await) until true or ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what()} (after {timeout} s)")
        await asyncio.sleep(0.05)


@dataclass
class Round:
    """One round of asks and their clicks; what each replica answered."""

    ask_ids: list[str]
    messages: dict[str, FakeMessage]
    racing_timeout: set[str]
    racing_delete: set[str]
    clicks: list[tuple[str, str, int]]  # (ask id, person, HTTP status)
    deleted: dict[str, str]  # ask id -> the status the DELETE reported
    finals: dict[str, dict[str, Any]]


async def load_round(cluster: Cluster, *, asks: int, seed: int) -> Round:
    rng = random.Random(seed)
    a, b = cluster.replicas
    racing_timeout = set(range(asks - RACING_TIMEOUT * asks // ASKS, asks))
    racing_delete = set(range(RACING_DELETE * asks // ASKS))

    def create(i: int) -> Callable[[], Coroutine[Any, Any, tuple[int, dict[str, Any]]]]:
        # A channel per ask, so that each private notice says which ask it is about.
        body: dict[str, Any] = {
            "questions": [{"id": "go", "question": f"Ship build {i}?", "options": OPTIONS}],
            "slack": {"channel": f"C{seed}LOAD{i:04d}"},
        }
        if i in racing_timeout:
            # Created last; some expire before their clicks arrive, some among them, some after.
            body["slack"]["timeout_s"] = round(rng.uniform(0.2, 8.0), 2)
        relay = (a, b)[i % 2]
        return lambda: api(cluster, relay, "POST", "/v1/asks", json=body)

    created = await bounded([create(i) for i in range(asks)], CONCURRENCY)
    assert {status for status, _ in created} == {201}, created[:3]
    ask_ids = [record["id"] for _, record in created]
    messages = {ask_id_of(m): m for m in cluster.slack.messages}
    jobs: list[tuple[str, str, str]] = [
        ("click", ask_id, person) for ask_id in ask_ids for person in CLICKERS
    ]
    jobs += [("delete", ask_ids[i], "") for i in racing_delete]
    rng.shuffle(jobs)

    def run(kind: str, ask_id: str, person: str) -> Callable[[], Awaitable[Any]]:
        relay = rng.choice((a, b))
        if kind == "click":
            return lambda: click(cluster, relay, messages[ask_id], person)
        return lambda: api(cluster, relay, "DELETE", f"/v1/asks/{ask_id}")

    results = await bounded([run(*job) for job in jobs], CONCURRENCY)
    clicks = [
        (ask_id, person, r)
        for (kind, ask_id, person), r in zip(jobs, results, strict=True)
        if kind == "click"
    ]
    deleted = {
        ask_id: r[1]["status"]
        for (kind, ask_id, _), r in zip(jobs, results, strict=True)
        if kind == "delete"
    }

    # The agents learn every outcome by long-polling, on either replica.
    def learn(i: int, ask_id: str) -> Callable[[], Awaitable[tuple[int, dict[str, Any]]]]:
        return lambda: api(cluster, (b, a)[i % 2], "GET", f"/v1/asks/{ask_id}?wait=10")

    finals = await bounded([learn(i, x) for i, x in enumerate(ask_ids)], CONCURRENCY)
    return Round(
        ask_ids=ask_ids,
        messages=messages,
        racing_timeout={ask_ids[i] for i in racing_timeout},
        racing_delete={ask_ids[i] for i in racing_delete},
        clicks=clicks,
        deleted=deleted,
        finals={ask_id: record for ask_id, (_, record) in zip(ask_ids, finals, strict=True)},
    )


async def quiet(cluster: Cluster, done: Round, *, notices: int) -> None:
    """Wait until every message of the round was updated and every private notice the
    replicas owe has been sent."""
    slack = cluster.slack
    owed = {m.ts for m in done.messages.values()}

    def sent() -> bool:
        updated = {call.args.get("ts") for call in slack.calls_to("chat.update")}
        return owed <= updated and len(slack.ephemerals) >= notices

    await slack.wait_until(sent, timeout=60)


async def test_a_thousand_asks_and_five_thousand_clicks_on_two_replicas(cluster: Cluster) -> None:
    slack = cluster.slack
    started = time.monotonic()
    warmup = await load_round(cluster, asks=WARMUP_ASKS, seed=1)
    answered = sum(r["status"] == "answered" for r in warmup.finals.values())
    await quiet(cluster, warmup, notices=len(warmup.clicks) - answered)
    warm = [descriptors(r, cluster.peers) for r in cluster.replicas]
    slack.calls.clear()
    slack.ephemerals.clear()
    slack.messages.clear()

    done = await load_round(cluster, asks=ASKS, seed=2)
    finals = done.finals
    statuses = Counter(r["status"] for r in finals.values())
    answered = statuses["answered"]
    await quiet(cluster, done, notices=len(done.clicks) - answered)
    elapsed = time.monotonic() - started

    # Every click was acknowledged, none refused or lost to a 5xx.
    assert len(done.clicks) == ASKS * CLICKS_PER_ASK
    assert Counter(status for _, _, status in done.clicks) == {200: ASKS * CLICKS_PER_ASK}
    # Exactly one outcome per ask: final, and shown once on its message by the winner alone.
    assert set(statuses) <= set(OUTCOMES), statuses
    assert sum(statuses.values()) == ASKS
    # Each message is updated exactly once: the winner's update lands, and is recorded as
    # landed, so neither the sweep nor a late click on a stale copy updates it again.
    round_ts = {m.ts for m in done.messages.values()}
    updates = Counter(
        call.args["ts"] for call in slack.calls_to("chat.update") if call.args["ts"] in round_ts
    )
    assert len(updates) == ASKS
    assert set(updates.values()) == {1}, [ts for ts, n in updates.items() if n != 1][:5]
    # The replicas counted the same outcomes, each once, between them.
    counted = [await metrics(cluster, relay) for relay in cluster.replicas]
    for outcome in OUTCOMES:
        total = sum(m.get(outcome, 0.0) for m in counted) - sum(
            r["status"] == outcome for r in warmup.finals.values()
        )
        assert total == statuses[outcome], (outcome, counted)
    # Only the races end otherwise than answered; a DELETE reports the outcome that won.
    for ask_id, record in finals.items():
        if record["status"] == "timed_out":
            assert ask_id in done.racing_timeout
        if record["status"] == "aborted":
            assert ask_id in done.racing_delete
    for ask_id, reported in done.deleted.items():
        assert reported == finals[ask_id]["status"], (ask_id, reported, finals[ask_id])

    # The responder is the person whose click won: their own option, and nobody else's.
    clicks: dict[str, Counter[str]] = {}
    for ask_id, person, _ in done.clicks:
        clicks.setdefault(ask_id, Counter())[person] += 1
    notices: dict[str, list[dict[str, Any]]] = {}
    by_channel = {m.channel: ask_id for ask_id, m in done.messages.items()}
    for notice in slack.ephemerals:
        notices.setdefault(by_channel[notice.args["channel"]], []).append(notice.args)
    for ask_id, record in finals.items():
        told = notices.get(ask_id, [])
        if record["status"] != "answered":
            # Nobody won: every click was told the question had ended.
            assert Counter(n["user"] for n in told) == clicks[ask_id]
            continue
        winner = record["answered_by"]["id"]
        assert record["answer"] == {
            "answers": [{"id": "go", "selected": [f"option of {winner}"]}]
        }, record
        assert f"Answered by <@{winner}>" in json.dumps(done.messages[ask_id].blocks)
        # Every other click (the winner's second one included) was told, once, who won.
        assert Counter(n["user"] for n in told) == clicks[ask_id] - Counter([winner])
        for notice in told:
            assert re.findall(r"<@(U\w+)>", notice["text"]) == [winner], notice["text"]
    assert len(slack.ephemerals) == len(done.clicks) - answered

    # Nothing left running: no pending asks, no descriptors beyond the warm-up's but pooled
    # connections (bounded), and once this test's client hangs up, none of its connections.
    for relay in cluster.replicas:
        assert (await metrics(cluster, relay))["relay_asks_pending"] == 0
    await cluster.session.close()
    for relay, kinds in zip(cluster.replicas, warm, strict=True):
        await eventually(
            lambda r=relay, k=kinds: leaks(r, cluster.peers, k) is None,
            timeout=10,
            what=lambda r=relay, k=kinds: f"replica {r.port} leaks: {leaks(r, cluster.peers, k)}",
        )
    print(
        f"\nload: {ASKS} asks, {len(done.clicks)} clicks, {len(done.deleted)} deletes;"
        f" outcomes {dict(statuses)};"
        f" descriptors after the warm-up {[sum(k.values()) for k in warm]},"
        f" after {[sum(descriptors(r, cluster.peers).values()) for r in cluster.replicas]};"
        f" {elapsed:.1f} s"
    )
