"""The provider's background Web API calls: capped, and a call waiting its turn is not failed."""

from __future__ import annotations

import asyncio

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from relay import AskUserQuestionRequest, ErrorCode, UserInteractionError
from relay.slack import SlackProvider, SlackTarget
from relay.testing import FakeSlack
from tests.slack_env import SECRET, question

ASKS = 120  # more than the 100 background calls the provider runs at once


async def test_closing_with_more_asks_than_connections_withdraws_every_one() -> None:
    # 120 asks withdrawn at once make 120 chat.update calls: this tests the connections,
    # not Slack's Tier 3 limit (50 a minute), which would hold them for two minutes.
    # One channel per ask (posts in parallel): any channel id exists here, by name.
    async with FakeSlack(
        signing_secret=SECRET, rate_limits=False, lenient={"any_channel"}
    ) as slack:
        # Each update takes 2 s and the client's timeout is 3 s: the 20 updates queued behind
        # the first 100 wait 2 s for their turn, then 2 s for their answer.
        client = AsyncWebClient(token=slack.bot_token, base_url=slack.base_url, timeout=3)

        def route(request: AskUserQuestionRequest) -> SlackTarget:
            return SlackTarget(channel=f"C0{request.questions[0].id.upper()}")  # posts in parallel

        provider = SlackProvider(client=client, signing_secret=SECRET, route=route)
        asks = [
            asyncio.create_task(provider.ask(AskUserQuestionRequest([question(f"q{i}")])))
            for i in range(ASKS)
        ]
        await slack.wait_for_message(count=ASKS, timeout=30)
        slack.fail("chat.update", delay=2.0, times=ASKS)
        await provider.aclose()
        for ask in asks:
            with pytest.raises(UserInteractionError) as info:
                await ask
            assert info.value.code == ErrorCode.ASK_ABORTED
        assert all(message.updated for message in slack.messages)
        assert len(slack.calls_to("chat.update")) == ASKS
        assert client.session is None  # the lent session was taken back and closed
