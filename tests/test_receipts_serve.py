"""Receipts from ``relay serve``: the routes, a click's signed request bound into its
receipt, two replicas on one Redis chaining 1,000 ends without a fork, and a replica killed
while it appends leaving a chain that verifies. Exports are checked with ``relay verify``
run as an auditor would run it (a subprocess, keys from ``/.well-known/jwks.json``)."""

from __future__ import annotations

# Looks inside: the SDK client has no task-augmented tools/call: its dispatcher sends one.
import asyncio
import base64
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import mcp_types as types
from cryptography.hazmat.primitives import serialization
from redis_server import RedisServer

from relay.mcp.server import RECEIPT_META_KEY
from relay.receipts.keys import write_signing_key
from relay.testing import FakeSlack
from tests.mcp_env import http_client, result_text, stdio_client
from tests.replica_env import ASK, post_click, start_replicas
from tests.server_env import (
    SECRET,
    TOKEN,
    Relay,
    free_port,
    relay_env,
    relay_server,
    run_to_exit,
    start_relay,
)
from tests.slack_env import first_button

MCP_QUESTION = {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}


def key_file(directory: Path) -> str:
    """A new receipt key in ``directory``, its owner's alone (as ``relay serve`` wants it)."""
    path = directory / "receipt-key.pem"
    write_signing_key(path)
    return str(path)


def write_public(private: str, out: Path) -> None:
    """The public key of PEM file ``private``, as PEM, into ``out``."""
    key = serialization.load_pem_private_key(Path(private).read_bytes(), password=None)
    pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    out.write_bytes(pem)


def payload_of(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # type: ignore[no-any-return]


async def raw(relay: Relay, path: str) -> tuple[int, str, str]:
    """GET ``path`` with the token: status, content type, body text."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(relay.url + path, headers=relay.headers()) as response,
    ):
        return response.status, response.content_type, await response.text()


async def chain(relay: Relay) -> list[dict[str, Any]]:
    """The whole chain, page by page (what ``relay audit --receipts`` reads)."""
    items: list[dict[str, Any]] = []
    after = 0
    while True:
        status, page = await relay.request("GET", f"/v1/receipts?after={after}&limit=1000")
        assert status == 200, page
        items.extend(page["receipts"])
        if page["next_after"] is None:
            return items
        after = page["next_after"]


async def chain_of(relay: Relay, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The chain once it holds ``count`` receipts (they are written in the background)."""
    deadline = time.monotonic() + timeout
    while len(items := await chain(relay)) < count:
        assert time.monotonic() < deadline, f"{len(items)} receipts of {count}"
        await asyncio.sleep(0.05)
    return items


async def checkpoints_of(relay: Relay, last: int, timeout: float = 60.0) -> list[Any]:
    """Every checkpoint published, once the latest covers place ``last``."""
    deadline = time.monotonic() + timeout
    while True:
        status, page = await relay.request("GET", "/receipts/checkpoints?limit=1000", token=None)
        assert status == 200, page
        found = page["checkpoints"]
        if found and payload_of(found[-1]["checkpoint"])["last"] >= last:
            return found  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, found[-1:] if found else found
        await asyncio.sleep(0.05)


def relay_verify(tmp_path: Path, items: list[dict[str, Any]], keys: str) -> tuple[int, str]:
    """``relay verify --chain`` over an export of ``items``, keys from ``keys`` (a URL)."""
    export = tmp_path / "receipts.jsonl"
    export.write_text("".join(json.dumps(i) + "\n" for i in items))
    done = subprocess.run(  # noqa: S603 - our own command, our own arguments
        [sys.executable, "-m", "relay.cli", "verify", "--keys", keys, "--chain", str(export)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


@asynccontextmanager
async def replicas_ending_many(
    tmp_path: Path, redis_server: RedisServer
) -> AsyncIterator[tuple[Relay, Relay]]:
    """Two replicas on one Redis that sign receipts and take as many asks as a test makes."""
    # Slack's per-channel posting limit would spread these posts over minutes; the chain is
    # what is tested (tests/test_fake_slack_strict.py holds the limits).
    async with FakeSlack(signing_secret=SECRET, rate_limits=False) as slack:
        a, b = await start_replicas(
            slack,
            redis_server.url,
            RELAY_RECEIPT_KEY_FILE=key_file(tmp_path),
            RELAY_RATE_LIMIT="100000",
            RELAY_MAX_PENDING="100000",
            # Both replicas checkpoint the chain while it grows: they race to store them.
            RELAY_CHECKPOINT_INTERVAL="0.05",
        )
        try:
            yield a, b
        finally:
            await a.stop()  # at once if the test has killed it
            await b.stop()


async def test_a_clicked_ask_has_a_receipt_binding_the_signed_click(tmp_path: Path) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack:
        slack.add_user("U0ALICE", name="alice")
        env = relay_env(slack, free_port(), RELAY_RECEIPT_KEY_FILE=key_file(tmp_path))
        relay = await start_relay(env)
        try:
            _, created = await relay.request("POST", "/v1/asks", json=ASK)
            path = f"/v1/asks/{created['id']}/receipt"
            status, _, text = await raw(relay, path)
            assert status == 404
            assert "not ended yet" in text
            message = await slack.wait_for_message()
            action = first_button(message)
            clicked = slack.build_block_actions(message, action, user="U0ALICE")
            status, digest = await post_click(relay, clicked)
            assert status == 200
            _, record = await relay.request("GET", f"/v1/asks/{created['id']}?wait=10")
            assert record["status"] == "answered"
            status, kind, token = await raw(relay, path)
            assert (status, kind) == (200, "application/jose")
            decision = payload_of(token)["outcome"]["decisions"][0]
            assert decision["by"]["user"] == "U0ALICE"
            assert decision["by"]["request"] == digest
            assert decision["selected"] == ["yes"]
            # Another token cannot read it; the keys need no token.
            status, _ = await relay.request("GET", path, token="token-for-agent-two-9876543210")
            assert status == 404
            status, jwks = await relay.request("GET", "/.well-known/jwks.json", token=None)
            assert status == 200
            assert jwks["keys"][0]["kid"] == payload_of(token)["kid"]
            items = await chain_of(relay, 1)
            assert items[0]["receipt"] == token
            # The auditor's way: export with relay audit --receipts, check with relay verify.
            export = tmp_path / "export.jsonl"
            exported = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "relay.cli",
                "audit",
                "--receipts",
                "-O",
                str(export),
                env={**env, "RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN},
                stderr=asyncio.subprocess.PIPE,
            )
            _, err = await exported.communicate()
            assert exported.returncode == 0, err
            lines = [json.loads(line) for line in export.read_text().splitlines()]
            # The bundle also holds any checkpoint the relay signed by then (one may be due
            # as soon as the first receipt exists): the receipts are the chain's, in order.
            assert [line for line in lines if "receipt" in line] == items
            assert all("receipt" in line or "checkpoint" in line for line in lines)
            code, out = relay_verify(tmp_path, lines, f"{relay.url}/.well-known/jwks.json")
            assert code == 0, out
        finally:
            await relay.stop()


async def test_without_a_key_the_receipt_routes_say_how_to_turn_them_on() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        status, body = await relay.request("GET", "/.well-known/jwks.json", token=None)
        assert status == 404
        assert "RELAY_RECEIPT_KEY_FILE" in body["error"]["message"]
        # Nor do MCP results name a receipt, on either door.
        async with (
            http_client(relay, mode="legacy") as client,
            stdio_client({"RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN}, mode="legacy") as stdio,
        ):
            for n, mcp in enumerate((client, stdio)):
                call = asyncio.create_task(mcp.call_tool("ask_user_question", MCP_QUESTION))
                message = await slack.wait_for_message(count=n + 1, timeout=15)
                await slack.click(message, "yes", user="U0ALICE")
                result = await asyncio.wait_for(call, 15)
                assert result_text(result) == '{"answers":[{"id":"go","selected":["yes"]}]}'
                assert RECEIPT_META_KEY not in (result.meta or {}), result


async def test_two_replicas_ending_1000_asks_at_once_make_one_unforked_chain(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    count = 1_000
    async with replicas_ending_many(tmp_path, redis_server) as (a, b):
        gate = asyncio.Semaphore(32)

        async def create() -> str:
            async with gate:
                status, body = await a.request("POST", "/v1/asks", json=ASK)
                assert status == 201, body
                return str(body["id"])

        ids = await asyncio.gather(*(create() for _ in range(count)))

        async def end(relay: Relay, ask_id: str) -> None:
            async with gate:
                status, body = await relay.request("DELETE", f"/v1/asks/{ask_id}")
                assert status == 200, body

        # Each replica ends every other ask, all at once: both append all along.
        await asyncio.gather(*(end((a, b)[i % 2], i_d) for i, i_d in enumerate(ids)))
        items = await chain_of(b, count, timeout=120)
        assert len(items) == count
        assert sorted(i["ask"] for i in items) == sorted(ids)
        assert [i["seq"] for i in items] == list(range(1, count + 1))
        code, out = relay_verify(tmp_path, items, f"{a.url}/.well-known/jwks.json")
        assert code == 0, out
        # The checkpoints both made: never two of one head, each one the chain matches.
        checkpoints = await checkpoints_of(b, count)
        covered = [(payload_of(c["checkpoint"])["last"], c["number"]) for c in checkpoints]
        assert [last for last, _ in covered] == sorted({last for last, _ in covered})
        assert [number for _, number in covered] == list(range(1, len(covered) + 1))
        code, out = relay_verify(tmp_path, items + checkpoints, f"{a.url}/.well-known/jwks.json")
        assert code == 0, out
        assert f"{len(checkpoints)} checkpoint" in out


async def test_a_replica_killed_while_appending_leaves_a_chain_that_verifies(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    count = 200
    async with replicas_ending_many(tmp_path, redis_server) as (a, b):
        ids = [(await a.request("POST", "/v1/asks", json=ASK))[1]["id"] for _ in range(count)]
        ends = [a.request("DELETE", f"/v1/asks/{i}") for i in ids]
        ending = asyncio.gather(*ends, return_exceptions=True)
        # Killed once its receipts have begun to land, with ends and appends in flight.
        await chain_of(b, 1)
        await a.stop(signal.SIGKILL)
        await ending
        left = await chain(b)
        code, out = relay_verify(tmp_path, left, f"{b.url}/.well-known/jwks.json")
        assert code == 0, out
        # Every ended ask still gets its receipt: its first reader writes what A never did.
        for ask_id in ids:
            _, record = await b.request("GET", f"/v1/asks/{ask_id}")
            status, _, _ = await raw(b, f"/v1/asks/{ask_id}/receipt")
            assert status == (404 if record["status"] == "pending" else 200)
        ended = [
            i for i in ids if (await b.request("GET", f"/v1/asks/{i}"))[1]["status"] != "pending"
        ]
        items = await chain(b)
        assert sorted(i["ask"] for i in items) == sorted(ended)
        code, out = relay_verify(tmp_path, items, f"{b.url}/.well-known/jwks.json")
        assert code == 0, out


async def test_mcp_results_and_approvals_name_their_receipts(tmp_path: Path) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RECEIPT_KEY_FILE=key_file(tmp_path)) as relay,
        http_client(relay, mode="legacy") as client,
        stdio_client({"RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN}, mode="legacy") as stdio,
    ):
        # The same decisions through /mcp and through relay mcp (stdio): the same content,
        # and on both the receipt id in the result's _meta, which the model does not read.
        seen: list[types.CallToolResult] = []
        for n, mcp in enumerate((client, stdio)):
            call = asyncio.create_task(mcp.call_tool("ask_user_question", MCP_QUESTION))
            message = await slack.wait_for_message(count=2 * n + 1, timeout=15)
            await slack.click(message, "yes", user="U0ALICE")
            seen.append(await asyncio.wait_for(call, 15))
            use = {"tool_name": "Bash", "input": {"command": "rm -rf build"}}
            call = asyncio.create_task(mcp.call_tool("approve_tool_use", use))
            message = await slack.wait_for_message(count=2 * n + 2, timeout=15)
            await slack.click(message, "Deny", user="U0BOB")
            seen.append(await asyncio.wait_for(call, 15))
        asked, denied, stdio_asked, stdio_denied = seen
        assert (
            result_text(asked)
            == result_text(stdio_asked)
            == ('{"answers":[{"id":"go","selected":["yes"]}]}')
        )
        assert result_text(denied) == result_text(stdio_denied)
        assert json.loads(result_text(denied))["behavior"] == "deny"
        assert "receipt" not in result_text(denied)
        for http_result, stdio_result in ((asked, stdio_asked), (denied, stdio_denied)):
            # All but the receipt's name (each door made its own ask) is the same.
            assert http_result.model_dump(exclude={"meta"}) == stdio_result.model_dump(
                exclude={"meta"}
            )
            assert http_result.meta is not None
            assert stdio_result.meta is not None
            assert set(http_result.meta) == set(stdio_result.meta) == {RECEIPT_META_KEY}
        names = set()
        for result in seen:
            assert result.meta is not None
            named = result.meta[RECEIPT_META_KEY]
            names.add(named)
            status, _, token = await raw(relay, f"/v1/asks/{named.removeprefix('rcpt_')}/receipt")
            assert status == 200
            assert payload_of(token)["jti"] == named
        assert len(names) == 4  # each result names its own ask's receipt
        # As a task (2025-11-25), the result fetched later names it in the same place.
        fetched = []
        for n, mcp in enumerate((client, stdio)):
            params = {"name": "ask_user_question", "arguments": MCP_QUESTION, "task": {}}
            dispatcher = mcp.session._dispatcher
            created = await dispatcher.send_raw_request("tools/call", params, {"timeout": 60})
            message = await slack.wait_for_message(count=5 + n, timeout=15)
            await slack.click(message, "yes", user="U0ALICE")
            ref = {"taskId": created["task"]["taskId"]}
            fetched.append(await dispatcher.send_raw_request("tasks/result", ref, {"timeout": 60}))
        assert (
            fetched[0]["content"]
            == fetched[1]["content"]
            == asked.model_dump(by_alias=True, exclude_none=True)["content"]
        )
        for result in fetched:
            assert result["_meta"][RECEIPT_META_KEY].startswith("rcpt_")
            assert result["_meta"][RECEIPT_META_KEY] not in names
        assert asked.meta is not None
        asked_id = asked.meta[RECEIPT_META_KEY].removeprefix("rcpt_")

        approval = {"tool": "Bash", "input": {"command": "make deploy"}, "agent": {"id": "a"}}
        status, made = await relay.request("POST", "/v1/approvals", json=approval)
        assert status == 201, made
        message = await slack.wait_for_message(count=7, timeout=15)
        await slack.click(message, "Deny", user="U0BOB")
        await relay.request("GET", f"/v1/approvals/{made['id']}?wait=10")
        status, _, token = await raw(relay, f"/v1/approvals/{made['id']}/receipt")
        assert status == 200
        payload = payload_of(token)
        assert payload["ask"] == made["id"]
        assert "Deny" in payload["options"][0]
        assert payload["outcome"]["decisions"][0]["selected"] == ["Deny"]
        # An ordinary ask is no approval: its receipt is not served there.
        status, _, _ = await raw(relay, f"/v1/approvals/{asked_id}/receipt")
        assert status == 404


async def test_a_rotated_key_still_publishes_the_old_one_and_the_chain_goes_on(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    old_dir.mkdir()
    new_dir.mkdir()
    old_key = key_file(old_dir)
    old_public = old_dir / "old-public.pem"
    write_public(old_key, old_public)
    async with FakeSlack(signing_secret=SECRET) as slack:
        env = relay_env(
            slack, free_port(), REDIS_URL=redis_server.url, RELAY_RECEIPT_KEY_FILE=old_key
        )
        relay = await start_relay(env)
        _, made = await relay.request("POST", "/v1/asks", json=ASK)
        await relay.request("DELETE", f"/v1/asks/{made['id']}")
        await chain_of(relay, 1)
        await relay.stop()
        env = {
            **env,
            "RELAY_RECEIPT_KEY_FILE": key_file(new_dir),
            "RELAY_RECEIPT_RETIRED_KEYS_FILE": str(old_public),
        }
        relay = await start_relay(env)
        try:
            _, made = await relay.request("POST", "/v1/asks", json=ASK)
            await relay.request("DELETE", f"/v1/asks/{made['id']}")
            items = await chain_of(relay, 2)
            kids = [payload_of(i["receipt"])["kid"] for i in items]
            assert kids[0] != kids[1]
            _, jwks = await relay.request("GET", "/.well-known/jwks.json", token=None)
            assert {k["kid"] for k in jwks["keys"]} == set(kids)
            code, out = relay_verify(tmp_path, items, f"{relay.url}/.well-known/jwks.json")
            assert code == 0, out
        finally:
            await relay.stop()


async def test_a_key_file_that_is_no_ed25519_key_stops_serve_saying_so(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-key.pem"
    bad.write_text("hello\n")
    bad.chmod(0o600)  # (private, as a key must be: what is refused here is its content)
    async with FakeSlack(signing_secret=SECRET) as slack:
        env = relay_env(slack, free_port(), RELAY_RECEIPT_KEY_FILE=str(bad))
        code, lines = await run_to_exit(env)
    assert code == 2
    text = "".join(lines)
    assert "RELAY_RECEIPT_KEY_FILE" in text
    assert "openssl genpkey -algorithm ed25519" in text
