"""Flow: an agent's MCP client (the SDK's own) talks to ``relay mcp`` over stdio.

``relay mcp`` runs as a subprocess the way an MCP client's configuration starts it, asking
through a hosted relay (``relay serve``, also a subprocess) or Slack directly; humans answer
in FakeSlack.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import anyio
import pytest

from relay.seam.tool import ASK_USER_QUESTION_TOOL
from relay.testing import FakeSlack
from tests.mcp_env import result_json, result_text, stdio_client, wait_withdrawn
from tests.server_env import BOT_TOKEN, CHANNEL, TOKEN, relay_server

QUESTION = {
    "questions": [
        {
            "id": "env",
            "question": "Deploy where?",
            "options": [{"label": "staging"}, {"label": "prod"}],
        }
    ]
}


def hosted_env(url: str) -> dict[str, str]:
    return {"RELAY_URL": url, "RELAY_TOKEN": TOKEN}


async def test_tools_ask_and_approve_through_a_hosted_relay() -> None:
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack) as relay,
        stdio_client(hosted_env(relay.url)) as client,
    ):
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == {"ask_user_question", "approve_tool_use"}
        assert listed["ask_user_question"].input_schema == ASK_USER_QUESTION_TOOL["parameters"]
        # Read-only, as approve_tool_use: Codex refuses unannotated tools under "never".
        for tool in listed.values():
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is True

        call = asyncio.create_task(client.call_tool("ask_user_question", QUESTION))
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "prod", user="U0ALICE")
        result = await asyncio.wait_for(call, 15)
        assert not result.is_error
        assert result_text(result) == '{"answers":[{"id":"env","selected":["prod"]}]}'

        command = {"command": "git push origin main && echo <!channel>"}
        call = asyncio.create_task(
            client.call_tool(
                "approve_tool_use",
                {"tool_name": "Bash", "input": command, "tool_use_id": "toolu_1"},
            )
        )
        message = await slack.wait_for_message(count=2, timeout=15)
        shown = json.dumps(message.blocks, ensure_ascii=False)
        # The command as it will run; its "<!channel>" made inert: nobody is notified.
        assert "```sh\\ngit push origin main && echo <\u2060!channel>\\n```" in shown
        # No post notified anyone (an outcome update names, with a mention, who answered).
        assert [m for m in slack.mentions if m.method == "chat.postMessage"] == []
        await slack.click(message, "Allow once", user="U0BOB")
        decision = result_json(await asyncio.wait_for(call, 15))
        assert decision == {"behavior": "allow", "updatedInput": command}


async def test_a_typed_reason_denies_with_it_and_a_session_grant_skips_the_next_ask() -> None:
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack) as relay,
        stdio_client(hosted_env(relay.url)) as client,
    ):
        edit = {"file_path": "/repo/app.py", "old_string": "a = 1\n", "new_string": "a = 2\n"}
        call = asyncio.create_task(
            client.call_tool("approve_tool_use", {"tool_name": "Edit", "input": edit})
        )
        message = await slack.wait_for_message(timeout=15)
        assert "-a = 1\\n+a = 2" in json.dumps(message.blocks)
        await slack.type(message, "use a constant instead", user="U0ALICE")
        await slack.press_enter(message, user="U0ALICE")
        decision = result_json(await asyncio.wait_for(call, 15))
        assert decision["behavior"] == "deny"
        assert "use a constant instead" in decision["message"]

        tests = {"command": "npm test"}
        args = {"tool_name": "Bash", "input": tests}
        call = asyncio.create_task(client.call_tool("approve_tool_use", args))
        message = await slack.wait_for_message(count=2, timeout=15)
        await slack.click(message, "Allow for this session", user="U0BOB")
        assert result_json(await asyncio.wait_for(call, 15))["behavior"] == "allow"
        # The same call again: the relay's grant answers, no one is asked.
        again = await asyncio.wait_for(client.call_tool("approve_tool_use", args), 15)
        assert result_json(again) == {"behavior": "allow", "updatedInput": tests}
        assert len(slack.messages) == 2
        # A different command is not covered.
        other = asyncio.create_task(
            client.call_tool("approve_tool_use", {"tool_name": "Bash", "input": {"command": "ls"}})
        )
        await slack.wait_for_message(count=3, timeout=15)
        other.cancel()


async def test_progress_while_a_human_thinks_and_cancel_withdraws_the_question() -> None:
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack) as relay,
        stdio_client(hosted_env(relay.url), "--progress-interval", "0.2") as client,
    ):
        progress: list[float] = []
        first = asyncio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)
            first.set()

        with anyio.move_on_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(
                    lambda: client.call_tool(
                        "ask_user_question", QUESTION, progress_callback=on_progress
                    )
                )
                message = await slack.wait_for_message(timeout=15)
                await asyncio.wait_for(first.wait(), 10)
                group.cancel_scope.cancel()  # the SDK sends notifications/cancelled
        assert progress == sorted(progress)
        assert progress[0] > 0
        await wait_withdrawn(slack, message)


async def test_bad_arguments_fail_closed_and_bad_questions_are_error_results() -> None:
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack) as relay,
        stdio_client(hosted_env(relay.url)) as client,
    ):
        denied = result_json(await client.call_tool("approve_tool_use", {"input": {}}))
        assert denied["behavior"] == "deny"
        assert "tool_name" in denied["message"]
        error = await client.call_tool("ask_user_question", {"questions": []})
        assert error.is_error
        assert result_text(error).startswith("Error: ")
        assert not slack.messages


async def test_asking_slack_directly_over_socket_mode() -> None:
    async with FakeSlack(
        signing_secret="unused",
        bot_token=BOT_TOKEN,
        app_token="xapp-1-mcp",
        channels={CHANNEL: "approvals"},
    ) as slack:
        env = {
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_APP_TOKEN": "xapp-1-mcp",
            "SLACK_API_URL": slack.base_url,
            "RELAY_CHANNEL": CHANNEL,
        }
        async with stdio_client(env) as client:
            await slack.wait_for_socket(timeout=15)
            args = {"tool_name": "Bash", "input": {"command": "make deploy"}}
            call = asyncio.create_task(client.call_tool("approve_tool_use", args))
            message = await slack.wait_for_message(timeout=15)
            await slack.click(message, "Allow for 30 minutes", user="U0ALICE")
            assert result_json(await asyncio.wait_for(call, 15))["behavior"] == "allow"
            # The grant lives in this relay mcp process: the next identical call is allowed.
            again = await asyncio.wait_for(client.call_tool("approve_tool_use", args), 15)
            assert result_json(again)["behavior"] == "allow"
            assert len(slack.messages) == 1

            with anyio.move_on_after(30):
                async with anyio.create_task_group() as group:
                    group.start_soon(lambda: client.call_tool("ask_user_question", QUESTION))
                    message = await slack.wait_for_message(count=2, timeout=15)
                    group.cancel_scope.cancel()
            await wait_withdrawn(slack, message)


async def test_a_configuration_error_is_one_line_on_stderr() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        "mcp",
        env={"PATH": "/usr/bin:/bin"},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert out == b""
    assert err.decode().startswith("relay: error: USAGE: say how to reach Slack")
    assert len(err.decode().strip().splitlines()) == 1


@pytest.mark.parametrize("mode", ["legacy"])
async def test_the_handshake_era_client_works_too(mode: str) -> None:
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack) as relay,
        stdio_client(hosted_env(relay.url), mode=mode) as client,
    ):
        call = asyncio.create_task(client.call_tool("ask_user_question", QUESTION))
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "staging", user="U0ALICE")
        assert not (await asyncio.wait_for(call, 15)).is_error


async def rpc(process: asyncio.subprocess.Process, message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write((json.dumps(message) + "\n").encode())
    await process.stdin.drain()


@pytest.mark.parametrize("how", ["stdin closes", "SIGTERM"])
async def test_the_client_going_away_withdraws_the_question(how: str) -> None:
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack) as relay,
    ):
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "relay.cli",
            "mcp",
            env={**os.environ, **hosted_env(relay.url)},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stdin is not None
        assert process.stdout is not None
        await rpc(
            process,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            },
        )
        assert json.loads(await asyncio.wait_for(process.stdout.readline(), 20))["id"] == 1
        await rpc(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        await rpc(
            process,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "ask_user_question", "arguments": QUESTION},
            },
        )
        message = await slack.wait_for_message(timeout=15)
        if how == "SIGTERM":
            process.send_signal(signal.SIGTERM)
        else:
            process.stdin.close()
        assert await asyncio.wait_for(process.wait(), 30) == 0
        await wait_withdrawn(slack, message)
