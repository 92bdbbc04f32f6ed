"""Flow: a question that needs several people's votes, with a veto, on one and two replicas."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis_server import RedisServer

from relay import ErrorCode, UserInteractionError
from relay.slack import SlackTarget
from relay.testing import FakeSlack
from tests.replica_env import post_click, start_replicas
from tests.server_env import SECRET, Relay
from tests.slack_env import first_button, question, slack_env


def approval(**kw: object) -> object:
    return question("go", "Ship 1.4?", "Approve", "Reject", approvals_required=2, **kw)


async def test_two_approvals_from_different_people_decide_and_each_vote_is_recorded() -> None:
    async with slack_env() as env:
        task = env.ask(approval(veto=("Reject",)))
        message = await env.message()
        assert "Needs 2 votes" in str(message.blocks)
        assert "no votes yet" in str(message.blocks)
        await env.slack.click(message, "Approve", user="U0ALICE")
        counted = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "Your vote for *Approve* is counted (1 so far; 2 decide)" in counted.args["text"]
        await env.slack.wait_until(lambda: "voted: <@U0ALICE> *Approve*" in str(message.blocks))
        assert not task.done()
        await env.slack.click(message, "Reject", user="U0ALICE")  # a second click: no change
        again = await env.slack.wait_for_ephemeral(user="U0ALICE", count=2)
        assert "You already voted *Approve*" in again.args["text"]
        assert not task.done()
        await env.slack.click(message, "Approve", user="U0BOB")
        item = (await asyncio.wait_for(task, 5)).answers[0]
        assert item.selected == ("Approve",)
        assert item.answered_by is not None
        assert item.answered_by.id == "U0BOB"  # cast the deciding vote
        assert [(v.by.id, v.label) for v in item.votes] == [
            ("U0ALICE", "Approve"),
            ("U0BOB", "Approve"),
        ]
        await env.slack.wait_until(lambda: "Votes: <@U0ALICE> *Approve*" in str(message.blocks))
        assert not [b for b in message.blocks if b["type"] in ("actions", "input")]


async def test_a_slow_tally_update_never_leaves_an_old_tally_or_brings_buttons_back() -> None:
    async with slack_env() as env:
        task = env.ask(question("go", "Ship 1.4?", "Approve", "Reject", approvals_required=3))
        message = await env.message()
        # Alice's tally update is slow: Bob's (two votes) lands first, then hers (one vote).
        env.slack.fail("chat.update", delay=0.5, times=1)
        await env.slack.click(message, "Approve", user="U0ALICE")
        await env.slack.wait_for_arrival("chat.update")
        await env.slack.click(message, "Approve", user="U0BOB")
        await env.slack.wait_until(lambda: len(env.slack.calls_to("chat.update")) >= 2, timeout=5)
        await env.provider.drain()
        assert "voted: <@U0ALICE> *Approve*, <@U0BOB> *Approve*" in str(message.blocks)

        # A vote's tally update held back until after the deciding vote's final update: the
        # slow tally must not bring the buttons back over the outcome.
        env.slack.fail("chat.update", delay=0.5, times=1)
        await env.slack.click(message, "Reject", user="U0EVE")  # a vote that decides nothing
        await env.slack.wait_for_arrival(
            "chat.update", count=3
        )  # (tallies coalesced: one a vote here)
        await env.slack.click(message, "Approve", user="U0CAROL")  # the third approval
        assert (await asyncio.wait_for(task, 5)).answers[0].selected == ("Approve",)
        await env.provider.drain()
        assert not any(b.get("type") == "actions" for b in message.blocks)
        assert "Approve" in str(message.blocks)


async def test_a_veto_decides_at_once() -> None:
    async with slack_env() as env:
        task = env.ask(approval(veto=("Reject",)))
        message = await env.message()
        await env.slack.click(message, "Approve", user="U0ALICE")
        await env.slack.wait_for_ephemeral(user="U0ALICE")
        await env.slack.click(message, "Reject", user="U0EVE")
        item = (await asyncio.wait_for(task, 5)).answers[0]
        assert item.selected == ("Reject",)
        assert [v.by.id for v in item.votes] == ["U0ALICE", "U0EVE"]


async def test_the_requesters_own_vote_never_counts_under_prevent_self_approval() -> None:
    target = SlackTarget("C0APPROVALS", requester="U0ALICE", prevent_self_approval=True)
    async with slack_env(route=lambda _: target) as env:
        task = env.ask(approval())
        message = await env.message()
        await env.slack.click(message, "Approve", user="U0ALICE")
        refused = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "counted" not in refused.args["text"]
        await env.slack.click(message, "Approve", user="U0BOB")
        await env.slack.wait_for_ephemeral(user="U0BOB")
        assert not task.done()  # one vote of the two needed: alice's was never counted
        await env.slack.click(message, "Approve", user="U0EVE")
        item = (await asyncio.wait_for(task, 5)).answers[0]
        assert [v.by.id for v in item.votes] == ["U0BOB", "U0EVE"]


async def test_typed_text_is_no_vote() -> None:
    async with slack_env() as env:
        env.ask(approval())
        message = await env.message()
        await env.slack.type(message, "looks fine", user="U0ALICE")
        await env.slack.press_enter(message, user="U0ALICE")
        notice = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "Typed text and skips are not votes" in notice.args["text"]


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"approvals_required": 0}, "approvalsRequired is 0; it must be 1 to 25"),
        ({"veto": ("Maybe",)}, 'veto names "Maybe", which is none of the options'),
        ({"veto": ("Approve", "Reject")}, "veto names every option"),
        ({"multi": True}, "needs a single-select question with options"),
    ],
)
async def test_impossible_quorums_are_refused_before_anything_is_posted(
    changes: dict[str, object], fragment: str
) -> None:
    async with slack_env() as env:
        item = question("go", "Ship?", "Approve", "Reject", **{"approvals_required": 2, **changes})
        with pytest.raises(UserInteractionError) as info:
            await env.ask(item)
        assert info.value.code == ErrorCode.BAD_REQUEST
        assert fragment in str(info.value)
        assert env.slack.calls_to("chat.postMessage") == []


ASK = {
    "questions": [
        {
            "id": "go",
            "question": "Ship it?",
            "options": [{"label": "yes"}, {"label": "no"}],
            "approvalsRequired": 3,
            "veto": ["no"],
        }
    ]
}
PEOPLE = [f"U0P{i}" for i in range(6)]


@pytest.fixture
async def pair(redis_server: RedisServer) -> AsyncIterator[tuple[FakeSlack, Relay, Relay]]:
    async with FakeSlack(signing_secret=SECRET) as slack:
        for user in PEOPLE:
            slack.add_user(user, name=user.lower())
        a, b = await start_replicas(slack, redis_server.url)
        slack.interactivity_url = f"{b.url}/slack/events"
        try:
            yield slack, a, b
        finally:
            for relay in (a, b):
                if relay.process.returncode is None:
                    await relay.stop()


async def test_votes_racing_on_two_replicas_count_exactly_once_each(
    pair: tuple[FakeSlack, Relay, Relay],
) -> None:
    slack, a, b = pair
    _, created = await a.request("POST", "/v1/asks", json=ASK)
    message = await slack.wait_for_message()
    _, pending = await b.request("GET", f"/v1/asks/{created['id']}")
    assert pending["status"] == "pending"
    assert "votes" not in pending
    # Two people vote on both replicas at once, twice each: each counts once, two of three.
    clicks = [
        post_click(relay, slack.build_block_actions(message, first_button(message), user=user))
        for user in PEOPLE[:2]
        for relay in (a, b, a, b)
    ]
    assert {status for status, _ in await asyncio.gather(*clicks)} == {200}
    _, tally = await a.request("GET", f"/v1/asks/{created['id']}")
    assert tally["status"] == "pending"
    (votes,) = tally["votes"]
    assert votes["id"] == "go"
    assert sorted(v["by"]["id"] for v in votes["votes"]) == PEOPLE[:2]
    assert {v["label"] for v in votes["votes"]} == {"yes"}
    # The third and fourth race on the two replicas: one decides, the other is too late.
    last = [
        post_click(relay, slack.build_block_actions(message, first_button(message), user=user))
        for relay, user in ((a, PEOPLE[2]), (b, PEOPLE[3]))
    ]
    assert {status for status, _ in await asyncio.gather(*last)} == {200}
    _, record = await b.request("GET", f"/v1/asks/{created['id']}?wait=10")
    assert record["status"] == "answered"
    assert record["answer"] == {"answers": [{"id": "go", "selected": ["yes"]}]}
    counted = [v["by"]["id"] for v in record["responses"][0]["votes"]]
    assert len(counted) == 3 == len(set(counted))
    assert set(counted[:2]) == set(PEOPLE[:2])
    assert record["answered_by"]["id"] == counted[-1]
    assert "votes" not in record  # every question is decided: the votes are on its response
