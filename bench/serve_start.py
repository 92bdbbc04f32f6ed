"""What ``relay serve`` costs to start: CPU seconds and wall time from spawn until it says it
is listening, then the first ``/mcp`` request (an MCP ``initialize``), against the floor (a
bare interpreter importing what any such server needs: aiohttp, slack_sdk, redis).

The test suite and every replica a deployment rolls start ``relay serve``; on a machine of
two cores its start-up CPU is what the suite waits on. Each round starts each command once,
in rotating order, against one fake Slack; the CPU figure is the process's own user + system
time when it is listening (``/proc/<pid>/stat``), so what else the machine runs adds
nothing to it.

``--compare DIR`` adds ``relay serve`` run from another source tree (a checkout of an
earlier commit, its ``relay`` package importable from ``DIR``) in the same rounds.

    .venv/bin/python -m bench.serve_start [--smoke] [--rounds N] [--compare DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from typing import Any

import aiohttp

from bench.common import (
    ROOT,
    arguments,
    bench_slack,
    latency_ms,
    print_table,
    report_targets,
    write_json,
)
from bench.mcp_sessions import ACCEPT, INIT
from bench.replicas import API_TOKEN, start_replica, stop_replica
from relay.testing import FakeSlack

ROUNDS, SMOKE_ROUNDS = 10, 1
FLOOR = "python: import aiohttp, slack_sdk, redis"
# relay serve's own start-up, over the floor's: its settings, store, channel, API, receipts.
LIMIT = 4.0
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    # /proc/<pid>/stat: fields 14 and 15 (utime, stime) in clock ticks, after the name.
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _floor() -> tuple[float, float]:
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", "import aiohttp, slack_sdk, redis, os; print(sum(os.times()[:2]))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return float(done.stdout.split()[0]), time.perf_counter() - began


async def _serve(slack: FakeSlack, path: str) -> tuple[float, float, float]:
    """One ``relay serve`` from ``path``: CPU and wall seconds to listening, then the
    first ``/mcp`` request's seconds."""
    began = time.perf_counter()
    replica = await start_replica("serve", slack, None, tree=path)
    try:
        cpu, wall = _cpu_seconds(replica.process.pid), time.perf_counter() - began
        headers = {**ACCEPT, "Authorization": f"Bearer {API_TOKEN}"}
        asked = time.perf_counter()
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"{replica.url}/mcp", json=INIT, headers=headers) as reply,
        ):
            await reply.read()
            if reply.status != 200:
                raise SystemExit(f"/mcp answered {reply.status}")
        return cpu, wall, time.perf_counter() - asked
    finally:
        await stop_replica(replica)


async def measure(rounds: int, compare: str | None) -> dict[str, dict[str, Any]]:
    """Run the rounds; each command's CPU and wall figures (and /mcp's first answer)."""
    trees = {"relay serve": str(ROOT)}
    if compare is not None:
        trees[f"relay serve, {compare}"] = compare
    names = [FLOOR, *trees]
    cpu: dict[str, list[float]] = {n: [] for n in names}
    wall: dict[str, list[float]] = {n: [] for n in names}
    first_mcp: dict[str, list[float]] = {n: [] for n in trees}
    async with bench_slack() as slack:
        for k in range(rounds):
            shift = k % len(names)
            for name in names[shift:] + names[:shift]:
                if name == FLOOR:
                    used, took = _floor()
                else:
                    used, took, mcp = await _serve(slack, trees[name])
                    first_mcp[name].append(mcp)
                cpu[name].append(used)
                wall[name].append(took)
    return {
        name: {
            "cpu_s": latency_ms(cpu[name]),
            "wall": latency_ms(wall[name]),
            **({"first_mcp": latency_ms(first_mcp[name])} if name in first_mcp else {}),
        }
        for name in names
    }


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="starts of each command")
    parser.add_argument("--compare", metavar="DIR", help="also start relay serve from this tree")


def main() -> None:
    """Run the benchmark and write ``bench/results/serve_start.json``."""
    args = arguments(__doc__ or "", extra=_options)
    rounds = SMOKE_ROUNDS if args.smoke else args.rounds
    figures = asyncio.run(measure(rounds, args.compare))
    # (latency_ms reports seconds x 1000: for the CPU figures, read "ms" as CPU ms.)
    print_table(
        f"Spawn to listening ({rounds} starts each, rounds rotating)",
        ["command", "CPU ms p50", "CPU ms max", "wall ms p50", "first /mcp ms p50"],
        [
            [
                name,
                f["cpu_s"]["p50_ms"],
                f["cpu_s"]["max_ms"],
                f["wall"]["p50_ms"],
                f["first_mcp"]["p50_ms"] if "first_mcp" in f else "",
            ]
            for name, f in figures.items()
        ],
    )
    ratio = figures["relay serve"]["cpu_s"]["p50_ms"] / figures[FLOOR]["cpu_s"]["p50_ms"]
    checks = {
        f"relay serve start CPU / the floor's, p50 <= {LIMIT}": (ratio, LIMIT, ratio <= LIMIT)
    }
    targets = report_targets(checks, smoke=args.smoke, measured="ratio")
    name = "serve_start" + ("_smoke" if args.smoke else "")
    write_json(
        name, {"smoke": args.smoke, "rounds": rounds, "figures": figures, "targets": targets}
    )


if __name__ == "__main__":
    main()
