"""Collector pauses in steady state, the way the product runs: ``relay serve`` with its asks
over HTTP, a program embedding ``SlackProvider`` with its agents in ``ask()``, and a bare
program with no relay at all, side by side in one run.

Each program runs in a process of its own pinned to CPU 0 (this one, the fake Slack and
Redis on CPU 1), on the in-memory store and on a ``redis-server`` this benchmark starts
(``--store both``, the default; a fresh one per program):

1. **relay serve** (``bench.relay_serve``): ``relay serve`` itself (``serve(settings)``: the
   real app, a ``SlackProvider``, its collector settings: ``tune_gc``, then
   ``freeze_startup`` once it listens). N asks are created with ``POST /v1/asks`` (one API
   token, its rate limit raised; asks spread over 32 channels, as the relay posts one at a
   time per channel), nothing waits in the process for them;
2. **embedding program** (``bench.server relay``): N agents blocked in ``provider.ask()``
   inside the process, their asks routed to the same 32 channels;
3. **bare program** (``bench.server bare``, ``bench.bare_program``, run once): N asyncio
   tasks each holding a request and awaiting a future, answered by a signed click: the
   collector's cost of a program's own N waiting tasks, so that the relay's share shows.

Then two phases, the pending count staying at N: ``relay`` (``relay serve``'s settings:
``tune_gc``; the embedding and bare programs call it before their asks), then ``python``
(CPython's defaults, nothing frozen: what an embedding program gets). In each, ``churn`` of
the oldest pending asks are clicked (signed Slack clicks over 8 keep-alive connections) while
as many new ones are created (``relay serve``: ``POST /v1/asks`` on the same connections,
one create after each click; the others: agents started in the process). ``gc.callbacks``
in the program times every pass: the table has the passes and the longest pause per
generation, then a full pass forced once the phase is over (the median of 3: a window may
hold no pass at ``relay serve``'s thresholds, and in steady state a full one comes round),
the objects the collector tracks (``gc.get_objects()``) and, from the count before the fill
(frozen ones included, both after a full collection), per pending ask; "relay's per ask" is
all of it for ``relay serve``, and the embedding program's less the bare program's.

Targets: no pause over 50 ms for ``relay serve`` (both settings, both stores; and the forced
full pass); for the embedding program, its longest pause (and its full pass) at most 50 ms
over the bare program's with the same settings.

    .venv/bin/python -m bench.gc_pause [--smoke] [--store memory|redis|both] [--pending N]
        [--churn N]

``--churn`` defaults to 6,000, at most ``--pending``. Fills print progress on stderr every
10,000 asks.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.api_path import HEADERS, body
from bench.bare_program import bare_click_body
from bench.common import (
    CHANNELS,
    SECRET,
    Redis,
    arguments,
    bench_slack,
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

MODES = ("relay", "python")
LABELS = {"relay": "relay serve's (tune_gc)", "python": "CPython's defaults"}
SERVE, EMBEDDING, BARE = "relay serve", "embedding program", "bare program"
LIMIT_MS = 50.0
PROGRESS = 10_000  # asks per fill step (and progress line)
_PENDING = re.compile(rb"^relay_asks_pending (\S+)$", re.MULTILINE)


@dataclass(frozen=True)
class Sizes:
    """How much to measure."""

    pending: int  # asks pending throughout
    churn: int  # asks clicked (and as many created) per phase
    connections: int  # keep-alive connections for the churn
    fill_connections: int  # POST /v1/asks in flight at once while filling relay serve


FULL = Sizes(pending=10_000, churn=6_000, connections=8, fill_connections=64)
SMOKE = Sizes(pending=40, churn=20, connections=4, fill_connections=8)


# ---- talking to the programs ------------------------------------------------------------


def create_request(port: int, number: int) -> bytes:
    """A complete ``POST /v1/asks`` (keep-alive) for the load generator."""
    data = json.dumps(body(number)).encode()
    head = [
        "POST /v1/asks HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Content-Type: application/json",
        f"Authorization: {HEADERS['Authorization']}",
        f"Content-Length: {len(data)}",
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


@dataclass(frozen=True)
class Tracked:
    """What the collector holds after a full collection, and how long that pass took."""

    objects: int  # tracked, in its generations
    frozen: int  # tracked, out of its reach
    full_pass_seconds: float

    @property
    def total(self) -> int:
        """Every tracked object, frozen or not (what settings do not change)."""
        return self.objects + self.frozen


async def tracked(child: Child, *, passes: int = 3) -> Tracked:
    """Full collections, timed (the median of ``passes``: one alone is at the mercy of a
    shared CPU); then the objects the collector tracks and those frozen."""
    seconds = [(await child.command("gc"))["seconds"] for _ in range(passes)]
    counts = await child.command("tracked")
    return Tracked(counts["objects"], counts["frozen"], statistics.median(seconds))


async def metrics_pending(port: int) -> int:
    """``relay_asks_pending`` on ``relay serve``'s ``/metrics``."""
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/metrics", headers=HEADERS) as r,
    ):
        match = _PENDING.search(await r.read())
        return int(float(match.group(1))) if match else -1


def progress(program: str, done: int, total: int, began: float) -> None:
    """One line on stderr while a long fill runs."""
    seconds = time.perf_counter() - began
    print(f"  {program}: {done:,} / {total:,} asks pending, {seconds:.1f} s", file=sys.stderr)


async def fill(
    program: str, total: int, step: Callable[[range], Awaitable[None]]
) -> dict[str, float]:
    """Create ``total`` asks in steps of ``PROGRESS``; the seconds it took."""
    began = time.perf_counter()
    for start in range(0, total, PROGRESS):
        await step(range(start, min(total, start + PROGRESS)))
        if total > PROGRESS:
            progress(program, min(total, start + PROGRESS), total, began)
    seconds = time.perf_counter() - began
    return {"seconds": seconds, "seconds_per_10k": seconds / max(1, total) * 10_000}


# ---- one phase --------------------------------------------------------------------------


async def phase(
    child: Child,
    *,
    idle: Tracked,
    requests: list[bytes],
    expected: dict[int, int],
    create: Callable[[], Awaitable[object]] | None,
    pending: Callable[[], Awaitable[int]],
    connections: int,
) -> dict[str, Any]:
    """Send ``requests`` (and run ``create`` meanwhile) with the collector timed; the figures."""
    await child.command("gc_reset")
    began = time.perf_counter()
    sent = send_all(child.port, requests, connections=connections)
    if create is None:
        statuses = await sent
    else:
        statuses, _ = await asyncio.gather(sent, create())
    seconds = time.perf_counter() - began
    after = await child.command("stats")
    if statuses != expected:
        raise RuntimeError(f"unexpected responses: {statuses} (expected {expected})")
    count = await pending()
    held = await tracked(child)
    return {
        "seconds": seconds,
        "gc_threshold": after["gc_threshold"],
        "passes": after["gc_count"],
        "longest_ms": [t * 1e3 for t in after["gc_longest"]],
        "total_ms": [t * 1e3 for t in after["gc_seconds"]],
        "tracked_objects": held.objects,
        "frozen_objects": held.frozen,
        "tracked_per_ask": (held.total - idle.total) / max(1, count),
        # The window may hold no full pass; in steady state one comes round (tune_gc's
        # thresholds: every 100 young passes, once a quarter of the heap is new).
        "full_pass_ms": held.full_pass_seconds * 1e3,
        "pending": count,
    }


# ---- the programs -----------------------------------------------------------------------


async def relay_serve(sizes: Sizes, redis_url: str | None) -> dict[str, Any]:
    """``relay serve``: asks created over the API, nothing waiting in the process."""
    async with bench_slack(signing_secret=SECRET, rate_limits=False) as slack:
        module = ["bench.relay_serve", "--slack-url", slack.base_url, "--cpu", "0"]
        child = await Child.spawn(module + (["--redis-url", redis_url] if redis_url else []))
        try:
            idle = await tracked(child)

            async def step(numbers: range) -> None:
                requests = [create_request(child.port, n) for n in numbers]
                statuses = await send_all(child.port, requests, connections=sizes.fill_connections)
                if statuses != {201: len(numbers)}:
                    raise RuntimeError(f"unexpected responses while filling: {statuses}")

            filled = await fill(f"{SERVE}, {_store(redis_url)}", sizes.pending, step)
            phases: dict[str, Any] = {}
            number, clicked = sizes.pending, 0
            for mode in MODES:
                if mode != "relay":  # relay's: what serve() set up as it started
                    await child.command("gc_mode", mode)
                requests = []
                for k, message in enumerate(slack.messages[clicked : clicked + sizes.churn]):
                    requests += [
                        raw_request(child.port, click_body(slack, message)),
                        create_request(child.port, number + k),
                    ]
                clicked += sizes.churn
                number += sizes.churn
                phases[mode] = await phase(
                    child,
                    idle=idle,
                    requests=requests,
                    expected={200: sizes.churn, 201: sizes.churn},
                    create=None,
                    pending=lambda: metrics_pending(child.port),
                    connections=sizes.connections,
                )
        finally:
            await child.stop()
    return {"program": SERVE, "idle": dataclasses.asdict(idle), "fill": filled, "phases": phases}


async def in_process(sizes: Sizes, kind: str, redis_url: str | None) -> dict[str, Any]:
    """The embedding program (``kind`` ``relay``) or the bare one (``bare``): agents waiting
    in the process, started by it."""
    program = EMBEDDING if kind == "relay" else BARE
    async with bench_slack(signing_secret=SECRET, rate_limits=False) as slack:
        child = await Child.start(
            kind, slack_url=slack.base_url, cpu=0, redis_url=redis_url, channels=len(CHANNELS)
        )
        try:
            # relay serve's settings from the start: tune_gc freezes what exists when it
            # runs, which must be the start-up heap, not the pending asks.
            await child.command("gc_mode", "relay")
            idle = await tracked(child)

            async def step(numbers: range) -> None:
                await child.command("ask", len(numbers))

            label = program if kind == "bare" else f"{program}, {_store(redis_url)}"
            filled = await fill(label, sizes.pending, step)
            phases: dict[str, Any] = {}
            clicked = 0
            for mode in MODES:
                if mode != "relay":
                    await child.command("gc_mode", mode)
                if kind == "relay":
                    bodies = [
                        click_body(slack, m)
                        for m in slack.messages[clicked : clicked + sizes.churn]
                    ]
                else:
                    bodies = [bare_click_body(n) for n in range(clicked, clicked + sizes.churn)]
                clicked += sizes.churn

                async def pending() -> int:
                    return int((await child.command("stats"))["pending"])

                phases[mode] = await phase(
                    child,
                    idle=idle,
                    requests=[raw_request(child.port, b) for b in bodies],
                    expected={200: sizes.churn},
                    create=lambda: child.command("ask", sizes.churn),
                    pending=pending,
                    connections=sizes.connections,
                )
        finally:
            await child.stop()
    return {"program": program, "idle": dataclasses.asdict(idle), "fill": filled, "phases": phases}


def _store(redis_url: str | None) -> str:
    return "memory" if redis_url is None else "redis"


async def measure(sizes: Sizes, stores: list[str]) -> list[dict[str, Any]]:
    """The bare program once, then relay serve and the embedding program on each store."""
    if sizes.churn > sizes.pending:
        raise SystemExit("--pending must be at least the churn: the clicks end pending asks")
    pin_to_cpu(1)
    runs = [{"store": None, **await in_process(sizes, "bare", None)}]
    for store in stores:
        for program in (SERVE, EMBEDDING):
            redis = Redis(cpu=1) if store == "redis" else None
            url = redis.url if redis else None
            try:
                if program == SERVE:
                    run = await relay_serve(sizes, url)
                else:
                    run = await in_process(sizes, "relay", url)
            finally:
                if redis is not None:
                    redis.stop()
            runs.append({"store": store, **run})
    return runs


# ---- the report -------------------------------------------------------------------------


def report(runs: list[dict[str, Any]], sizes: Sizes, *, smoke: bool) -> dict[str, Any]:
    """Print the tables; the targets and whether each is met."""
    bare = next(r for r in runs if r["program"] == BARE)["phases"]
    rows = []
    targets: dict[str, tuple[float, float, bool]] = {}
    for run in runs:
        program, store = run["program"], run["store"] or "-"
        for mode, p in run["phases"].items():
            longest = max(p["longest_ms"])
            relays_share: float | str = "-"
            if program == SERVE:
                relays_share = p["tracked_per_ask"]
                name = f"{program}, {store}, {LABELS[mode]}"
                targets[f"{name}: no pause over {LIMIT_MS:g} ms"] = (
                    longest,
                    LIMIT_MS,
                    longest <= LIMIT_MS,
                )
                full = p["full_pass_ms"]
                targets[f"{name}: ... a full pass (forced after the phase)"] = (
                    full,
                    LIMIT_MS,
                    full <= LIMIT_MS,
                )
            elif program == EMBEDDING:
                relays_share = p["tracked_per_ask"] - bare[mode]["tracked_per_ask"]
                name = f"{program}, {store}, {LABELS[mode]}"
                over = longest - max(bare[mode]["longest_ms"])
                targets[f"{name}: longest pause over the bare program's <= {LIMIT_MS:g} ms"] = (
                    over,
                    LIMIT_MS,
                    over <= LIMIT_MS,
                )
                over = p["full_pass_ms"] - bare[mode]["full_pass_ms"]
                targets[f"{name}: ... a full pass (forced) over the bare program's"] = (
                    over,
                    LIMIT_MS,
                    over <= LIMIT_MS,
                )
            rows.append(
                [
                    program,
                    store,
                    LABELS[mode],
                    p["gc_threshold"][0],
                    sizes.churn / p["seconds"],
                    "/".join(map(str, p["passes"])),
                    *p["longest_ms"],
                    sum(p["total_ms"]),
                    p["full_pass_ms"],
                    p["tracked_objects"],
                    p["tracked_per_ask"],
                    relays_share,
                    p["pending"],
                ]
            )
    print_table(
        f"Collector pauses, {sizes.pending:,} asks pending, {sizes.churn:,} clicked and as"
        " many created per phase",
        [
            "program",
            "store",
            "collector settings",
            "threshold",
            "clicks/s",
            "passes 0/1/2",
            "longest gen0 ms",
            "gen1 ms",
            "gen2 ms",
            "total ms",
            "full pass ms",
            "tracked objects",
            "per ask",
            "relay's per ask",
            "pending",
        ],
        rows,
    )
    print_table(
        f"Filling {sizes.pending:,} asks",
        ["program", "store", "seconds", "seconds per 10,000"],
        [
            [r["program"], r["store"] or "-", r["fill"]["seconds"], r["fill"]["seconds_per_10k"]]
            for r in runs
        ],
    )
    return report_targets(targets, smoke=smoke, measured="ms")


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pending", type=int, default=None, help=f"asks pending (default {FULL.pending:,})"
    )
    parser.add_argument(
        "--churn",
        type=int,
        default=None,
        help=f"asks clicked and created per phase (default {FULL.churn:,}, at most --pending)",
    )


def main() -> None:
    """Run the benchmark and write ``bench/results/gc_pause.json``."""
    args = arguments(__doc__ or "", stores=True, extra=_options)
    sizes = SMOKE if args.smoke else FULL
    if args.pending:
        sizes = dataclasses.replace(sizes, pending=args.pending)
    churn = args.churn or min(sizes.churn, sizes.pending)
    sizes = dataclasses.replace(sizes, churn=churn)
    runs = asyncio.run(measure(sizes, stores_of(args)))
    targets = report(runs, sizes, smoke=args.smoke)
    write_json(
        "gc_pause" + ("_smoke" if args.smoke else ""),
        {"smoke": args.smoke, "sizes": sizes.__dict__, "runs": runs, "targets": targets},
    )


if __name__ == "__main__":
    main()
