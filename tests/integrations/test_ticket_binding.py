"""A paused run's tickets against a real ``relay serve`` (memory and Redis store): whoever can
write the run's state can swap, copy or replay its tickets, so the relay runs a ticket's
approval only for the call its reviewer was shown, in the run and for the token it was asked
for, and once (issue 49, point 9). FakeSlack plays Slack and the reviewers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis_server import RedisServer

from relay import AgentRef
from relay.integrations.core import CallVerdict, PendingCall, RelayApprovals, Tickets
from relay.testing import FakeSlack
from tests.replica_env import running_cluster
from tests.server_env import OTHER_TOKEN, SECRET, TOKEN, Relay, relay_server

AGENT = AgentRef("cleanup-bot", "Cleanup bot")
RUN = "thread-7"
STALE = PendingCall("c1", "delete_branch", {"name": "stale"})
MAIN = PendingCall("c1", "delete_branch", {"name": "main"})


@pytest.fixture(params=["memory", "redis"])
async def hosted(request: pytest.FixtureRequest) -> AsyncIterator[tuple[FakeSlack, Relay]]:
    """A relay on its memory store, or on a Redis of the test's own."""
    extra = {"REDIS_URL": request.getfixturevalue("redis_url")} if request.param == "redis" else {}
    async with FakeSlack(signing_secret=SECRET) as slack:
        slack.add_user("U0ALICE", name="alice")
        async with relay_server(slack, **extra) as relay:
            yield slack, relay


async def allowed_once(slack: FakeSlack, relay: Relay, call: PendingCall) -> Tickets:
    """``call`` submitted for ``RUN``, and alice's *Allow once* on it."""
    before = len(slack.messages)
    async with RelayApprovals(relay.url, TOKEN) as approvals:
        tickets = await approvals.submit([call], AGENT, run=RUN)
    message = await slack.wait_for_message(count=before + 1, timeout=15)
    await slack.click(message, "Allow once", user="U0ALICE")
    return tickets


async def collect(
    relay: Relay, calls: list[PendingCall], tickets: Tickets, *, run: str = RUN, token: str = TOKEN
) -> dict[str, CallVerdict]:
    """What another process resuming the run gets for ``calls``."""
    async with RelayApprovals(relay.url, token) as approvals:
        verdicts = await approvals.collect(calls, AGENT, tickets, run=run)
    assert verdicts is not None
    return verdicts


async def test_a_ticket_swapped_onto_another_call_runs_nothing(
    hosted: tuple[FakeSlack, Relay],
) -> None:
    slack, relay = hosted
    tickets = await allowed_once(slack, relay, STALE)
    # Whoever writes the saved run puts delete_branch('main') where the stale call was, and
    # recomputes the ticket's digest: the client's own check passes, the relay's does not.
    swapped = {"c1": {**tickets["c1"], "digest": MAIN.digest}}
    verdict = (await collect(relay, [MAIN], swapped))["c1"]
    assert not verdict.allowed
    assert "NOT_THIS_CALL: approval" in verdict.message
    assert "asked for another call than this delete_branch call" in verdict.message
    assert len(slack.messages) == 1  # nobody was asked about main
    # The refusal used nothing: the call the reviewer was shown still runs.
    assert (await collect(relay, [STALE], tickets))["c1"].allowed


async def test_a_ticket_runs_its_call_once(hosted: tuple[FakeSlack, Relay]) -> None:
    slack, relay = hosted
    tickets = await allowed_once(slack, relay, STALE)
    first = (await collect(relay, [STALE], tickets))["c1"]
    assert first.allowed
    assert first.decision.by is not None
    assert first.decision.by.id == "U0ALICE"
    again = (await collect(relay, [STALE], tickets))["c1"]
    assert not again.allowed
    assert "CONSUMED: approval" in again.message
    assert "was already used to run its call once" in again.message


async def test_one_allow_resumed_three_times_at_once_runs_once(
    hosted: tuple[FakeSlack, Relay],
) -> None:
    slack, relay = hosted
    tickets = await allowed_once(slack, relay, STALE)
    copies = await asyncio.gather(*(collect(relay, [STALE], dict(tickets)) for _ in range(3)))
    assert sorted(c["c1"].allowed for c in copies) == [False, False, True]


async def test_a_ticket_for_another_run_is_refused(hosted: tuple[FakeSlack, Relay]) -> None:
    slack, relay = hosted
    tickets = await allowed_once(slack, relay, STALE)
    copied = (await collect(relay, [STALE], tickets, run="thread-8"))["c1"]
    assert not copied.allowed
    assert copied.message.startswith(
        "this call's ticket was submitted for run 'thread-7', not for run 'thread-8'"
    )
    # Relabelled as the other run's, it is refused by the relay, which knows its run.
    relabelled = {"c1": {**tickets["c1"], "run": "thread-8"}}
    verdict = (await collect(relay, [STALE], relabelled, run="thread-8"))["c1"]
    assert not verdict.allowed
    assert "NOT_THIS_CALL" in verdict.message
    assert "another run or tool use id than 'thread-8/c1'" in verdict.message
    assert (await collect(relay, [STALE], tickets))["c1"].allowed  # its own run's is intact


async def test_another_tokens_ticket_is_not_found(hosted: tuple[FakeSlack, Relay]) -> None:
    slack, relay = hosted
    tickets = await allowed_once(slack, relay, STALE)
    stolen = (await collect(relay, [STALE], tickets, token=OTHER_TOKEN))["c1"]
    assert not stolen.allowed
    assert "NOT_FOUND" in stolen.message
    status, body = await relay.request(
        "POST", f"/v1/approvals/{tickets['c1']['id']}/consume", token=OTHER_TOKEN, json=use(STALE)
    )
    assert (status, body["error"]["code"]) == (404, "NOT_FOUND")
    assert (await collect(relay, [STALE], tickets))["c1"].allowed


async def test_a_grant_covers_later_calls_but_its_ticket_runs_once(
    hosted: tuple[FakeSlack, Relay],
) -> None:
    slack, relay = hosted
    async with RelayApprovals(relay.url, TOKEN) as approvals:
        tickets = await approvals.submit([STALE], AGENT, run=RUN)
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Allow for 30 minutes", user="U0ALICE")
        first = await approvals.collect([STALE], AGENT, tickets, run=RUN)
        again = await approvals.collect([STALE], AGENT, tickets, run=RUN)
        fresh = await approvals.collect([STALE], AGENT, {}, run=RUN)
    assert first is not None
    assert again is not None
    assert fresh is not None
    assert first["c1"].decision.outcome == "granted"
    assert "CONSUMED" in again["c1"].message
    # The same call asked afresh is allowed by the grant at once, with no ticket to use.
    assert fresh["c1"].decision.outcome == "allowed"
    assert len(slack.messages) == 1


def use(call: PendingCall, run: str = RUN) -> dict[str, Any]:
    """The body of ``POST /v1/approvals/{id}/consume`` for ``call`` of ``run``."""
    return {"tool": call.tool, "input": dict(call.args), "tool_use_id": f"{run}/{call.call_id}"}


async def test_the_consume_route_answers_each_use_with_a_stable_code(
    hosted: tuple[FakeSlack, Relay],
) -> None:
    slack, relay = hosted
    deploy = PendingCall("c1", "deploy", {"env": "prod", "ref": "v2"})
    async with RelayApprovals(relay.url, TOKEN) as approvals:
        tickets = await approvals.submit([deploy], AGENT, run=RUN)
    path = f"/v1/approvals/{tickets['c1']['id']}/consume"
    status, body = await relay.request("POST", path, json={"tool": "deploy", "x": 1})
    assert (status, body["error"]["code"]) == (400, "BAD_REQUEST")
    status, body = await relay.request("POST", path, json=use(deploy))
    assert (status, body["status"]) == (200, "pending")  # nothing to use yet
    other = PendingCall("c1", "deploy", {"env": "prod", "ref": "v3"})
    status, body = await relay.request("POST", path, json=use(other))
    assert (status, body["error"]["code"]) == (409, "NOT_THIS_CALL")
    message = await slack.wait_for_message(timeout=15)
    await slack.click(message, "Allow once", user="U0ALICE")
    # What is compared is the canonical input, not its key order.
    reordered = {**use(deploy), "input": {"ref": "v2", "env": "prod"}}
    key = {"Idempotency-Key": "use-1"}
    status, body = await relay.request("POST", path + "?wait=10", json=reordered, headers=key)
    assert (status, body["decision"]["behavior"]) == (200, "allow")
    # The same use sent again (a lost reply) is that use; any other is refused.
    status, body = await relay.request("POST", path, json=reordered, headers=key)
    assert (status, body["decision"]["behavior"]) == (200, "allow")
    status, body = await relay.request("POST", path, json=use(deploy))
    assert (status, body["error"]["code"]) == (409, "CONSUMED")
    assert body["error"]["message"].endswith("submit the call again to ask for another run of it")


async def test_a_deny_is_answered_again_and_uses_nothing(hosted: tuple[FakeSlack, Relay]) -> None:
    slack, relay = hosted
    async with RelayApprovals(relay.url, TOKEN) as approvals:
        tickets = await approvals.submit([STALE], AGENT, run=RUN)
    message = await slack.wait_for_message(timeout=15)
    await slack.click(message, "Deny", user="U0ALICE")
    for _ in range(2):
        verdict = (await collect(relay, [STALE], tickets))["c1"]
        assert (verdict.allowed, verdict.message) == (False, "alice denied this in Slack")


async def test_two_replicas_racing_on_one_ticket_run_it_once(redis_server: RedisServer) -> None:
    calls = [PendingCall(f"c{i}", "delete_branch", {"name": f"stale-{i}"}) for i in range(4)]
    async with running_cluster(redis_server) as cluster:
        async with RelayApprovals(cluster.a.url, TOKEN) as approvals:
            tickets = await approvals.submit(calls, AGENT, run=RUN)
        for i in range(len(calls)):
            message = await cluster.slack.wait_for_message(count=i + 1, timeout=15)
            await cluster.slack.click(message, "Allow once", user="U0ALICE")
        # Each call resumed by two processes at once, one through each replica.
        raced = await asyncio.gather(
            *(collect(relay, [call], tickets) for call in calls for relay in (cluster.a, cluster.b))
        )
    for i, call in enumerate(calls):
        pair = [raced[2 * i][call.call_id], raced[2 * i + 1][call.call_id]]
        assert sorted(v.allowed for v in pair) == [False, True], [v.message for v in pair]
        refused = next(v for v in pair if not v.allowed)
        assert "CONSUMED" in refused.message
