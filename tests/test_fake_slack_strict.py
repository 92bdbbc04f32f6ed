"""FakeSlack refuses what Slack refuses: one test per leniency found in relay issue 39 (Block
Kit limits and fields, tokens, workspace state, method rules, rate limits, error shapes),
each over real HTTP with slack_sdk's client, as an app under test would call it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from relay.testing import DEFAULT_BOT_TOKEN, FakeSlack
from relay.testing.ratelimits import POST_MESSAGE_BURST, TIER_PER_MINUTE, TierLimiter
from tests.fake_slack_env import with_alice_and_bob

TOKEN = "xoxb-strict-test"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with with_alice_and_bob(FakeSlack(bot_token=TOKEN, channels={"C0OPS": "ops"})) as fake:
        yield fake


@pytest.fixture
def client(slack: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token=TOKEN, base_url=slack.base_url)


def text(kind: str, value: str) -> dict[str, Any]:
    return {"type": kind, "text": value}


def option(label: str = "Yes", value: str | None = "yes", **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"text": text("plain_text", label), **extra}
    if value is not None:
        result["value"] = value
    return result


def actions(*elements: dict[str, Any]) -> dict[str, Any]:
    return {"type": "actions", "elements": list(elements)}


def select(**fields: Any) -> dict[str, Any]:
    return {"type": "static_select", "action_id": "pick", **fields}


def text_input(**fields: Any) -> dict[str, Any]:
    return {
        "type": "input",
        "label": text("plain_text", "Why?"),
        "element": {"type": "plain_text_input", "action_id": "why", **fields},
    }


def button(**fields: Any) -> dict[str, Any]:
    return {"type": "button", "text": text("plain_text", "Go"), "action_id": "go", **fields}


SECTION = {"type": "section", "text": text("mrkdwn", "ok")}

# Each case: a block Slack refuses, and the message its refusal carries (json-pointer included).
REFUSED_BLOCKS = [
    pytest.param(
        {"type": "context", "elements": [text("mrkdwn", "x" * 3001)]},
        "must be less than 3001 characters [json-pointer:/blocks/0/elements/0/text]",
        id="context-text-over-3000",
    ),
    pytest.param(
        {"type": "section", "fields": [text("mrkdwn", "x" * 2001)]},
        "must be less than 2001 characters [json-pointer:/blocks/0/fields/0/text]",
        id="section-field-over-2000",
    ),
    pytest.param(
        actions(button(action_id="")),
        "must be more than 0 characters [json-pointer:/blocks/0/elements/0/action_id]",
        id="empty-action-id",
    ),
    pytest.param(
        {**SECTION, "block_id": ""},
        "must be more than 0 characters [json-pointer:/blocks/0/block_id]",
        id="empty-block-id",
    ),
    pytest.param(
        actions(select(placeholder=text("plain_text", "Pick"))),
        "must provide options or option_groups [json-pointer:/blocks/0/elements/0]",
        id="select-without-options",
    ),
    pytest.param(
        actions(select(options=[option("x" * 76)])),
        "must be less than 76 characters [json-pointer:/blocks/0/elements/0/options/0/text/text]",
        id="option-text-76",
    ),
    pytest.param(
        actions(select(options=[option(description=text("plain_text", "d" * 76))])),
        "must be less than 76 characters "
        "[json-pointer:/blocks/0/elements/0/options/0/description/text]",
        id="option-description-76",
    ),
    pytest.param(
        actions(select(options=[option(value="v" * 151)])),
        "must be less than 151 characters [json-pointer:/blocks/0/elements/0/options/0/value]",
        id="option-value-151",
    ),
    pytest.param(
        actions(select(options=[option(value=None)])),
        "missing required field: value [json-pointer:/blocks/0/elements/0/options/0]",
        id="option-without-value",
    ),
    pytest.param(
        actions(
            {
                "type": "checkboxes",
                "action_id": "ticks",
                "options": [option(value=str(i)) for i in range(11)],
            }
        ),
        "no more than 10 items allowed [json-pointer:/blocks/0/elements/0/options]",
        id="11-checkboxes",
    ),
    pytest.param(
        actions(
            {**select(options=[option()]), "type": "multi_static_select", "max_selected_items": 0}
        ),
        "must be at least 1 [json-pointer:/blocks/0/elements/0/max_selected_items]",
        id="max-selected-items-0",
    ),
    pytest.param(
        actions(select(options=[option()], placeholder=text("mrkdwn", "*Pick*"))),
        "must be a plain_text text object, not 'mrkdwn' "
        "[json-pointer:/blocks/0/elements/0/placeholder/type]",
        id="mrkdwn-placeholder",
    ),
    pytest.param(
        {**text_input(), "label": text("mrkdwn", "*Why?*")},
        "must be a plain_text text object, not 'mrkdwn' [json-pointer:/blocks/0/label/type]",
        id="mrkdwn-label",
    ),
    pytest.param(
        text_input(max_length=0),
        "must be at least 1 [json-pointer:/blocks/0/element/max_length]",
        id="max-length-0",
    ),
    pytest.param(
        text_input(min_length=3001),
        "must be at most 3000 [json-pointer:/blocks/0/element/min_length]",
        id="min-length-over-3000",
    ),
    pytest.param(
        text_input(dispatch_action_config={"trigger_actions_on": ["on_blur"]}),
        "must be one of on_character_entered, on_enter_pressed "
        "[json-pointer:/blocks/0/element/dispatch_action_config/trigger_actions_on/0]",
        id="bad-trigger-actions-on",
    ),
    pytest.param(
        {**text_input(), "dispatch_action": "yes"},
        "must be a boolean [json-pointer:/blocks/0/dispatch_action]",
        id="dispatch-action-yes",
    ),
    pytest.param(
        actions(button(colour="red")),
        "unknown field 'colour' [json-pointer:/blocks/0/elements/0/colour]",
        id="unknown-field-colour",
    ),
    pytest.param(
        {**text_input(), "dispatch_actions": True},
        "unknown field 'dispatch_actions' [json-pointer:/blocks/0/dispatch_actions]",
        id="misspelt-dispatch-actions",
    ),
]


@pytest.mark.parametrize(("block", "expected"), REFUSED_BLOCKS)
async def test_a_block_slack_refuses_is_refused(
    slack: FakeSlack, client: AsyncWebClient, block: dict[str, Any], expected: str
) -> None:
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C0OPS", text="fallback", blocks=[block])
    body = raised.value.response.data
    assert isinstance(body, dict)
    assert body["error"] == "invalid_blocks"
    assert expected in body["errors"]
    assert f"[ERROR] {expected}" in body["response_metadata"]["messages"]
    assert slack.messages == []


async def test_invalid_blocks_carry_slacks_response_metadata(client: AsyncWebClient) -> None:
    # Slack's shape, which slack_sdk shows in its error message: each error in
    # response_metadata.messages with its level, e.g. "[ERROR] must be less than 3001 ...".
    section = {"type": "section", "text": text("mrkdwn", "x" * 3001)}
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C0OPS", text="fallback", blocks=[section])
    assert raised.value.response["response_metadata"] == {
        "messages": ["[ERROR] must be less than 3001 characters [json-pointer:/blocks/0/text/text]"]
    }


# -- tokens ----------------------------------------------------------------------------------


async def raw_call(
    slack: FakeSlack,
    method: str,
    *,
    json_body: dict[str, Any] | None = None,
    form: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    sent_headers = dict(headers or {})
    data: Any = form
    if json_body is not None:  # with its charset, as slack_sdk sends it (no warning)
        data = json.dumps(json_body)
        sent_headers.setdefault("Content-Type", "application/json; charset=utf-8")
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{slack.base_url}{method}",
            data=data,
            params=query,
            headers=sent_headers,
        ) as response,
    ):
        body: dict[str, Any] = await response.json()
        return body


async def test_a_wrong_token_is_invalid_auth(slack: FakeSlack) -> None:
    client = AsyncWebClient(token="xoxb-wrong", base_url=slack.base_url)
    with pytest.raises(SlackApiError) as raised:
        await client.auth_test()
    assert raised.value.response["error"] == "invalid_auth"
    slack.revoke_token(TOKEN)
    with pytest.raises(SlackApiError) as raised:
        await AsyncWebClient(token=TOKEN, base_url=slack.base_url).auth_test()
    assert raised.value.response["error"] == "invalid_auth"


async def test_a_token_only_in_a_json_body_is_not_authed(slack: FakeSlack) -> None:
    body = {"token": TOKEN, "channel": "C0OPS", "text": "hi"}
    assert await raw_call(slack, "chat.postMessage", json_body=body) == {
        "ok": False,
        "error": "not_authed",
    }
    # The same token in a form-encoded body is read, as Slack reads it.
    answer = await raw_call(slack, "chat.postMessage", form=body)
    assert answer["ok"] is True
    assert len(slack.messages) == 1


async def test_a_token_in_the_query_string_is_not_read(slack: FakeSlack) -> None:
    answer = await raw_call(
        slack, "chat.postMessage", query={"token": TOKEN}, form={"channel": "C0OPS", "text": "x"}
    )
    assert answer == {"ok": False, "error": "not_authed"}
    assert slack.messages == []


# -- workspace state -------------------------------------------------------------------------


async def test_an_unknown_channel_is_not_found(slack: FakeSlack, client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C0NOWHERE", text="hello")
    assert raised.value.response["error"] == "channel_not_found"
    assert slack.messages == []
    # A DM the bot opened exists although it was never declared.
    opened = await client.conversations_open(users="U0ALICE")
    await client.chat_postMessage(channel=opened["channel"]["id"], text="hello")


async def test_an_unknown_user_is_not_found(slack: FakeSlack, client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as raised:
        await client.conversations_open(users="U0NOBODY")
    assert raised.value.response["error"] == "user_not_found"
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postEphemeral(channel="C0OPS", user="U0NOBODY", text="psst")
    assert raised.value.response["error"] == "user_not_found"
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="U0NOBODY", text="hello")
    assert raised.value.response["error"] == "channel_not_found"


async def test_update_on_an_unknown_channel_is_channel_not_found(
    client: AsyncWebClient,
) -> None:
    posted = await client.chat_postMessage(channel="C0OPS", text="hello")
    with pytest.raises(SlackApiError) as raised:
        await client.chat_update(channel="C0NOWHERE", ts=posted["ts"], text="edited")
    assert raised.value.response["error"] == "channel_not_found"
    with pytest.raises(SlackApiError) as raised:
        await client.chat_update(channel="C0OPS", ts="1.000001", text="edited")
    assert raised.value.response["error"] == "message_not_found"


# -- methods' own rules ----------------------------------------------------------------------


async def test_conversations_open_takes_at_most_8_users(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    people = [f"U0P{i}" for i in range(9)]
    for user in people:
        slack.add_user(user, name=user.lower())
    with pytest.raises(SlackApiError) as raised:
        await client.conversations_open(users=",".join(people))
    assert raised.value.response["error"] == "too_many_users"
    opened = await client.conversations_open(users=",".join(people[:8]))
    assert opened["channel"]["id"].startswith("G")


async def test_usergroups_users_list_reads_no_json_body(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    slack.usergroups["S0ONCALL"] = ["U0ALICE"]
    with pytest.raises(SlackApiError) as raised:
        await client.api_call("usergroups.users.list", json={"usergroup": "S0ONCALL"})
    assert raised.value.response["error"] == "invalid_arguments"
    listed = await client.usergroups_users_list(usergroup="S0ONCALL")
    assert listed["users"] == ["U0ALICE"]


# -- rate limits -----------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_rate_limits_apply_by_default(slack: FakeSlack, client: AsyncWebClient) -> None:
    # Tier 3 (chat.update): 50 a minute per workspace; the 51st at once is refused with 429.
    posted = await client.chat_postMessage(channel="C0OPS", text="v0")
    answers = []
    for n in range(TIER_PER_MINUTE[3] + 1):
        answers.append(await raw_update(slack, posted["ts"], f"v{n}"))
    assert [a for a in answers if a.get("error") == "ratelimited"] == [answers[-1]]


async def raw_update(slack: FakeSlack, ts: str, value: str) -> dict[str, Any]:
    # Without slack_sdk's retry handler: the first 429 is the answer.
    return await raw_call(
        slack,
        "chat.update",
        json_body={"channel": "C0OPS", "ts": ts, "text": value},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )


def test_tiers_count_per_method_per_workspace_and_post_message_per_channel() -> None:
    clock = Clock()
    limiter = TierLimiter(clock=clock)
    # Tier 3 counts across channels: the workspace's budget, not one per channel.
    for n in range(TIER_PER_MINUTE[3]):
        assert limiter.check("chat.update", f"C{n}") is None
    refused = limiter.check("chat.update", "C0OTHER")
    assert refused is not None
    assert refused.status == 429
    assert refused.headers == {"Retry-After": "2"}  # 50 a minute: one every 1.2 s
    assert limiter.check("chat.delete", "C0") is None  # another method, its own budget
    # chat.postMessage: a short burst per channel, then about one a second.
    for _ in range(POST_MESSAGE_BURST):
        assert limiter.check("chat.postMessage", "C1") is None
    assert limiter.check("chat.postMessage", "C1") is not None
    assert limiter.check("chat.postMessage", "C2") is None  # another channel
    clock.now += 1.0
    assert limiter.check("chat.postMessage", "C1") is None


async def test_rate_limits_can_be_turned_off_for_throughput_tests() -> None:
    async with FakeSlack(rate_limits=False, bot_token=TOKEN, channels={"C0OPS": "ops"}) as slack:
        client = AsyncWebClient(token=TOKEN, base_url=slack.base_url)
        posted = await client.chat_postMessage(channel="C0OPS", text="v0")
        answers = [await raw_update(slack, posted["ts"], f"v{n}") for n in range(60)]
        assert all(answer["ok"] for answer in answers), json.dumps(answers[-1])


# -- strict by default (issue 52): what a FakeSlack made with no arguments refuses ----------


async def test_by_default_only_the_issued_token_is_taken() -> None:
    async with FakeSlack(channels={"C0OPS": "ops"}) as fake:
        assert fake.bot_token == DEFAULT_BOT_TOKEN
        taken = AsyncWebClient(token=fake.bot_token, base_url=fake.base_url)
        assert (await taken.auth_test())["ok"]
        # Well formed, but never issued by this workspace: Slack answers invalid_auth.
        stranger = AsyncWebClient(token="xoxb-1-never-issued", base_url=fake.base_url)
        with pytest.raises(SlackApiError) as refused:
            await stranger.chat_postMessage(channel="C0OPS", text="hi")
        assert refused.value.response["error"] == "invalid_auth"
        fake.issue_token("xoxb-1-never-issued")
        assert (await stranger.chat_postMessage(channel="C0OPS", text="hi"))["ok"]


async def test_by_default_an_undeclared_channel_is_not_found() -> None:
    async with FakeSlack() as fake:
        client = AsyncWebClient(token=fake.bot_token, base_url=fake.base_url)
        with pytest.raises(SlackApiError) as refused:
            await client.chat_postMessage(channel="C0NOWHERE", text="hi")
        assert refused.value.response["error"] == "channel_not_found"
        with pytest.raises(SlackApiError) as refused:
            await client.chat_update(channel="C0NOWHERE", ts="1700000000.000100", text="x")
        assert refused.value.response["error"] == "channel_not_found"
        assert fake.messages == []


async def test_leniency_is_an_explicit_opt_in() -> None:
    async with FakeSlack(lenient={"any_token", "any_channel"}) as fake:
        client = AsyncWebClient(token="xoxb-any-thing", base_url=fake.base_url)
        assert (await client.chat_postMessage(channel="C0ANY", text="hi"))["ok"]
    with pytest.raises(ValueError, match="unknown leniency 'any_block'"):
        FakeSlack(lenient={"any_block"})


async def test_an_initial_option_not_among_the_options_is_refused(
    client: AsyncWebClient,
) -> None:
    stray = select(options=[option("Yes", "yes")], initial_option=option("No", "no"))
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(channel="C0OPS", text="x", blocks=[actions(stray)])
    assert refused.value.response["error"] == "invalid_blocks"
    assert "initial_option must match one of the options" in refused.value.response["errors"][0]
    among = select(options=[option("Yes", "yes")], initial_option=option("Yes", "yes"))
    assert (await client.chat_postMessage(channel="C0OPS", text="x", blocks=[actions(among)]))["ok"]


async def test_initial_options_must_each_be_among_the_options(client: AsyncWebClient) -> None:
    boxes = {
        "type": "checkboxes",
        "action_id": "boxes",
        "options": [option("A", "a")],
        "initial_options": [option("A", "a"), option("B", "b")],
    }
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(channel="C0OPS", text="x", blocks=[actions(boxes)])
    assert "/initial_options/1" in refused.value.response["errors"][0]


async def test_two_focus_on_load_elements_are_refused(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(
            channel="C0OPS",
            text="x",
            blocks=[text_input(focus_on_load=True), text_input(focus_on_load=True)],
        )
    assert refused.value.response["error"] == "invalid_blocks"
    assert "only one element may set focus_on_load" in refused.value.response["errors"][0]
    assert "/blocks/1/element/focus_on_load" in refused.value.response["errors"][0]


async def test_a_json_body_without_charset_is_warned(slack: FakeSlack) -> None:
    async with aiohttp.ClientSession() as session:
        bare = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        async with session.post(f"{slack.base_url}auth.test", data=b"{}", headers=bare) as response:
            body = await response.json()
        assert body["ok"]
        assert body["warning"] == "missing_charset"
        assert body["response_metadata"]["warnings"] == ["missing_charset"]
        with_charset = {**bare, "Content-Type": "application/json; charset=utf-8"}
        async with session.post(
            f"{slack.base_url}auth.test", data=b"{}", headers=with_charset
        ) as response:
            assert "warning" not in await response.json()
