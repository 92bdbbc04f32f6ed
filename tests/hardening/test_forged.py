"""Forged, tampered, replayed and misrouted requests to /slack/events change nothing.

Every property sends requests built from a genuine click, a click that *would* answer a
pending ask if it arrived as Slack signed it, and checks that after the tampered one every
ask, message and waiting agent is exactly as before. A last test sends the genuine click
itself, so that the properties cannot pass merely because the click was never valid.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay.store import AskStatus
from tests.hardening.slack_requests import (
    FORM,
    Reply,
    State,
    form_body,
    send,
    signature,
    signed_headers,
    state_of,
    with_action,
)
from tests.slack_env import SECRET, Env, ask_id_of, first_button, question, result, slack_env

EXAMPLES = 150
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
OUR_TEAM, OUR_APP = "T0FAKE", "A0FAKE"  # FakeSlack's defaults, which auth.test reports

# Header values aiohttp will send: no control characters, no lone surrogates.
header_text = st.text(st.characters(exclude_categories=["Cc", "Cs"]), max_size=80)


@dataclass(repr=False)  # a failing example prints its arguments: keep them short
class World:
    """Three asks: A pending (one question), B pending (two), C answered by alice."""

    env: Env
    session: aiohttp.ClientSession
    url: str
    ids: dict[str, str]
    messages: dict[str, Any]
    genuine: dict[str, Any]  # bob clicking "staging" on A: would answer it
    genuine_body: bytes
    replay: tuple[bytes, dict[str, str]]  # alice's click on C, exactly as it was sent

    async def send(self, body: bytes, headers: dict[str, str]) -> Reply:
        return await send(self.session, self.url, body, headers)

    async def send_signed(self, payload: dict[str, Any]) -> Reply:
        body = form_body(payload)
        return await self.send(body, signed_headers(body))

    async def state(self) -> State:
        return await state_of(self.env)


@pytest.fixture
async def world() -> AsyncIterator[World]:
    async with slack_env() as env, aiohttp.ClientSession() as session:
        url = env.slack.interactivity_url
        assert url is not None
        env.ask(question())
        a = await env.message(1)
        env.ask(question("q0", "First?"), question("q1", "Second?"))
        b0, b1 = await env.message(2), await env.message(3)
        c_task = env.ask(question("c", "Third?"))
        c = await env.message(4)
        alice = env.slack.build_block_actions(c, first_button(c), user="U0ALICE")
        replay_body = form_body(alice)
        replay_headers = signed_headers(replay_body)
        assert (await send(session, url, replay_body, replay_headers)).status == 200
        await result(c_task)
        genuine = env.slack.build_block_actions(a, first_button(a), user="U0BOB")
        yield World(
            env=env,
            session=session,
            url=url,
            ids={name: ask_id_of(m) for name, m in (("A", a), ("B", b0), ("C", c))},
            messages={"A": a, "B0": b0, "B1": b1, "C": c},
            genuine=genuine,
            genuine_body=form_body(genuine),
            replay=(replay_body, replay_headers),
        )


def expected_state(state: State) -> None:
    """A and B pending and unanswered, C answered by alice, every agent as it was."""
    a, b, c = state.asks
    assert a.status is b.status is AskStatus.PENDING
    assert a.responders == (None,)
    assert b.responders == (None, None)
    assert (c.status, c.responders) == (AskStatus.ANSWERED, ("U0ALICE",))
    assert state.waiting == (True, True, False)


# ---- signatures and timestamps -----------------------------------------------------------


@st.composite
def bad_signatures(draw: st.DrawFn, body: bytes) -> dict[str, str]:
    """Headers for ``body`` that Slack did not sign now with our secret."""
    now = str(int(time.time()))
    good = signature(body, now)
    kind = draw(
        st.sampled_from(
            ["random_hex", "random_text", "truncated", "other_secret", "scheme", "missing"]
        )
    )
    headers = {"Content-Type": FORM, "X-Slack-Request-Timestamp": now}
    if kind == "random_hex":
        digest = draw(st.text("0123456789abcdef", min_size=64, max_size=64))
        headers["X-Slack-Signature"] = "v0=" + digest
    elif kind == "random_text":
        headers["X-Slack-Signature"] = draw(header_text)
    elif kind == "truncated":
        headers["X-Slack-Signature"] = good[: draw(st.integers(0, len(good) - 1))]
    elif kind == "other_secret":
        secret = draw(st.text(min_size=1, max_size=40).filter(lambda s: s != SECRET))
        headers["X-Slack-Signature"] = signature(body, now, secret=secret)
    elif kind == "scheme":
        # Same digest, but not the exact string Slack sends: another version, upper case.
        headers["X-Slack-Signature"] = draw(
            st.sampled_from(["v1=" + good[3:], "V0=" + good[3:], good.upper(), good + " x"])
        )
    else:
        headers["X-Slack-Signature"] = good
        names = ["X-Slack-Signature", "X-Slack-Request-Timestamp"]
        for name in draw(st.lists(st.sampled_from(names), min_size=1, unique=True)):
            if draw(st.booleans()):
                del headers[name]
            else:
                headers[name] = ""
    sent = (headers.get("X-Slack-Signature"), headers.get("X-Slack-Request-Timestamp"))
    assert sent != (good, now)
    return headers


@PROPERTY
@given(data=st.data())
async def test_a_wrong_missing_or_truncated_signature_is_refused(
    world: World, data: st.DataObject
) -> None:
    body = world.genuine_body
    headers = data.draw(bad_signatures(body))
    reply = await world.send(body, headers)
    assert reply.status == 401
    expected_state(await world.state())


timestamps_outside = st.one_of(
    # Whole seconds more than 5 minutes off (302: a second of slack for the clock ticking).
    st.integers(302, 10**10).map(lambda s: ("shift", -s)),
    st.integers(302, 10**10).map(lambda s: ("shift", s)),
    header_text.filter(lambda t: not t.strip().isdigit()).map(lambda t: ("text", t)),
    st.sampled_from(["-1", "+1700000000", "1e9", "0x10", "١٧٠٠٠٠٠٠٠٠", "²³", " "]).map(
        lambda t: ("text", t)
    ),
)


@PROPERTY
@given(stamp=timestamps_outside)
async def test_a_timestamp_outside_five_minutes_is_refused_even_when_signed(
    world: World, stamp: tuple[str, Any]
) -> None:
    kind, value = stamp
    timestamp = str(int(time.time()) + value) if kind == "shift" else value
    body = world.genuine_body
    headers = {
        "Content-Type": FORM,
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": signature(body, timestamp.strip()),
    }
    reply = await world.send(body, headers)
    assert reply.status == 401
    expected_state(await world.state())


@st.composite
def modified(draw: st.DrawFn, body: bytes) -> bytes:
    """``body`` changed in at least one byte."""
    kind = draw(st.sampled_from(["replace", "delete", "insert", "append", "truncate", "user"]))
    if kind == "user":
        changed = body.replace(b"U0BOB", draw(st.sampled_from([b"U0ALICE", b"U0EVE", b"U0BOC"])))
    elif kind == "append":
        changed = body + draw(st.binary(min_size=1, max_size=64))
    elif kind == "truncate":
        changed = body[: draw(st.integers(0, len(body) - 1))]
    else:
        at = draw(st.integers(0, len(body) - 1))
        if kind == "replace":
            byte = draw(st.integers(0, 255).filter(lambda b: b != body[at]))
            changed = body[:at] + bytes([byte]) + body[at + 1 :]
        elif kind == "delete":
            changed = body[:at] + body[at + 1 :]
        else:
            changed = body[:at] + draw(st.binary(min_size=1, max_size=8)) + body[at:]
    assert changed != body
    return changed


@PROPERTY
@given(data=st.data())
async def test_a_valid_signature_on_a_modified_body_is_refused(
    world: World, data: st.DataObject
) -> None:
    headers = signed_headers(world.genuine_body)  # signs the genuine body, sends another
    body = data.draw(modified(world.genuine_body))
    reply = await world.send(body, headers)
    # 401 for a bad signature; 400 when the changed bytes are not even UTF-8 or a payload.
    assert reply.status in (400, 401)
    expected_state(await world.state())


# ---- signed, but not ours to act on -----------------------------------------------------


@PROPERTY
@given(
    exact=st.booleans(),
    user=st.sampled_from(["U0ALICE", "U0BOB", "U0EVE"]),
    resign_as_of=st.integers(-290, 0),
)
async def test_a_valid_click_replayed_after_its_ask_ended_changes_nothing(
    world: World, exact: bool, user: str, resign_as_of: int
) -> None:
    if exact:
        body, headers = world.replay
    else:
        # The same click by anyone, freshly signed within the window.
        c = world.messages["C"]
        body = form_body(world.env.slack.build_block_actions(c, first_button(c), user=user))
        headers = signed_headers(body, timestamp=str(int(time.time()) + resign_as_of))
    reply = await world.send(body, headers)
    assert reply.status == 200
    expected_state(await world.state())


ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
ask_names = st.sampled_from(["A", "B", "C", "other"])


@PROPERTY
@given(
    block_ask=ask_names,
    index=st.sampled_from(["0", "1", "2", "9999", "00", "0001"]),
    container=st.sampled_from(["A", "B0", "B1", "C", "other", "none"]),
    random_id=st.text(ID_CHARS, min_size=1, max_size=64),
)
async def test_clicks_naming_another_asks_ids_change_nothing(
    world: World, block_ask: str, index: str, container: str, random_id: str
) -> None:
    # The click Slack would send for the message in ``container``, its block id rewritten.
    real = {"A": ("A", 0), "B0": ("B", 0), "B1": ("B", 1), "C": ("C", 0)}
    if real.get(container) == (block_ask, int(index)):
        return  # that is the genuine click on that message ("00" is 0 too), not a misrouted one
    ask_id = world.ids.get(block_ask, random_id)
    payload = with_action(world.genuine, block_id=f"relay:{ask_id}:{index}:act")
    if container == "none":
        payload = {k: v for k, v in payload.items() if k != "container"}
    elif container == "other":
        payload["container"] = {**payload["container"], "message_ts": "1700000000.000001"}
    else:
        message = world.messages[container]
        payload["container"] = {
            **payload["container"],
            "channel_id": message.channel,
            "message_ts": message.ts,
        }
    reply = await world.send_signed(payload)
    assert reply.status == 200
    expected_state(await world.state())


foreign = st.text(max_size=20).filter(lambda s: s not in (OUR_TEAM, OUR_APP))


@PROPERTY
@given(
    team=st.one_of(
        st.just("ours"),
        st.builds(lambda t: {"id": t, "domain": "x"}, foreign),
        st.just(None),
        st.just("missing"),
    ),
    user_team=st.one_of(st.just("ours"), foreign, st.just("missing")),
    app=st.one_of(st.just("ours"), foreign, st.just(None), st.just("missing")),
)
async def test_clicks_from_another_workspace_or_app_are_ignored(
    world: World, team: Any, user_team: Any, app: Any
) -> None:
    payload = json.loads(json.dumps(world.genuine))
    if team != "ours":
        if team == "missing":
            del payload["team"]
        else:
            payload["team"] = team
    if user_team != "ours":
        if user_team == "missing":
            del payload["user"]["team_id"]
        else:
            payload["user"]["team_id"] = user_team
    if app != "ours":
        if app == "missing":
            del payload["api_app_id"]
        else:
            payload["api_app_id"] = app
    # The workspace is payload.team.id, or payload.user.team_id where that is missing.
    team_id = OUR_TEAM if team == "ours" else (team or {}).get("id") if team != "missing" else None
    user_team_id = {"ours": OUR_TEAM, "missing": None}.get(user_team, user_team)
    if (team_id or user_team_id) == OUR_TEAM and app == "ours":
        return  # nothing foreign left: that is the genuine click
    # Each click has its own response_url (one takes 5 replies), as in Slack.
    a = world.messages["A"]
    fresh = world.env.slack.build_block_actions(a, first_button(a), user="U0BOB")
    payload["response_url"] = fresh["response_url"]
    told = len(world.env.slack.ephemerals)
    reply = await world.send_signed(payload)
    assert reply.status == 200
    await world.env.provider.drain()
    expected_state(await world.state())
    # Another workspace's clicker is told why through their click's response_url, nothing
    # else (no chat.postEphemeral into a channel of ours); another app's click, nothing.
    assert not world.env.slack.calls_to("chat.postEphemeral")
    new = world.env.slack.ephemerals[told:]
    assert len(new) == (1 if app == "ours" else 0)
    assert all(n.method == "response_url" for n in new)
    assert all("another Slack organisation or workspace" in n.args["text"] for n in new)


# ---- the control: the genuine request works ----------------------------------------------


async def test_the_untampered_click_is_accepted(world: World) -> None:
    """The properties above start from this click; sent as signed, it answers A."""
    reply = await world.send(world.genuine_body, signed_headers(world.genuine_body))
    assert reply.status == 200
    a = (await world.state()).asks[0]
    assert (a.status, a.responders) == (AskStatus.ANSWERED, ("U0BOB",))
