"""Socket Mode when Slack is unreachable or refuses the app token: clear, quiet, stoppable."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from relay import AskUserQuestionRequest, RelayConfigError
from relay.slack import SlackProvider
from relay.testing import FakeSlack
from tests.server_env import free_port, relay_env, run_to_exit, start_relay
from tests.slack_env import CHANNEL, question

ASK = {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}


def socket_env(slack: FakeSlack, **extra: str) -> dict[str, str]:
    """``relay serve`` in Socket Mode (no signing secret, an xapp- token)."""
    return relay_env(
        slack, free_port(), SLACK_APP_TOKEN="xapp-1-server", SLACK_SIGNING_SECRET="", **extra
    )


@pytest.mark.parametrize("error", ["invalid_auth", "token_revoked", "account_inactive"])
async def test_a_refused_app_token_is_one_line_naming_slack_app_token_and_exit_2(
    error: str,
) -> None:
    async with FakeSlack(signing_secret="unused", channels={CHANNEL: "approvals"}) as slack:
        slack.fail("apps.connections.open", error=error, times=100)
        code, lines = await run_to_exit(socket_env(slack))
    assert code == 2, lines
    errors = [line for line in lines if "BAD_CONFIG" in line]
    assert len(errors) == 1, lines
    assert errors[0].startswith("relay: error: BAD_CONFIG: ")
    assert "SLACK_APP_TOKEN" in errors[0]
    assert error in errors[0]
    assert not [line for line in lines if "Traceback" in line or " ERROR " in line], lines
    assert len(slack.calls_to("apps.connections.open")) == 1  # a refusal is not retried


async def test_an_unreachable_slack_is_retried_quietly_and_sigterm_still_stops_the_relay() -> None:
    async with FakeSlack(signing_secret="unused", channels={CHANNEL: "approvals"}) as slack:
        env = socket_env(slack)
    # Slack is gone: nothing listens at SLACK_API_URL any more.
    relay = await start_relay(env)  # serving (and handling signals) while connecting
    try:
        await relay.wait_for_log("retry 2 in", timeout=20)
        status, body = await relay.request("GET", "/readyz", token=None)
        assert status == 503
        assert "not connected to Slack" in body["socket_mode"]
        assert (await relay.request("GET", "/healthz", token=None))[0] == 200  # alive, not ready
        stopping = time.monotonic()
        assert await relay.stop(signal.SIGTERM) == 0
        assert time.monotonic() - stopping < 5.0
    finally:
        if relay.process.returncode is None:
            await relay.stop(signal.SIGKILL)
    assert not [line for line in relay.log if "Traceback" in line], "".join(relay.log)
    attempts = [line for line in relay.log if "Socket Mode: cannot connect to Slack" in line]
    assert len(attempts) >= 2
    # One line each, saying why and when the next try comes.
    assert all(" WARNING relay.slack " in line and " retry " in line for line in attempts)


async def test_transient_refusals_are_retried_with_backoff_until_connected() -> None:
    async with FakeSlack(signing_secret="unused", channels={CHANNEL: "approvals"}) as slack:
        slack.fail("apps.connections.open", error="internal_error", times=2)
        relay = await start_relay(socket_env(slack))
        try:
            await slack.wait_for_socket(timeout=20)
            await relay.wait_for_log("Socket Mode connected after 2 failed attempts")
            opens = slack.calls_to("apps.connections.open")
            assert len(opens) == 3
            assert opens[2].at - opens[1].at > opens[1].at - opens[0].at  # backing off
            status, _ = await relay.request("GET", "/readyz", token=None)
            assert status == 200
            _, created = await relay.request("POST", "/v1/asks", json=ASK)
            await slack.click(await slack.wait_for_message(), "yes", user="U0ALICE")
            _, record = await relay.request("GET", f"/v1/asks/{created['id']}?wait=10")
            assert record["status"] == "answered"
        finally:
            await relay.stop()
    retries = [line for line in relay.log if "cannot connect to Slack" in line]
    assert len(retries) == 2
    assert all("Slack answered internal_error" in line for line in retries)
    assert not [line for line in relay.log if "Traceback" in line]


def provider(slack: FakeSlack) -> SlackProvider:
    client = AsyncWebClient(token=slack.bot_token, base_url=slack.base_url)
    return SlackProvider(client=client, channel=CHANNEL)


async def test_connect_socket_mode_raises_a_config_error_when_slack_refuses_the_token() -> None:
    async with FakeSlack(signing_secret="unused", channels={CHANNEL: "approvals"}) as slack:
        slack.fail("apps.connections.open", error="invalid_auth")
        relay = provider(slack)
        try:
            with pytest.raises(RelayConfigError, match="SLACK_APP_TOKEN") as raised:
                await asyncio.wait_for(relay.connect_socket_mode("xapp-1-revoked"), 10)
            assert raised.value.setting == "SLACK_APP_TOKEN"
            assert relay.socket_mode is not None
            assert (relay.socket_mode.problem() or "").startswith("refused: ")
        finally:
            await relay.aclose()


async def test_the_provider_reconnects_when_slack_drops_the_connection() -> None:
    async with FakeSlack(signing_secret="unused", channels={CHANNEL: "approvals"}) as slack:
        relay = provider(slack)
        try:
            await relay.connect_socket_mode(slack.app_token)
            assert relay.socket_mode is not None
            assert relay.socket_mode.problem() is None
            await slack.disconnect_sockets()
            await slack.wait_for_call("apps.connections.open", count=2, timeout=20)
            await slack.wait_for_socket(timeout=20)
            task = asyncio.create_task(relay.ask(AskUserQuestionRequest([question()])))
            message = await slack.wait_for_message()
            await slack.click(message, "prod", user="U0ALICE")
            assert (await asyncio.wait_for(task, 10)).answers[0].selected == ("prod",)
        finally:
            await relay.aclose()


async def test_a_lost_connection_makes_the_relay_unready_until_it_is_back() -> None:
    slack = FakeSlack(signing_secret="unused", channels={CHANNEL: "approvals"})
    await slack.start()
    relay = await start_relay(socket_env(slack))
    try:
        await slack.wait_for_socket(timeout=20)
        await relay.wait_for_log("Socket Mode connected")
        assert (await relay.request("GET", "/readyz", token=None))[0] == 200
        await slack.close()  # Slack goes away under a live connection
        await relay.wait_for_log("Socket Mode: cannot connect to Slack", timeout=20)
        status, body = await relay.request("GET", "/readyz", token=None)
        assert status == 503
        # Why it failed (an address) is in the log, not in the public probe's body.
        assert body["socket_mode"] == "not connected to Slack, reconnecting"
    finally:
        await relay.stop()
    assert not [line for line in relay.log if "Traceback" in line], "".join(relay.log)
