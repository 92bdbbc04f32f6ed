"""Collector pauses in steady state: the longest pause per generation while asks are created
and ended as others wait, with ``relay serve``'s collector settings and with CPython's own.

A relay process (``bench.server``, on the in-memory store and on a ``redis-server`` this
benchmark starts: ``--store both``, the default) gets N agents blocked in ``ask()``, plus the
asks the phases click. Each phase sets the collector (``gc_mode``: ``relay`` is
``relay.tuning.tune_gc``, what ``relay serve`` starts with; ``python`` is CPython's defaults
with nothing frozen, what a program embedding ``SlackProvider`` gets), then clicks ``churn``
asks over 8 keep-alive connections while as many new agents ask: the pending count stays at
N. ``gc.callbacks`` in the server times every pass; the table has the count and the longest
pause per generation, and how many objects the collector tracks.

    .venv/bin/python -m bench.gc_pause [--smoke] [--store memory|redis|both] [--pending N]
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
    click_body,
    pin_to_cpu,
    print_table,
    raw_request,
    report_targets,
    send_all,
    stores_of,
    write_json,
)
from bench.server import Child
from relay.testing import FakeSlack

MODES = ("relay", "python")
LIMIT_MS = 50.0


@dataclass(frozen=True)
class Sizes:
    """How much to measure."""

    pending: int  # asks pending throughout
    churn: int  # asks clicked (and as many created) per phase


FULL = Sizes(pending=10_000, churn=6_000)
SMOKE = Sizes(pending=50, churn=50)


async def measure(sizes: Sizes, store: str) -> dict[str, Any]:
    """Both phases on ``store``; the figures."""
    pin_to_cpu(1)
    redis = Redis(cpu=1) if store == "redis" else None
    phases: dict[str, Any] = {}
    try:
        async with FakeSlack(signing_secret=SECRET) as slack:
            child = await Child.start(
                "relay", slack_url=slack.base_url, cpu=0, redis_url=redis.url if redis else None
            )
            try:
                clickable = len(MODES) * sizes.churn
                # relay serve's settings from the start: tune_gc freezes what exists when it
                # runs, which must be the start-up heap, not the pending asks.
                await child.command("gc_mode", "relay")
                await child.command("ask", clickable)
                messages = list(slack.messages[:clickable])
                await child.command("ask", sizes.pending)
                for k, mode in enumerate(MODES):
                    if mode != "relay":
                        await child.command("gc_mode", mode)
                    await child.command("gc_reset")
                    before = await child.command("stats")
                    phase = messages[k * sizes.churn : (k + 1) * sizes.churn]
                    requests = [raw_request(child.port, click_body(slack, m)) for m in phase]
                    clicks = asyncio.ensure_future(send_all(child.port, requests, connections=8))
                    created = await child.command("ask", sizes.churn)
                    statuses = await clicks
                    after = await child.command("stats")
                    tracked = (await child.command("tracked"))["objects"]
                    if statuses != {200: len(phase)}:
                        raise RuntimeError(f"unexpected responses: {statuses}")
                    phases[mode] = {
                        "seconds_to_create": created["seconds"],
                        "gc_threshold": after["gc_threshold"],
                        "passes": after["gc_count"],
                        "longest_ms": [t * 1e3 for t in after["gc_longest"]],
                        "total_ms": [t * 1e3 for t in after["gc_seconds"]],
                        "tracked_objects": tracked,
                        "pending": after["pending"],
                        "answered": after["answered"] - before["answered"],
                    }
            finally:
                await child.stop()
    finally:
        if redis is not None:
            redis.stop()
    return {"store": store, "sizes": sizes.__dict__, "phases": phases}


def report(runs: list[dict[str, Any]], *, smoke: bool) -> dict[str, Any]:
    """Print the tables; the targets and whether each is met."""
    rows = []
    targets: dict[str, tuple[float, float, bool]] = {}
    for run in runs:
        for mode, p in run["phases"].items():
            label = "relay serve's (tune_gc)" if mode == "relay" else "CPython's defaults"
            rows.append(
                [
                    run["store"],
                    label,
                    p["gc_threshold"][0],
                    "/".join(map(str, p["passes"])),
                    *p["longest_ms"],
                    sum(p["total_ms"]),
                    p["tracked_objects"],
                    p["pending"],
                ]
            )
            longest = max(p["longest_ms"])
            targets[f"{run['store']}, {label}: no pause over {LIMIT_MS:g} ms"] = (
                longest,
                LIMIT_MS,
                longest <= LIMIT_MS,
            )
    sizes = runs[0]["sizes"]
    print_table(
        f"Collector pauses, {sizes['pending']:,} asks pending, {sizes['churn']:,} clicked and as"
        " many created per phase",
        [
            "store",
            "collector settings",
            "threshold",
            "passes 0/1/2",
            "longest gen0 ms",
            "gen1 ms",
            "gen2 ms",
            "total ms",
            "tracked objects",
            "pending",
        ],
        rows,
    )
    return report_targets(targets, smoke=smoke, measured="longest ms")


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pending", type=int, default=None, help=f"asks pending (default {FULL.pending:,})"
    )


def main() -> None:
    """Run the benchmark and write ``bench/results/gc_pause.json``."""
    args = arguments(__doc__ or "", stores=True, extra=_options)
    sizes = SMOKE if args.smoke else FULL
    if args.pending:
        sizes = dataclasses.replace(sizes, pending=args.pending)
    runs = [asyncio.run(measure(sizes, store)) for store in stores_of(args)]
    targets = report(runs, smoke=args.smoke)
    write_json(
        "gc_pause" + ("_smoke" if args.smoke else ""),
        {"smoke": args.smoke, "runs": runs, "targets": targets},
    )


if __name__ == "__main__":
    main()
