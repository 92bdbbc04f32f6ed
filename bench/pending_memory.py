"""Pending asks at scale: memory per pending ask, and the CPU they cost while nobody clicks.

A relay process (``bench.server``, a ``SlackProvider`` with the default 15-minute timeout and
the in-memory store) gets 100,000 agents blocked in ``ask()``, each question posted to the
fake Slack, which lives in this process so that its memory stays out of the figures. Then:

- RSS growth over the 100,000 asks, after a full collection, divided by N;
- tracemalloc: bytes still allocated per ask over 10,000 more asks, by file, minus the bytes
  of the request object the agent built (measured alone), which is the ask's own payload;
- CPU used while idle for 10 s, and the timers the event loop holds (a timer per ask would
  show as ~N timers).

    .venv/bin/python -m bench.pending_memory [--smoke]
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from bench.common import SECRET, arguments, pin_to_cpu, print_table, verdict, write_json
from bench.server import Child
from relay.testing import FakeSlack

KB = 1024


@dataclass(frozen=True)
class Sizes:
    """How much to measure."""

    pending: int  # asks for the RSS figure
    traced: int  # further asks posted with tracemalloc on
    idle_seconds: float


FULL = Sizes(pending=100_000, traced=10_000, idle_seconds=10.0)
SMOKE = Sizes(pending=200, traced=100, idle_seconds=0.5)


async def measure(sizes: Sizes) -> dict[str, Any]:
    """Fill a relay with pending asks and measure it."""
    pin_to_cpu(1)
    async with FakeSlack(signing_secret=SECRET) as slack:
        relay = await Child.start("relay", slack_url=slack.base_url, cpu=0)
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


def report(result: dict[str, Any], *, smoke: bool) -> dict[str, Any]:
    """Print the tables; the targets and whether each is met."""
    n = result["sizes"]["pending"]
    print_table(
        f"{n:,} asks pending in one process (posted in {result['fill_seconds']:.1f} s)",
        ["figure", "value"],
        [
            ["request object alone (KB)", result["request_bytes"] / KB],
            ["RSS per pending ask (KB)", result["rss_per_ask_bytes"] / KB],
            ["  beyond the request (KB)", result["rss_per_ask_beyond_request_bytes"] / KB],
            ["tracemalloc per pending ask (KB)", result["traced_per_ask_bytes"] / KB],
            ["  beyond the request (KB)", result["traced_per_ask_beyond_request_bytes"] / KB],
            [
                f"CPU while idle {result['sizes']['idle_seconds']:g} s (ms)",
                result["idle_cpu_seconds"] * 1e3,
            ],
            ["timers in the event loop", result["loop_timers"]],
            ["tasks in the event loop", result["loop_tasks"]],
        ],
    )
    print_table(
        "tracemalloc per pending ask, by file (bytes)",
        ["file", "bytes"],
        [[name, size] for name, size in result["traced_by_file_per_ask"].items()],
    )
    beyond = max(
        result["rss_per_ask_beyond_request_bytes"], result["traced_per_ask_beyond_request_bytes"]
    )
    # "No work per ask while idle": a timer per ask would show as ~N timers (the few there
    # are belong to pooled HTTP connections), and idle CPU stays under 1% of a core.
    idle_ok = result["loop_timers"] < n / 100 and result["idle_cpu_share"] < 0.01
    targets = {
        "<= 4 KB per pending ask beyond the request": (beyond / KB, 4.0, beyond <= 4 * KB),
        "no per-ask timers, idle CPU < 1% of a core": (
            result["idle_cpu_share"] * 100,
            1.0,
            idle_ok,
        ),
    }
    print_table(
        "Targets",
        ["target", "measured", "verdict"],
        [[name, v, verdict(None if smoke else ok)] for name, (v, _, ok) in targets.items()],
    )
    return {
        name: {"measured": v, "limit": lim, "met": None if smoke else ok}
        for name, (v, lim, ok) in targets.items()
    }


def main() -> None:
    """Run the benchmark and write ``bench/results/pending_memory.json``."""
    args = arguments(__doc__ or "")
    result = asyncio.run(measure(SMOKE if args.smoke else FULL))
    result["targets"] = report(result, smoke=args.smoke)
    name = "pending_memory" + ("_smoke" if args.smoke else "")
    write_json(name, {"smoke": args.smoke, **result})


if __name__ == "__main__":
    main()
