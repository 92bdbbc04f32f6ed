"""`relay serve --sandbox` over HTTP (the page itself is tested in tests/browser/): what it
prints at start, where it listens, the live feed's privacy, the page's action endpoint, and
that the relay under it is the production relay (signatures checked, API token required)."""

from __future__ import annotations

# Looks inside: a relay process adopted by a test starts its own log reader.
import asyncio
import json
import os
import signal
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from relay.sandbox import sandbox_settings
from relay.sandbox.directory import DEFAULT_CHANNEL
from relay.sandbox.page import SandboxPage
from relay.sandbox.run import mcp_snippet, sandbox_token, token_file
from relay.sandbox.standin import Sandbox
from relay.testing import FakeSlack
from tests.sandbox_env import ALICE, DAVE, TOKEN, running_sandbox, sandbox_env
from tests.sandbox_feed import act, feed
from tests.server_env import Relay, free_port, start_relay

ROOT = Path(__file__).resolve().parents[1]

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


@dataclass
class Started:
    process: asyncio.subprocess.Process
    banner: str
    log: list[str]

    async def stop(self) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), 15)


async def start_printing(*argv: str, env: dict[str, str], lines: int = 4) -> Started:
    """Start a command and collect the first ``lines`` lines of its banner on stdout."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        env=env,
        cwd=ROOT,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    banner = []
    try:
        for _ in range(lines):
            line = await asyncio.wait_for(process.stdout.readline(), 90)
            assert line, "the process ended before printing its banner"
            banner.append(line.decode())
    except BaseException:
        process.kill()
        await process.wait()
        raise
    return Started(process=process, banner="".join(banner), log=[])


def relay_cli(*args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "relay.cli", *args)


async def test_start_prints_the_page_a_generated_token_and_how_to_connect_slack() -> None:
    port = free_port()
    env = sandbox_env(port)
    del env["RELAY_API_TOKENS"]
    started = await start_printing(*relay_cli("serve", "--sandbox"), env=env)
    try:
        banner = started.banner
        assert banner.startswith("relay sandbox: Slack is simulated on this machine")
        assert "set SLACK_BOT_TOKEN and SLACK_APP_TOKEN" in banner.splitlines()[0]
        assert f"page:   http://127.0.0.1:{port}/" in banner
        token = banner.split("token: ")[1].split()[0]
        assert len(token) >= 24
        async with aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{port}/v1/asks"
            body = {"questions": [{"id": "a", "question": "Works?"}]}
            async with session.post(url, json=body) as response:
                assert response.status == 401  # the sandbox's API needs its token too
            headers = {"Authorization": f"Bearer {token}"}
            async with session.post(url, json=body, headers=headers) as response:
                assert response.status == 201
    finally:
        assert await started.stop() == 0


async def test_the_generated_token_survives_a_restart_and_the_banner_says_how_to_use_it() -> None:
    env = sandbox_env(free_port())
    del env["RELAY_API_TOKENS"]
    tokens = []
    for _ in range(2):
        started = await start_printing(*relay_cli("serve", "--sandbox"), env=env, lines=6)
        assert await started.stop() == 0
        tokens.append(started.banner.split("token: ")[1].split()[0])
    kept = token_file()
    assert kept is not None  # the tests run in a virtualenv, as scripts/serve's relay does
    assert tokens[0] == tokens[1] == kept.read_text().strip()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert f"kept in {kept} across restarts" in started.banner
    url = f"http://127.0.0.1:{env['PORT']}"
    assert f"  env:    export RELAY_URL={url} RELAY_TOKEN={tokens[0]}\n" in started.banner
    # The MCP configuration names the relay by absolute path: an MCP client has no venv on PATH.
    snippet = json.loads(started.banner.split("  MCP:    ")[1].splitlines()[0])
    server = snippet["mcpServers"]["relay"]
    assert Path(server["command"]).is_absolute()
    assert os.access(server["command"], os.X_OK)
    assert server["args"][-1] == "mcp"
    assert server["env"] == {"RELAY_URL": url, "RELAY_TOKEN": tokens[0]}
    # The way to a real workspace is the page the README sends people to as well: one place.
    steps = started.banner.split("(steps: ")[1].split(")")[0]
    assert steps == "docs/operate/slack-app.md"
    assert f"[Set up the Slack app]({steps})" in README


def test_a_kept_token_is_read_back_and_a_bad_one_replaced(tmp_path: Path) -> None:
    path = tmp_path / "relay-sandbox-token"
    first = sandbox_token(path)
    assert sandbox_token(path) == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text("short\n")
    path.chmod(0o644)
    replaced = sandbox_token(path)
    assert replaced != first
    assert len(replaced) >= 24
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sandbox_token(None) != sandbox_token(None)  # outside a virtualenv: new each start
    assert Path(
        json.loads(mcp_snippet("http://x", "t", "relay"))["mcpServers"]["relay"]["command"]
    ).is_absolute()


async def test_the_page_shows_what_each_agent_got_back() -> None:
    async with running_sandbox() as relay, aiohttp.ClientSession() as session:
        async with session.get(f"{relay.url}/sandbox/answers") as response:
            assert (response.status, await response.json()) == (200, {"asks": []})
        async with feed(session, relay.url, ALICE) as alice:
            await alice.next("snapshot")
            status, asked = await relay.request(
                "POST", "/sandbox/sample", json={"name": "deploy-gate"}, token=None
            )
            assert status == 201
            message = await alice.next("message")
            click = {"as": ALICE, "channel": message["channel"], "ts": message["ts"],
                     "version": message["version"], "kind": "button", "text": "Deploy",
                     **button(message, "Deploy")}  # fmt: skip
            assert (await act(session, relay.url, click))[0] == 200
        status, waited = await relay.request("GET", f"/v1/asks/{asked['id']}?wait=10", token=TOKEN)
        assert (status, waited["status"]) == (200, "answered")
        async with session.get(f"{relay.url}/sandbox/answers") as response:
            shown = (await response.json())["asks"]
        # Exactly the JSON the agent's own GET returned, and who asked.
        assert [item["got"] for item in shown] == [waited]
        assert shown[0]["id"] == asked["id"]
        assert shown[0]["agent"]["id"]


async def test_the_answers_panel_says_unavailable_while_the_relays_api_is_down() -> None:
    async with FakeSlack() as slack:
        web_app = web.Application()
        # Nothing listens on the discard port: the relay's API is stopping or not yet up.
        page = SandboxPage(Sandbox(slack, channel=DEFAULT_CHANNEL, allowed_users=None),
                           api_url="http://127.0.0.1:9", token="unused")  # fmt: skip
        page.install(web_app)
        runner = web.AppRunner(web_app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://{host}:{port}/sandbox/answers") as response,
            ):
                body = await response.json()
            assert (response.status, body["error"]["code"]) == (503, "UNAVAILABLE")
        finally:
            await runner.cleanup()


async def test_it_listens_on_loopback_unless_the_operator_says_otherwise() -> None:
    with_host = sandbox_env(free_port(), RELAY_HOST="0.0.0.0")  # noqa: S104
    started = await start_printing(*relay_cli("serve", "--sandbox"), env=with_host, lines=5)
    try:
        assert "listening on 0.0.0.0, not only loopback" in started.banner
        assert "token: the one in RELAY_API_TOKENS" in started.banner
        assert TOKEN not in started.banner
    finally:
        assert await started.stop() == 0
    async with FakeSlack() as slack:
        settings, generated = sandbox_settings(slack, {}, {})
        assert (settings.host, generated) == ("127.0.0.1", True)
        settings, _ = sandbox_settings(slack, {"RELAY_HOST": " "}, {"RELAY_HOST": "::1"})
        assert settings.host == "::1"
        real = {"SLACK_BOT_TOKEN": "xoxb-real", "SLACK_APP_TOKEN": "xapp-real"}
        settings, _ = sandbox_settings(slack, real, {"SLACK_API_URL": "https://slack.com/api/"})
        # The stand-in's Slack, whatever the environment or the flags say.
        assert settings.slack_api_url == slack.base_url
        assert settings.bot_token != "xoxb-real"
        assert not settings.socket_mode


async def test_slack_variables_in_the_environment_are_ignored_and_said_so() -> None:
    env = sandbox_env(free_port(), SLACK_BOT_TOKEN="xoxb-real-one", SLACK_APP_TOKEN="xapp-1")
    started = await start_printing(*relay_cli("serve", "--sandbox"), env=env, lines=5)
    try:
        assert "the sandbox does not use the SLACK_* variables" in started.banner
    finally:
        assert await started.stop() == 0


def button(message: dict[str, Any], text: str) -> dict[str, Any]:
    for block in message["blocks"]:
        for element in block.get("elements") or []:
            if element.get("type") == "button" and element["text"]["text"] == text:
                return {"block_id": block["block_id"], "action_id": element["action_id"]}
    raise LookupError(text)


async def test_private_notices_reach_only_the_person_they_were_sent_to() -> None:
    async with (
        running_sandbox() as relay,
        aiohttp.ClientSession() as session,
        feed(session, relay.url, DAVE) as dave,
        feed(session, relay.url, ALICE) as alice,
    ):
        snapshot = await dave.next("snapshot")
        assert (snapshot["me"], snapshot["messages"], snapshot["ephemerals"]) == (DAVE, [], [])
        await alice.next("snapshot")
        status, _ = await relay.request(
            "POST", "/sandbox/sample", json={"name": "deploy-gate"}, token=None
        )
        assert status == 201
        message = await dave.next("message")
        assert message == await alice.next("message")
        click = {"as": DAVE, "channel": message["channel"], "ts": message["ts"],
                 "version": message["version"], "kind": "button", "text": "Deploy",
                 **button(message, "Deploy")}  # fmt: skip
        status, result = await act(session, relay.url, click)
        assert (status, result["status"], result["dispatched"]) == (200, 200, True)
        notice = await dave.next("ephemeral")
        assert "not allowed to answer" in notice["text"]
        # Alice's feed carries the click's effects on the message only: here, none.
        status, result = await act(session, relay.url, {**click, "as": ALICE})
        assert result["status"] == 200
        answered = await alice.next("message")
        assert "Answered by <@U0SBALICE>" in json.dumps(answered["blocks"])
        assert [e for e, _ in alice.events if e == "ephemeral"] == []


async def test_the_action_endpoint_refuses_what_the_page_would_never_send() -> None:
    async with running_sandbox() as relay, aiohttp.ClientSession() as session:
        async with feed(session, relay.url, ALICE) as alice:
            await alice.next("snapshot")
            await relay.request("POST", "/sandbox/sample", json={"name": "plan-review"}, token=None)
            message = await alice.next("message")
        where = {"channel": message["channel"], "ts": message["ts"], "version": 0}
        good = {"as": ALICE, **where, "kind": "button", "text": "Approve",
                **button(message, "Approve")}  # fmt: skip
        cases: list[tuple[dict[str, Any], dict[str, str], int, str]] = [
            ({**good, "as": "U0NOBODY"}, {}, 400, "BAD_REQUEST"),
            ({**good, "kind": "hover"}, {}, 400, "BAD_REQUEST"),
            ({**good, "ts": "1.000001"}, {}, 404, "NOT_FOUND"),
            ({**good, "text": "Reject"}, {}, 409, "GONE"),
            ({**good, "version": -1}, {}, 400, "BAD_REQUEST"),
            ({**good, "typed": [{"block_id": "x"}]}, {}, 400, "BAD_REQUEST"),
            (good, {"Origin": "https://evil.example"}, 403, "FORBIDDEN"),
        ]
        for body, headers, status, code in cases:
            got, result = await act(session, relay.url, body, **headers)
            assert (got, result["error"]["code"]) == (status, code), body
        async with session.post(
            f"{relay.url}/sandbox/act",
            data=json.dumps(good),
            headers={"Content-Type": "text/plain"},
        ) as response:
            assert response.status == 415
        async with session.get(f"{relay.url}/sandbox/events?as=U0NOBODY") as response:
            assert response.status == 400
        # Nothing was answered by any of that; the good click still works.
        got, result = await act(session, relay.url, good)
        assert (got, result["status"]) == (200, 200)
        await relay.wait_for_log("event=answered")


async def test_the_relay_under_the_sandbox_still_checks_slacks_signatures() -> None:
    async with running_sandbox() as relay, aiohttp.ClientSession() as session:
        action = {"type": "button", "block_id": "relay:x:0:act", "action_id": "relay.option.0"}
        payload = {"type": "block_actions", "actions": [action], "user": {"id": ALICE}}
        form = {"payload": json.dumps(payload)}
        stamp = str(int(time.time()))
        headers = {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": "v0=" + "0" * 64}
        async with session.post(
            f"{relay.url}/slack/events", data=form, headers=headers
        ) as response:
            assert response.status == 401


async def test_sigterm_with_a_page_open_stops_promptly_and_cleanly() -> None:
    relay = await start_relay(sandbox_env(free_port()), "--sandbox")
    async with aiohttp.ClientSession() as session, feed(session, relay.url, ALICE) as alice:
        await alice.next("snapshot")
        started = time.monotonic()
        assert await relay.stop() == 0
        assert time.monotonic() - started < 5


def test_plain_relay_serve_without_credentials_never_starts_the_sandbox() -> None:
    import subprocess

    env = {"PATH": "/usr/bin:/bin"}  # relay is not on PATH, as after scripts/serve
    result = subprocess.run(  # noqa: S603 - our own command
        [str(Path(sys.executable).parent / "relay"), "serve"],
        env=env, capture_output=True, text=True, timeout=60, check=False, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 2
    assert "relay serve --sandbox" in result.stderr
    assert "sandbox:" not in result.stdout
    # The help names the command as it was run, even when `relay` is not on PATH.
    assert f"`{os.path.relpath(Path(sys.executable).parent / 'relay', ROOT)} manifest" in (
        result.stderr
    )


@pytest.mark.parametrize("credentials", [False, True])
async def test_scripts_serve_starts_the_sandbox_only_without_credentials(
    credentials: bool,
) -> None:
    port = free_port()
    env = sandbox_env(port, VENV=str(Path(sys.executable).parent.parent))
    async with FakeSlack(
        signing_secret="scripts-serve-secret",
        bot_token="xoxb-scripts-serve",
        channels={"C0SERVE": "serve"},
    ) as slack:
        if credentials:
            env.update(
                SLACK_BOT_TOKEN="xoxb-scripts-serve",
                SLACK_SIGNING_SECRET="scripts-serve-secret",
                SLACK_API_URL=slack.base_url,
                RELAY_CHANNEL="C0SERVE",
                RELAY_HOST="127.0.0.1",
            )
            relay = await start_script(env)
            try:
                line = await relay.wait_for_log("relay listening", timeout=90)
                assert "HTTP mode" in line
                assert not any("the sandbox" in entry for entry in relay.log)
            finally:
                assert await relay.stop() == 0
            return
        started = await start_printing("bash", "scripts/serve", env=env)
        try:
            assert started.banner.startswith("relay sandbox:")
            assert f"page:   http://127.0.0.1:{port}/" in started.banner
        finally:
            assert await started.stop() == 0
        assert started.process.stderr is not None
        err = (await started.process.stderr.read()).decode()
        assert "No Slack credentials are set" in err
        assert "bin/relay" in err  # where relay is, since it is not on PATH


async def start_script(env: dict[str, str]) -> Relay:
    process = await asyncio.create_subprocess_exec(
        "bash", "scripts/serve", env=env, cwd=ROOT,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    port = int(env["PORT"])
    relay = Relay(url=f"http://127.0.0.1:{port}", port=port, process=process, env=env)
    relay._reader = asyncio.create_task(relay._read())
    return relay


async def test_on_loopback_the_page_answers_only_to_loopback_host_names() -> None:
    # A site that rebinds its own name to 127.0.0.1 sends its name as Host: refused.
    async with running_sandbox() as relay, aiohttp.ClientSession() as session:
        for host, status in (
            (f"evil.example:{relay.port}", 421),
            (f"localhost:{relay.port}", 200),
            (f"127.0.0.1:{relay.port}", 200),
        ):
            for path in ("/", "/sandbox/events?as=U0SBALICE"):
                async with session.get(relay.url + path, headers={"Host": host}) as response:
                    assert response.status == status, (host, path)
        async with session.post(
            f"{relay.url}/sandbox/sample",
            json={"name": "plan-review"},
            headers={"Host": f"evil.example:{relay.port}"},
        ) as response:
            assert response.status == 421
        # The relay's own API is not the page's: it keeps answering any name, with a token.
        async with session.get(
            f"{relay.url}/healthz", headers={"Host": f"relay.internal:{relay.port}"}
        ) as response:
            assert response.status == 200


async def test_the_slack_stand_in_refuses_what_another_site_makes_a_browser_send() -> None:
    # The stand-in (FakeSlack) listens on loopback on the user's machine: a page open in the
    # browser could post a form to it as the bot, or open its Socket Mode WebSocket.
    async with (
        FakeSlack(channels={"C0SBGENERAL": "general"}) as slack,
        aiohttp.ClientSession() as session,
    ):
        form = {"token": slack.bot_token, "channel": "C0SBGENERAL", "text": "<!channel> click here"}
        for headers in (
            {"Origin": "https://evil.example"},
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site"},
        ):
            async with session.post(
                f"{slack.base_url}chat.postMessage", data=form, headers=headers
            ) as response:
                assert response.status == 403, headers
                assert (await response.json())["error"] == "cross_origin_refused"
        assert slack.messages == []
        # Slack's own clients send neither header, and are served as before.
        async with session.post(f"{slack.base_url}chat.postMessage", data=form) as response:
            assert (await response.json())["ok"] is True
        assert len(slack.messages) == 1


async def test_an_ask_may_name_the_sandboxs_channels_and_dms_and_nothing_else() -> None:
    # relay serve lets a client name only listed channels: the sandbox lists its own.
    question = [{"id": "go", "question": "Ship?", "options": [{"label": "yes"}]}]
    async with running_sandbox() as relay:
        for channel, status in (("C0SBDEPLOYS", 201), (DAVE, 201), ("C0ELSEWHERE", 400)):
            got, body = await relay.request(
                "POST",
                "/v1/asks",
                json={"questions": question, "slack": {"channel": channel}},
                token=TOKEN,
            )
            assert got == status, (channel, body)
