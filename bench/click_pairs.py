"""Click to answer on both stores in alternating rounds: the Redis / memory ratio, paired.

``bench.click_latency --store both`` measures the memory store, then Redis, a minute apart;
on a shared virtual machine whose speed drifts by up to 2x within an hour, the ratio of the
two p50s moved by more than the changes it was meant to judge. Here one process holds two
relays (a ``SlackProvider`` on a ``MemoryStore`` and one on a ``RedisStore``, each behind its
own aiohttp app and ``FakeSlack``, with N asks pending), and the rounds rotate between
them, so both see the machine as it is at that moment. Each round is timed as in
``bench.click_latency``: from sending a signed click to the waiting ``ask()`` returning, the
relay's background ``chat.update`` drained before the next round.

Each round also takes one sample of the Redis floor (``bench.common.RedisFloor``: one
``EVALSHA`` round trip plus one pub/sub hop on the same Redis), so the floor is paced like
the clicks. Measured back to back, as ``bench.click_latency`` does and as printed here too,
it is several times lower: on a virtual machine whose idle CPUs halt, Redis's CPU and this
process's wake from idle for every click (a third of a millisecond each here), and Redis's
caches are cold by then. A back-to-back floor pays neither; a click does, and so does the
floor taken in the rounds.

To compare two trees, run it from each in turn (``cd TREE && python -m bench.click_pairs``)
a few times, alternating, and compare the ratios.

    .venv/bin/python -m bench.click_pairs [--smoke] [--pending N]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.click_latency import _NUMBER, SMOKE, Sizes, close_into_stub, fill
from bench.common import (
    CHANNEL,
    SECRET,
    Redis,
    RedisFloor,
    arguments,
    bench_slack,
    click_body,
    latency_ms,
    print_table,
    redis_floor,
    serve,
    signed_headers,
    verdict,
    web_client,
    write_json,
)
from relay.slack import SlackProvider
from relay.store.base import AskStore
from relay.store.memory import MemoryStore
from relay.testing import FakeMessage, FakeSlack

FULL = Sizes(pending=1_000, samples=1_500, warmup=200)


@dataclass
class _Relay:
    """One relay under test, with its asks pending."""

    slack: FakeSlack
    provider: SlackProvider
    url: str
    agents: list[asyncio.Task[None]]
    answered: dict[int, asyncio.Future[float]]
    messages: dict[int, FakeMessage]


async def _start(store: AskStore, sizes: Sizes, runners: list[Any]) -> _Relay:
    slack = bench_slack(signing_secret=SECRET, rate_limits=False)
    await slack.__aenter__()
    provider = SlackProvider(
        client=web_client(slack), signing_secret=SECRET, channel=CHANNEL, timeout=None, store=store
    )
    runner, port = await serve(provider.web_app())
    runners.append(runner)
    rounds = sizes.warmup + sizes.samples
    agents, answered = await fill(slack, provider, range(rounds + sizes.pending), 50)
    messages: dict[int, FakeMessage] = {}
    for message in slack.messages:
        if match := _NUMBER.search(message.text):
            messages[int(match.group(1))] = message
    url = f"http://127.0.0.1:{port}/slack/events"
    return _Relay(slack, provider, url, agents, answered, messages)


async def _stop(relay: _Relay, runners: list[Any]) -> None:
    await close_into_stub(relay.provider, relay.agents, runners)
    await relay.slack.__aexit__(None, None, None)


# The rounds' orders: each of the three first, second and last alike.
_ORDERS = (
    ("memory", "redis", "floor"),
    ("redis", "floor", "memory"),
    ("floor", "memory", "redis"),
)


async def _click(http: aiohttp.ClientSession, relay: _Relay, k: int) -> float:
    """Click ask ``k`` of ``relay``: seconds from sending it to its ``ask()`` returning."""
    body = click_body(relay.slack, relay.messages[k])
    headers = signed_headers(body)
    sent = time.perf_counter()
    async with http.post(relay.url, data=body, headers=headers) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"the relay answered HTTP {response.status}")
    returned = await asyncio.wait_for(relay.answered[k], 5.0)
    await relay.provider.drain()
    return returned - sent


async def measure(sizes: Sizes) -> dict[str, Any]:
    """Rotate the rounds between the two relays and the floor; the latencies and ratios."""
    from relay.store.redis import RedisStore

    redis = Redis(cpu=1)
    runners: list[Any] = []
    relays: dict[str, _Relay] = {}
    try:
        relays["memory"] = await _start(MemoryStore(), sizes, runners)
        relays["redis"] = await _start(RedisStore(url=redis.url), sizes, runners)
        samples: dict[str, list[float]] = {"memory": [], "redis": [], "floor": []}
        warm_floor = await redis_floor(redis.url, sizes.samples)
        async with aiohttp.ClientSession() as http, RedisFloor(redis.url) as floor:
            for k in range(sizes.warmup + sizes.samples):
                for name in _ORDERS[k % len(_ORDERS)]:
                    if name == "floor":
                        latency = (await floor.sample())[1]
                    else:
                        latency = await _click(http, relays[name], k)
                    if k >= sizes.warmup:
                        samples[name].append(latency)
    finally:
        for relay in relays.values():
            await _stop(relay, runners)
        for runner in runners:
            await runner.cleanup()
        redis.stop()
    figures = {name: latency_ms(values) for name, values in samples.items()}
    return {
        "sizes": sizes.__dict__,
        "latency": figures,
        "warm_floor": warm_floor["evalsha_and_pubsub"],
        "redis_over_memory_p50": figures["redis"]["p50_ms"] / figures["memory"]["p50_ms"],
        "redis_minus_floor_p50_ms": figures["redis"]["p50_ms"] - figures["floor"]["p50_ms"],
    }


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pending", type=int, default=FULL.pending, help="asks left pending in each relay"
    )


def main() -> None:
    """Run the benchmark and write ``bench/results/click_pairs.json``."""
    args = arguments(__doc__ or "", extra=_options)
    sizes = SMOKE if args.smoke else Sizes(args.pending, FULL.samples, FULL.warmup)
    result = asyncio.run(measure(sizes))
    labels = {"floor": "Redis floor, in the rounds", "warm_floor": "Redis floor, back to back"}
    latency = {**result["latency"], "warm_floor": result["warm_floor"]}
    rows = [
        [labels.get(name, name), f["n"], f["p50_ms"], f["p90_ms"], f["p99_ms"], f["max_ms"]]
        for name, f in latency.items()
    ]
    print_table(
        f"Click -> ask() returns, rounds alternating ({sizes.pending:,} pending in each)",
        ["store", "n", "p50 ms", "p90 ms", "p99 ms", "max ms"],
        rows,
    )
    measured = {
        "redis / memory at p50 <= 1.5": (result["redis_over_memory_p50"], 1.5),
        "redis p50 - Redis floor in the rounds <= 0.5 ms": (
            result["redis_minus_floor_p50_ms"],
            0.5,
        ),
    }
    targets = {
        target: {"measured": value, "limit": limit, "met": None if args.smoke else value <= limit}
        for target, (value, limit) in measured.items()
    }
    print_table(
        "Targets",
        ["target", "measured", "verdict"],
        [[target, t["measured"], verdict(t["met"])] for target, t in targets.items()],
    )
    name = "click_pairs" + ("_smoke" if args.smoke else "")
    write_json(name, {"smoke": args.smoke, **result, "targets": targets})


if __name__ == "__main__":
    main()
