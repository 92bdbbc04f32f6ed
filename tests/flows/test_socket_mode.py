"""Flow: the same click through Socket Mode (no public URL, no signing secret)."""

from __future__ import annotations

import asyncio

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from relay import AskUserQuestionRequest, RelayConfigError, UserInteractionService
from relay.slack import SlackProvider
from relay.testing import FakeSlack
from tests.slack_env import CHANNEL, question


async def test_a_click_over_socket_mode_answers_the_agent() -> None:
    async with FakeSlack(signing_secret="unused", channels={CHANNEL: "approvals"}) as slack:
        provider = SlackProvider(
            client=AsyncWebClient(token=slack.bot_token, base_url=slack.base_url), channel=CHANNEL
        )
        service = UserInteractionService()
        service.register_provider(provider)
        try:
            await provider.connect_socket_mode(slack.app_token)
            await slack.wait_for_socket()
            task = asyncio.create_task(service.ask(AskUserQuestionRequest([question()])))
            message = await slack.wait_for_message()
            reply = await slack.click(message, "prod", user="U0ALICE")
            assert reply.status == 200  # acked by envelope id
            answer = await asyncio.wait_for(task, 5)
            assert answer.to_dict() == {"answers": [{"id": "env", "selected": ["prod"]}]}
            await slack.wait_until(lambda: message.updated)
            assert "Answered by <@U0ALICE>" in str(message.blocks)

            # A second, stale click is told privately over the same connection.
            await slack.click(message, "staging", user="U0BOB", version=0)
            notice = await slack.wait_for_ephemeral(user="U0BOB")
            assert "<@U0ALICE>" in notice.args["text"]
        finally:
            await provider.aclose()


async def test_socket_mode_without_http_needs_no_signing_secret_but_web_app_does() -> None:
    provider = SlackProvider(token="xoxb-test", channel=CHANNEL)
    with pytest.raises(RelayConfigError, match="signing_secret"):
        provider.web_app()
    with pytest.raises(RelayConfigError, match="xapp-"):
        await provider.connect_socket_mode("xoxb-wrong-kind")
    await provider.aclose()
