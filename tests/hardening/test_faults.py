"""Faults: Slack failing every way the fake can, Redis going away, a replica killed mid-answer.

Whatever fails, every ask ends in exactly one recorded outcome, the agent learns it, and no
answer a click delivered is lost. Slack faults are injected into an in-process provider (a
FakeSlack of its own per scenario, every scenario at once); Redis and replica faults hit two
``relay serve`` replicas on a real Redis, with ``RelayProvider`` as the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiohttp
import pytest
from redis_server import RedisServer

from relay import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)
from relay.asks import Settling
from relay.asks.events import AskEvent
from relay.client import RelayProvider
from relay.store import AskStatus
from relay.testing import FakeMessage, FakeSlack
from tests.replica_env import Cluster, post_click, running_cluster
from tests.server_env import TOKEN, Relay
from tests.slack_env import Env, ask_id_of, first_button, question, slack_env

OUTCOMES = frozenset({"answered", "timed_out", "aborted", "closed", "failed"})
CLIENT_TIMEOUT = 6.0  # the Web API client's timeout in these tests (slack-sdk's default: 30)
SLOW = 3.2  # past Slack's 3 s ack deadline, within the client's timeout (2.8 s to spare:
# the scenarios all run at once in one loop, which a loaded machine makes run late)
# Log lines that only a crash in the relay produces (expected failures log differently).
CRASH_SIGNS = ("background task failed", "failed to handle a click", "Error handling request")


@dataclass(frozen=True)
class Fault:
    """One way the fake Slack misbehaves, ``times`` calls in a row."""

    name: str
    recovers: bool  # whether slack-sdk's retry handlers get through it
    error: str | None = None
    status: int | None = None
    retry_after: int | None = None
    delay: float | None = None
    times: int = 1

    def inject(self, slack: FakeSlack, method: str) -> None:
        slack.fail(
            method,
            error=self.error,
            status=self.status,
            retry_after=self.retry_after,
            delay=self.delay,
            times=self.times,
        )


FAULTS = (
    Fault("error", recovers=False, error="internal_error"),  # ok: false is never retried
    Fault("429_burst", recovers=True, status=429, retry_after=1, times=3),
    Fault("429_storm", recovers=False, status=429, retry_after=1, times=6),
    Fault("5xx", recovers=True, status=503, times=2),
    Fault("5xx_outage", recovers=False, status=500, times=3),
    # Slow past the client's timeout with room to spare: the update's total timeout is kept
    # by a timer that ticks every 0.25 s (relay.slack.webapi.deadlines), and on a loaded machine the
    # loop runs late; with 0.5 s to spare, all three timeout scenarios once saw the slow
    # call land before the client gave up on it (a clean-clone CI run, 2026-12-03).
    Fault("timeout", recovers=False, delay=CLIENT_TIMEOUT + 2.0),
    Fault("slow", recovers=True, delay=SLOW),
)


@dataclass
class Watched:
    """A scenario's environment and the ask outcomes its provider recorded."""

    env: Env
    outcomes: list[AskEvent] = field(default_factory=list)

    def outcomes_of(self, ask_id: str) -> list[str]:
        return [e.name for e in self.outcomes if e.ask_id == ask_id]


@contextlib.asynccontextmanager
async def watched_env(**kw: Any) -> AsyncIterator[Watched]:
    async with slack_env(**kw) as env:
        env.provider.client.timeout = int(CLIENT_TIMEOUT)
        watched = Watched(env)
        env.provider.events.subscribe(
            lambda e: watched.outcomes.append(e) if e.name in OUTCOMES else None
        )
        yield watched


def responder(answer: AskUserQuestionAnswer) -> str | None:
    by = answer.answers[0].answered_by
    return by.id if by is not None else None


# ---- Slack failing during the post, the update, a notice, and the checks of a click --------


async def while_the_question_is_posted(fault: Fault) -> None:
    """Recovered: posted late, then answered. Not: the agent gets PROVIDER_FAILED, the record
    says failed, and nothing is left pending."""
    async with watched_env() as w:
        env = w.env
        fault.inject(env.slack, "chat.postMessage")
        task = env.ask(question())
        if fault.recovers:
            message = await env.slack.wait_for_message(timeout=15)
            assert (await env.slack.click(message, "prod", user="U0ALICE")).ok
            answer = await asyncio.wait_for(task, 5)
            assert responder(answer) == "U0ALICE"
            assert w.outcomes_of(ask_id_of(message)) == ["answered"]
        else:
            with pytest.raises(UserInteractionError) as info:
                await asyncio.wait_for(task, 15)
            assert info.value.code == ErrorCode.PROVIDER_FAILED, info.value
            assert [e.name for e in w.outcomes] == ["failed"]
            record = await env.provider.store.get(ask_id=w.outcomes[0].ask_id)
            assert record is not None
            assert record.status is AskStatus.FAILED
            assert record.error is not None
            assert record.error.code == ErrorCode.PROVIDER_FAILED
        assert await env.provider.store.count_pending() == 0


def swept(env: Env) -> asyncio.Future[str]:
    """The ask id of the first message the sweep updates (``event=swept``)."""
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    env.provider.events.subscribe(
        lambda e: future.set_result(e.ask_id) if e.name == "swept" and not future.done() else None
    )
    return future


# Retried soon after the fault: the update in flight (retrying here) is left alone meanwhile.
SWEEP_SOON = Settling(grace=0.5, lease=0.5)


async def while_the_answered_message_is_updated(fault: Fault) -> None:
    """The click is acknowledged and the agent answered at once; the update comes after,
    and the sweep makes an update that failed land."""
    async with watched_env(settling=SWEEP_SOON) as w:
        env = w.env
        done = swept(env)
        task = env.ask(question())
        message = await env.message()
        fault.inject(env.slack, "chat.update")
        clicked = await env.slack.click(message, "prod", user="U0ALICE")
        assert clicked.ok, clicked  # acknowledged within 3 s: the update runs after
        assert responder(await asyncio.wait_for(task, 1)) == "U0ALICE"
        await env.provider.drain()
        assert w.outcomes_of(ask_id_of(message)) == ["answered"]
        assert message.updated == fault.recovers
        if not fault.recovers:
            assert await asyncio.wait_for(done, 15) == ask_id_of(message)
        assert "Answered by <@U0ALICE>" in json.dumps(message.blocks)


async def while_a_withdrawn_batch_is_updated(fault: Fault) -> None:
    """Whatever happens to one message's update, the others are still withdrawn (and the
    sweep withdraws the one that failed)."""
    async with watched_env(settling=SWEEP_SOON) as w:
        env = w.env
        done = swept(env)
        task = env.ask(question("a"), question("b"))
        first, second = await env.message(1), await env.message(2)
        fault.inject(env.slack, "chat.update")
        task.cancel()  # the agent gives up: both questions are withdrawn
        with pytest.raises(asyncio.CancelledError):
            await task
        await env.provider.drain()
        assert w.outcomes_of(ask_id_of(first)) == ["aborted"]
        assert second.updated
        assert "Withdrawn" in json.dumps(second.blocks)
        if fault.recovers:
            assert first.updated
        else:
            # Not updated by the failed call; on a loaded machine the sweep (grace 0.5 s)
            # may have withdrawn it already while the timed-out call was being drained.
            assert not first.updated or done.done()
            assert await asyncio.wait_for(done, 15) == ask_id_of(first)
        assert "Withdrawn" in json.dumps(first.blocks)


async def while_a_refused_clicker_is_told(fault: Fault) -> None:
    """The refused click is acknowledged, told or not (the notice's two routes, the click's
    response_url and then chat.postEphemeral, both failing); the ask stays open."""
    async with watched_env(allowed_users={"U0ALICE"}) as w:
        env = w.env
        task = env.ask(question())
        message = await env.message()
        fault.inject(env.slack, "response_url")  # never retried: the fallback is
        fault.inject(env.slack, "chat.postEphemeral")
        clicked = await env.slack.click(message, "prod", user="U0EVE")
        assert clicked.ok, clicked
        await env.provider.drain()
        told = [e for e in env.slack.ephemerals if e.args.get("user") == "U0EVE"]
        assert len(told) == (1 if fault.recovers else 0)
        assert not task.done()
        assert (await env.slack.click(message, "staging", user="U0ALICE")).ok
        assert responder(await asyncio.wait_for(task, 5)) == "U0ALICE"
        assert w.outcomes_of(ask_id_of(message)) == ["answered"]


def while_a_click_is_checked(method: str) -> Callable[[Fault], Awaitable[None]]:
    """auth.test (which workspace a click is from) or the user-group lookup, before the click
    is recorded: failing, the clicker is told to retry and the ask stays open (fail closed);
    slow, the answer is recorded even when Slack has shown the clicker a timeout."""

    async def phase(fault: Fault) -> None:
        async with watched_env(allowed_users=set(), allowed_groups={"S0OPS"}) as w:
            env = w.env
            env.slack.usergroups = {"S0OPS": ["U0BOB"]}
            task = env.ask(question())
            message = await env.message()
            await env.provider.drain()  # the groups looked up while posting, then forgotten:
            env.provider.gatekeeper.forget()  # the click looks them up, and meets the fault
            fault.inject(env.slack, method)
            clicked = await env.slack.click(message, "prod", user="U0BOB")
            assert clicked.status in (200, 504), clicked  # 504: Slack gave up waiting
            await env.provider.drain()
            if not fault.recovers:
                notice = await env.slack.wait_for_ephemeral(user="U0BOB", timeout=15)
                assert "Try again" in notice.args["text"], notice.args["text"]
                assert not task.done()
                assert (await env.slack.click(message, "prod", user="U0BOB")).ok
            answer = await asyncio.wait_for(task, 5)
            assert responder(answer) == "U0BOB"
            assert w.outcomes_of(ask_id_of(message)) == ["answered"]

    phase.__name__ = f"while_{method}_checks_a_click"
    return phase


PHASES = (
    while_the_question_is_posted,
    while_the_answered_message_is_updated,
    while_a_withdrawn_batch_is_updated,
    while_a_refused_clicker_is_told,
    while_a_click_is_checked("auth.test"),
    while_a_click_is_checked("usergroups.users.list"),
)


async def test_every_slack_fault_in_every_phase(caplog: pytest.LogCaptureFixture) -> None:
    """Each phase under each fault, all at once (each in a FakeSlack of its own); fails
    listing every (phase, fault) that failed, and any crash the relay logged."""
    caplog.set_level(logging.WARNING)
    scenarios = [(phase, fault) for phase in PHASES for fault in FAULTS]
    results = await asyncio.gather(
        *(phase(fault) for phase, fault in scenarios), return_exceptions=True
    )
    failed = [
        f"{phase.__name__} / {fault.name}: {result!r}"
        for (phase, fault), result in zip(scenarios, results, strict=True)
        if isinstance(result, BaseException)
    ]
    crashes = [r.getMessage() for r in caplog.records if r.getMessage().startswith(CRASH_SIGNS)]
    assert not failed, "\n".join(failed)
    assert not crashes, crashes


# ---- Redis and replicas ---------------------------------------------------------------------

ASK = AskUserQuestionRequest.from_dict(
    {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}
)


@pytest.fixture
async def cluster(redis_server: RedisServer) -> AsyncIterator[Cluster]:
    async with running_cluster(redis_server) as cluster:
        yield cluster


def agent(relay: Relay, *, timeout: float | None = None) -> RelayProvider:
    """An agent asking through ``relay``; it re-polls through restarts and outages."""
    return RelayProvider(relay.url, TOKEN, timeout=timeout, poll=2.0)


async def ask(provider: RelayProvider) -> AskUserQuestionAnswer:
    return await provider.ask(ASK)


def outcome(task: asyncio.Task[AskUserQuestionAnswer]) -> tuple[str, str | None]:
    """What the agent learnt: ("answered", who) or ("error", reason)."""
    try:
        return "answered", responder(task.result())
    except UserInteractionError as exc:
        return "error", exc.reason or exc.code


async def test_redis_stopping_and_restarting_loses_no_answer(cluster: Cluster) -> None:
    # Three asks answered before the outage, three clicked during it (refused, clicked again
    # after), three that time out while Redis is away. Agents poll both replicas.
    agents = [agent(cluster.a), agent(cluster.b), agent(cluster.a, timeout=1.0)]
    tasks: list[asyncio.Task[AskUserQuestionAnswer]] = []
    messages: list[FakeMessage] = []
    try:
        for i in range(9):
            tasks.append(asyncio.create_task(ask(agents[2 if i >= 6 else i % 2])))
            messages.append(await cluster.slack.wait_for_message(count=i + 1))
        for message in messages[:3]:
            assert (await cluster.slack.click(message, "yes", user="U0ALICE")).ok
        _, expiring = await cluster.a.request("GET", f"/v1/asks/{ask_id_of(messages[8])}")

        cluster.redis.stop(save=True)  # gone, its data saved, as a Redis with persistence
        for message in messages[3:6]:
            assert (await cluster.slack.click(message, "yes", user="U0BOB")).ok
        await cluster.slack.wait_until(lambda: len(cluster.slack.ephemerals) == 3)
        assert all("cannot record answers" in e.args["text"] for e in cluster.slack.ephemerals)
        status, body = await cluster.a.request("POST", "/v1/asks", json=ASK.to_dict())
        assert (status, body["error"]["code"]) == (502, "PROVIDER_FAILED")
        # What this waits for is time itself: the last deadlines pass while Redis is away.
        deadline = datetime.fromisoformat(expiring["deadline"]).timestamp()
        await asyncio.sleep(max(0.0, deadline - time.time()) + 0.2)
        cluster.redis.start()

        for message in messages[3:6]:
            assert (await cluster.slack.click(message, "yes", user="U0BOB")).ok
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)
    finally:
        for provider in agents:
            await provider.aclose()
    learnt = [outcome(t) for t in tasks]
    expected = [("answered", "U0ALICE")] * 3 + [("answered", "U0BOB")] * 3
    assert learnt == [*expected, *[("error", "timed_out")] * 3]
    # The store holds the same outcome for each, and each message shows it.
    for (kind, detail), message in zip(learnt, messages, strict=True):
        status, record = await cluster.b.request("GET", f"/v1/asks/{ask_id_of(message)}")
        assert status == 200
        assert record["status"] == ("answered" if kind == "answered" else detail)
        if kind == "answered":
            assert record["answered_by"]["id"] == detail
        await cluster.slack.wait_until(lambda m=message: m.updated)
    assert len(cluster.slack.calls_to("chat.update")) == 9  # one winner each updated it


async def test_a_replica_killed_mid_answer_loses_no_answer(cluster: Cluster) -> None:
    count = 16
    agents = [agent(cluster.a) for _ in range(2)]
    tasks = [asyncio.create_task(ask(agents[i % 2])) for i in range(count)]
    messages: list[FakeMessage] = [
        await cluster.slack.wait_for_message(count=i + 1) for i in range(count)
    ]
    # Every message update takes a while, so that A is mid-answer (claimed, not yet shown)
    # for most clicks when it is killed.
    cluster.slack.fail("chat.update", delay=1.0, times=count)
    acked: dict[str, str] = {}
    async with aiohttp.ClientSession() as session:

        async def click(message: FakeMessage, relay: Relay) -> tuple[FakeMessage, int | None]:
            payload = cluster.slack.build_block_actions(
                message, first_button(message), user="U0ALICE"
            )
            try:
                return message, (await post_click(relay, payload, session))[0]
            except aiohttp.ClientError:
                return message, None  # the replica died under it: Slack shows an error

        pending = [asyncio.create_task(click(m, cluster.a)) for m in messages]
        for answered_before_kill, finished in enumerate(asyncio.as_completed(pending), 1):
            message, status = await finished
            if status == 200:
                acked[ask_id_of(message)] = "U0ALICE"
            if answered_before_kill == count // 2:
                break
        await cluster.a.stop(signal.SIGKILL)
        results = await asyncio.gather(*pending)
        for message, status in results:
            if status == 200:
                acked[ask_id_of(message)] = "U0ALICE"
        # Whoever saw an error clicks again; the click reaches B. (An acknowledged click is
        # never retried: were it lost, its agent would wait forever and the test time out.)
        for message in (m for m, status in results if status != 200):
            assert (await click(message, cluster.b))[1] == 200
    await cluster.restart("a")  # the agents were polling A: they re-poll the same ids
    try:
        answers = await asyncio.wait_for(asyncio.gather(*tasks), 30)
    finally:
        for provider in agents:
            await provider.aclose()
    assert [responder(a) for a in answers] == ["U0ALICE"] * count
    assert len(acked) >= count // 2  # half the clicks were acknowledged before the kill
    for message in messages:
        status, record = await cluster.b.request("GET", f"/v1/asks/{ask_id_of(message)}")
        assert (status, record["status"]) == (200, "answered")
        assert record["answered_by"]["id"] == "U0ALICE"
