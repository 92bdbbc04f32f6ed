"""`relay serve` that cannot start says why in one line and exits 2."""

from __future__ import annotations

import signal
import socket

import pytest

from relay.testing import FakeSlack
from tests.server_env import free_port, relay_env, run_to_exit, start_relay


@pytest.mark.parametrize("via", ["PORT", "--port"])
async def test_a_busy_port_is_one_line_naming_the_port_and_the_setting(via: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        async with FakeSlack(signing_secret="unused") as slack:
            env = relay_env(slack, port)
            args: tuple[str, ...] = ()
            if via == "--port":
                env["PORT"] = "8080"  # the flag wins over the variable
                args = ("--port", str(port))
            code, lines = await run_to_exit(env, *args)
    assert code == 2, lines
    assert lines == [
        f"relay: error: BAD_CONFIG: cannot listen on 127.0.0.1:{port}: address already in use;"
        " stop the other process or choose another port with PORT (or --port)"
    ]


@pytest.mark.parametrize("error", ["invalid_auth", "account_inactive", "token_revoked"])
async def test_a_refused_bot_token_is_one_line_naming_slack_bot_token_and_exit_2(
    error: str,
) -> None:
    async with FakeSlack(signing_secret="unused") as slack:
        slack.fail("auth.test", error=error, times=100)
        code, lines = await run_to_exit(relay_env(slack, free_port()))  # HTTP mode
    assert code == 2, lines
    errors = [line for line in lines if "BAD_CONFIG" in line]
    assert len(errors) == 1, lines
    assert errors[0].startswith(
        f"relay: error: BAD_CONFIG: Slack refused the bot token (SLACK_BOT_TOKEN): {error};"
    )
    assert not [line for line in lines if "Traceback" in line or " ERROR " in line], lines
    assert len(slack.calls_to("auth.test")) == 1  # a refusal is not retried


async def test_an_unreachable_slack_is_retried_until_it_answers_and_then_ready() -> None:
    async with FakeSlack(signing_secret="unused") as slack:
        slack.fail("auth.test", status=503, times=4)  # slack-sdk retries some; relay the rest
        relay = await start_relay(relay_env(slack, free_port()))
        try:
            await relay.wait_for_log("auth.test failed at start (retry in", timeout=20)
            await slack.wait_for_call("auth.test", count=5, timeout=30)
            status, body = await relay.request("GET", "/readyz", token=None)
            assert (status, body) == (200, {"ok": True}), body
            assert relay.process.returncode is None  # serving all along
        finally:
            assert await relay.stop(signal.SIGTERM) == 0
