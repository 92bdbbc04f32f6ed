"""A modal in the sandbox page, in a real browser: a click opens it (``views.open`` on the
page's FakeSlack), a person fills it, a refused value comes back as an error under its field
(``response_action: errors``), the fixed value closes it and the app acts on it.

The app here is a small Bolt app standing in for the relay, served with the sandbox page on
one aiohttp server exactly as ``relay serve --sandbox`` serves the page beside
``/slack/events``; the page, the stand-in and FakeSlack are the sandbox's own."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from selenium.webdriver.remote.webdriver import WebDriver
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from relay.sandbox.directory import DEFAULT_CHANNEL
from relay.sandbox.page import SandboxPage
from relay.sandbox.standin import Sandbox
from relay.testing import FakeSlack
from tests.browser.browser import Page
from tests.browser.conftest import ALICE

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "sandbox-edit-modal.png"
# Set UPDATE_SCREENSHOTS=1 to rewrite the docs' screenshot from this run.
UPDATE_SCREENSHOTS = os.environ.get("UPDATE_SCREENSHOTS") == "1"
BOT_TOKEN = "xoxb-sandbox-modal-test"


def plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text}


def option(text: str) -> dict[str, Any]:
    return {"text": plain(text), "value": text.lower()}


def edit_view(metadata: str) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": "edit_call",
        "private_metadata": metadata,
        "title": plain("Edit the call"),
        "submit": plain("Approve edited"),
        "close": plain("Cancel"),
        "blocks": [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": "*Bash* proposed by the coding agent"},
            },
            {
                "type": "input",
                "block_id": "command",
                "label": plain("Command"),
                "element": {
                    "type": "plain_text_input",
                    "action_id": "value",
                    "multiline": True,
                    "initial_value": "terraform apply -target=module.prod",
                },
                "hint": plain("Runs exactly as written once approved."),
            },
            {
                "type": "input",
                "block_id": "timeout",
                "label": plain("Timeout (seconds)"),
                "element": {
                    "type": "number_input",
                    "action_id": "value",
                    "is_decimal_allowed": False,
                    "initial_value": "600",
                },
            },
            {
                "type": "input",
                "block_id": "mode",
                "label": plain("Mode"),
                "element": {
                    "type": "static_select",
                    "action_id": "value",
                    "options": [option("Plan only"), option("Apply")],
                    "initial_option": option("Apply"),
                },
            },
            {
                "type": "input",
                "block_id": "flags",
                "optional": True,
                "label": plain("Flags"),
                "element": {
                    "type": "checkboxes",
                    "action_id": "value",
                    "options": [option("Auto-approve")],
                },
            },
        ],
    }


def edit_app(slack: FakeSlack, submissions: list[dict[str, Any]]) -> AsyncApp:
    """Opens the edit form on "Edit…"; refuses a command that targets prod with an error
    under its field; else approves the edited command in the message. Keeps every
    submission it receives in ``submissions``."""
    app = AsyncApp(
        client=AsyncWebClient(token=BOT_TOKEN, base_url=slack.base_url),
        signing_secret=slack.signing_secret,
    )

    @app.action("edit")
    async def edit(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        where = {"channel": body["container"]["channel_id"], "ts": body["container"]["message_ts"]}
        await client.views_open(trigger_id=body["trigger_id"], view=edit_view(json.dumps(where)))

    @app.view("edit_call")
    async def submitted(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        submissions.append(body)
        values = body["view"]["state"]["values"]
        command = values["command"]["value"]["value"]
        if "prod" in command:
            await ack(
                response_action="errors",
                errors={"command": "Production is off limits for this agent."},
            )
            return
        await ack()
        where = json.loads(body["view"]["private_metadata"])
        mode = values["mode"]["value"]["selected_option"]["text"]["text"]
        timeout = values["timeout"]["value"]["value"]
        text = f"Approved by <@{body['user']['id']}> as edited: `{command}` ({mode}, {timeout}s)"
        await client.chat_update(
            channel=where["channel"],
            ts=where["ts"],
            text=text,
            blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
        )

    return app


@dataclass
class Standin:
    """The sandbox's FakeSlack, the page's URL and what the app received."""

    slack: FakeSlack
    url: str
    submissions: list[dict[str, Any]]


@pytest.fixture
async def standin() -> AsyncIterator[Standin]:
    """FakeSlack, the sandbox page and the Bolt app on one loopback server."""
    async with FakeSlack(bot_token=BOT_TOKEN) as slack:
        sandbox = Sandbox(slack, channel=DEFAULT_CHANNEL, allowed_users=None)
        submissions: list[dict[str, Any]] = []
        web_app = edit_app(slack, submissions).web_app(path="/slack/events")
        SandboxPage(sandbox, api_url="http://127.0.0.1:9", token="unused").install(web_app)
        runner = web.AppRunner(web_app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        url = f"http://{host}:{port}"
        slack.interactivity_url = f"{url}/slack/events"
        try:
            yield Standin(slack=slack, url=url, submissions=submissions)
        finally:
            await runner.cleanup()


@pytest.fixture
async def modal_page(chromium: WebDriver, standin: Standin) -> AsyncIterator[Page]:
    opened = Page(chromium, standin.url)
    try:
        yield opened
    finally:
        chromium.get("about:blank")


async def test_an_edit_refused_in_the_modal_then_fixed_and_approved(
    standin: Standin, modal_page: Page, tmp_path: Path
) -> None:
    slack = standin.slack
    page = modal_page
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.base_url)
    await client.chat_postMessage(
        channel=DEFAULT_CHANNEL,
        text="Run terraform?",
        blocks=[
            {"type": "section", "text": {"type": "mrkdwn", "text": "Run `terraform apply`?"}},
            {
                "type": "actions",
                "elements": [
                    {"type": "button", "text": plain("Approve"), "action_id": "approve"},
                    {"type": "button", "text": plain("Edit…"), "action_id": "edit"},
                ],
            },
        ],
    )
    await page.open(ALICE)

    await page.click("terraform apply", "Edit…")

    shown = await page.wait_for_modal("Edit the call")
    assert "Command" in shown
    assert "Approve edited" in shown
    assert "Cancel" in shown
    await page.fill("Timeout (seconds)", "900")
    await page.pick("Mode", "Plan only")
    await page.press("Approve edited")
    error = await page.wait_for_field_error("Command", "Production is off limits")
    assert error == "Production is off limits for this agent."
    assert await page.field_errors() == [error]
    modal = slack.open_modal(ALICE)
    assert modal.errors == {"command": error}
    assert len(standin.submissions) == 1
    assert slack.calls_to("chat.update") == []

    # The docs' screenshot: the modal with its field error, produced on every run (so that
    # producing it cannot rot) and committed from a run with UPDATE_SCREENSHOTS=1.
    shot = tmp_path / "sandbox-edit-modal.png"
    await page.run(page.driver.set_window_size, 1200, 900)
    try:
        await page.screenshot(shot)
        if UPDATE_SCREENSHOTS:
            await page.screenshot(SCREENSHOT)
    finally:
        await page.run(page.driver.set_window_size, 1280, 1600)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    await page.fill("Command", "terraform apply -target=module.staging")
    await page.press("Approve edited")

    await page.wait_for_no_modal()
    text = await page.wait_for_text("as edited", "module.staging")
    assert "Plan only, 900s" in text
    assert not modal.is_open


async def test_a_number_the_client_refuses_never_reaches_the_app(
    standin: Standin, modal_page: Page
) -> None:
    slack = standin.slack
    page = modal_page
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.base_url)
    await client.chat_postMessage(
        channel=DEFAULT_CHANNEL,
        text="Run it?",
        blocks=[
            {
                "type": "actions",
                "elements": [{"type": "button", "text": plain("Edit…"), "action_id": "edit"}],
            }
        ],
    )
    await page.open(ALICE)
    await page.click("Edit…", "Edit…")
    await page.wait_for_modal("Edit the call")
    await page.fill("Timeout (seconds)", "ten minutes")
    await page.press("Approve edited")

    assert await page.wait_for_field_error("Timeout (seconds)", "number") == "Enter a number."
    assert standin.submissions == []
    await page.press("Cancel")
    await page.wait_for_no_modal()
