"""Throughput: sustained clicks per second on one core, relay vs bare Bolt (and the floor).

Each server runs in a process of its own pinned to CPU 0 (``bench.server``); this process,
pinned to CPU 1, holds the fake Slack and the load generator: signed clicks over 32
keep-alive connections, one in flight on each. The relay keeps 10,000 asks pending while
further asks are clicked; bare Bolt (``process_before_response=True``, a listener that only
acks) and the floor get the very same signed bytes. The relay's rate counts until its last
``chat.update`` reached the Web API too, so work deferred past the ack is not free. During
the rounds the Web API is a stub that answers at once (see ``WebApiStub``). Rounds rotate
the order of the three; the verdict takes the median of the rounds' relay / bare Bolt ratios
(a shared VM's speed drifts between rounds, and moves two rounds run back to back alike).

Every server runs with the garbage-collector settings ``relay serve`` starts with
(``relay.tuning.tune_gc``). Further rounds switch the relay and bare Bolt back to CPython's
own settings, to show what that setting is worth: with thousands of asks pending, a full
collection walks every one of them, and CPython's defaults run one every few thousand clicks.

    .venv/bin/python -m bench.throughput [--smoke]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

from bench.common import (
    SECRET,
    WebApiStub,
    arguments,
    ask_id_of,
    click_body,
    pin_to_cpu,
    print_table,
    raw_request,
    send_all,
    serve,
    verdict,
    write_json,
)
from bench.server import Child
from relay.testing import FakeSlack

CONNECTIONS = 32


@dataclass(frozen=True)
class Sizes:
    """How much to measure."""

    pending: int  # asks that stay pending throughout
    per_round: int  # clicks per round and target
    rounds: int
    warmup: int  # clicks per target before the first round
    python_gc_rounds: int  # further rounds of relay and bare Bolt with CPython's GC settings


FULL = Sizes(pending=10_000, per_round=4_000, rounds=5, warmup=500, python_gc_rounds=2)
SMOKE = Sizes(pending=20, per_round=50, rounds=1, warmup=10, python_gc_rounds=1)


async def one_round(
    api: WebApiStub, child: Child, bodies: list[bytes], *, relay: bool
) -> dict[str, Any]:
    """Send ``bodies`` to ``child`` as fast as it takes them; the rate and its CPU use."""
    requests = [raw_request(child.port, body) for body in bodies]  # signed now, sent at once
    expected = api.calls.get("chat.update", 0) + len(bodies)
    before = await child.command("stats")
    began = time.perf_counter()
    statuses = await send_all(child.port, requests, connections=CONNECTIONS)
    acked = time.perf_counter()
    if relay:
        await api.wait_for("chat.update", expected, timeout=120)
    ended = time.perf_counter()
    after = await child.command("stats")
    if statuses != {200: len(bodies)}:
        raise RuntimeError(f"unexpected responses: {statuses}")
    seconds = ended - began
    cpu = after["cpu"] - before["cpu"]
    out = {
        "clicks": len(bodies),
        "seconds": seconds,
        "ack_seconds": acked - began,
        "clicks_per_second": len(bodies) / seconds,
        "server_cpu_share": cpu / seconds,
        "server_cpu_us_per_click": cpu / len(bodies) * 1e6,
        "clicks_per_cpu_second": len(bodies) / cpu if cpu else float("nan"),
        "gc_passes": [a - b for a, b in zip(after["gc_count"], before["gc_count"], strict=True)],
        "gc_seconds": sum(after["gc_seconds"]) - sum(before["gc_seconds"]),
        "gc_threshold": after["gc_threshold"],
    }
    if relay:
        out["answered"] = after["answered"] - before["answered"]
        out["pending_after"] = after["pending"]
    return out


async def measure(sizes: Sizes) -> dict[str, Any]:
    """Fill the relay, then run alternating rounds; the figures."""
    pinned = pin_to_cpu(1)
    batches = sizes.rounds + sizes.python_gc_rounds
    clickable = sizes.warmup + batches * sizes.per_round
    async with FakeSlack(signing_secret=SECRET) as slack:
        relay = await Child.start("relay", slack_url=slack.base_url, cpu=0)
        bolt = await Child.start("bolt", slack_url=slack.base_url, cpu=0)
        floor = await Child.start("floor", slack_url=slack.base_url, cpu=0)
        servers = {"bolt": bolt, "relay": relay, "floor": floor}
        try:
            # The asks to click go first (the first messages posted).
            filled = await relay.command("ask", clickable)
            await relay.command("ask", sizes.pending)
            messages = slack.messages[:clickable]
            if len({ask_id_of(m) for m in messages}) != clickable:
                raise RuntimeError("expected one message per ask")
            bodies = [click_body(slack, m) for m in messages]
            # From here on Web API calls go to a stub that answers at once (see WebApiStub).
            api = WebApiStub()
            stub, stub_port = await serve(api.app)
            for child in servers.values():
                await child.command("slack_url", f"http://127.0.0.1:{stub_port}/api/")
            warm, rest = bodies[: sizes.warmup], bodies[sizes.warmup :]
            batch = iter(
                rest[i * sizes.per_round : (i + 1) * sizes.per_round] for i in range(batches)
            )
            for name, child in servers.items():
                await one_round(api, child, warm, relay=name == "relay")
            rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in servers}
            names = list(servers)
            for r in range(sizes.rounds):
                clicks = next(batch)
                for name in names[r % 3 :] + names[: r % 3]:
                    rounds[name].append(
                        await one_round(api, servers[name], clicks, relay=name == "relay")
                    )
            python_gc: dict[str, list[dict[str, Any]]] = {"bolt": [], "relay": []}
            for name in python_gc:
                await servers[name].command("gc_mode", "python")
            for r in range(sizes.python_gc_rounds):
                clicks = next(batch)
                for name in ("bolt", "relay") if r % 2 == 0 else ("relay", "bolt"):
                    python_gc[name].append(
                        await one_round(api, servers[name], clicks, relay=name == "relay")
                    )
            final = await relay.command("stats")
            await stub.cleanup()
        finally:
            for child in servers.values():
                await child.stop()
    median = {
        name: statistics.median(r["clicks_per_second"] for r in results)
        for name, results in rounds.items()
    }
    per_cpu = {
        name: statistics.median(r["clicks_per_cpu_second"] for r in results)
        for name, results in rounds.items()
    }
    return {
        "sizes": sizes.__dict__,
        "pinned": pinned,
        "server_cpus": final.get("cpus"),
        "connections": CONNECTIONS,
        "fill_seconds_clickable": filled["seconds"],
        "pending_at_end": final["pending"],
        "answered": final["answered"],
        "rounds": rounds,
        "median_clicks_per_second": median,
        "median_clicks_per_cpu_second": per_cpu,
        "relay_over_bolt_of_medians": median["relay"] / median["bolt"],
        # Rounds r of relay and bare Bolt ran back to back: their ratio cancels the drift of a
        # shared machine's speed, which moves both alike.
        "relay_over_bolt_by_round": [
            relay_round["clicks_per_second"] / bolt_round["clicks_per_second"]
            for relay_round, bolt_round in zip(rounds["relay"], rounds["bolt"], strict=True)
        ],
        "python_gc_rounds": python_gc,
        "python_gc_median_clicks_per_second": {
            name: statistics.median(r["clicks_per_second"] for r in results)
            for name, results in python_gc.items()
        },
        "relay_over_bolt_per_cpu": per_cpu["relay"] / per_cpu["bolt"],
    }


def report(result: dict[str, Any], *, smoke: bool) -> dict[str, Any]:
    """Print the tables; the target and whether it is met."""
    labels = {"bolt": "bare Bolt", "relay": "relay", "floor": "floor"}
    headers = ["server", "round", "clicks", "clicks/s", "CPU %", "CPU us/click"]
    headers += ["clicks/CPU-s", "GC passes (0/1/2)", "GC ms"]

    def rows_of(runs: dict[str, list[dict[str, Any]]]) -> list[list[object]]:
        return [
            [
                labels[name],
                i,
                r["clicks"],
                r["clicks_per_second"],
                r["server_cpu_share"] * 100,
                r["server_cpu_us_per_click"],
                r["clicks_per_cpu_second"],
                "/".join(map(str, r["gc_passes"])),
                r["gc_seconds"] * 1e3,
            ]
            for name in labels
            for i, r in enumerate(runs.get(name, []), start=1)
        ]

    pending = f"{result['sizes']['pending']:,} asks pending"
    print_table(
        f"Throughput, one core, {pending}, relay serve's GC settings (threshold"
        f" {result['rounds']['relay'][0]['gc_threshold'][0]:,})",
        headers,
        rows_of(result["rounds"]),
    )
    python = result["python_gc_median_clicks_per_second"]
    print_table(
        f"The same with CPython's GC settings (threshold"
        f" {result['python_gc_rounds']['relay'][0]['gc_threshold'][0]:,}), for comparison:"
        f" relay / bare Bolt {python['relay'] / python['bolt']:.3f}",
        headers,
        rows_of(result["python_gc_rounds"]),
    )
    ratio = result["relay_over_bolt"] = statistics.median(result["relay_over_bolt_by_round"])
    met = None if smoke else ratio >= 0.85
    median = result["median_clicks_per_second"]
    print_table(
        "Target (relay / bare Bolt: the median of the rounds' ratios, each round of the two run"
        " back to back)",
        ["target", "relay/s", "bare Bolt/s", "by round", "of medians", "per CPU-s", "verdict"],
        [
            [
                ">= 85% of bare Bolt",
                median["relay"],
                median["bolt"],
                ratio,
                result["relay_over_bolt_of_medians"],
                result["relay_over_bolt_per_cpu"],
                verdict(met),
            ]
        ],
    )
    return {"relay >= 85% of bare Bolt": {"measured": ratio, "limit": 0.85, "met": met}}


def main() -> None:
    """Run the benchmark and write ``bench/results/throughput.json``."""
    args = arguments(__doc__ or "")
    if (os.cpu_count() or 1) < 2:
        print("note: fewer than 2 CPUs; the load generator shares the server's CPU")
    result = asyncio.run(measure(SMOKE if args.smoke else FULL))
    result["targets"] = report(result, smoke=args.smoke)
    write_json("throughput" + ("_smoke" if args.smoke else ""), {"smoke": args.smoke, **result})


if __name__ == "__main__":
    main()
