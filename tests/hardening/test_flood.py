"""Unsigned floods of ``/slack/events``: nothing unsigned is parsed, so it costs one HMAC
(issue 11: one unsigned 2 MiB request used to block the loop for ~0.8 s in Bolt's parsers,
and a flood made real clicks miss Slack's 3 s deadline)."""

from __future__ import annotations

import asyncio
import io
import json
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager

import aiohttp
from aiohttp import web

from relay.server.app import build_app
from relay.slack.serving import SlackServing
from tests.slack_env import Env, question, result, slack_env

# What Slack's interactivity requests may weigh at most on the relay (the server's cap).
FLOOD_BODY = 2 * 1024 * 1024 - 1024
FLOODERS = 4
CLICKS = 10


def unsigned_body() -> bytes:
    """A form body as heavy to parse as 2 MiB can be: tens of thousands of small objects."""
    count = 40_000
    while True:
        actions = [{"action_id": f"relay.option.{i}", "value": "v"} for i in range(count)]
        payload = json.dumps({"type": "block_actions", "actions": actions})
        body = urllib.parse.urlencode({"payload": payload}).encode()
        if len(body) <= FLOOD_BODY:
            return body
        count = count * FLOOD_BODY // len(body)


def forged_headers() -> dict[str, str]:
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": str(int(time.time())),
        "X-Slack-Signature": "v0=" + "0" * 64,
    }


@asynccontextmanager
async def served(env: Env) -> AsyncIterator[str]:
    """``relay serve``'s application for ``env``'s provider (its 2 MiB cap for Slack)."""
    app = build_app(channel=SlackServing(env.provider), api_tokens=("t" * 20,))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
    env.slack.interactivity_url = url
    try:
        yield url
    finally:
        await runner.cleanup()


async def worst_lag_during(work: Awaitable[object]) -> float:
    """The longest the event loop was blocked (beyond a 1 ms tick) while ``work`` ran."""
    loop = asyncio.get_running_loop()
    done = False
    worst = 0.0

    async def probe() -> None:
        nonlocal worst
        while not done:
            started = loop.time()
            await asyncio.sleep(0.001)  # the probe's tick: how late it comes is the lag
            worst = max(worst, loop.time() - started - 0.001)

    probing = asyncio.ensure_future(probe())
    try:
        await work
    finally:
        done = True
        await probing
    return worst


async def test_one_unsigned_2_mib_request_blocks_the_loop_for_milliseconds() -> None:
    body = unsigned_body()
    async with slack_env() as env, served(env) as url, aiohttp.ClientSession() as session:

        async def forged() -> None:
            async with session.post(
                url, data=io.BytesIO(body), headers=forged_headers()
            ) as response:
                assert response.status == 401

        await forged()  # warm up
        lags = [await worst_lag_during(forged()) for _ in range(5)]
    print(f"\nloop blocked by one unsigned {len(body)} B request: {max(lags) * 1000:.1f} ms")
    # Not a speed target (the figure is printed): parsing the body blocked the loop ~0.8 s in
    # every request, while a busy machine delays some of the probe's ticks; so the best of
    # five, against a bound that only tells parsed from unparsed.
    assert min(lags) < 0.2, lags


async def test_clicks_are_acknowledged_in_time_under_an_unsigned_flood() -> None:
    body = unsigned_body()
    async with slack_env() as env, served(env) as url, aiohttp.ClientSession() as session:
        flooding = True
        sent = 0

        async def flood() -> None:
            nonlocal sent
            while flooding:
                async with session.post(
                    url, data=io.BytesIO(body), headers=forged_headers()
                ) as response:
                    assert response.status == 401
                    sent += 1

        flooders = [asyncio.ensure_future(flood()) for _ in range(FLOODERS)]
        latencies = []
        try:
            started = time.monotonic()
            for i in range(CLICKS):
                task = env.ask(question(f"q{i}"))
                message = await env.message(count=i + 1)
                clicked = time.monotonic()
                await env.slack.click(message, "prod", user="U0ALICE")
                latencies.append(time.monotonic() - clicked)
                assert (await result(task)).answers[0].selected == ("prod",)
            elapsed = time.monotonic() - started
        finally:
            flooding = False
            await asyncio.gather(*flooders)
    rate = sent * len(body) / elapsed / 1e6
    print(
        f"\nclick acks under a {rate:.1f} MB/s unsigned flood ({FLOODERS} senders):"
        f" max {max(latencies) * 1000:.0f} ms, median"
        f" {sorted(latencies)[len(latencies) // 2] * 1000:.0f} ms"
    )
    assert sent >= CLICKS  # the flood really ran alongside
    assert max(latencies) < 3.0, latencies  # Slack's deadline for an acknowledgement
