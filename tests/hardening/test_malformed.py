"""Fuzzing the interactivity endpoint: structurally random JSON and form bodies never crash it.

Three properties, each checked against a provider serving real HTTP with pending asks of every
kind (buttons, a menu, checkboxes, a batch): the endpoint answers a 2xx or 4xx (never a 5xx),
logs no error, and every pending ask, message and waiting agent stays as it was.

- random edits anywhere in a genuine click by someone not allowed to answer (so no edit that
  leaves a valid click can change anything either), including huge strings and deep nesting;
- targeted edits to a click by someone who *is* allowed: unknown action ids, option values out
  of range, ``state.values`` for elements that do not exist; none of them may answer;
- arbitrary form and JSON bodies, signed or not.
"""

from __future__ import annotations

import copy
import json
import logging
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay.store import AskStatus
from tests.hardening.slack_requests import (
    FORM,
    REFUSALS,
    Reply,
    form_body,
    send,
    signed_headers,
    state_of,
    task_count,
    with_action,
)
from tests.slack_env import Env, ask_id_of, question, slack_env

EXAMPLES = 200
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
ALLOWED = "U0ALICE"
# Keys Slack's payloads (and Bolt's parsers) use, so that random edits hit what is read.
SLACK_KEYS = (
    "type",
    "user",
    "id",
    "team",
    "team_id",
    "enterprise",
    "api_app_id",
    "actions",
    "action_id",
    "block_id",
    "value",
    "selected_option",
    "selected_options",
    "container",
    "channel",
    "channel_id",
    "message",
    "message_ts",
    "thread_ts",
    "state",
    "values",
    "view",
    "callback_id",
    "event",
    "authorizations",
    "is_enterprise_install",
    "is_ext_shared_channel",
    "response_url",
    "response_urls",
    "command",
    "workflow_step",
    "function_data",
    "trigger_id",
    "token",
    "ssl_check",
    "challenge",
)
DEEP = 50_000  # levels of nesting; Python's JSON parser gives up near 1,000
BIG = 40_000  # a string of "xé" repeated: ~360 kB of body, under the 1 MiB body cap
HUGE = 1_200_000  # characters: over the cap, refused with 413 before it is parsed

keys = st.one_of(st.sampled_from(SLACK_KEYS), st.text(max_size=12))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=24),
    st.sampled_from(["block_actions", "relay:x:0:act", "relay.option.0", "0", "-1", "99999"]),
    st.sampled_from(["١", "²", "0001", "U0EVE", "T0FAKE", "A0FAKE", "\x00", "\ud800"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)


@dataclass(repr=False)  # a failing example prints its arguments: keep them short
class Target:
    """A pending ask's first message and the click ``user`` would send on one element."""

    message: Any
    payload: dict[str, Any]


@dataclass(repr=False)  # a failing example prints its arguments: keep them short
class Fuzz:
    """Pending asks of every shape, and a session to the provider's /slack/events."""

    env: Env
    session: aiohttp.ClientSession
    url: str
    eve: list[Target]  # genuine clicks by someone not allowed to answer
    alice: dict[str, Target]  # genuine clicks by someone who may

    async def send(self, body: bytes, headers: dict[str, str]) -> Reply:
        return await send(self.session, self.url, body, headers)


def element_action(message: Any, action_id: str, **extra: Any) -> dict[str, Any]:
    """The ``actions[0]`` entry Slack sends for the element ``action_id`` of ``message``."""
    for block in message.versions[0]:
        for element in block.get("elements") or [block.get("element") or {}]:
            if element.get("action_id") == action_id:
                action = {
                    "type": element["type"],
                    "block_id": block["block_id"],
                    "action_id": action_id,
                    "action_ts": "1700000000.000001",
                }
                if "value" in element:
                    action["value"] = element["value"]
                return {**action, **extra}
    raise LookupError(f"no element {action_id} in the message")


@pytest.fixture
async def fuzz() -> AsyncIterator[Fuzz]:
    async with slack_env(allowed_users={ALLOWED}) as env, aiohttp.ClientSession() as session:
        assert env.slack.interactivity_url is not None
        env.ask(question())  # buttons
        buttons = await env.message(1)
        env.ask(question("menu", "Which?", *(f"option {i}" for i in range(8))))
        menu = await env.message(2)
        env.ask(question("many", "Which ones?", "a", "b", "c", multi=True))
        checks = await env.message(3)
        env.ask(question("q0", "First?"), question("q1", "Second?"))
        batch = await env.message(4)
        await env.message(5)
        menu_pick = {"text": {"type": "plain_text", "text": "option 1"}, "value": "1"}
        elements = {
            "button": (buttons, element_action(buttons, "relay.option.0")),
            "menu": (menu, element_action(menu, "relay.select", selected_option=menu_pick)),
            "submit": (checks, element_action(checks, "relay.submit")),
            "skip": (batch, element_action(batch, "relay.skip")),
            "text": (buttons, element_action(buttons, "relay.text", value="typed")),
        }
        # Slack fills in state.values from what the clicker's client shows.
        await env.slack.check(checks, ["a"], user="U0EVE")
        clicks = {
            user: {
                name: Target(m, env.slack.build_block_actions(m, action, user=user))
                for name, (m, action) in elements.items()
            }
            for user in ("U0EVE", ALLOWED)
        }
        yield Fuzz(
            env=env,
            session=session,
            url=env.slack.interactivity_url,
            eve=list(clicks["U0EVE"].values()),
            alice=clicks[ALLOWED],
        )


@pytest.fixture
def errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """Every record logged at WARNING or above during the test (crashes log at ERROR)."""
    caplog.set_level(logging.WARNING)
    return caplog.records


def logged_errors(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records if r.levelno >= logging.ERROR]


async def assert_unchanged(fuzz: Fuzz) -> None:
    state = await state_of(fuzz.env)
    assert all(ask.status is AskStatus.PENDING for ask in state.asks)
    assert all(r is None for ask in state.asks for r in ask.responders)
    assert all(state.waiting)
    assert set(state.versions) == {1}  # no message was touched
    assert state.updates == 0


# ---- random edits anywhere in a click -----------------------------------------------------


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a node inside ``value`` (dict keys and list indices)."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths(child, (*prefix, index))


@st.composite
def edited(draw: st.DrawFn, payload: dict[str, Any]) -> Any:
    """``payload`` after 1–4 random deletions, replacements and insertions; a huge string or
    a deep nesting is a marker here (``expand`` makes it), so that reports stay readable."""
    data: Any = copy.deepcopy(payload)
    for _ in range(draw(st.integers(1, 4))):
        if isinstance(data, dict) and draw(st.booleans()):
            # Half the edits hit the envelope's top level, which every layer reads first.
            path: tuple[Any, ...] = (draw(st.sampled_from(sorted({*data, *SLACK_KEYS}))),)
        else:
            path = draw(st.sampled_from(list(paths(data))))
        edit = draw(st.sampled_from(["replace", "replace", "delete", "insert", "big", "deep"]))
        new: Any = MARKS.get(edit) or draw(json_values)
        if edit == "big" and draw(st.integers(0, 9)) == 0:
            new = HUGE_MARK
        if not path:
            data = new if edit != "delete" else data
            continue
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        step = path[-1]
        present = isinstance(parent, list) or step in parent
        if edit == "delete":
            if present:
                del parent[step]
        elif edit == "insert" and present and isinstance(parent[step], dict):
            parent[step][draw(keys)] = new
        else:
            parent[step] = new
    return data


BIG_MARK, HUGE_MARK, DEEP_MARK = "__BIG__", "__HUGE__", "__DEEP__"
MARKS = {"big": BIG_MARK, "deep": DEEP_MARK}


def expand(data: Any) -> str:
    """The JSON text of ``edited``'s output, markers made real."""
    text = json.dumps(data)
    text = text.replace(f'"{BIG_MARK}"', json.dumps("x\u00e9" * BIG))
    text = text.replace(f'"{HUGE_MARK}"', json.dumps("x" * HUGE))
    return text.replace(f'"{DEEP_MARK}"', "[" * DEEP + "]" * DEEP)


@PROPERTY
@given(data=st.data())
async def test_random_edits_to_a_click_never_crash_the_endpoint(
    fuzz: Fuzz, errors: list[logging.LogRecord], data: st.DataObject
) -> None:
    target = data.draw(st.sampled_from(fuzz.eve))
    body = urllib.parse.urlencode({"payload": expand(data.draw(edited(target.payload)))}).encode()
    reply = await fuzz.send(body, signed_headers(body))
    assert reply.status in REFUSALS, reply
    await assert_unchanged(fuzz)
    assert not logged_errors(errors)


# ---- targeted edits to an allowed user's click --------------------------------------------

UNKNOWN_ACTIONS = st.one_of(
    st.sampled_from(
        [
            "relay.nope",
            "relay.option",
            "relay.option.",
            "relay.option.x",
            "relay.option.9",
            "relay.option.00",
            "relay.option.١",
            "relay.selectx",
            "relay.text2",
            "relay",
            "relay.",
            "other_app.option.0",
            "",
        ]
    ),
    st.text(max_size=30).map(lambda t: "relay." + t),
    st.text(max_size=30),
)


def out_of_range(count: int) -> st.SearchStrategy[Any]:
    """Option values that name none of ``count`` options (values carry indices)."""
    return st.one_of(
        st.integers(count, 10**6).map(str),
        st.integers(max_value=-1).map(str),
        st.sampled_from(["", " 1", "1 ", "1.0", "x", "²", "١", "٠", "1e3", "0x1", "+1", "-0"]),
        json_values.filter(lambda v: not isinstance(v, str)),
    )


MISMATCHED_OPTION_IDS = [
    *("relay.option.", "relay.option.x", "relay.option.0x", "relay.option.00"),
    *("relay.option.٠", "relay.option.1", "relay.option.-0", "relay.option. 0"),
]


@st.composite
def targeted(draw: st.DrawFn, fuzz: Fuzz) -> dict[str, Any]:
    """An allowed user's click edited so that it must not answer anything."""
    kind = draw(
        st.sampled_from(
            [
                "unknown_action",
                "option_id",
                "button_value",
                "menu_value",
                "ticked_out_of_range",
                "ticks_elsewhere",
                "blank_text",
                "block_index",
            ]
        )
    )
    if kind == "unknown_action":
        target = draw(st.sampled_from(list(fuzz.alice.values())))
        payload = with_action(target.payload, action_id=draw(UNKNOWN_ACTIONS))
        known = payload["actions"][0]["action_id"]
        # Keep only ids that no element of that message has (their own tests cover those).
        relay_ids = {"relay.option.0", "relay.option.1", "relay.select", "relay.checks"}
        relay_ids |= {"relay.submit", "relay.skip", "relay.text", "relay.multi"}
        if known in relay_ids:
            payload = with_action(payload, action_id="relay.unknown")
        return payload
    if kind == "option_id":
        # A button action id that no button of the message has, or that is not its value's.
        action_id = draw(st.sampled_from(MISMATCHED_OPTION_IDS))
        return with_action(fuzz.alice["button"].payload, action_id=action_id, value="0")
    if kind == "button_value":
        value = draw(out_of_range(2))
        action_id = draw(st.sampled_from(["relay.option.0", f"relay.option.{value}"]))
        return with_action(fuzz.alice["button"].payload, value=value, action_id=action_id)
    if kind == "menu_value":
        option = draw(
            st.one_of(
                st.builds(
                    lambda v: {"text": {"type": "plain_text", "text": "x"}, "value": v},
                    out_of_range(8),
                ),
                json_values,
            )
        )
        return with_action(fuzz.alice["menu"].payload, selected_option=option)
    if kind in ("ticked_out_of_range", "ticks_elsewhere"):
        target = fuzz.alice["submit"]
        payload = copy.deepcopy(target.payload)
        act = payload["actions"][0]["block_id"]
        ask_id = ask_id_of(target.message)
        values = payload["state"]["values"]
        if kind == "ticked_out_of_range":
            options = [{"value": draw(out_of_range(3))}]
            values[act] = {"relay.checks": {"type": "checkboxes", "selected_options": options}}
        else:
            # Ticks under block ids of other questions, other asks, or no element at all.
            other_ask = ask_id_of(fuzz.alice["button"].message)
            elsewhere = draw(
                st.sampled_from(
                    [
                        f"relay:{ask_id}:1:act",
                        f"relay:{ask_id}:0:acts",
                        f"relay:{other_ask}:0:act",
                        "relay:other:0:act",
                        "x",
                    ]
                )
            )
            ticked = {"type": "checkboxes", "selected_options": [{"value": "0"}, {"value": "1"}]}
            values[act] = {"relay.checks": {"type": "checkboxes", "selected_options": []}}
            values[elsewhere] = {draw(st.sampled_from(["relay.checks", "relay.multi"])): ticked}
        return payload
    if kind == "blank_text":
        value = draw(st.one_of(st.sampled_from(["", " ", "\n\t", "\u3000"]), json_values))
        if isinstance(value, str) and value.strip():
            value = None
        return with_action(fuzz.alice["text"].payload, value=value)
    index = draw(st.sampled_from(["2", "5", "9999"]))
    target = draw(st.sampled_from([fuzz.alice["button"], fuzz.alice["skip"]]))
    block = target.payload["actions"][0]["block_id"].split(":")
    return with_action(target.payload, block_id=":".join([*block[:2], index, block[3]]))


@PROPERTY
@given(data=st.data())
async def test_an_allowed_users_click_on_nothing_real_answers_nothing(
    fuzz: Fuzz, errors: list[logging.LogRecord], data: st.DataObject
) -> None:
    payload = data.draw(targeted(fuzz))
    body = form_body(payload)
    reply = await fuzz.send(body, signed_headers(body))
    assert reply.status in REFUSALS, reply
    await assert_unchanged(fuzz)
    assert not logged_errors(errors)


# ---- arbitrary bodies ---------------------------------------------------------------------

CONTENT_TYPES = st.sampled_from(
    [
        FORM,
        "application/json",
        "text/plain",
        "multipart/form-data; boundary=xyz",
        FORM + "; charset=latin-1",
        FORM + "; charset=no-such-codec",
        "application/json; charset=utf-16",
        "",
        "*/*",
    ]
)
raw_bodies = st.one_of(
    st.binary(max_size=300),
    st.dictionaries(keys, st.text(max_size=40), max_size=5).map(
        lambda d: urllib.parse.urlencode(d).encode()
    ),
    json_values.map(lambda v: json.dumps(v).encode("utf-8", "surrogatepass")),
    json_values.map(lambda v: urllib.parse.urlencode({"payload": json.dumps(v)}).encode()),
    st.text(max_size=200).map(lambda t: ("payload=" + t).encode("utf-8", "surrogatepass")),
    st.lists(json_values, min_size=2, max_size=3).map(
        lambda vs: "&".join("payload=" + urllib.parse.quote(json.dumps(v)) for v in vs).encode()
    ),
    st.sampled_from(
        [
            b"",
            b"payload=",
            b"payload=%",
            b"payload=%zz",
            b"payload=%7B",
            b"payload=null",
            b"payload=%5B%5D",
            b"DEEP_FORM",  # expanded by the test: reports stay readable
            b"DEEP_JSON",
            b'{"type": "url_verification", "challenge": 5}',
            b'{"type": "event_callback", "event": 1}',
            b"ssl_check=1&token=x",
            b"command=%2Fx&text=y",
            b"\xff\xfe{}",
        ]
    ),
)


@PROPERTY
@given(body=raw_bodies, content_type=CONTENT_TYPES, signed=st.booleans())
async def test_arbitrary_bodies_never_crash_the_endpoint(
    fuzz: Fuzz, errors: list[logging.LogRecord], body: bytes, content_type: str, signed: bool
) -> None:
    if body == b"DEEP_FORM":
        body = b"payload=" + b"%5B" * DEEP + b"%5D" * DEEP
    elif body == b"DEEP_JSON":
        body = b"[" * DEEP + b"]" * DEEP
    headers = signed_headers(body, content_type=content_type)
    if not signed:
        headers["X-Slack-Signature"] = "v0=" + "0" * 64
    reply = await fuzz.send(body, headers)
    assert reply.status in REFUSALS, reply
    if not signed:
        assert reply.status in (400, 401, 413) or body.startswith(b"ssl_check"), reply
    await assert_unchanged(fuzz)
    assert not logged_errors(errors)


# ---- the control: refusals leave nothing running; the genuine click answers ----------------


async def test_refused_clicks_leave_no_task_behind_and_a_genuine_one_answers(
    fuzz: Fuzz,
) -> None:
    async def refused_clicks(count: int) -> int:
        eve = fuzz.eve[0]
        for _ in range(count):
            # Each click has its own response_url (one takes 5 replies), as in Slack.
            fresh = fuzz.env.slack.build_block_actions(
                eve.message, eve.payload["actions"][0], user="U0EVE"
            )
            body = form_body({**eve.payload, "response_url": fresh["response_url"]})
            assert (await fuzz.send(body, signed_headers(body))).status == 200
        await fuzz.env.provider.drain()
        return task_count()

    # The first round opens the keep-alive connections (and their tasks) the rest reuse.
    settled = await refused_clicks(5)
    assert await refused_clicks(50) == settled  # every notice's task has finished
    assert len(fuzz.env.slack.ephemerals) == 55
    body = form_body(fuzz.alice["button"].payload)
    assert (await fuzz.send(body, signed_headers(body))).status == 200
    state = await state_of(fuzz.env)
    assert state.asks[0].status is AskStatus.ANSWERED
    assert state.asks[0].responders == (ALLOWED,)


# ---- examples the fuzzing found ------------------------------------------------------------


@pytest.mark.parametrize(
    "edit",
    [
        # Not a relay click (no action), so Bolt's: its per-request client took the team id
        # into a query string and raised.
        {"team": {"id": {"x": False}}, "actions": [{"action_id": "theirs", "block_id": "b"}]},
        {
            "team": None,
            "user": {"id": "U0EVE", "team_id": ["T0"]},
            "actions": [{"action_id": "theirs", "block_id": "b"}],
        },
        {
            "enterprise": {"id": {"E": 1}},
            "is_enterprise_install": True,
            "actions": [{"action_id": "theirs", "block_id": "b"}],
        },
        {
            "channel": {"id": {"nested": 1}},
            "container": {"channel_id": 5},
            "actions": [{"action_id": "theirs", "block_id": "b"}],
        },
    ],
)
async def test_ids_of_the_wrong_type_are_refused_before_bolt(
    fuzz: Fuzz, errors: list[logging.LogRecord], edit: dict[str, Any]
) -> None:
    body = form_body({**fuzz.eve[0].payload, **edit})
    reply = await fuzz.send(body, signed_headers(body))
    assert reply.status in REFUSALS
    await fuzz.env.provider.drain()
    assert logged_errors(errors) == []
    await assert_unchanged(fuzz)
