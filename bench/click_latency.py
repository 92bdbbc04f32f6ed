"""Click to answer: from sending a signed click to the moment the waiting ``ask()`` returns.

One process holds everything: a ``FakeSlack``, a ``SlackProvider`` behind its aiohttp app
with N asks pending (agents blocked in ``ask()``), and the two baselines: bare Bolt in its
fastest configuration (``process_before_response=True``, a listener that only acks), timed
to its HTTP response, and the floor (an aiohttp handler that checks the signature and parses
the payload). Every round sends the same signed bytes to all three, in rotating order, over
one keep-alive ``aiohttp`` session; the relay's background ``chat.update`` is drained before
the next request so that no measurement overlaps another's work.

``--store both`` (the default) runs all of it twice in one run, the relay on the in-memory
store and then on a ``redis-server`` this benchmark starts on a free port (``RedisStore``,
the agents' waits woken through it), and measures the Redis floor there: one ``EVALSHA``
round trip plus one pub/sub hop (``bench.common.redis_floor``). ``--pending 1000,100000``
measures at several numbers of pending asks, for the "cost stays flat" target.

    .venv/bin/python -m bench.click_latency [--smoke] [--store memory|redis|both]
        [--pending N[,N...]]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import re
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.common import (
    CHANNEL,
    SECRET,
    Redis,
    WebApiStub,
    arguments,
    bare_bolt_app,
    bench_slack,
    click_body,
    floor_app,
    latency_ms,
    print_table,
    redis_floor,
    request,
    serve,
    signed_headers,
    stores_of,
    verdict,
    web_client,
    write_json,
)
from relay.slack import SlackProvider
from relay.store.base import AskStore
from relay.store.memory import MemoryStore
from relay.testing import FakeMessage, FakeSlack

_NUMBER = re.compile(r"build (\d+) ")


@dataclass(frozen=True)
class Sizes:
    """How much to measure."""

    pending: int  # asks left pending for the whole run
    samples: int  # measured rounds (one click per target each)
    warmup: int  # rounds run first and not counted
    wave: int = 200  # asks started at once while filling up


FULL = Sizes(pending=10_000, samples=2_000, warmup=200)
SMOKE = Sizes(pending=20, samples=30, warmup=5, wave=20)


async def fill(
    slack: FakeSlack, provider: SlackProvider, numbers: range, wave: int
) -> tuple[list[asyncio.Task[None]], dict[int, asyncio.Future[float]]]:
    """Start one agent per number, blocked in ``ask()``; each resolves its future with the
    ``perf_counter()`` at which ``ask()`` returned."""
    loop = asyncio.get_running_loop()
    answered = {n: loop.create_future() for n in numbers}

    async def agent(number: int) -> None:
        await provider.ask(request(number))
        answered[number].set_result(time.perf_counter())

    tasks: list[asyncio.Task[None]] = []
    for start in range(numbers.start, numbers.stop, wave):
        batch = range(start, min(start + wave, numbers.stop))
        tasks += [asyncio.create_task(agent(n)) for n in batch]
        # Waves keep the number of Web API calls in flight bounded.
        expected = batch.stop - numbers.start
        await slack.wait_until(lambda e=expected: len(slack.messages) >= e, timeout=120)
    return tasks, answered


async def close_into_stub(
    provider: SlackProvider, agents: list[asyncio.Task[None]], runners: list[Any]
) -> None:
    """Close ``provider`` and wait for its agents. Closing withdraws every pending ask, a
    ``chat.update`` each: those go to a stub (its runner added to ``runners``), as
    ``FakeSlack`` validates and copies every update (slow for 10,000 of them)."""
    api = WebApiStub()
    stub, port = await serve(api.app)
    runners.append(stub)
    provider.client.base_url = f"http://127.0.0.1:{port}/api/"
    await provider.aclose()
    await asyncio.gather(*agents, return_exceptions=True)


async def measure(sizes: Sizes, store: str) -> dict[str, Any]:
    """Run the interleaved rounds with the relay on ``store``; the figures."""
    redis = Redis(cpu=1) if store == "redis" else None
    try:
        return await _measure(sizes, redis)
    finally:
        if redis is not None:
            redis.stop()


def _store(redis: Redis | None) -> AskStore:
    if redis is None:
        return MemoryStore()
    from relay.store.redis import RedisStore

    return RedisStore(url=redis.url)


async def _measure(sizes: Sizes, redis: Redis | None) -> dict[str, Any]:
    floor = await redis_floor(redis.url, sizes.samples) if redis is not None else None
    async with bench_slack(signing_secret=SECRET, rate_limits=False) as slack:
        provider = SlackProvider(
            client=web_client(slack),
            signing_secret=SECRET,
            channel=CHANNEL,
            timeout=None,
            store=_store(redis),
        )
        bolt = bare_bolt_app(web_client(slack))
        runners = []
        urls: dict[str, str] = {}
        for name, app in (
            ("relay", provider.web_app()),
            ("bolt", bolt.web_app(path="/slack/events")),
            ("floor", floor_app()),
        ):
            runner, port = await serve(app)
            runners.append(runner)
            urls[name] = f"http://127.0.0.1:{port}/slack/events"
        rounds = sizes.warmup + sizes.samples
        started = time.perf_counter()
        # Smaller waves on Redis: redis-py's pool held 100 connections (issue 17's "before").
        wave = sizes.wave if redis is None else min(sizes.wave, 50)
        tasks, answered = await fill(slack, provider, range(rounds + sizes.pending), wave)
        fill_seconds = time.perf_counter() - started
        by_number: dict[int, FakeMessage] = {}
        for message in slack.messages:
            match = _NUMBER.search(message.text)
            if match:
                by_number[int(match.group(1))] = message
        samples: dict[str, list[float]] = {"relay": [], "relay_ack": [], "bolt": [], "floor": []}
        order = ["relay", "bolt", "floor"]
        try:
            async with aiohttp.ClientSession() as http:
                for k in range(rounds):
                    body = click_body(slack, by_number[k])
                    for name in order[k % 3 :] + order[: k % 3]:
                        headers = signed_headers(body)
                        sent = time.perf_counter()
                        async with http.post(urls[name], data=body, headers=headers) as response:
                            await response.read()
                            acked = time.perf_counter()
                            if response.status != 200:
                                raise RuntimeError(f"{name} answered HTTP {response.status}")
                        if name == "relay":
                            returned = await asyncio.wait_for(answered[k], 5.0)
                            await provider.drain()  # its chat.update, off the agent's path
                            if k >= sizes.warmup:
                                samples["relay"].append(returned - sent)
                                samples["relay_ack"].append(acked - sent)
                        elif k >= sizes.warmup:
                            samples[name].append(acked - sent)
            pending = await provider.store.count_pending()
        finally:
            await close_into_stub(provider, tasks, runners)
            for runner in runners:
                await runner.cleanup()
    figures = {name: latency_ms(values) for name, values in samples.items()}
    return {
        "store": "memory" if redis is None else "redis",
        "redis_floor": floor,
        "sizes": sizes.__dict__,
        "pending_during_run": {"at_start": rounds + sizes.pending, "at_end": pending},
        "fill_seconds": fill_seconds,
        "latency": figures,
        "ratios": {
            "relay_over_bolt_p50": figures["relay"]["p50_ms"] / figures["bolt"]["p50_ms"],
            "relay_over_floor_p50": figures["relay"]["p50_ms"] / figures["floor"]["p50_ms"],
            "relay_over_bolt_p99": figures["relay"]["p99_ms"] / figures["bolt"]["p99_ms"],
        },
    }


def report(runs: list[dict[str, Any]], *, smoke: bool) -> dict[str, Any]:
    """Print the tables; the targets and whether each is met."""
    names = {
        "relay": "relay: click -> ask() returns",
        "relay_ack": "relay: click -> HTTP ack",
        "bolt": "bare Bolt: click -> HTTP ack",
        "floor": "floor: click -> HTTP 200",
    }
    rows = []
    for run in runs:
        pending = run["pending_during_run"]
        where = f"{run['store']}, {pending['at_start']:,} -> {pending['at_end']:,} pending"
        for key, label in names.items():
            f = run["latency"][key]
            rows.append([where, label, f["n"], f["p50_ms"], f["p90_ms"], f["p99_ms"], f["max_ms"]])
        if run["redis_floor"] is not None:
            for key, label in (
                ("evalsha", "Redis: one EVALSHA round trip"),
                ("evalsha_and_pubsub", "Redis floor: EVALSHA + pub/sub hop"),
            ):
                f = run["redis_floor"][key]
                row = [where, label, f["n"], f["p50_ms"], f["p90_ms"], f["p99_ms"], f["max_ms"]]
                rows.append(row)
    print_table(
        "Click to answer",
        ["store, asks pending", "path", "n", "p50 ms", "p90 ms", "p99 ms", "max ms"],
        rows,
    )
    targets: dict[str, tuple[float, float]] = {}
    by_store: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_store.setdefault(run["store"], []).append(run)
    for store, store_runs in by_store.items():
        run = store_runs[0]  # the first --pending size
        latency, ratios = run["latency"], run["ratios"]
        if store == "memory":
            targets["memory: relay / bare Bolt at p50 <= 1.0"] = (
                ratios["relay_over_bolt_p50"],
                1.0,
            )
            targets["memory: relay / floor at p50 <= 1.5"] = (ratios["relay_over_floor_p50"], 1.5)
        targets[f"{store}: relay p99 <= 10 ms"] = (latency["relay"]["p99_ms"], 10.0)
        if store == "redis":
            floor = run["redis_floor"]["evalsha_and_pubsub"]["p50_ms"]
            targets["redis: p50 - Redis floor <= 0.5 ms"] = (
                latency["relay"]["p50_ms"] - floor,
                0.5,
            )
            if "memory" in by_store:
                memory = by_store["memory"][0]["latency"]["relay"]["p50_ms"]
                targets["redis / memory at p50 <= 1.5"] = (
                    latency["relay"]["p50_ms"] / memory,
                    1.5,
                )
        if len(store_runs) > 1:
            low, high = store_runs[0], store_runs[-1]
            targets[
                f"{store}: p50 at {high['sizes']['pending']:,} / at"
                f" {low['sizes']['pending']:,} pending <= 1.2"
            ] = (high["latency"]["relay"]["p50_ms"] / low["latency"]["relay"]["p50_ms"], 1.2)
    met = {name: None if smoke else value <= limit for name, (value, limit) in targets.items()}
    print_table(
        "Targets",
        ["target", "measured", "verdict"],
        [[name, value, verdict(met[name])] for name, (value, _) in targets.items()],
    )
    return {
        name: {"measured": v, "limit": lim, "met": met[name]} for name, (v, lim) in targets.items()
    }


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pending",
        default=None,
        help="asks left pending during the run, comma-separated for several runs per store"
        f" (default {FULL.pending:,}; e.g. 1000,100000 for the cost-stays-flat target)",
    )


def main() -> None:
    """Run the benchmark and write ``bench/results/click_latency.json``."""
    args = arguments(__doc__ or "", stores=True, extra=_options)
    base = SMOKE if args.smoke else FULL
    counts = [int(n) for n in args.pending.split(",")] if args.pending else [base.pending]
    runs = [
        asyncio.run(measure(dataclasses.replace(base, pending=n), store))
        for store in stores_of(args)
        for n in counts
    ]
    targets = report(runs, smoke=args.smoke)
    write_json(
        "click_latency" + ("_smoke" if args.smoke else ""),
        {"smoke": args.smoke, "runs": runs, "targets": targets},
    )


if __name__ == "__main__":
    main()
