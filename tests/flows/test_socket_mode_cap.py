"""Flow: more Socket Mode replicas than Slack allows wait their turn instead of storming.

Slack lets an app hold about 10 Socket Mode connections (bolt-js#2225); past the cap it
sends ``disconnect`` / ``too_many_websockets``. FakeSlack enforces a cap (here 1, to keep
the test small) and sends the real message.
"""

from __future__ import annotations

import asyncio

from slack_sdk.web.async_client import AsyncWebClient

from relay import AskUserQuestionRequest, UserInteractionService
from relay.slack import SlackProvider
from relay.slack.socket_mode.connection import refused_retry
from relay.testing import FakeSlack
from tests.slack_env import CHANNEL, question

RETRY = 0.3


def replica(slack: FakeSlack) -> SlackProvider:
    client = AsyncWebClient(token=slack.bot_token, base_url=slack.base_url)
    return SlackProvider(client=client, channel=CHANNEL)


async def test_a_replica_past_the_cap_backs_off_and_connects_when_a_slot_frees() -> None:
    async with FakeSlack(max_socket_connections=1, channels={CHANNEL: "approvals"}) as slack:
        first, second = replica(slack), replica(slack)
        try:
            await first.connect_socket_mode(slack.app_token, retry_refused_after=RETRY)
            await slack.wait_for_socket()
            # Not waiting to be connected: it is refused until the first one goes.
            await second.connect_socket_mode(slack.app_token, wait=False, retry_refused_after=RETRY)
            # Refused once, then retried after the wait (not at once), refused again, and
            # retried after a longer wait: three opens for the second replica.
            await slack.wait_for_call("apps.connections.open", count=4, timeout=10)
            opens = [c.at for c in slack.calls_to("apps.connections.open")[1:4]]
            assert opens[1] - opens[0] >= RETRY * 0.8
            assert opens[2] - opens[1] >= 2 * RETRY * 0.8
            assert slack.refused_sockets >= 2
            assert slack.socket_connections == 1

            await first.aclose()  # a slot frees: the waiting replica takes it
            await slack.wait_until(lambda: slack.socket_connections == 1, timeout=10)
            await slack.wait_until(
                lambda: len(slack.calls_to("apps.connections.open")) > slack.refused_sockets + 1,
                timeout=10,
            )
            service = UserInteractionService()
            service.register_provider(second)
            task = asyncio.create_task(service.ask(AskUserQuestionRequest([question()])))
            message = await slack.wait_for_message()
            assert (await slack.click(message, "prod", user="U0ALICE")).ok
            assert (await asyncio.wait_for(task, 5)).answers[0].selected == ("prod",)
        finally:
            await first.aclose()
            await second.aclose()


async def test_a_refresh_requested_disconnect_reconnects_at_once() -> None:
    async with FakeSlack(channels={CHANNEL: "approvals"}) as slack:
        provider = replica(slack)
        try:
            await provider.connect_socket_mode(slack.app_token, retry_refused_after=60)
            await slack.wait_for_socket()
            await slack.disconnect_sockets(reason="refresh_requested")
            await slack.wait_for_call("apps.connections.open", count=2)
            await slack.wait_for_socket()
            assert slack.refused_sockets == 0
        finally:
            await provider.aclose()


def test_the_wait_doubles_up_to_five_minutes_with_jitter() -> None:
    waits = [refused_retry(refusals, first=10.0) for refusals in range(1, 10)]
    assert 8.0 <= waits[0] <= 12.0
    assert 16.0 <= waits[1] <= 24.0
    assert all(240.0 <= wait <= 360.0 for wait in waits[5:])  # capped at 300 ± 20 %
