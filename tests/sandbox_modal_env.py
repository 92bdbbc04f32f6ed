"""The sandbox's stand-in and page served in-process beside a small Bolt app that opens an
"Edit…" modal, standing in for the relay: the page, ``Sandbox`` and FakeSlack are the
sandbox's own, served on one aiohttp server as ``relay serve --sandbox`` serves the page
beside ``/slack/events``."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from relay.sandbox.directory import DEFAULT_CHANNEL
from relay.sandbox.page import SandboxPage
from relay.sandbox.standin import Sandbox
from relay.testing import FakeMessage, FakeSlack

BOT_TOKEN = "xoxb-sandbox-modal-test"


class Received(list[dict[str, Any]]):
    """The payloads the stand-in app received, in order, and a way to await them: the app's
    own state is no change of FakeSlack's, so ``slack.wait_until`` would not re-check it."""

    def __init__(self) -> None:
        super().__init__()
        self._arrived = asyncio.Condition()

    async def add(self, payload: dict[str, Any]) -> None:
        """Keep ``payload`` and wake whoever awaits it."""
        async with self._arrived:
            self.append(payload)
            self._arrived.notify_all()

    async def reach(self, count: int, *, timeout: float = 5.0) -> None:
        """Return once ``count`` payloads have arrived (``TimeoutError`` after ``timeout``)."""
        async with asyncio.timeout(timeout), self._arrived:
            await self._arrived.wait_for(lambda: len(self) >= count)


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


def edit_app(slack: FakeSlack, submissions: Received, clicks: Received) -> AsyncApp:
    """Opens the edit form on "Edit…"; refuses a command that targets prod with an error
    under its field; else approves the edited command in the message. Keeps every
    submission it receives in ``submissions`` and every "Approve" click in ``clicks``."""
    app = AsyncApp(
        client=AsyncWebClient(token=BOT_TOKEN, base_url=slack.base_url),
        signing_secret=slack.signing_secret,
    )

    @app.action("approve")
    async def approve(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        await clicks.add(body)

    @app.action("edit")
    async def edit(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        where = {"channel": body["container"]["channel_id"], "ts": body["container"]["message_ts"]}
        await client.views_open(trigger_id=body["trigger_id"], view=edit_view(json.dumps(where)))

    @app.view("edit_call")
    async def submitted(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await submissions.add(body)
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
    submissions: Received
    clicks: Received


async def _no_asks(_: web.Request) -> web.Response:
    return web.json_response({"asks": []})


@asynccontextmanager
async def running_standin() -> AsyncIterator[Standin]:
    """FakeSlack, the sandbox page and the Bolt app on one loopback server."""
    async with FakeSlack(bot_token=BOT_TOKEN) as slack:
        sandbox = Sandbox(slack, channel=DEFAULT_CHANNEL, allowed_users=None)
        submissions, clicks = Received(), Received()
        web_app = edit_app(slack, submissions, clicks).web_app(path="/slack/events")
        # The port first: the page asks this server's own (empty) ask listing, as the
        # sandbox's page asks its relay, so its answers panel polls without an error.
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        web_app.router.add_get("/v1/asks", _no_asks)
        SandboxPage(sandbox, api_url=url, token="unused").install(web_app)
        runner = web.AppRunner(web_app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        slack.interactivity_url = f"{url}/slack/events"
        try:
            yield Standin(slack=slack, url=url, submissions=submissions, clicks=clicks)
        finally:
            await runner.cleanup()


async def post_edit_ask(slack: FakeSlack, text: str = "Run `terraform apply`?") -> FakeMessage:
    """The app's message with Approve and Edit… buttons, in the sandbox's channel."""
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.base_url)
    await client.chat_postMessage(
        channel=DEFAULT_CHANNEL,
        text=text,
        blocks=[
            {"type": "section", "text": {"type": "mrkdwn", "text": text}},
            {
                "type": "actions",
                "elements": [
                    {"type": "button", "text": plain("Approve"), "action_id": "approve"},
                    {"type": "button", "text": plain("Edit…"), "action_id": "edit"},
                ],
            },
        ],
    )
    return await slack.wait_for_message(channel=DEFAULT_CHANNEL)
