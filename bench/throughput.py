"""Throughput: sustained clicks per second on one core, relay vs bare Bolt (and the floor).

Each server runs in a process of its own pinned to CPU 0 (``bench.server``); this process,
pinned to CPU 1, holds the fake Slack and the load generator: signed clicks over 32
keep-alive connections, one in flight on each. The relay keeps 10,000 asks pending while
further asks are clicked; bare Bolt (``process_before_response=True``, a listener that only
acks) and the floor get the very same signed bytes. The relay's rate counts until its last
``chat.update`` reached the Web API too, so work deferred past the ack is not free. During
the rounds the Web API is a stub that answers at once (see ``WebApiStub``). Rounds rotate
the order of the servers; the verdict takes the median of the rounds' relay / bare Bolt ratios
(a shared VM's speed drifts between rounds, and moves two rounds run back to back alike).
For reference, with no target, a fourth server is bare Bolt whose listener also updates the
clicked message through slack-sdk (``bench.common.bolt_bot_app``): what a hand-written
approval bot spends per click, for the same work the relay does besides waking its agent.

Every server runs with the garbage-collector settings ``relay serve`` starts with
(``relay.config.tuning.tune_gc``). Further rounds switch the relay and bare Bolt back to CPython's
own settings, to show what that setting is worth: with thousands of asks pending, a full
collection walks every one of them, and CPython's defaults run one every few thousand clicks.

``--store both`` (the default) adds a second relay whose store is a ``redis-server`` this
benchmark starts (pinned to CPU 1, with the load generator): the same rounds, side by side,
and Redis's own CPU per click. ``--store memory`` or ``redis`` runs one relay only.

``--compare DIR`` runs a second relay per store from another source tree (a checkout of an
earlier commit), so that before and after are measured in the same rounds; ``--pending``,
``--per-round`` and ``--rounds`` change the sizes. ``--count-calls`` ends with one more
round per server with every Python function call counted (``count_calls`` of
``bench.server``; the tree given to ``--compare`` needs that command too): Python calls and
loop callbacks per click, exact where timings on a shared machine are not, and each
server's profile in ``bench/results/calls_<server>.pstats``.

    .venv/bin/python -m bench.throughput [--smoke] [--store memory|redis|both]
        [--compare DIR] [--pending N] [--per-round N] [--rounds N] [--count-calls]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any

from bench.common import (
    RESULTS,
    SECRET,
    Redis,
    WebApiStub,
    arguments,
    ask_id_of,
    bench_slack,
    click_body,
    pin_to_cpu,
    print_table,
    raw_request,
    send_all,
    serve,
    stores_of,
    verdict,
    write_json,
)
from bench.server import Child

CONNECTIONS = 32


@dataclass(frozen=True)
class Sizes:
    """How much to measure."""

    pending: int  # asks that stay pending throughout
    per_round: int  # clicks per round and target
    rounds: int
    warmup: int  # clicks per target before the first round
    python_gc_rounds: int  # further rounds of relay and bare Bolt with CPython's GC settings
    counted_rounds: int = 0  # a last round per server with its Python calls counted


FULL = Sizes(pending=10_000, per_round=3_000, rounds=5, warmup=500, python_gc_rounds=2)
SMOKE = Sizes(pending=20, per_round=50, rounds=1, warmup=10, python_gc_rounds=1)


RELAYS = {"memory": "relay", "redis": "relay_redis"}
BEFORE = "_before"  # suffix of the relays run from --compare's tree
BOT = "bolt_bot"  # bare Bolt that also updates the clicked message (a reference, no target)


async def one_round(
    api: WebApiStub,
    child: Child,
    bodies: list[bytes],
    *,
    relay: bool,
    updates: bool = False,
    redis: Redis | None = None,
    count_to: str | None = None,
) -> dict[str, Any]:
    """Send ``bodies`` to ``child`` as fast as it takes them; the rate and its CPU use (and
    Redis's, when ``redis`` is the child's store); a relay's round, or one with ``updates``,
    lasts until each click's ``chat.update`` reached the stub. With ``count_to`` (a file for the
    profile), the Python calls from the first click sent to the last update received too."""
    requests = [raw_request(child.port, body) for body in bodies]  # signed now, sent at once
    expected = api.calls.get("chat.update", 0) + len(bodies)
    await child.command("gc_reset")  # the longest pause below is this round's
    redis_before = redis.cpu_seconds() if redis is not None else 0.0
    before = await child.command("stats")
    if count_to is not None:
        await child.command("count_calls", "on")
    began = time.perf_counter()
    statuses = await send_all(child.port, requests, connections=CONNECTIONS)
    acked = time.perf_counter()
    if relay or updates:
        await api.wait_for("chat.update", expected, timeout=120)
    ended = time.perf_counter()
    counted = await child.command("count_calls", "off", count_to) if count_to else None
    after = await child.command("stats")
    if statuses != {200: len(bodies)}:
        raise RuntimeError(f"unexpected responses: {statuses}")
    seconds = ended - began
    cpu = after["cpu"] - before.get("cpu_end", before["cpu"])  # (an older tree: no cpu_end)
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
        "gc_longest_ms": [t * 1e3 for t in after["gc_longest"]],
    }
    if counted is not None:
        out["calls_per_click"] = counted["calls"] / len(bodies)
        out["python_calls_per_click"] = counted["python_calls"] / len(bodies)
        out["callbacks_per_click"] = counted["callbacks"] / len(bodies)
        out["most_called_per_click"] = {
            name: calls / len(bodies) for name, calls in counted["most_called"].items()
        }
    if redis is not None:
        out["redis_cpu_us_per_click"] = (redis.cpu_seconds() - redis_before) / len(bodies) * 1e6
    if relay:
        out["answered"] = after["answered"] - before["answered"]
        out["pending_after"] = after["pending"]
    return out


async def measure(sizes: Sizes, stores: list[str], compare: str | None = None) -> dict[str, Any]:
    """Fill the relays, then run alternating rounds; the figures."""
    pinned = pin_to_cpu(1)
    batches = sizes.rounds + sizes.python_gc_rounds + sizes.counted_rounds
    clickable = sizes.warmup + batches * sizes.per_round
    redis = Redis(cpu=1) if "redis" in stores else None
    servers: dict[str, Child] = {}
    try:
        async with bench_slack(signing_secret=SECRET, rate_limits=False) as slack:
            try:
                servers["bolt"] = await Child.start("bolt", slack_url=slack.base_url, cpu=0)
                servers[BOT] = await Child.start(BOT, slack_url=slack.base_url, cpu=0)
                relays = [RELAYS[s] for s in stores]
                if compare is not None:
                    relays += [RELAYS[s] + BEFORE for s in stores]
                for name in relays:
                    servers[name] = await Child.start(
                        "relay",
                        slack_url=slack.base_url,
                        cpu=0,
                        redis_url=redis.url if "redis" in name and redis else None,
                        cwd=compare if name.endswith(BEFORE) else None,
                    )
                servers["floor"] = await Child.start("floor", slack_url=slack.base_url, cpu=0)
                bodies: dict[str, list[bytes]] = {}
                filled: dict[str, float] = {}
                for name in relays:
                    # The asks to click go first (the first messages this relay posted).
                    offset = len(slack.messages)
                    filled[name] = (await servers[name].command("ask", clickable))["seconds"]
                    await servers[name].command("ask", sizes.pending)
                    messages = slack.messages[offset : offset + clickable]
                    if len({ask_id_of(m) for m in messages}) != clickable:
                        raise RuntimeError("expected one message per ask")
                    bodies[name] = [click_body(slack, m) for m in messages]
                # bare Bolt and the floor get the first relay's bytes
                bodies["bolt"] = bodies[BOT] = bodies["floor"] = bodies[RELAYS[stores[0]]]
                # From here on Web API calls go to a stub that answers at once (WebApiStub).
                api = WebApiStub()
                stub, stub_port = await serve(api.app)
                for child in servers.values():
                    await child.command("slack_url", f"http://127.0.0.1:{stub_port}/api/")

                def clicks_of(name: str, k: int) -> list[bytes]:
                    # batch k of the server's own clicks (k = -1: the warm-up)
                    if k < 0:
                        return bodies[name][: sizes.warmup]
                    at = sizes.warmup + k * sizes.per_round
                    return bodies[name][at : at + sizes.per_round]

                async def run_round(name: str, k: int, count: bool = False) -> dict[str, Any]:
                    return await one_round(
                        api,
                        servers[name],
                        clicks_of(name, k),
                        relay=name.startswith("relay"),
                        updates=name == BOT,
                        redis=redis if name.startswith("relay_redis") else None,
                        count_to=str(RESULTS / f"calls_{name}.pstats") if count else None,
                    )

                for name in servers:
                    await run_round(name, -1)
                rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in servers}
                names = list(servers)
                for r in range(sizes.rounds):
                    for name in names[r % len(names) :] + names[: r % len(names)]:
                        rounds[name].append(await run_round(name, r))
                gc_names = ["bolt", *relays]
                python_gc: dict[str, list[dict[str, Any]]] = {name: [] for name in gc_names}
                for name in python_gc:
                    await servers[name].command("gc_mode", "python")
                for r in range(sizes.python_gc_rounds):
                    order = gc_names if r % 2 == 0 else gc_names[::-1]
                    for name in order:
                        python_gc[name].append(await run_round(name, sizes.rounds + r))
                counted: dict[str, dict[str, Any]] = {}
                RESULTS.mkdir(exist_ok=True)
                for name in python_gc:  # (counted with the settings the timed rounds had)
                    await servers[name].command("gc_mode", "relay")
                for r in range(sizes.counted_rounds):  # after the timed rounds: not in them
                    for name in names:
                        k = sizes.rounds + sizes.python_gc_rounds + r
                        counted[name] = await run_round(name, k, count=True)
                final = {name: await servers[name].command("stats") for name in relays}
                await stub.cleanup()
            finally:
                for child in servers.values():
                    await child.stop()
    finally:
        if redis is not None:
            redis.stop()

    def median_of(key: str, runs: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
        return {name: statistics.median(r[key] for r in results) for name, results in runs.items()}

    def by_round(a: str, b: str) -> list[float]:
        # Rounds r of a and b ran back to back: their ratio cancels the drift of a shared
        # machine's speed, which moves both alike.
        return [
            x["clicks_per_second"] / y["clicks_per_second"]
            for x, y in zip(rounds[a], rounds[b], strict=True)
        ]

    median = median_of("clicks_per_second", rounds)
    per_cpu = median_of("clicks_per_cpu_second", rounds)
    out: dict[str, Any] = {
        "sizes": sizes.__dict__,
        "stores": stores,
        "pinned": pinned,
        "server_cpus": next(iter(final.values())).get("cpus"),
        "connections": CONNECTIONS,
        "fill_seconds_clickable": filled,
        "pending_at_end": {name: f["pending"] for name, f in final.items()},
        "answered": {name: f["answered"] for name, f in final.items()},
        "rounds": rounds,
        "median_clicks_per_second": median,
        "median_clicks_per_cpu_second": per_cpu,
        "python_gc_rounds": python_gc,
        "python_gc_median_clicks_per_second": median_of("clicks_per_second", python_gc),
        "counted": counted,
    }
    for name in final:
        out[f"{name}_over_bolt_by_round"] = by_round(name, "bolt")
        out[f"{name}_over_bolt_per_cpu"] = per_cpu[name] / per_cpu["bolt"]
        out[f"{name}_over_{BOT}_by_round"] = by_round(name, BOT)
        out[f"{name}_over_{BOT}_per_cpu"] = per_cpu[name] / per_cpu[BOT]
    if "relay" in final and "relay_redis" in final:
        out["relay_redis_over_relay_by_round"] = by_round("relay_redis", "relay")
        out["relay_redis_over_relay_per_cpu"] = per_cpu["relay_redis"] / per_cpu["relay"]
    if "relay_before" in final and "relay_redis_before" in final:
        out["relay_redis_before_over_relay_before_by_round"] = by_round(
            "relay_redis_before", "relay_before"
        )
        out["relay_redis_before_over_relay_before_per_cpu"] = (
            per_cpu["relay_redis_before"] / per_cpu["relay_before"]
        )
    if "relay_redis" in rounds:
        out["redis_cpu_us_per_click"] = statistics.median(
            r["redis_cpu_us_per_click"] for r in rounds["relay_redis"]
        )
    return out


def report(result: dict[str, Any], *, smoke: bool) -> dict[str, Any]:
    """Print the tables; the targets and whether each is met."""
    labels = {
        "bolt": "bare Bolt",
        BOT: "bare Bolt + chat.update",
        "relay": "relay (memory)",
        "relay_redis": "relay (Redis)",
        "relay_before": "relay (memory), --compare tree",
        "relay_redis_before": "relay (Redis), --compare tree",
        "floor": "floor",
    }
    headers = ["server", "round", "clicks", "clicks/s", "CPU %", "CPU us/click"]
    headers += ["Redis us/click", "clicks/CPU-s", "GC passes (0/1/2)", "GC ms", "longest GC ms"]

    def rows_of(runs: dict[str, list[dict[str, Any]]]) -> list[list[object]]:
        return [
            [
                labels[name],
                i,
                r["clicks"],
                r["clicks_per_second"],
                r["server_cpu_share"] * 100,
                r["server_cpu_us_per_click"],
                r.get("redis_cpu_us_per_click", float("nan")),
                r["clicks_per_cpu_second"],
                "/".join(map(str, r["gc_passes"])),
                r["gc_seconds"] * 1e3,
                max(r["gc_longest_ms"]),
            ]
            for name in labels
            for i, r in enumerate(runs.get(name, []), start=1)
        ]

    pending = f"{result['sizes']['pending']:,} asks pending"
    first = next(iter(result["rounds"].values()))[0]
    print_table(
        f"Throughput, one core, {pending}, relay serve's GC settings (threshold"
        f" {first['gc_threshold'][0]:,})",
        headers,
        rows_of(result["rounds"]),
    )
    python = result["python_gc_median_clicks_per_second"]
    print_table(
        "The same with CPython's GC settings, for comparison: "
        + ", ".join(f"{labels[n]} {v:,.0f}/s" for n, v in python.items()),
        headers,
        rows_of(result["python_gc_rounds"]),
    )
    median = result["median_clicks_per_second"]
    targets: dict[str, tuple[float, float]] = {}
    rows = []
    for name, base, label in (
        ("relay", "bolt", "relay (memory) >= 85% of bare Bolt"),
        ("relay_redis", "relay", "relay (Redis) >= 85% of relay (memory)"),
        ("relay_before", "bolt", "--compare tree: relay (memory) >= 85% of bare Bolt"),
        (
            "relay_redis_before",
            "relay_before",
            "--compare tree: relay (Redis) >= 85% of relay (memory)",
        ),
    ):
        key = f"{name}_over_{base}"
        if f"{key}_by_round" not in result:
            continue
        ratio = result[key] = statistics.median(result[f"{key}_by_round"])
        targets[label] = (ratio, 0.85)
        rows.append(
            [
                label,
                median[name],
                median[base],
                ratio,
                median[name] / median[base],
                result[f"{key}_per_cpu"],
                verdict(None if smoke else ratio >= 0.85),
            ]
        )
    if result["counted"]:
        print_table(
            "Function calls and loop callbacks per click (cProfile, one more round each)",
            ["server", "clicks", "calls", "in Python", "loop callbacks", "most called Python"],
            [
                [
                    labels[name],
                    r["clicks"],
                    r["calls_per_click"],
                    r["python_calls_per_click"],
                    r["callbacks_per_click"],
                    ", ".join(
                        f"{fn.rsplit('/', 1)[-1]} {n:.1f}"
                        for fn, n in list(r["most_called_per_click"].items())[:4]
                    ),
                ]
                for name, r in result["counted"].items()
            ],
        )
    print_table(
        "Targets (the median of the rounds' ratios, each round of the two run back to back)",
        ["target", "clicks/s", "of the base", "by round", "of medians", "per CPU-s", "verdict"],
        rows,
    )
    reference = []
    for name in (
        n for n in labels if n.startswith("relay") and f"{n}_over_{BOT}_by_round" in result
    ):
        ratio = result[f"{name}_over_{BOT}"] = statistics.median(
            result[f"{name}_over_{BOT}_by_round"]
        )
        per_cpu = result[f"{name}_over_{BOT}_per_cpu"]
        reference.append([labels[name], median[name], median[BOT], ratio, per_cpu])
    print_table(
        "For reference, no target: against bare Bolt that also updates the clicked message"
        " (one chat.update through slack-sdk, as a hand-written approval bot does)",
        ["server", "clicks/s", "Bolt + update", "by round", "per CPU-s"],
        reference,
    )
    return {
        name: {"measured": v, "limit": lim, "met": None if smoke else v >= lim}
        for name, (v, lim) in targets.items()
    }


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--compare", default=None, help="another source tree to run too")
    parser.add_argument("--pending", type=int, default=None)
    parser.add_argument("--per-round", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument(
        "--count-calls", action="store_true", help="count Python calls per click (cProfile)"
    )


def main() -> None:
    """Run the benchmark and write ``bench/results/throughput.json``."""
    args = arguments(__doc__ or "", stores=True, extra=_options)
    sizes = SMOKE if args.smoke else FULL
    for option in ("pending", "per_round", "rounds"):
        if getattr(args, option):
            sizes = dataclasses.replace(sizes, **{option: getattr(args, option)})
    if args.count_calls:
        sizes = dataclasses.replace(sizes, counted_rounds=1)
    if (os.cpu_count() or 1) < 2:
        print("note: fewer than 2 CPUs; the load generator shares the server's CPU")
    result = asyncio.run(measure(sizes, stores_of(args), args.compare))
    result["targets"] = report(result, smoke=args.smoke)
    write_json("throughput" + ("_smoke" if args.smoke else ""), {"smoke": args.smoke, **result})


if __name__ == "__main__":
    main()
