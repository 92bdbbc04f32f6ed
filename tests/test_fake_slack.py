"""Tests of ``relay.testing``'s fake Slack, over real HTTP and real WebSockets."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

import relay.testing
from relay.testing import (
    ClickResult,
    FakeMessage,
    FakeSlack,
    RecordedCall,
    button_text_shown,
    check_blocks,
)

SECRET = "test-secret"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(
        signing_secret=SECRET,
        team_id="T0FAKE",
        api_app_id="A0FAKE",
        bot_user_id="U0BOT",
        bot_id="B0BOT",
        channels={c: f"channel-{c.lower()}" for c in ("C1", "C2", "C7", "C8", "C9")},
    ) as fake:
        fake.add_user("U123", name="alice", real_name="Alice Liddell")
        fake.add_user("U456", name="bob")
        yield fake


@pytest.fixture
def client(slack: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token=slack.bot_token, base_url=slack.base_url)


class AppStub:
    """A tiny Slack app endpoint: checks the signature, records ``block_actions`` payloads."""

    def __init__(self) -> None:
        self.verifier = SignatureVerifier(SECRET)
        self.payloads: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.rejected = 0
        self.hold: asyncio.Event | None = None
        self.reply = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.text()
        if not self.verifier.is_valid_request(body, dict(request.headers)):
            self.rejected += 1
            return web.Response(status=401, text="invalid signature")
        if request.content_type != "application/x-www-form-urlencoded":
            return web.Response(status=415)
        if self.hold is not None:
            await self.hold.wait()
        payload = json.loads(urllib.parse.parse_qs(body)["payload"][0])
        await self.payloads.put(payload)
        return web.Response(status=200, text=self.reply)

    async def next_payload(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.payloads.get(), timeout=5.0)


@pytest.fixture
async def app(slack: FakeSlack) -> AsyncIterator[AppStub]:
    stub = AppStub()
    web_app = web.Application()
    web_app.router.add_post("/slack/events", stub.handle)
    runner = web.AppRunner(web_app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    slack.interactivity_url = f"http://{host}:{port}/slack/events"
    try:
        yield stub
    finally:
        if stub.hold is not None:
            stub.hold.set()
        await runner.cleanup()


def option(text: str, value: str | None = None) -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": text}, "value": value or text}


def button(text: str, action_id: str, value: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": text},
        "value": value,
        **extra,
    }


QUESTION: list[dict[str, Any]] = [
    {"type": "section", "block_id": "q", "text": {"type": "mrkdwn", "text": "Deploy?"}},
    {
        "type": "input",
        "block_id": "note",
        "dispatch_action": True,
        "label": {"type": "plain_text", "text": "Note"},
        "element": {"type": "plain_text_input", "action_id": "note_input"},
    },
    {
        "type": "input",
        "block_id": "envs",
        "label": {"type": "plain_text", "text": "Environments"},
        "element": {
            "type": "checkboxes",
            "action_id": "envs_boxes",
            "options": [option("a"), option("b"), option("c")],
        },
    },
    {
        "type": "actions",
        "block_id": "pick",
        "elements": [
            {
                "type": "static_select",
                "action_id": "target",
                "placeholder": {"type": "plain_text", "text": "Target"},
                "options": [option("staging"), option("production")],
            },
            {
                "type": "multi_static_select",
                "action_id": "regions",
                "placeholder": {"type": "plain_text", "text": "Regions"},
                "options": [option("eu"), option("us"), option("ap")],
            },
            {"type": "checkboxes", "action_id": "flags", "options": [option("x"), option("y")]},
        ],
    },
    {
        "type": "actions",
        "block_id": "answer",
        "elements": [
            button("Approve", "approve", "0", style="primary"),
            button("Submit", "submit", "submit"),
            button("Skip", "skip", "skip"),
            button("Deploy the very long…", "long", "2"),
        ],
    },
]


async def post_question(client: AsyncWebClient, slack: FakeSlack, **extra: Any) -> FakeMessage:
    response = await client.chat_postMessage(channel="C1", text="Deploy?", blocks=QUESTION, **extra)
    return await slack.wait_for_message(where=lambda m: m.ts == response["ts"])


# -- the public surface --------------------------------------------------------------------


def test_public_names() -> None:
    assert sorted(relay.testing.__all__) == [
        "BlocksRejected",
        "ClickResult",
        "DEFAULT_APP_TOKEN",
        "DEFAULT_BOT_TOKEN",
        "FakeMessage",
        "FakeModal",
        "FakeSlack",
        "FakeView",
        "LENIENCIES",
        "Link",
        "ManualClock",
        "Mention",
        "RecordedCall",
        "ViewResult",
        "button_text_shown",
        "check_blocks",
    ]


async def test_base_url_needs_start() -> None:
    fake = FakeSlack(signing_secret=SECRET)
    with pytest.raises(RuntimeError, match="not started"):
        _ = fake.base_url


# -- Web API methods -----------------------------------------------------------------------


async def test_auth_test(client: AsyncWebClient) -> None:
    response = await client.auth_test()
    assert response["ok"] is True
    assert response["team_id"] == "T0FAKE"
    assert response["user_id"] == "U0BOT"
    assert response["bot_id"] == "B0BOT"
    assert response["is_enterprise_install"] is False
    assert response["url"].startswith("https://")
    assert {"team", "user"} <= set(response.data)


async def test_auth_test_on_enterprise_grid() -> None:
    async with FakeSlack(enterprise_id="E0ORG") as workspace_install:
        client = AsyncWebClient(
            token=workspace_install.bot_token, base_url=workspace_install.base_url
        )
        response = await client.auth_test()
        assert (response["team_id"], response["enterprise_id"]) == ("T0FAKE", "E0ORG")
        assert response["is_enterprise_install"] is False
    async with FakeSlack(enterprise_id="E0ORG", enterprise_install=True) as org_install:
        client = AsyncWebClient(token=org_install.bot_token, base_url=org_install.base_url)
        response = await client.auth_test()
        assert response["enterprise_id"] == "E0ORG"
        assert response["is_enterprise_install"] is True
    with pytest.raises(ValueError, match="enterprise_id"):
        FakeSlack(enterprise_install=True)


async def test_org_wide_install_payloads_are_shaped_as_slack_sends_them() -> None:
    # bolt-python tests/slack_bolt/request/test_request.py, org-wide block_actions.
    async with FakeSlack(
        enterprise_id="E0ORG", enterprise_install=True, channels={"C1": "c1"}
    ) as slack:
        slack.add_user("W0OWNER", name="owner", team_id="E0ORG")
        client = AsyncWebClient(token=slack.bot_token, base_url=slack.base_url)
        message = await post_question(client, slack)
        payload = slack.build_block_actions(message, {"type": "button"}, user="U123")
        assert payload["team"] is None
        assert payload["is_enterprise_install"] is True
        assert payload["enterprise"] == {"id": "E0ORG", "name": "Fake Organisation"}
        assert payload["user"]["team_id"] == "T0FAKE"  # the clicker's own workspace
        owner = slack.build_block_actions(message, {"type": "button"}, user="W0OWNER")
        assert owner["user"]["team_id"] == "E0ORG"  # or the organisation itself


async def test_a_guest_from_another_workspace_keeps_their_team(slack: FakeSlack) -> None:
    slack.add_user("U0GUEST", name="guest", team_id="T0OTHER")
    client = AsyncWebClient(token=slack.bot_token, base_url=slack.base_url)
    message = await post_question(client, slack)
    payload = slack.build_block_actions(message, {"type": "button"}, user="U0GUEST")
    assert payload["user"]["team_id"] == "T0OTHER"
    assert payload["team"] == {"id": "T0FAKE", "domain": "fake"}  # where the app is
    assert (await client.users_info(user="U0GUEST"))["user"]["team_id"] == "T0OTHER"


async def test_post_message_records_message_and_call(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]
    first = await client.chat_postMessage(channel="C1", text="hi", blocks=blocks)
    second = await client.chat_postMessage(channel="C1", text="reply", thread_ts=first["ts"])

    assert re.fullmatch(r"\d{10}\.\d{6}", first["ts"])
    assert float(second["ts"]) > float(first["ts"])
    assert first["channel"] == "C1"
    assert first["message"]["text"] == "hi"
    assert first["message"]["bot_id"] == "B0BOT"
    message = slack.messages[0]
    assert (message.channel, message.ts, message.text) == ("C1", first["ts"], "hi")
    assert message.blocks[0]["block_id"]  # Slack fills in missing block ids
    assert message.versions == [message.blocks]
    assert not message.updated
    assert slack.messages[1].thread_ts == first["ts"]
    call = slack.calls_to("chat.postMessage")[0]
    assert isinstance(call, RecordedCall)
    assert call.args["blocks"] == blocks
    assert call.status == 200
    assert call.token == slack.bot_token
    assert call.ok


async def test_post_message_to_user_id_goes_to_their_dm(client: AsyncWebClient) -> None:
    opened = await client.conversations_open(users="U123")
    posted = await client.chat_postMessage(channel="U123", text="psst")
    assert posted["channel"] == opened["channel"]["id"]


async def test_form_encoded_body_with_token_field(slack: FakeSlack) -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "form"}}]
    form = {"token": slack.bot_token, "channel": "C9", "text": "form", "blocks": json.dumps(blocks)}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{slack.base_url}chat.postMessage", data=form) as response,
    ):
        body = await response.json()
    assert body["ok"] is True
    call = slack.calls_to("chat.postMessage")[0]
    assert call.args["blocks"] == blocks
    assert call.token == slack.bot_token
    assert "token" not in call.args


async def test_missing_token_is_not_authed(slack: FakeSlack) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{slack.base_url}auth.test", json={}) as response,
    ):
        assert response.status == 200
        body = await response.json()
        # aiohttp's json= names no charset: Slack warns missing_charset beside the error.
        assert (body["ok"], body["error"], body["warning"]) == (
            False,
            "not_authed",
            "missing_charset",
        )


async def test_unknown_method(client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as raised:
        await client.api_call("reactions.explode")
    assert raised.value.response["error"] == "unknown_method"


async def test_channel_errors(slack: FakeSlack, client: AsyncWebClient) -> None:
    slack.missing_channels.add("CGONE")
    slack.add_channel("COUT")
    slack.not_in_channels.add("COUT")
    for channel, error in (("CGONE", "channel_not_found"), ("COUT", "not_in_channel")):
        with pytest.raises(SlackApiError) as raised:
            await client.chat_postMessage(channel=channel, text="x")
        assert raised.value.response["error"] == error
    with pytest.raises(SlackApiError) as raised:
        await client.api_call("chat.postMessage", json={"channel": "C1"})
    assert raised.value.response["error"] == "no_text"
    assert slack.messages == []


async def test_update_keeps_versions(slack: FakeSlack, client: AsyncWebClient) -> None:
    message = await post_question(client, slack)
    new_blocks = [{"type": "section", "block_id": "done", "text": {"type": "mrkdwn", "text": "ok"}}]
    response = await client.chat_update(channel="C1", ts=message.ts, text="done", blocks=new_blocks)
    assert response["ts"] == message.ts
    assert message.updated
    assert message.blocks == new_blocks
    assert message.text == "done"
    assert [v[0]["block_id"] for v in message.versions] == ["q", "done"]
    await client.chat_update(channel="C1", ts=message.ts, text="text only")
    assert message.blocks == new_blocks  # omitted blocks are kept, like Slack
    with pytest.raises(SlackApiError) as raised:
        await client.chat_update(channel="C1", ts="1.000001", text="nope")
    assert raised.value.response["error"] == "message_not_found"
    await client.chat_delete(channel="C1", ts=message.ts)
    assert message.deleted
    with pytest.raises(LookupError, match="deleted"):
        await slack.click(message, "Approve", user="U123")


async def test_post_ephemeral(slack: FakeSlack, client: AsyncWebClient) -> None:
    waiting = asyncio.create_task(slack.wait_for_ephemeral(user="U456"))
    response = await client.chat_postEphemeral(channel="C1", user="U456", text="only you")
    assert re.fullmatch(r"\d+\.\d{6}", response["message_ts"])
    ephemeral = await waiting
    assert ephemeral.args["user"] == "U456"
    assert ephemeral.args["text"] == "only you"
    assert slack.messages == []


async def test_ephemerals_reach_only_channel_members(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    slack.channel_members = {"C1": {"U123"}}
    await client.chat_postEphemeral(channel="C1", user="U123", text="for a member")
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postEphemeral(channel="C1", user="U456", text="for a passer-by")
    assert refused.value.response["error"] == "user_not_in_channel"
    await client.chat_postEphemeral(channel="C2", user="U456", text="C2 lists nobody: all in")
    dm = (await client.conversations_open(users="U456"))["channel"]["id"]
    await client.chat_postEphemeral(channel=dm, user="U456", text="in their DM")
    with pytest.raises(SlackApiError):
        await client.chat_postEphemeral(channel=dm, user="U123", text="not their DM")
    assert [e.args["text"] for e in slack.ephemerals] == [
        "for a member",
        "C2 lists nobody: all in",
        "in their DM",
    ]


async def test_response_url_reaches_a_non_member(
    slack: FakeSlack, client: AsyncWebClient, app: AppStub
) -> None:
    slack.channel_members = {"C1": {"U123"}}
    message = await post_question(client, slack)
    await slack.click(message, "Approve", user="U456")
    payload = await app.next_payload()
    async with aiohttp.ClientSession() as session:
        body = {"response_type": "ephemeral", "replace_original": False, "text": "hi"}
        async with session.post(payload["response_url"], json=body) as reply:
            assert reply.status == 200
    notice = await slack.wait_for_ephemeral(user="U456")
    assert (notice.method, notice.args["channel"], notice.args["text"]) == (
        "response_url",
        "C1",
        "hi",
    )
    assert "thread_ts" not in notice.args


async def test_a_reply_makes_its_message_a_thread_parent(
    slack: FakeSlack, client: AsyncWebClient, app: AppStub
) -> None:
    parent = await post_question(client, slack)
    assert (parent.thread_ts, parent.is_thread_parent) == (None, False)
    await client.chat_postMessage(channel="C1", thread_ts=parent.ts, text="more")
    await client.chat_postMessage(channel="C1", thread_ts=parent.ts, text="and more")
    reply = slack.messages[-1]
    assert parent.thread_ts == parent.ts  # as Slack marks a thread's parent
    assert (parent.reply_count, parent.reply_users, parent.latest_reply) == (
        2,
        ["U0BOT"],
        reply.ts,
    )
    updated = await client.chat_update(channel="C1", ts=parent.ts, text="v2", blocks=QUESTION)
    assert updated["message"]["thread_ts"] == parent.ts
    assert updated["message"]["reply_count"] == 2

    await slack.click(parent, "Approve", user="U123")
    payload = await app.next_payload()
    assert payload["container"]["thread_ts"] == parent.ts
    assert payload["message"]["thread_ts"] == parent.ts
    assert payload["message"]["reply_count"] == 2
    async with aiohttp.ClientSession() as session:
        body = {"response_type": "ephemeral", "replace_original": False, "text": "seen"}
        async with session.post(payload["response_url"], json=body) as answered:
            assert answered.status == 200
    notice = await slack.wait_for_ephemeral(user="U123")
    assert "thread_ts" not in notice.args  # shown under the parent, in the channel


async def test_a_human_sees_about_30_characters_of_a_button(
    slack: FakeSlack, client: AsyncWebClient, app: AppStub
) -> None:
    twins = [
        button("Deploy the payments service to staging", "a", "0"),
        button("Deploy the payments service to production", "b", "1"),
        button("Short", "c", "2"),
    ]
    blocks = [{"type": "actions", "block_id": "pick", "elements": twins}]
    await client.chat_postMessage(channel="C1", text="Deploy?", blocks=blocks)
    message = await slack.wait_for_message()
    seen = slack.buttons_seen(message)
    assert seen == ["Deploy the payments service t…", "Deploy the payments service t…", "Short"]
    assert all(len(text) <= 30 for text in seen)
    assert button_text_shown("x" * 30) == "x" * 30
    with pytest.raises(LookupError, match="2 elements match"):
        await slack.click(message, "Deploy the payments service to production", user="U123")
    assert (await slack.click(message, "Short", user="U123")).ok


async def test_mentions_and_links_a_message_would_set_off_are_recorded(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    blocks = [
        section("<!here> and <@U0BOB|bob>, see <https://evil.example|Approve here>"),
        section("&lt;!channel&gt; is escaped, so shown"),
        {"type": "section", "text": {"type": "plain_text", "text": "<!everyone> plain"}},
        {"type": "markdown", "text": "raw <!subteam^S0OPS> and [docs](https://docs.example)"},
    ]
    await client.chat_postMessage(channel="C1", text="<!channel> fallback", blocks=blocks)
    await client.chat_postMessage(channel="C1", text="<!channel> not parsed", mrkdwn=False)
    kinds = sorted((m.kind, m.target) for m in slack.mentions)
    assert kinds == [("channel", None), ("here", None), ("subteam", "S0OPS"), ("user", "U0BOB")]
    assert [m.broadcast for m in slack.mentions if m.kind == "here"] == [True]
    links = {(link.url, link.label, link.disguised) for link in slack.links}
    assert links == {
        ("https://evil.example", "Approve here", True),
        ("https://docs.example", "docs", True),
    }


async def test_conversations_open_is_stable(client: AsyncWebClient) -> None:
    first = await client.conversations_open(users="U123")
    second = await client.conversations_open(users="U123")
    other = await client.conversations_open(users="U456")
    assert first["channel"]["id"].startswith("D")
    assert first["channel"]["id"] == second["channel"]["id"] != other["channel"]["id"]


async def test_usergroups_and_users(slack: FakeSlack, client: AsyncWebClient) -> None:
    slack.usergroups["S1"] = ["U123", "U456"]
    assert (await client.usergroups_users_list(usergroup="S1"))["users"] == ["U123", "U456"]
    with pytest.raises(SlackApiError) as raised:
        await client.usergroups_users_list(usergroup="S404")
    assert raised.value.response["error"] == "no_such_subteam"

    user = (await client.users_info(user="U123"))["user"]
    assert (user["id"], user["name"], user["real_name"]) == ("U123", "alice", "Alice Liddell")
    with pytest.raises(SlackApiError) as raised:
        await client.users_info(user="U404")
    assert raised.value.response["error"] == "user_not_found"


async def test_app_token_is_required_for_socket_mode(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    with pytest.raises(SlackApiError) as raised:
        await client.apps_connections_open(app_token=slack.bot_token)
    assert raised.value.response["error"] == "not_allowed_token_type"


# -- Block Kit validation --------------------------------------------------------------------


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


@pytest.mark.parametrize(
    ("blocks", "expected"),
    [
        pytest.param([section("x")] * 51, "no more than 50", id="51-blocks"),
        pytest.param(
            [{"type": "actions", "elements": [button("x" * 76, "a", "v")]}],
            "must be less than 76 characters",
            id="76-char-button",
        ),
        pytest.param(
            [{"type": "actions", "elements": [{"type": "plain_text_input", "action_id": "t"}]}],
            "'plain_text_input' is not allowed here",
            id="input-in-actions",
        ),
        pytest.param(
            [{"type": "markdown", "text": "m" * 7000}, {"type": "markdown", "text": "m" * 7000}],
            "markdown blocks hold 14000",
            id="markdown-total",
        ),
        pytest.param(
            [{**section("a"), "block_id": "same"}, {**section("b"), "block_id": "same"}],
            "duplicate block_id",
            id="duplicate-block-id",
        ),
        pytest.param([{"type": "no_such_block"}], "unsupported block type", id="unknown-type"),
        pytest.param([section("")], "more than 0 characters", id="empty-text"),
        pytest.param([{"type": "section"}], "text or fields", id="sdk-validator"),
    ],
)
async def test_invalid_blocks_are_rejected(
    slack: FakeSlack, client: AsyncWebClient, blocks: list[dict[str, Any]], expected: str
) -> None:
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C1", text="x", blocks=blocks)
    assert raised.value.response["error"] == "invalid_blocks"
    assert any(expected in error for error in raised.value.response["errors"])
    assert slack.messages == []


async def test_update_with_invalid_blocks_leaves_message(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    message = await post_question(client, slack)
    with pytest.raises(SlackApiError) as raised:
        await client.chat_update(channel="C1", ts=message.ts, text="x", blocks=[section("")])
    assert raised.value.response["error"] == "invalid_blocks"
    assert not message.updated


async def test_too_long_text(client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C1", text="x" * 40_001)
    assert raised.value.response["error"] == "msg_too_long"


async def test_blocks_holding_too_much_text_in_total_are_msg_blocks_too_long(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    # bolt-js#2867: every block within its limit, the message refused at 11,341 characters.
    sections = [section("x" * 2_900) for _ in range(3)]
    markdown = {"type": "markdown", "text": "y" * 2_640}
    assert check_blocks([*sections, markdown]) is None  # 11,340 characters
    blocks = [*sections, markdown, section("z")]  # 11,341
    rejected = check_blocks(blocks)
    assert rejected is not None
    assert rejected.error == "msg_blocks_too_long"
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(channel="C1", text="big", blocks=blocks)
    assert refused.value.response["error"] == "msg_blocks_too_long"
    assert "errors" not in refused.value.response.data
    assert not slack.messages


def test_check_blocks_accepts_the_question() -> None:
    assert check_blocks(QUESTION) is None
    rejected = check_blocks("not a list")
    assert rejected is not None
    assert rejected.error == "invalid_blocks_format"


# -- failure injection and rate limits -------------------------------------------------------


async def test_fail_with_error_then_recovers(slack: FakeSlack, client: AsyncWebClient) -> None:
    slack.fail("chat.postMessage", error="channel_not_found", times=2)
    for _ in range(2):
        with pytest.raises(SlackApiError) as raised:
            await client.chat_postMessage(channel="C1", text="x")
        assert raised.value.response.status_code == 200
        assert raised.value.response["error"] == "channel_not_found"
    await client.chat_postMessage(channel="C1", text="x")
    assert [c.ok for c in slack.calls_to("chat.postMessage")] == [False, False, True]


async def test_fail_with_429_sends_retry_after(slack: FakeSlack, client: AsyncWebClient) -> None:
    slack.fail("chat.update", status=429, retry_after=7)
    with pytest.raises(SlackApiError) as raised:
        await client.chat_update(channel="C1", ts="1.1", text="x")
    assert raised.value.response.status_code == 429
    assert raised.value.response.headers["Retry-After"] == "7"
    assert raised.value.response["error"] == "ratelimited"


async def test_429_is_retried_by_the_sdk_handler(slack: FakeSlack) -> None:
    slack.fail("chat.postMessage", status=429, retry_after=1)
    client = AsyncWebClient(
        token=slack.bot_token,
        base_url=slack.base_url,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=1)],
    )
    response = await client.chat_postMessage(channel="C1", text="eventually")
    assert response["ok"] is True
    assert [c.status for c in slack.calls_to("chat.postMessage")] == [429, 200]


@pytest.mark.parametrize("status", [500, 503])
async def test_fail_with_server_error(
    slack: FakeSlack, client: AsyncWebClient, status: int
) -> None:
    slack.fail("chat.postMessage", status=status)
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C1", text="x")
    assert raised.value.response.status_code == status
    assert slack.messages == []


async def test_delay_alone_is_a_slow_success(slack: FakeSlack, client: AsyncWebClient) -> None:
    slack.fail("chat.postMessage", delay=0.3)
    started = time.monotonic()
    response = await client.chat_postMessage(channel="C1", text="slow")
    assert time.monotonic() - started >= 0.3
    assert response["ok"] is True


def test_fail_needs_something_to_do() -> None:
    with pytest.raises(ValueError, match="error, a status or a delay"):
        FakeSlack().fail("chat.postMessage")


async def test_rate_limit_per_channel(slack: FakeSlack, client: AsyncWebClient) -> None:
    slack.rate_limit("chat.postMessage", per_channel_per_second=1)
    await client.chat_postMessage(channel="C1", text="one")
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel="C1", text="two")
    assert raised.value.response.status_code == 429
    assert raised.value.response.headers["Retry-After"] == "1"
    await client.chat_postMessage(channel="C2", text="other channel")
    assert [m.text for m in slack.messages] == ["one", "other channel"]


# -- waiting ---------------------------------------------------------------------------------


async def test_wait_for_call_wakes_on_the_call(slack: FakeSlack, client: AsyncWebClient) -> None:
    waiting = asyncio.create_task(
        slack.wait_for_call("chat.postMessage", count=2, where=lambda c: c.args["channel"] == "C7")
    )
    await client.chat_postMessage(channel="C7", text="1")
    await client.chat_postMessage(channel="C8", text="other")
    assert not waiting.done()
    await client.chat_postMessage(channel="C7", text="2")
    call = await waiting
    assert call.args["text"] == "2"


async def test_wait_timeout_lists_calls(slack: FakeSlack, client: AsyncWebClient) -> None:
    await client.auth_test()
    with pytest.raises(TimeoutError, match=r"chat\.update.*calls seen: auth\.test -> ok"):
        await slack.wait_for_call("chat.update", timeout=0.05)


async def test_wait_until(slack: FakeSlack, client: AsyncWebClient) -> None:
    waiting = asyncio.create_task(slack.wait_until(lambda: len(slack.messages) == 2))
    await client.chat_postMessage(channel="C1", text="1")
    await client.chat_postMessage(channel="C1", text="2")
    await asyncio.wait_for(waiting, timeout=5.0)


# -- simulated humans over HTTP --------------------------------------------------------------


async def test_click_payload_shape(slack: FakeSlack, client: AsyncWebClient, app: AppStub) -> None:
    message = await post_question(client, slack)
    typed = await slack.type(message, "ship it", user="U123")
    ticked = await slack.check(message, ["a", "c"], user="U123")
    assert not typed.dispatched  # typing only changes the client-side state
    assert not ticked.dispatched  # an input block without dispatch_action sends nothing
    assert app.payloads.empty()
    result = await slack.click(message, "Approve", user="U123")
    assert result == ClickResult(status=200, body="")

    payload = await app.next_payload()
    assert payload["type"] == "block_actions"
    assert payload["user"] == {
        "id": "U123",
        "username": "alice",
        "name": "alice",
        "team_id": "T0FAKE",
    }
    assert payload["api_app_id"] == "A0FAKE"
    assert payload["token"] == "fake-verification-token"
    assert payload["container"] == {
        "type": "message",
        "message_ts": message.ts,
        "channel_id": "C1",
        "is_ephemeral": False,
    }
    assert payload["trigger_id"]
    assert payload["team"] == {"id": "T0FAKE", "domain": "fake"}
    assert payload["enterprise"] is None
    assert payload["is_enterprise_install"] is False
    assert payload["channel"]["id"] == "C1"
    assert payload["message"]["ts"] == message.ts
    assert payload["message"]["user"] == "U0BOT"
    assert payload["message"]["bot_id"] == "B0BOT"
    assert payload["message"]["blocks"] == message.blocks
    assert payload["response_url"].startswith(slack.url + "response/")
    (action,) = payload["actions"]
    assert action["type"] == "button"
    assert (action["block_id"], action["action_id"]) == ("answer", "approve")
    assert action["text"] == {"type": "plain_text", "text": "Approve"}
    assert (action["value"], action["style"]) == ("0", "primary")
    assert re.fullmatch(r"\d+\.\d{6}", action["action_ts"])
    assert payload["state"]["values"] == {
        "note": {"note_input": {"type": "plain_text_input", "value": "ship it"}},
        "envs": {
            "envs_boxes": {"type": "checkboxes", "selected_options": [option("a"), option("c")]}
        },
        "pick": {
            "target": {"type": "static_select", "selected_option": None},
            "regions": {"type": "multi_static_select", "selected_options": []},
            "flags": {"type": "checkboxes", "selected_options": []},
        },
    }


async def test_select_action(slack: FakeSlack, client: AsyncWebClient, app: AppStub) -> None:
    message = await post_question(client, slack)
    result = await slack.select(message, "staging", user="U123")
    assert result.ok
    payload = await app.next_payload()
    (action,) = payload["actions"]
    assert action["type"] == "static_select"
    assert (action["block_id"], action["action_id"]) == ("pick", "target")
    assert action["selected_option"] == option("staging")
    assert action["placeholder"] == {"type": "plain_text", "text": "Target"}
    state = payload["state"]["values"]["pick"]["target"]
    assert state == {"type": "static_select", "selected_option": option("staging")}


async def test_checkboxes_action(slack: FakeSlack, client: AsyncWebClient, app: AppStub) -> None:
    message = await post_question(client, slack)
    assert (await slack.check(message, ["y"], user="U123")).ok
    (action,) = (await app.next_payload())["actions"]
    assert action["type"] == "checkboxes"
    assert action["action_id"] == "flags"
    assert action["selected_options"] == [option("y")]
    assert (await slack.check(message, [], user="U123", action_id="flags")).ok
    payload = await app.next_payload()
    assert payload["actions"][0]["selected_options"] == []
    assert payload["state"]["values"]["pick"]["flags"]["selected_options"] == []


async def test_multi_select_action(slack: FakeSlack, client: AsyncWebClient, app: AppStub) -> None:
    message = await post_question(client, slack)
    assert (await slack.multi_select(message, ["us", "eu"], user="U123")).ok
    payload = await app.next_payload()
    (action,) = payload["actions"]
    assert action["type"] == "multi_static_select"
    assert action["selected_options"] == [option("us"), option("eu")]
    assert payload["state"]["values"]["pick"]["regions"]["selected_options"] == [
        option("us"),
        option("eu"),
    ]


async def test_press_enter_dispatches_typed_text(
    slack: FakeSlack, client: AsyncWebClient, app: AppStub
) -> None:
    message = await post_question(client, slack)
    await slack.type(message, "because", user="U123")
    assert (await slack.press_enter(message, user="U123")).ok
    payload = await app.next_payload()
    (action,) = payload["actions"]
    assert action["type"] == "plain_text_input"
    assert (action["block_id"], action["action_id"]) == ("note", "note_input")
    assert action["value"] == "because"


async def test_press_enter_without_dispatch_action_sends_nothing(
    slack: FakeSlack, client: AsyncWebClient, app: AppStub
) -> None:
    blocks = [
        {
            "type": "input",
            "block_id": "why",
            "label": {"type": "plain_text", "text": "Why?"},
            "element": {"type": "plain_text_input", "action_id": "why_input"},
        }
    ]
    await client.chat_postMessage(channel="C1", text="why", blocks=blocks)
    message = await slack.wait_for_message()
    result = await slack.press_enter(message, user="U123")
    assert not result.dispatched
    assert not result.ok
    assert app.payloads.empty()


async def test_typing_dispatches_on_character_entered(
    slack: FakeSlack, client: AsyncWebClient, app: AppStub
) -> None:
    blocks = [
        {
            "type": "input",
            "block_id": "search",
            "dispatch_action": True,
            "label": {"type": "plain_text", "text": "Search"},
            "element": {
                "type": "plain_text_input",
                "action_id": "query",
                "dispatch_action_config": {"trigger_actions_on": ["on_character_entered"]},
            },
        }
    ]
    await client.chat_postMessage(channel="C1", text="search", blocks=blocks)
    message = await slack.wait_for_message()
    assert (await slack.type(message, "rel", user="U123")).ok
    assert (await app.next_payload())["actions"][0]["value"] == "rel"
    assert not (await slack.press_enter(message, user="U123")).dispatched


async def test_payloads_are_copies(slack: FakeSlack, client: AsyncWebClient) -> None:
    message = await post_question(client, slack)
    action = {"type": "button", "block_id": "answer", "action_id": "approve"}
    payload = slack.build_block_actions(message, action, user="U123")
    payload["message"]["blocks"].clear()
    assert message.blocks[0]["block_id"] == "q"
    assert payload["actions"][0]["action_ts"]


async def test_submit_and_skip(slack: FakeSlack, client: AsyncWebClient, app: AppStub) -> None:
    message = await post_question(client, slack)
    await slack.submit(message, user="U123")
    assert (await app.next_payload())["actions"][0]["action_id"] == "submit"
    await slack.skip(message, user="U123")
    assert (await app.next_payload())["actions"][0]["action_id"] == "skip"


async def test_state_is_per_viewer(slack: FakeSlack, client: AsyncWebClient, app: AppStub) -> None:
    message = await post_question(client, slack)
    await slack.type(message, "alice's note", user="U123")
    await slack.submit(message, user="U456")
    payload = await app.next_payload()
    assert payload["user"]["id"] == "U456"
    assert payload["state"]["values"]["note"]["note_input"]["value"] is None


async def test_lookup_by_visible_text(
    slack: FakeSlack, client: AsyncWebClient, app: AppStub
) -> None:
    message = await post_question(client, slack)
    assert (await slack.click(message, "Deploy the very long name", user="U123")).ok
    assert (await app.next_payload())["actions"][0]["action_id"] == "long"
    with pytest.raises(LookupError, match=r"no button 'Reject'.*'Approve'.*'Submit'"):
        await slack.click(message, "Reject", user="U123")
    with pytest.raises(LookupError, match="2 checkboxes"):
        await slack.check(message, [], user="U123")
    with pytest.raises(
        LookupError, match=r"no radio_buttons or static_select with options \['qa'\].*'staging'"
    ):
        await slack.select(message, "qa", user="U123")


async def test_click_on_a_stale_version(
    slack: FakeSlack, client: AsyncWebClient, app: AppStub
) -> None:
    message = await post_question(client, slack)
    answered = [section("Approved by <@U123>")]
    await client.chat_update(channel="C1", ts=message.ts, text="Approved", blocks=answered)
    with pytest.raises(LookupError):
        await slack.click(message, "Approve", user="U456")
    assert (await slack.click(message, "Approve", user="U456", version=0)).ok
    payload = await app.next_payload()
    assert payload["message"]["blocks"] == message.versions[0]
    assert payload["message"]["text"] == "Deploy?"
    assert payload["actions"][0]["action_id"] == "approve"


async def test_forged_signature_is_refused_by_the_app(
    slack: FakeSlack, client: AsyncWebClient, app: AppStub
) -> None:
    message = await post_question(client, slack)
    payload = slack.build_block_actions(
        message, {"type": "button", "block_id": "answer", "action_id": "approve"}, user="U123"
    )
    forged = await slack.post_interaction(payload, signature="v0=" + "0" * 64)
    stale = await slack.post_interaction(payload, timestamp=str(int(time.time()) - 600))
    assert (forged.status, stale.status) == (401, 401)
    assert app.rejected == 2
    assert (await slack.post_interaction(payload)).ok
    assert (await app.next_payload())["actions"][0]["action_ts"]


async def test_slow_app_times_out(slack: FakeSlack, client: AsyncWebClient, app: AppStub) -> None:
    message = await post_question(client, slack)
    app.hold = asyncio.Event()
    slack.ack_timeout = 0.2
    result = await slack.click(message, "Approve", user="U123")
    assert result.status == 504
    assert not result.ok


async def test_click_with_nowhere_to_deliver(slack: FakeSlack, client: AsyncWebClient) -> None:
    message = await post_question(client, slack)
    with pytest.raises(RuntimeError, match="interactivity_url"):
        await slack.click(message, "Approve", user="U123")


# -- response_url ----------------------------------------------------------------------------


async def post_json(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.post(url, json=body) as response:
        return response.status, await response.json()


async def test_response_url(slack: FakeSlack, client: AsyncWebClient, app: AppStub) -> None:
    message = await post_question(client, slack)
    await slack.click(message, "Approve", user="U456")
    url = (await app.next_payload())["response_url"]

    status, _ = await post_json(url, {"text": "you may not answer", "response_type": "ephemeral"})
    assert status == 200
    ephemeral = await slack.wait_for_ephemeral(user="U456")
    assert (ephemeral.method, ephemeral.args["text"]) == ("response_url", "you may not answer")
    assert ephemeral.args["channel"] == "C1"

    status, _ = await post_json(
        url, {"replace_original": True, "text": "Done", "blocks": [section("Done")]}
    )
    assert status == 200
    assert message.text == "Done"
    assert len(message.versions) == 2

    await post_json(url, {"response_type": "in_channel", "text": "for everyone"})
    assert slack.messages[-1].text == "for everyone"

    await post_json(url, {"delete_original": True})
    assert message.deleted

    assert (await post_json(url, {"text": "fifth use"}))[0] == 200
    status, body = await post_json(url, {"text": "sixth use"})
    assert (status, body["error"]) == (404, "used_url")
    assert [c.status for c in slack.calls_to("response_url")] == [200] * 5 + [404]
    assert [e.args["text"] for e in slack.ephemerals] == ["you may not answer", "fifth use"]


async def test_response_url_validates_blocks(
    slack: FakeSlack, client: AsyncWebClient, app: AppStub
) -> None:
    message = await post_question(client, slack)
    await slack.click(message, "Approve", user="U123")
    url = (await app.next_payload())["response_url"]
    status, body = await post_json(
        url, {"replace_original": True, "text": "x", "blocks": [section("")]}
    )
    assert (status, body["error"]) == (400, "invalid_blocks")
    assert not message.updated


# -- Socket Mode -----------------------------------------------------------------------------


class SocketApp:
    """A Socket Mode app made of slack-sdk's real client; acks every envelope."""

    def __init__(self, slack: FakeSlack) -> None:
        self.requests: asyncio.Queue[SocketModeRequest] = asyncio.Queue()
        self.ack = True
        self.client = SocketModeClient(
            app_token=slack.app_token,
            web_client=AsyncWebClient(token=slack.bot_token, base_url=slack.base_url),
        )
        self.client.socket_mode_request_listeners.append(self.on_request)

    async def on_request(
        self, client: AsyncBaseSocketModeClient, request: SocketModeRequest
    ) -> None:
        if not self.ack:
            return
        await client.send_socket_mode_response(
            SocketModeResponse(envelope_id=request.envelope_id, payload={"seen": request.type})
        )
        await self.requests.put(request)

    async def next_request(self) -> SocketModeRequest:
        return await asyncio.wait_for(self.requests.get(), timeout=5.0)


@pytest.fixture
async def socket_app(slack: FakeSlack) -> AsyncIterator[SocketApp]:
    socket_app = SocketApp(slack)
    try:
        await socket_app.client.connect()
        await slack.wait_for_socket()
        yield socket_app
    finally:
        await socket_app.client.close()


async def test_socket_mode_round_trip(
    slack: FakeSlack, client: AsyncWebClient, socket_app: SocketApp
) -> None:
    assert slack.socket_connections == 1
    opened = slack.calls_to("apps.connections.open")[0]
    assert opened.token == slack.app_token
    assert opened.response["url"].startswith("ws://127.0.0.1:")
    message = await post_question(client, slack)

    result = await slack.click(message, "Approve", user="U123")

    # The app acked with a payload, but a block_actions envelope does not accept one:
    # Slack drops it, and so does the fake.
    assert result == ClickResult(status=200, body="")
    request = await socket_app.next_request()
    assert request.type == "interactive"
    assert request.accepts_response_payload is False
    assert request.retry_attempt is None  # an events_api field; interactive envelopes lack it
    assert request.payload["type"] == "block_actions"
    assert request.payload["actions"][0]["action_id"] == "approve"


async def test_socket_mode_reconnects_after_disconnect(
    slack: FakeSlack, client: AsyncWebClient, socket_app: SocketApp
) -> None:
    message = await post_question(client, slack)
    dropped = slack.disconnect_sockets()
    assert slack.socket_connections == 0
    await dropped
    await slack.wait_for_call("apps.connections.open", count=2)
    await slack.wait_for_socket()
    assert (await slack.click(message, "Skip", user="U123")).ok
    assert (await socket_app.next_request()).payload["actions"][0]["action_id"] == "skip"


async def raw_socket(
    slack: FakeSlack, session: aiohttp.ClientSession
) -> aiohttp.ClientWebSocketResponse:
    """A bare WebSocket opened the way a Socket Mode client opens one."""
    opened = await AsyncWebClient(
        token=slack.app_token, base_url=slack.base_url
    ).apps_connections_open(app_token=slack.app_token)
    return await session.ws_connect(str(opened["url"]))


async def test_interactive_envelopes_are_what_slack_sends(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    message = await post_question(client, slack)
    async with aiohttp.ClientSession() as session:
        ws = await raw_socket(slack, session)
        assert (await ws.receive_json(timeout=5))["type"] == "hello"
        click = asyncio.create_task(slack.click(message, "Approve", user="U123"))
        envelope = await ws.receive_json(timeout=5)
        # python-slack-sdk's mock server: no retry_attempt/retry_reason (events_api only).
        assert sorted(envelope) == ["accepts_response_payload", "envelope_id", "payload", "type"]
        assert (envelope["type"], envelope["accepts_response_payload"]) == ("interactive", False)
        await ws.send_json({"envelope_id": envelope["envelope_id"]})
        assert (await click).ok
        await ws.close()


async def test_connections_past_the_cap_get_too_many_websockets() -> None:
    async with FakeSlack(max_socket_connections=2) as slack, aiohttp.ClientSession() as session:
        kept = [await raw_socket(slack, session) for _ in range(2)]
        for ws in kept:
            assert (await ws.receive_json(timeout=5))["type"] == "hello"
        refused = await raw_socket(slack, session)
        message = await refused.receive_json(timeout=5)
        assert message["type"] == "disconnect"
        assert message["reason"] == "too_many_websockets"
        assert (await refused.receive(timeout=5)).type == aiohttp.WSMsgType.CLOSE
        assert (slack.socket_connections, slack.refused_sockets) == (2, 1)
        await kept[0].close()
        await slack.wait_until(lambda: slack.socket_connections == 1)
        again = await raw_socket(slack, session)
        assert (await again.receive_json(timeout=5))["type"] == "hello"
        for ws in (kept[1], again):
            await ws.close()


async def test_disconnect_sockets_says_why_first() -> None:
    async with FakeSlack() as slack, aiohttp.ClientSession() as session:
        ws = await raw_socket(slack, session)
        await ws.receive_json(timeout=5)
        dropped = slack.disconnect_sockets()
        assert (await ws.receive_json(timeout=5))["reason"] == "refresh_requested"
        assert (await ws.receive(timeout=5)).type == aiohttp.WSMsgType.CLOSE
        await dropped


async def test_socket_mode_without_ack_times_out(
    slack: FakeSlack, client: AsyncWebClient, socket_app: SocketApp
) -> None:
    message = await post_question(client, slack)
    socket_app.ack = False
    slack.ack_timeout = 0.2
    result = await slack.click(message, "Approve", user="U123")
    assert result.status == 504
    assert "operation_timeout" in result.body


# -- with a real Bolt app ----------------------------------------------------------------------


def bolt_app(slack: FakeSlack) -> AsyncApp:
    """A Bolt app that locks the question when someone approves it."""
    app = AsyncApp(
        client=AsyncWebClient(token=slack.bot_token, base_url=slack.base_url), signing_secret=SECRET
    )

    @app.action("approve")
    async def approve(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        who = body["user"]["id"]
        note = body["state"]["values"]["note"]["note_input"]["value"]
        await client.chat_update(
            channel=body["container"]["channel_id"],
            ts=body["container"]["message_ts"],
            text=f"Approved by {who}: {note}",
            blocks=[section(f"Approved by <@{who}>: {note}")],
        )

    return app


async def test_bolt_over_http(slack: FakeSlack, client: AsyncWebClient) -> None:
    runner = web.AppRunner(bolt_app(slack).web_app(), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        slack.interactivity_url = f"http://{host}:{port}/slack/events"
        message = await post_question(client, slack)
        await slack.type(message, "looks good", user="U123")

        assert (await slack.click(message, "Approve", user="U123")).ok

        update = await slack.wait_for_call("chat.update")
        assert update.args["text"] == "Approved by U123: looks good"
        assert message.text == "Approved by U123: looks good"
        assert slack.calls_to("auth.test")  # Bolt authorizes lazily, on the first request
        forged = await slack.post_interaction(
            slack.build_block_actions(message, {"type": "button"}, user="U123"),
            signature="v0=forged",
        )
        assert forged.status == 401
    finally:
        await runner.cleanup()


async def test_bolt_over_socket_mode(slack: FakeSlack, client: AsyncWebClient) -> None:
    handler = AsyncSocketModeHandler(bolt_app(slack), slack.app_token)
    try:
        await handler.connect_async()
        await slack.wait_for_socket()
        message = await post_question(client, slack)

        assert await slack.click(message, "Approve", user="U456") == ClickResult(
            status=200, body=""
        )

        await slack.wait_until(lambda: message.updated)
        assert message.text == "Approved by U456: None"
    finally:
        await handler.close_async()


def test_env_is_clean() -> None:
    assert not [n for n in os.environ if n.startswith(("SLACK_", "RELAY_"))]
