"""`relay ask` stopped by SIGTERM (a cancelled CI job) or SIGINT (Ctrl-C): the question is
withdrawn, and the command exits 4 with one line, no traceback."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest

from relay.testing import FakeSlack
from tests.server_env import TOKEN, free_port, relay_env, relay_server

SIGNALS = [signal.SIGTERM, signal.SIGINT]


async def relay_ask(env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        "ask",
        "-q",
        "Deploy?",
        "-o",
        "yes",
        "-o",
        "no",
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def interrupted(process: asyncio.subprocess.Process, sig: int) -> tuple[int, list[str]]:
    """Send ``sig``; the exit code and stderr lines once the command has finished."""
    process.send_signal(sig)
    out, err = await asyncio.wait_for(process.communicate(), 20)
    assert out == b""
    assert process.returncode is not None
    return process.returncode, err.decode().splitlines()


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
async def test_relay_ask_through_a_relay_withdraws_its_question_on(sig: signal.Signals) -> None:
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack, RELAY_LOG_LEVEL="debug") as relay,
    ):
        env = {**relay_env(slack, free_port()), "RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN}
        process = await relay_ask(env)
        message = await slack.wait_for_message(timeout=20)
        line = await relay.wait_for_log("long-poll ask=", timeout=20)  # it is waiting
        ask_id = line.split("ask=")[1].split()[0]
        code, lines = await interrupted(process, sig)
        assert code == 4
        assert lines == [
            f"relay: error: ASK_ABORTED: stopped by {sig.name}; the question is withdrawn, nothing"
            " is left waiting in Slack"
        ]
        _, record = await relay.request("GET", f"/v1/asks/{ask_id}")
        assert record["status"] == "aborted"
        await slack.wait_until(lambda: message.updated)
        assert message.text == "Deploy? — withdrawn"


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
async def test_relay_ask_straight_to_slack_withdraws_its_question_on(sig: signal.Signals) -> None:
    async with FakeSlack(signing_secret="unused") as slack:
        env = relay_env(slack, free_port(), SLACK_APP_TOKEN="xapp-1-cli")
        process = await relay_ask(env)
        await slack.wait_for_socket(timeout=20)
        message = await slack.wait_for_message(timeout=20)
        code, lines = await interrupted(process, sig)
        assert code == 4
        assert len(lines) == 1
        assert lines[0].startswith(f"relay: error: ASK_ABORTED: stopped by {sig.name}")
        update = await slack.wait_for_call("chat.update")  # sent before the command exited
        assert update.args["ts"] == message.ts
        assert message.text == "Deploy? — withdrawn"
