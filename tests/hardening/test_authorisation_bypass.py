"""Who may answer is decided by the clicker's ``user.id`` and the ask's target, nothing else.

A property sends clicks by someone who may not answer, signed as Slack signs them, after
planting the ids of people who may (and look-alikes of them) in every other field of the
payload; under each way of restricting an ask (the provider's ``allowed_users``, a route's
override, an empty allowlist, a user group, self-approval prevented), none of them answers.
The relay API's per-request overrides are checked the same way through two replicas on
Redis, where the target is stored and read back by the replica that receives the click.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis_server import RedisServer

from relay import AskUserQuestionRequest
from relay.slack import SlackTarget
from relay.store import AskStatus
from relay.testing import FakeMessage, FakeSlack
from tests.hardening.slack_requests import Reply, form_body, send, signed_headers
from tests.server_env import SECRET as SERVER_SECRET
from tests.server_env import Relay, free_port, relay_env, start_relay
from tests.slack_env import Env, ask_id_of, first_button, question, slack_env

EXAMPLES = 200


@dataclass(repr=False)  # a failing example prints its arguments: keep them short
class Restricted:
    """One pending ask restricted one way: who may not answer it, and who may."""

    name: str
    env: Env
    message: FakeMessage
    refused: str  # clicks by this user must never answer
    allowed: str  # the control: a click by this user answers
    plants: tuple[Any, ...]  # values that a naive check might mistake for permission


def route_to(target: SlackTarget) -> Any:
    return lambda _: target


SCENARIOS: dict[str, dict[str, Any]] = {
    # The provider's allowlist.
    "allowed_users": {"allowed_users": {"U0ALICE"}},
    # A route narrows it to someone the provider would not have let in.
    "route_override": {
        "allowed_users": {"U0ALICE"},
        "route": route_to(SlackTarget("C0DEPLOYS", allowed_users={"U0BOB"})),
    },
    # An empty allowlist lets nobody in, not even people the provider allows.
    "empty_override": {
        "allowed_users": {"U0ALICE"},
        "route": route_to(SlackTarget("C0DEPLOYS", allowed_users=set())),
    },
    # Only members of a user group.
    "group": {"allowed_users": set(), "allowed_groups": {"S0OPS"}},
    # The requester may not approve their own ask, even though anyone else may.
    "self_approval": {
        "route": route_to(SlackTarget("C0DEPLOYS", requester="U0EVE", prevent_self_approval=True)),
    },
}
WHO = {  # scenario -> (refused, allowed)
    "allowed_users": ("U0EVE", "U0ALICE"),
    "route_override": ("U0ALICE", "U0BOB"),
    "empty_override": ("U0ALICE", None),
    "group": ("U0EVE", "U0BOB"),
    "self_approval": ("U0EVE", "U0BOB"),
}


def look_alikes(user: str) -> list[Any]:
    """``user``'s id as a naive comparison might still accept it (never the id itself)."""
    alikes = [
        user.lower(),
        f" {user}",
        f"{user} ",
        f"{user}\n",
        f"{user}\x00",
        f"{user}\u200b",
        f"<@{user}>",
        user.replace("I", "\u0130"),
        user.replace("A", "\uff21"),
        [user],
        {"id": user},
    ]
    return [alike for alike in alikes if alike != user]


@pytest.fixture
async def restricted() -> AsyncIterator[dict[str, Restricted]]:
    async with AsyncExitStack() as stack:
        found: dict[str, Restricted] = {}
        for name, config in SCENARIOS.items():
            env = await stack.enter_async_context(slack_env(**config))
            env.slack.usergroups = {"S0OPS": ["U0BOB"]}
            env.ask(question())
            refused, allowed = WHO[name]
            plants = [
                "U0ALICE",
                "U0BOB",
                "S0OPS",
                "alice",
                "bob",
                *look_alikes(allowed or "U0ALICE"),
            ]
            found[name] = Restricted(
                name=name,
                env=env,
                message=await env.message(),
                refused=refused,
                allowed=allowed or "",
                plants=tuple(plants),
            )
        yield found


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths(child, (*prefix, index))


# Where an id could be mistaken for the clicker's: every field that carries a user or team.
NAMED_PATHS = (
    ("user", "name"),
    ("user", "username"),
    ("user", "team_id"),
    ("user_id",),
    ("message", "user"),
    ("container", "user_id"),
    ("actions", 0, "user"),
    ("actions", 0, "value"),
    ("authorizations",),
    ("enterprise",),
    ("is_enterprise_install",),
    ("response_url",),
    ("token",),
)


@st.composite
def planted(draw: st.DrawFn, scenario: Restricted) -> dict[str, Any]:
    """The refused person's genuine click, with permission-looking values planted in it."""
    payload = copy.deepcopy(  # first_button shares its dicts with the message Slack holds
        scenario.env.slack.build_block_actions(
            scenario.message, first_button(scenario.message), user=scenario.refused
        )
    )
    for _ in range(draw(st.integers(1, 6))):
        plant: Any = draw(st.sampled_from(scenario.plants))
        if draw(st.booleans()):
            path = draw(st.sampled_from(NAMED_PATHS))
        else:
            path = draw(st.sampled_from(list(paths(payload))[1:]))
        if path == ("authorizations",):
            plant = [{"user_id": plant, "team_id": "T0FAKE", "is_bot": False}]
        parent = payload
        for step in path[:-1]:
            if isinstance(parent, dict):
                parent = parent.setdefault(step, {})
            elif isinstance(parent, list) and isinstance(step, int) and step < len(parent):
                parent = parent[step]
            else:
                break
        else:
            if isinstance(parent, dict) or (
                isinstance(parent, list) and isinstance(path[-1], int) and path[-1] < len(parent)
            ):
                parent[path[-1]] = copy.deepcopy(plant)
    user = payload.get("user")
    if isinstance(user, dict):
        # Whatever was planted around it, the field that says who clicked stays theirs
        # (a plant may have made ``user`` a string or a list: Slack never sends that).
        user["id"] = scenario.refused
        if scenario.name != "self_approval" and draw(st.integers(0, 3)) == 0:
            # Their id made to look like someone allowed: still not them. (Where anyone but
            # the requester may answer, any other id would be someone allowed.)
            user["id"] = draw(st.sampled_from(look_alikes(scenario.allowed or "U0ALICE")))
    return payload


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_no_payload_field_lets_someone_not_allowed_answer(
    restricted: dict[str, Restricted], data: st.DataObject
) -> None:
    scenario = restricted[data.draw(st.sampled_from(sorted(restricted)))]
    payload = data.draw(planted(scenario))
    async with aiohttp.ClientSession() as session:
        url = scenario.env.slack.interactivity_url
        assert url is not None
        body = form_body(payload)
        reply: Reply = await send(session, url, body, signed_headers(body))
    # 400: a field of a shape Slack never sends; 404: nothing to route it to. Either way, no.
    assert reply.status in (200, 400, 404), reply
    await scenario.env.provider.drain()
    record = await scenario.env.provider.store.get(ask_id=ask_id_of(scenario.message))
    assert record is not None
    assert record.status is AskStatus.PENDING, (scenario.name, payload["user"])
    assert record.responses == (None,)
    assert not scenario.message.updated


async def test_the_people_allowed_can_answer(restricted: dict[str, Restricted]) -> None:
    """The control: in each scenario, the refused person is told so and the allowed one
    answers (nobody may answer the empty allowlist)."""
    for scenario in restricted.values():
        slack, message = scenario.env.slack, scenario.message
        await slack.click(message, "staging", user=scenario.refused)
        notice = await slack.wait_for_ephemeral(user=scenario.refused)
        assert "not recorded" in notice.args["text"]
        if scenario.allowed:
            assert (await slack.click(message, "staging", user=scenario.allowed)).ok
            answer = await asyncio.wait_for(scenario.env.tasks[0], 5)
            assert answer.answers[0].answered_by is not None
            assert answer.answers[0].answered_by.id == scenario.allowed
        else:
            assert (await slack.click(message, "staging", user="U0BOB")).ok
            await slack.wait_for_ephemeral(user="U0BOB")
            assert not scenario.env.tasks[0].done()


# ---- the API's per-request overrides, stored in Redis and read by another replica ----------


@pytest.fixture
async def replicas(redis_server: RedisServer) -> AsyncIterator[tuple[FakeSlack, Relay, Relay]]:
    async with FakeSlack(signing_secret=SERVER_SECRET) as slack:
        env = {"REDIS_URL": redis_server.url, "RELAY_ALLOWED_USERS": "U0ALICE,U0EVE"}
        a, b = await asyncio.gather(
            start_relay(relay_env(slack, free_port(), **env)),
            start_relay(relay_env(slack, free_port(), **env)),
        )
        slack.interactivity_url = f"{b.url}/slack/events"  # created on A, clicked on B
        try:
            yield slack, a, b
        finally:
            await asyncio.gather(a.stop(), b.stop())


ASK = AskUserQuestionRequest([question()]).to_dict()
# The relay allows alice and eve (RELAY_ALLOWED_USERS); each request narrows that, and none
# can widen it. (A request cannot name a user group the relay does not list at all:
# tests/hardening/test_named_targets.py.)
OVERRIDES = [
    ({"allowed_users": ["U0EVE"]}, ["U0ALICE", "U0BOB"], "U0EVE"),
    ({"allowed_users": []}, ["U0ALICE", "U0BOB", "U0EVE"], None),
    ({"allowed_users": None}, ["U0BOB"], "U0ALICE"),
    ({"allowed_users": None, "allowed_groups": None}, ["U0BOB"], "U0EVE"),
    ({"requester": "U0ALICE", "prevent_self_approval": True}, ["U0ALICE", "U0BOB"], "U0EVE"),
]


async def test_an_api_requests_override_holds_on_every_replica(
    replicas: tuple[FakeSlack, Relay, Relay],
) -> None:
    slack, a, b = replicas
    slack.usergroups = {"S0OPS": ["U0BOB", "U0EVE"]}
    for number, (slack_field, refused, allowed) in enumerate(OVERRIDES, 1):
        status, created = await a.request("POST", "/v1/asks", json={**ASK, "slack": slack_field})
        assert status == 201, created
        message = await slack.wait_for_message(count=number)
        for person in refused:
            told = len([e for e in slack.ephemerals if e.args["user"] == person])
            payload = slack.build_block_actions(message, first_button(message), user=person)
            # Planted: the allowed person's id everywhere but user.id.
            payload["user"]["name"] = payload["user_id"] = allowed or "U0ALICE"
            assert (await slack.post_interaction(payload)).status == 200
            await slack.wait_for_ephemeral(user=person, count=told + 1)
        _, record = await b.request("GET", f"/v1/asks/{created['id']}")
        assert record["status"] == "pending", slack_field
        assert not message.updated
        if allowed is not None:
            assert (await slack.click(message, "staging", user=allowed)).ok
            _, record = await a.request("GET", f"/v1/asks/{created['id']}?wait=5")
            assert record["answered_by"]["id"] == allowed


async def test_an_api_request_cannot_name_answerers_outside_the_relays_allowlist(
    replicas: tuple[FakeSlack, Relay, Relay],
) -> None:
    slack, a, _ = replicas
    status, body = await a.request(
        "POST", "/v1/asks", json={**ASK, "slack": {"allowed_users": ["U0EVE", "U0BOB"]}}
    )
    assert status == 400, body
    assert body["error"]["code"] == "BAD_REQUEST"
    assert "U0BOB" in body["error"]["message"]
    assert "RELAY_ALLOWED_USERS" in body["error"]["message"]
    assert not slack.calls_to("chat.postMessage")
