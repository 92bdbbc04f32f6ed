"""Pending asks at scale: memory per pending ask, and the CPU they cost while nobody clicks.

A relay process (``bench.server``, a ``SlackProvider`` with the default 15-minute timeout and
the in-memory store) gets 100,000 agents blocked in ``ask()``, each question posted to the
fake Slack, which lives in this process so that its memory stays out of the figures. Then:

- RSS growth over the 100,000 asks, after a full collection, divided by N;
- tracemalloc: bytes still allocated per ask over 10,000 more asks, by file, minus the bytes
  of the request object the agent built (measured alone), which is the ask's own payload;
- CPU used while idle for 10 s, and the timers the event loop holds (a timer per ask would
  show as ~N timers).

``--store both`` (the default) measures a relay on the in-memory store and then one on a
``RedisStore`` (a ``redis-server`` this benchmark starts; its memory is not the relay's),
side by side: on Redis the record lives in Redis, and the replica should hold only what a
local waiter needs. ``--pending N`` sets the number of asks (default 100,000).

    .venv/bin/python -m bench.pending_memory [--smoke] [--store memory|redis|both]
        [--pending N]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from dataclasses import dataclass
from typing import Any

from bench.common import (
    SECRET,
    Redis,
    arguments,
    bench_slack,
    pin_to_cpu,
    print_table,
    report_targets,
    stores_of,
    write_json,
)
from bench.server import Child

KB = 1024


@dataclass(frozen=True)
class Sizes:
    """How much to measure."""

    pending: int  # asks for the RSS figure
    traced: int  # further asks posted with tracemalloc on
    idle_seconds: float


FULL = Sizes(pending=100_000, traced=10_000, idle_seconds=10.0)
SMOKE = Sizes(pending=200, traced=100, idle_seconds=0.5)


async def measure(sizes: Sizes, store: str) -> dict[str, Any]:
    """Fill a relay on ``store`` with pending asks and measure it."""
    redis = Redis(cpu=1) if store == "redis" else None
    try:
        result = await _measure(sizes, redis)
        if redis is not None:
            result["redis_cpu_seconds"] = redis.cpu_seconds()
        return {"store": store, **result}
    finally:
        if redis is not None:
            redis.stop()


async def _measure(sizes: Sizes, redis: Redis | None) -> dict[str, Any]:
    pin_to_cpu(1)
    async with bench_slack(signing_secret=SECRET, rate_limits=False) as slack:
        relay = await Child.start(
            "relay", slack_url=slack.base_url, cpu=0, redis_url=redis.url if redis else None
        )
        try:
            request_bytes = (await relay.command("trace_requests", sizes.traced))["bytes"]
            # One warm-up ask so that lazily built state (Bolt, the HTTP session) is counted
            # as the process's, not as the asks'.
            await relay.command("ask", 1)
            baseline = await relay.command("gc")
            filled = await relay.command("ask", sizes.pending)
            grown = await relay.command("gc")
            stats = await relay.command("stats")
            idle = await relay.command("idle", sizes.idle_seconds)
            traced = await relay.command("trace_ask", sizes.traced)
            final = await relay.command("stats")
        finally:
            await relay.stop()
    per_request = request_bytes / sizes.traced
    rss_per_ask = (grown["rss"] - baseline["rss"]) / sizes.pending
    traced_per_ask = traced["bytes"] / sizes.traced
    return {
        "sizes": sizes.__dict__,
        "fill_seconds": filled["seconds"],
        "asks_per_second_posted": sizes.pending / filled["seconds"],
        "pending": final["pending"],
        "failed": final["failed"],
        "request_bytes": per_request,
        "rss_baseline_bytes": baseline["rss"],
        "rss_after_bytes": grown["rss"],
        "rss_per_ask_bytes": rss_per_ask,
        "rss_per_ask_beyond_request_bytes": rss_per_ask - per_request,
        "traced_per_ask_bytes": traced_per_ask,
        "traced_per_ask_beyond_request_bytes": traced_per_ask - per_request,
        "traced_by_file_per_ask": {
            name: size / sizes.traced for name, size in traced["by_file"].items()
        },
        "idle_cpu_seconds": idle["cpu"],
        "idle_cpu_share": idle["cpu"] / sizes.idle_seconds,
        "loop_timers": stats["timers"],
        "loop_tasks": stats["tasks"],
    }


def report(runs: list[dict[str, Any]], *, smoke: bool) -> dict[str, Any]:
    """Print the tables; the targets and whether each is met."""
    n = runs[0]["sizes"]["pending"]
    rows: list[list[object]] = [
        ["posted in (s)", *(r["fill_seconds"] for r in runs)],
        ["request object alone (KB)", *(r["request_bytes"] / KB for r in runs)],
        ["RSS per pending ask (KB)", *(r["rss_per_ask_bytes"] / KB for r in runs)],
        ["  beyond the request (KB)", *(r["rss_per_ask_beyond_request_bytes"] / KB for r in runs)],
        ["tracemalloc per pending ask (KB)", *(r["traced_per_ask_bytes"] / KB for r in runs)],
        [
            "  beyond the request (KB)",
            *(r["traced_per_ask_beyond_request_bytes"] / KB for r in runs),
        ],
        [
            f"CPU while idle {runs[0]['sizes']['idle_seconds']:g} s (ms)",
            *(r["idle_cpu_seconds"] * 1e3 for r in runs),
        ],
        ["timers in the event loop", *(r["loop_timers"] for r in runs)],
        ["tasks in the event loop", *(r["loop_tasks"] for r in runs)],
    ]
    print_table(
        f"{n:,} asks pending in one process",
        ["figure", *(f"{r['store']} store" for r in runs)],
        rows,
    )
    for run in runs:
        print_table(
            f"tracemalloc per pending ask, by file, {run['store']} store (bytes)",
            ["file", "bytes"],
            [[name, size] for name, size in run["traced_by_file_per_ask"].items()],
        )
    targets: dict[str, tuple[float, float, bool]] = {}
    for result in runs:
        store = result["store"]
        beyond = max(
            result["rss_per_ask_beyond_request_bytes"],
            result["traced_per_ask_beyond_request_bytes"],
        )
        # "No work per ask while idle": a timer per ask would show as ~N timers (the few
        # there are belong to pooled HTTP connections), and idle CPU stays under 1% of a core.
        idle_ok = result["loop_timers"] < n / 100 and result["idle_cpu_share"] < 0.01
        targets[f"{store}: <= 4 KB per pending ask beyond the request"] = (
            beyond / KB,
            4.0,
            beyond <= 4 * KB,
        )
        targets[f"{store}: no per-ask timers, idle CPU < 1% of a core"] = (
            result["idle_cpu_share"] * 100,
            1.0,
            idle_ok,
        )
    if len(runs) == 2:
        memory, redis = (r["rss_per_ask_bytes"] for r in runs)
        targets["RSS per pending ask, Redis <= memory (KB, Redis's)"] = (
            redis / KB,
            memory / KB,
            redis <= memory,
        )
    return report_targets(targets, smoke=smoke)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pending", type=int, default=None, help=f"asks pending (default {FULL.pending:,})"
    )
    parser.add_argument(
        "--traced",
        type=int,
        default=None,
        help=f"further asks posted with tracemalloc on (default {FULL.traced:,})",
    )


def main() -> None:
    """Run the benchmark and write ``bench/results/pending_memory.json``."""
    args = arguments(__doc__ or "", stores=True, extra=_options)
    sizes = SMOKE if args.smoke else FULL
    if args.pending:
        sizes = dataclasses.replace(sizes, pending=args.pending)
    if args.traced:
        sizes = dataclasses.replace(sizes, traced=args.traced)
    runs = [asyncio.run(measure(sizes, store)) for store in stores_of(args)]
    targets = report(runs, smoke=args.smoke)
    name = "pending_memory" + ("_smoke" if args.smoke else "")
    write_json(name, {"smoke": args.smoke, "runs": runs, "targets": targets})


if __name__ == "__main__":
    main()
