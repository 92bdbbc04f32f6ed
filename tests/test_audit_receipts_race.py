"""``relay audit --receipts`` against a checkpoint signed between its two reads (the chain,
then the checkpoints): the bundle must still verify whole. A proxy in front of the relay
puts a new receipt and its checkpoint exactly between the two reads, whichever comes first."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
from aiohttp import web

from relay.testing import FakeSlack
from tests.server_env import SECRET, TOKEN, Relay, free_port, relay_env, start_relay
from tests.test_receipts_bundle import QUESTION, claims_of, latest_checkpoint, run_cli
from tests.test_receipts_serve import key_file

READS = ("/v1/receipts", "/receipts/checkpoints")


@asynccontextmanager
async def between_reads(relay: Relay, then: Callable[[], Awaitable[None]]) -> AsyncIterator[str]:
    """A proxy to ``relay`` (its URL) that runs ``then`` once, just before the first request
    for one of ``READS`` after the other was read."""
    read: set[str] = set()
    ran: list[bool] = []

    async def forward(request: web.Request) -> web.Response:
        if request.path in READS:
            if not ran and read - {request.path}:
                ran.append(True)
                await then()
            read.add(request.path)
        headers = {"Authorization": request.headers.get("Authorization", "")}
        async with (
            aiohttp.ClientSession() as session,
            session.get(relay.url + request.path_qs, headers=headers) as response,
        ):
            return web.Response(
                status=response.status,
                body=await response.read(),
                content_type=response.content_type,
            )

    app = web.Application()
    app.router.add_get("/{tail:.*}", forward)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
    assert ran, "the reads never both happened"


async def end_ask(relay: Relay) -> None:
    status, created = await relay.request("POST", "/v1/asks", json=QUESTION)
    assert status == 201, created
    status, _ = await relay.request("DELETE", f"/v1/asks/{created['id']}")
    assert status == 200


async def test_a_checkpoint_signed_between_the_reads_leaves_the_bundle_whole(
    tmp_path: Path,
) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack:
        env = relay_env(
            slack,
            free_port(),
            RELAY_RECEIPT_KEY_FILE=key_file(tmp_path),
            RELAY_CHECKPOINT_INTERVAL="0.1",
        )
        relay = await start_relay(env)
        try:
            for _ in range(2):
                await end_ask(relay)
            await latest_checkpoint(relay, 2)

            async def a_receipt_and_its_checkpoint() -> None:
                await end_ask(relay)
                await latest_checkpoint(relay, 3)

            bundle = tmp_path / "bundle.jsonl"
            async with between_reads(relay, a_receipt_and_its_checkpoint) as proxy:
                cli_env = {**env, "RELAY_URL": proxy, "RELAY_TOKEN": TOKEN}
                code, out = await run_cli(cli_env, "audit", "--receipts", "-O", str(bundle))
            assert code == 0, out
            check = ("verify", "--keys", f"{relay.url}/.well-known/jwks.json", "--chain")
            code, out = await run_cli(env, *check, str(bundle))
            assert code == 0, out
            lines = [json.loads(line) for line in bundle.read_text().splitlines()]
            head = max(line["seq"] for line in lines if "receipt" in line)
            marks = [line["checkpoint"] for line in lines if "checkpoint" in line]
            covered = [claims_of(mark)["last"] for mark in marks]
            assert covered, "the bundle holds the checkpoints signed before its reads"
            assert max(covered) <= head
        finally:
            await relay.stop()
