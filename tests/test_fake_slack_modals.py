"""FakeSlack's modals, as strict as Slack's: ``views.open`` with the trigger of an interaction
it delivered (single use, 3 seconds), the view's limits, ``view_submission`` delivered signed
over HTTP and over Socket Mode, and the app's answers (close, field errors, update, push,
clear) applied as Slack's client applies them. Apps here are real Bolt apps and slack_sdk
clients; time is a ``ManualClock``, never a sleep."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from relay.testing import FakeMessage, FakeModal, FakeSlack, ManualClock
from tests.fake_slack_env import with_alice_and_bob

SECRET = "modal-secret"
TOKEN = "xoxb-modal-test"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def slack(clock: ManualClock) -> AsyncIterator[FakeSlack]:
    async with with_alice_and_bob(
        FakeSlack(signing_secret=SECRET, bot_token=TOKEN, clock=clock, channels={"C0OPS": "ops"})
    ) as fake:
        yield fake


@pytest.fixture
def client(slack: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token=TOKEN, base_url=slack.base_url)


def plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text}


def input_block(block_id: str, label: str, element: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "input",
        "block_id": block_id,
        "label": plain(label),
        "element": element,
        **extra,
    }


def option(text: str) -> dict[str, Any]:
    return {"text": plain(text), "value": text.lower()}


def edit_view(**extra: Any) -> dict[str, Any]:
    """The kind of form an "Edit…" opens: a command, a mode, flags and a count."""
    view: dict[str, Any] = {
        "type": "modal",
        "callback_id": "edit_call",
        "private_metadata": "ask-1",
        "title": plain("Edit the call"),
        "submit": plain("Approve edited"),
        "close": plain("Cancel"),
        "blocks": [
            {"type": "section", "block_id": "intro", "text": {"type": "mrkdwn", "text": "Edit"}},
            input_block(
                "command",
                "Command",
                {
                    "type": "plain_text_input",
                    "action_id": "value",
                    "multiline": True,
                    "initial_value": "terraform apply -target=module.prod",
                },
            ),
            input_block(
                "mode",
                "Mode",
                {
                    "type": "static_select",
                    "action_id": "value",
                    "options": [option("Fast"), option("Safe")],
                    "initial_option": option("Safe"),
                },
            ),
            input_block(
                "flags",
                "Flags",
                {"type": "checkboxes", "action_id": "value", "options": [option("Dry run")]},
                optional=True,
            ),
            input_block(
                "count",
                "Count",
                {
                    "type": "number_input",
                    "action_id": "value",
                    "is_decimal_allowed": False,
                    "min_value": "1",
                    "max_value": "10",
                    "initial_value": "1",
                },
            ),
        ],
    }
    view.update(extra)
    return view


EDIT_MESSAGE = [
    {"type": "section", "text": {"type": "mrkdwn", "text": "Run `terraform apply`?"}},
    {
        "type": "actions",
        "block_id": "decide",
        "elements": [
            {"type": "button", "text": plain("Approve"), "action_id": "approve", "value": "ok"},
            {"type": "button", "text": plain("Edit…"), "action_id": "edit", "value": "edit"},
        ],
    },
]


async def post_ask(client: AsyncWebClient, slack: FakeSlack) -> FakeMessage:
    await client.chat_postMessage(channel="C0OPS", text="Run terraform?", blocks=EDIT_MESSAGE)
    return await slack.wait_for_message(channel="C0OPS")


# -- an app over HTTP that records payloads and answers as told ---------------------------------


class Receiver:
    """An app endpoint: checks Slack's signature with slack_sdk, records each payload and its
    trigger, answers with ``reply``."""

    def __init__(self) -> None:
        self.verifier = SignatureVerifier(SECRET)
        self.payloads: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.reply = ""
        self.hold: asyncio.Event | None = None

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.text()
        if not self.verifier.is_valid_request(body, dict(request.headers)):
            return web.Response(status=401, text="invalid signature")
        self.headers.append(dict(request.headers))
        self.payloads.append(json.loads(urllib.parse.parse_qs(body)["payload"][0]))
        if self.hold is not None:
            await self.hold.wait()
        return web.Response(status=200, text=self.reply, content_type="application/json")


async def serve(slack: FakeSlack, app: web.Application) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    slack.interactivity_url = f"http://{host}:{port}/slack/events"
    return runner


@pytest.fixture
async def receiver(slack: FakeSlack) -> AsyncIterator[Receiver]:
    stub = Receiver()
    app = web.Application()
    app.router.add_post("/slack/events", stub.handle)
    runner = await serve(slack, app)
    try:
        yield stub
    finally:
        await runner.cleanup()


async def clicked_trigger(slack: FakeSlack, client: AsyncWebClient, receiver: Receiver) -> str:
    message = await post_ask(client, slack)
    assert (await slack.click(message, "Edit…", user="U0ALICE")).ok
    return str(receiver.payloads[-1]["trigger_id"])


async def open_error(client: AsyncWebClient, trigger_id: str, view: Any) -> SlackApiError:
    with pytest.raises(SlackApiError) as refused:
        await client.views_open(trigger_id=trigger_id, view=view)
    return refused.value


# -- views.open ------------------------------------------------------------------------------


async def test_views_open_with_a_fresh_trigger_opens_the_modal_for_the_clicker(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    trigger_id = await clicked_trigger(slack, client, receiver)

    opened = await client.views_open(trigger_id=trigger_id, view=edit_view())

    view = opened["view"]
    assert view["id"].startswith("V")
    assert view["root_view_id"] == view["id"]
    assert view["callback_id"] == "edit_call"
    assert view["private_metadata"] == "ask-1"
    assert view["app_id"] == "A0FAKE"
    assert view["team_id"] == "T0FAKE"
    assert view["state"]["values"]["mode"]["value"]["selected_option"]["value"] == "safe"
    modal = slack.open_modal("U0ALICE")
    assert modal.id == view["id"]
    assert modal.title == "Edit the call"
    assert modal.labels() == ["Command", "Mode", "Flags", "Count"]
    with pytest.raises(LookupError, match="no modal"):
        slack.open_modal("U0BOB")


async def test_a_trigger_opens_one_view_only(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    trigger_id = await clicked_trigger(slack, client, receiver)
    await client.views_open(trigger_id=trigger_id, view=edit_view())

    refused = await open_error(client, trigger_id, edit_view())

    assert refused.response["error"] == "exchanged_trigger_id"
    assert len(slack.modals) == 1


async def test_a_trigger_expires_three_seconds_after_the_click(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver, clock: ManualClock
) -> None:
    trigger_id = await clicked_trigger(slack, client, receiver)
    clock.advance(3.0)
    still = await clicked_trigger(slack, client, receiver)
    clock.advance(0.001)

    refused = await open_error(client, trigger_id, edit_view())

    assert refused.response["error"] == "expired_trigger_id"
    assert slack.modals == []
    # Issued 0.001 s ago: still good.
    assert (await client.views_open(trigger_id=still, view=edit_view()))["ok"]


async def test_a_trigger_slack_never_issued_is_invalid(client: AsyncWebClient) -> None:
    refused = await open_error(client, "12345.98765.abcd2358fdea", edit_view())
    assert refused.response["error"] == "invalid_trigger_id"


async def test_views_open_without_a_trigger_is_invalid_arguments(client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as refused:
        await client.api_call("views.open", json={"view": edit_view()})
    assert refused.value.response["error"] == "invalid_arguments"


REFUSED_VIEWS = [
    pytest.param(
        {"title": plain("x" * 25)},
        "must be less than 25 characters [json-pointer:/view/title/text]",
        id="title-25",
    ),
    pytest.param(
        {"submit": plain("Approve the edited call!!")},
        "must be less than 25 characters [json-pointer:/view/submit/text]",
        id="submit-25",
    ),
    pytest.param(
        {"close": plain("c" * 25)},
        "must be less than 25 characters [json-pointer:/view/close/text]",
        id="close-25",
    ),
    pytest.param(
        {"title": {"type": "mrkdwn", "text": "*Edit*"}},
        "must be a plain_text text object",
        id="title-mrkdwn",
    ),
    pytest.param(
        {"blocks": [{"type": "divider"}] * 101},
        "no more than 100 items allowed [json-pointer:/view/blocks]",
        id="101-blocks",
    ),
    pytest.param(
        {"blocks": [input_block("b", "L" * 2001, {"type": "plain_text_input"})]},
        "must be less than 2001 characters [json-pointer:/view/blocks/0/label/text]",
        id="label-2001",
    ),
    pytest.param(  # an emoji outside the BMP is 2 UTF-16 code units: 26
        {"title": plain("😀" * 13)},
        "must be less than 25 characters [json-pointer:/view/title/text]",
        id="title-13-emoji",
    ),
    pytest.param(
        {"blocks": [input_block("b", "😀" * 1001, {"type": "plain_text_input"})]},
        "must be less than 2001 characters [json-pointer:/view/blocks/0/label/text]",
        id="label-1001-emoji",
    ),
    pytest.param(
        {"private_metadata": "m" * 3001},
        "must be less than 3001 characters [json-pointer:/view/private_metadata]",
        id="metadata-3001",
    ),
    pytest.param(
        {"callback_id": "c" * 256},
        "must be less than 256 characters [json-pointer:/view/callback_id]",
        id="callback-256",
    ),
    pytest.param(
        {"type": "home"},
        "must be modal [json-pointer:/view/type]",
        id="not-modal",
    ),
    pytest.param(
        {"submit": None},
        "must provide submit when the view has input blocks [json-pointer:/view]",
        id="inputs-without-submit",
    ),
    pytest.param(
        {
            "blocks": [
                input_block("same", "A", {"type": "plain_text_input"}),
                input_block("same", "B", {"type": "plain_text_input"}),
            ]
        },
        "duplicate block_id 'same' [json-pointer:/view/blocks/1/block_id]",
        id="duplicate-block-id",
    ),
    pytest.param(
        {
            "blocks": [
                {
                    "type": "actions",
                    "elements": [
                        {"type": "button", "text": plain("A"), "action_id": "x"},
                        {"type": "button", "text": plain("B"), "action_id": "x"},
                    ],
                }
            ]
        },
        "duplicate action_id 'x' [json-pointer:/view/blocks/0/elements/1]",
        id="duplicate-action-id",
    ),
    pytest.param(
        {"colour": "red"},
        "unknown field 'colour' [json-pointer:/view/colour]",
        id="unknown-field",
    ),
]


@pytest.mark.parametrize(("change", "message"), REFUSED_VIEWS)
async def test_views_open_refuses_a_view_slack_refuses_and_keeps_the_trigger(
    slack: FakeSlack,
    client: AsyncWebClient,
    receiver: Receiver,
    change: dict[str, Any],
    message: str,
) -> None:
    trigger_id = await clicked_trigger(slack, client, receiver)
    view = {k: v for k, v in {**edit_view(), **change}.items() if v is not None}

    refused = await open_error(client, trigger_id, view)

    assert refused.response["error"] == "invalid_arguments"
    messages = refused.response["response_metadata"]["messages"]
    assert any(message in m and m.startswith("[ERROR] ") for m in messages), messages
    assert slack.modals == []
    # Bad input changes nothing: the trigger still opens a good view.
    assert (await client.views_open(trigger_id=trigger_id, view=edit_view()))["ok"]


async def test_a_view_over_250_kb_is_too_large(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    trigger_id = await clicked_trigger(slack, client, receiver)
    big = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3000}} for _ in range(90)]
    refused = await open_error(client, trigger_id, edit_view(blocks=big))
    assert refused.response["error"] == "view_too_large"


async def test_views_open_takes_a_form_encoded_json_string(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    trigger_id = await clicked_trigger(slack, client, receiver)
    opened = await client.api_call(
        "views.open", data={"trigger_id": trigger_id, "view": json.dumps(edit_view())}
    )
    assert opened["view"]["title"]["text"] == "Edit the call"


async def test_views_update_by_id_and_hash(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    trigger_id = await clicked_trigger(slack, client, receiver)
    view = (await client.views_open(trigger_id=trigger_id, view=edit_view()))["view"]
    modal = slack.open_modal("U0ALICE")
    modal.fill("Command", "terraform plan")

    updated = await client.views_update(
        view_id=view["id"], hash=view["hash"], view=edit_view(title=plain("Edit (2)"))
    )

    assert updated["view"]["hash"] != view["hash"]
    assert modal.title == "Edit (2)"
    assert modal.value("Command")["value"] == "terraform plan"  # same ids: entry kept
    with pytest.raises(SlackApiError) as stale:
        await client.views_update(view_id=view["id"], hash=view["hash"], view=edit_view())
    assert stale.value.response["error"] == "hash_conflict"
    with pytest.raises(SlackApiError) as missing:
        await client.views_update(view_id="V0NOTHERE", view=edit_view())
    assert missing.value.response["error"] == "not_found"


async def test_external_ids_are_unique_in_the_workspace(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    first = await clicked_trigger(slack, client, receiver)
    await client.views_open(trigger_id=first, view=edit_view(external_id="ask-1"))
    second = await clicked_trigger(slack, client, receiver)
    refused = await open_error(client, second, edit_view(external_id="ask-1"))
    assert refused.response["error"] == "duplicate_external_id"


# -- a Bolt app that opens the modal and validates the submission -------------------------------


def bolt_app(slack: FakeSlack, **kwargs: Any) -> AsyncApp:
    """Opens the edit modal on "Edit…"; refuses a command holding "prod" with a field error,
    else approves the edited command in the message."""
    app = AsyncApp(client=AsyncWebClient(token=TOKEN, base_url=slack.base_url), **kwargs)

    @app.action("edit")
    async def edit(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        metadata = json.dumps(
            {"channel": body["container"]["channel_id"], "ts": body["container"]["message_ts"]}
        )
        await client.views_open(
            trigger_id=body["trigger_id"], view=edit_view(private_metadata=metadata)
        )

    @app.view("edit_call")
    async def submitted(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        values = body["view"]["state"]["values"]
        command = values["command"]["value"]["value"]
        if "prod" in command:
            await ack(response_action="errors", errors={"command": "Not on prod, please."})
            return
        await ack()
        where = json.loads(body["view"]["private_metadata"])
        who = body["user"]["id"]
        await client.chat_update(
            channel=where["channel"], ts=where["ts"], text=f"Approved by {who}: {command}"
        )

    return app


async def edit_round_trip(slack: FakeSlack, client: AsyncWebClient) -> FakeModal:
    message = await post_ask(client, slack)
    assert (await slack.click(message, "Edit…", user="U0ALICE")).ok
    modal = await slack.wait_for_modal(user="U0ALICE")
    assert modal.value("Command")["value"] == "terraform apply -target=module.prod"

    refused = await slack.submit_view(modal)

    assert refused.ok
    assert refused.outcome == "errors"
    assert modal.is_open
    assert modal.errors == {"command": "Not on prod, please."}
    assert slack.calls_to("chat.update") == []
    modal.fill("Command", "terraform apply -target=module.staging")
    modal.tick("Flags", ["Dry run"])
    modal.choose("Mode", "Fast")

    accepted = await slack.submit_view(modal)

    assert accepted.ok
    assert accepted.outcome == "closed"
    assert not modal.is_open
    update = await slack.wait_for_call("chat.update")
    assert update.args["text"] == "Approved by U0ALICE: terraform apply -target=module.staging"
    return modal


async def test_bolt_over_http_edit_round_trip(slack: FakeSlack, client: AsyncWebClient) -> None:
    runner = await serve(slack, bolt_app(slack, signing_secret=SECRET).web_app())
    try:
        await edit_round_trip(slack, client)
    finally:
        await runner.cleanup()


async def test_bolt_over_socket_mode_edit_round_trip(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    app = bolt_app(slack, signing_secret=SECRET)
    handler = AsyncSocketModeHandler(app, app_token=slack.app_token)
    handler.client.web_client = AsyncWebClient(base_url=slack.base_url)
    await handler.connect_async()
    try:
        await slack.wait_for_socket()
        await edit_round_trip(slack, client)
    finally:
        await handler.close_async()


# -- view_submission payloads ----------------------------------------------------------------


async def open_edit_modal(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver, **extra: Any
) -> FakeModal:
    trigger_id = await clicked_trigger(slack, client, receiver)
    await client.views_open(trigger_id=trigger_id, view=edit_view(**extra))
    return slack.open_modal("U0ALICE")


async def test_view_submission_is_shaped_and_signed_as_slack_sends_it(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    modal = await open_edit_modal(slack, client, receiver)
    modal.fill("Command", "ls -la")
    modal.choose("Mode", "Fast")
    modal.tick("Flags", ["Dry run"])
    modal.fill("Count", "3")

    result = await slack.submit_view(modal)

    assert result.ok
    assert result.outcome == "closed"
    assert not modal.is_open
    payload, headers = receiver.payloads[-1], receiver.headers[-1]
    assert payload["type"] == "view_submission"
    assert payload["team"] == {"id": "T0FAKE", "domain": "fake"}
    assert payload["user"]["id"] == "U0ALICE"
    assert payload["user"]["name"] == "alice"
    assert payload["api_app_id"] == "A0FAKE"
    assert payload["trigger_id"].count(".") == 2
    assert payload["response_urls"] == []
    view = payload["view"]
    assert view["id"] == modal.id
    assert view["callback_id"] == "edit_call"
    assert view["private_metadata"] == "ask-1"
    assert view["state"]["values"] == {
        "command": {"value": {"type": "plain_text_input", "value": "ls -la"}},
        "mode": {"value": {"type": "static_select", "selected_option": option("Fast")}},
        "flags": {"value": {"type": "checkboxes", "selected_options": [option("Dry run")]}},
        "count": {"value": {"type": "number_input", "value": "3"}},
    }
    assert headers["X-Slack-Signature"].startswith("v0=")
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"


async def test_the_trigger_of_a_submission_can_push_a_view(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    modal = await open_edit_modal(slack, client, receiver)
    receiver.reply = json.dumps({"response_action": "errors", "errors": {"command": "wait"}})
    await slack.submit_view(modal)
    trigger_id = receiver.payloads[-1]["trigger_id"]

    pushed = await client.views_push(trigger_id=trigger_id, view=edit_view(title=plain("More")))

    assert pushed["view"]["previous_view_id"] == modal.stack[0].id
    assert modal.title == "More"
    assert len(modal.stack) == 2


async def test_field_errors_must_name_input_blocks(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    modal = await open_edit_modal(slack, client, receiver)
    receiver.reply = json.dumps({"response_action": "errors", "errors": {"intro": "Bad"}})

    result = await slack.submit_view(modal)

    assert not result.ok
    assert result.outcome == "failed"
    assert result.problem is not None
    assert "'intro'" in result.problem
    assert "not the block_id of an input block" in result.problem
    assert modal.is_open
    assert modal.errors == {}
    assert modal.problem == result.problem


async def test_the_app_can_update_push_and_clear(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    modal = await open_edit_modal(slack, client, receiver)
    first_id = modal.id
    receiver.reply = json.dumps(
        {"response_action": "update", "view": edit_view(title=plain("Checked"))}
    )
    assert (await slack.submit_view(modal)).outcome == "updated"
    assert modal.id == first_id
    assert modal.title == "Checked"

    for depth in (2, 3):
        receiver.reply = json.dumps(
            {"response_action": "push", "view": edit_view(title=plain(f"Step {depth}"))}
        )
        assert (await slack.submit_view(modal)).outcome == "pushed"
        assert len(modal.stack) == depth
    refused = await slack.submit_view(modal)
    assert refused.outcome == "failed"
    assert "push_limit_reached" in str(refused.problem)

    receiver.reply = ""
    assert (await slack.submit_view(modal)).outcome == "closed"
    assert modal.title == "Step 2"  # back to the view below
    assert modal.is_open
    receiver.reply = json.dumps({"response_action": "clear"})
    assert (await slack.submit_view(modal)).outcome == "cleared"
    assert not modal.is_open


async def test_an_update_with_a_view_slack_refuses_fails(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    modal = await open_edit_modal(slack, client, receiver)
    receiver.reply = json.dumps(
        {"response_action": "update", "view": edit_view(title=plain("t" * 25))}
    )
    result = await slack.submit_view(modal)
    assert result.outcome == "failed"
    assert "json-pointer:/view/title/text" in str(result.problem)
    assert modal.title == "Edit the call"


async def test_the_client_refuses_empty_required_fields_and_bad_numbers(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    modal = await open_edit_modal(slack, client, receiver)
    sent = len(receiver.payloads)
    modal.fill("Command", "")
    modal.fill("Count", "11")

    result = await slack.submit_view(modal)

    assert not result.dispatched
    assert result.outcome == "invalid"
    assert set(result.errors) == {"command", "count"}
    assert modal.errors == result.errors
    assert len(receiver.payloads) == sent
    assert result.errors["count"] == "Enter a number at most 10."
    modal.fill("Count", "2.5")
    modal.fill("Command", "ls")
    assert (await slack.submit_view(modal)).errors == {"count": "Enter a whole number."}
    modal.fill("Count", "ten")
    assert (await slack.submit_view(modal)).errors == {"count": "Enter a number."}
    modal.fill("Count", "3")
    modal.fill("Command", "x" * 3001)
    assert (await slack.submit_view(modal)).errors == {"command": "Use at most 3000 characters."}


async def test_an_answer_neither_empty_nor_json_fails(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    modal = await open_edit_modal(slack, client, receiver)
    receiver.reply = "not json"
    result = await slack.submit_view(modal)
    assert result.outcome == "failed"
    assert modal.is_open


async def test_closing_notifies_only_when_asked(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    quiet = await open_edit_modal(slack, client, receiver)
    sent = len(receiver.payloads)
    assert await slack.close_view(quiet) is None
    assert not quiet.is_open
    assert len(receiver.payloads) == sent

    loud = await open_edit_modal(slack, client, receiver, notify_on_close=True)
    loud_id = loud.id
    closed = await slack.close_view(loud)

    assert closed is not None
    assert closed.ok
    payload = receiver.payloads[-1]
    assert payload["type"] == "view_closed"
    assert payload["is_cleared"] is False
    assert payload["view"]["id"] == loud_id
    assert payload["user"]["id"] == "U0ALICE"


async def test_wait_for_modal_times_out_with_the_user(slack: FakeSlack) -> None:
    with pytest.raises(TimeoutError, match="U0BOB"):
        await slack.wait_for_modal(user="U0BOB", timeout=0.05)


async def test_socket_mode_envelope_accepts_a_response_payload(slack: FakeSlack) -> None:
    seen: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    app = AsyncApp(client=AsyncWebClient(token=TOKEN, base_url=slack.base_url))

    @app.action("edit")
    async def edit(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await client.views_open(trigger_id=body["trigger_id"], view=edit_view())

    @app.view("edit_call")
    async def submitted(ack: AsyncAck, body: dict[str, Any]) -> None:
        await seen.put(body)
        await ack(response_action="errors", errors={"count": "Too many"})

    handler = AsyncSocketModeHandler(app, app_token=slack.app_token)
    handler.client.web_client = AsyncWebClient(base_url=slack.base_url)
    envelopes: list[bool] = []

    async def record(_: Any, request: Any) -> None:
        envelopes.append(bool(request.accepts_response_payload))

    handler.client.socket_mode_request_listeners.append(record)
    await handler.connect_async()
    try:
        await slack.wait_for_socket()
        client = AsyncWebClient(token=TOKEN, base_url=slack.base_url)
        message = await post_ask(client, slack)
        await slack.click(message, "Edit…", user="U0BOB")
        modal = await slack.wait_for_modal(user="U0BOB")
        result = await slack.submit_view(modal)
    finally:
        await handler.close_async()

    assert (await asyncio.wait_for(seen.get(), 5))["view"]["id"] == modal.id
    assert result.outcome == "errors"
    assert modal.errors == {"count": "Too many"}
    assert envelopes == [False, True]  # block_actions, then view_submission


async def test_the_app_must_answer_within_the_deadline(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    modal = await open_edit_modal(slack, client, receiver)
    receiver.hold = asyncio.Event()
    slack.ack_timeout = 0.2
    try:
        result = await slack.submit_view(modal)
    finally:
        receiver.hold.set()
    assert result.status == 504
    assert result.outcome == "failed"
    assert "504" in str(result.problem)
    assert modal.is_open


async def test_a_button_in_the_modal_sends_block_actions_from_the_view(
    slack: FakeSlack, client: AsyncWebClient, receiver: Receiver
) -> None:
    more = {
        "type": "actions",
        "block_id": "more",
        "elements": [{"type": "button", "text": plain("Show diff"), "action_id": "diff"}],
    }
    modal = await open_edit_modal(slack, client, receiver, blocks=[*edit_view()["blocks"], more])
    modal.fill("Command", "ls")

    assert (await slack.click_in_modal(modal, "Show diff")).ok

    payload = receiver.payloads[-1]
    assert payload["type"] == "block_actions"
    assert payload["container"] == {"type": "view", "view_id": modal.id}
    assert payload["actions"][0]["action_id"] == "diff"
    assert payload["view"]["state"]["values"]["command"]["value"]["value"] == "ls"
    pushed = await client.views_push(trigger_id=payload["trigger_id"], view=edit_view())
    assert pushed["view"]["root_view_id"] == modal.stack[0].id


async def test_over_socket_mode_slack_reads_an_ack_payload_only_where_the_envelope_accepts_one(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    """A bare WebSocket app, so each ack is exactly what is sent: ``{envelope_id, payload}``,
    ``payload`` being what an HTTP app would answer in its body."""
    opened = await AsyncWebClient(base_url=slack.base_url).apps_connections_open(
        app_token=slack.app_token
    )
    errors = {"response_action": "errors", "errors": {"count": "Too many"}}
    async with aiohttp.ClientSession() as session:
        ws = await session.ws_connect(str(opened["url"]))
        assert (await ws.receive_json(timeout=5))["type"] == "hello"

        async def answer(payload: object = None, **fields: Any) -> dict[str, Any]:
            envelope: dict[str, Any] = await ws.receive_json(timeout=5)
            ack: dict[str, Any] = {"envelope_id": envelope["envelope_id"], **fields}
            if payload is not None:
                ack["payload"] = payload
            await ws.send_json(ack)
            return envelope

        message = await post_ask(client, slack)
        click = asyncio.create_task(slack.click(message, "Edit…", user="U0BOB"))
        clicked = await answer(errors)  # a block_actions envelope does not accept one
        assert clicked["accepts_response_payload"] is False
        assert (await click).body == ""
        await client.views_open(trigger_id=clicked["payload"]["trigger_id"], view=edit_view())
        modal = slack.open_modal("U0BOB")

        submit = asyncio.create_task(slack.submit_view(modal))
        submitted = await answer(errors)
        assert submitted["accepts_response_payload"] is True
        assert submitted["payload"]["type"] == "view_submission"
        assert (await submit).outcome == "errors"
        assert modal.errors == {"count": "Too many"}

        submit = asyncio.create_task(slack.submit_view(modal))
        await answer("not an object")
        refused = await submit
        assert (refused.outcome, modal.is_open) == ("failed", True)
        assert "not a JSON object" in str(refused.problem)

        submit = asyncio.create_task(slack.submit_view(modal))
        await answer({"response_action": "update", "view": edit_view(callback_id="second")})
        assert (await submit).outcome == "updated"
        assert modal.top.definition["callback_id"] == "second"

        submit = asyncio.create_task(slack.submit_view(modal))
        await answer()  # an ack without a payload: the view closes, as an empty HTTP 200
        assert (await submit).outcome == "closed"
        assert not modal.is_open
        await ws.close()
