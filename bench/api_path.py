"""The API path: ``POST /v1/asks`` through ``relay serve``, long-poll capacity, click -> long-poll.

Processes: ``relay serve`` on the in-memory store and on a ``redis-server`` this benchmark
starts (``--store both``, the default), and the baseline, a bare aiohttp handler that parses
the same JSON and makes the same ``chat.postMessage`` (slack-sdk's ``AsyncWebClient``, the
same blocks) to the same ``FakeSlack``, which lives here. The servers are pinned to CPU 0,
this process (the fake, the load, Redis) to CPU 1. Asks go to 32 channels in turn, as many
agents' would: the relay posts one message at a time per channel (Slack's per-channel rate).

1. creates/s: rounds of ``POST /v1/asks`` over 32 keep-alive connections, one in flight on
   each, to each server in turn (the verdict: the median of the rounds' relay / bare ratios);
2. 1,000 creates sent at once (a connection each), counting every answer that is not 201;
3. long-polls: 10,000 ``GET /v1/asks/{id}?wait=`` held at once on pending asks; RSS of the
   relay before and once all are held (``relay_long_polls`` on ``/metrics``), per poll, and
   every answer that came back early (a 503 "store unavailable", say);
4. while they are held: click -> long-poll answered (an ask created with ``?wait=30`` on the
   same relay, clicked once posted), as ``bench.replicas`` measures it.

    .venv/bin/python -m bench.api_path [--smoke] [--store memory|redis|both] [--rounds N]

``python -m bench.api_path --bare --slack-url URL`` runs the baseline server alone.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from bench.common import (
    BOT_TOKEN,
    CHANNELS,
    SECRET,
    Redis,
    arguments,
    bench_slack,
    latency_ms,
    pin_to_cpu,
    print_table,
    question,
    report_targets,
    serve,
    stores_of,
    write_json,
)
from bench.replicas import API_TOKEN, Replica, one_sample, start_replica, stop_replica
from relay import AskUserQuestionRequest
from relay.slack.rendering.render import render_question
from relay.testing import FakeSlack

HEADERS = {"Authorization": f"Bearer {API_TOKEN}"}
_POLLS = re.compile(rb"^relay_long_polls (\S+)$", re.MULTILINE)


@dataclass(frozen=True)
class Sizes:
    """How much to measure."""

    creates: int  # per round and server
    rounds: int
    connections: int  # for the rate
    burst: int  # creates sent at once
    polls: int  # long-polls held at once
    samples: int  # click -> long-poll
    warmup: int  # creates per server before the first round


FULL = Sizes(
    creates=1_500, rounds=3, connections=32, burst=1_000, polls=10_000, samples=200, warmup=200
)
SMOKE = Sizes(creates=20, rounds=1, connections=4, burst=20, polls=30, samples=3, warmup=5)


def body(number: int) -> dict[str, Any]:
    """One API request: a one-question ask to one of the channels."""
    return {
        "questions": [question(number).to_dict()],
        "slack": {"channel": CHANNELS[number % len(CHANNELS)]},
    }


# ---- the baseline -----------------------------------------------------------------------


def bare_app(slack_url: str) -> web.Application:
    """Parse the same JSON, make the same ``chat.postMessage``, answer 201 with an id."""
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack_url)
    sample = AskUserQuestionRequest.from_dict({"questions": [question(0).to_dict()]})
    rendered = render_question(sample.questions[0], ask_id="a" * 16, index=0)
    counter = iter(range(1 << 62))

    async def create(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != HEADERS["Authorization"]:
            return web.json_response({"error": "UNAUTHORIZED"}, status=401)
        data = await request.json()
        parsed = AskUserQuestionRequest.from_dict({"questions": data["questions"]}, strict=True)
        channel = data["slack"]["channel"]
        await client.chat_postMessage(
            channel=channel, text=parsed.questions[0].question, blocks=rendered.blocks
        )
        return web.json_response({"id": str(next(counter)), "status": "pending"}, status=201)

    app = web.Application()
    app.router.add_post("/v1/asks", create)
    return app


async def start_bare(slack: FakeSlack) -> tuple[asyncio.subprocess.Process, str]:
    """The baseline in a process of its own, pinned to CPU 0; its URL."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.api_path",
        "--bare",
        "--slack-url",
        slack.base_url,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 30)
    return process, f"http://127.0.0.1:{int(line)}"


async def run_bare(slack_url: str) -> None:
    """Serve the baseline until killed."""
    pin_to_cpu(0)
    runner, port = await serve(bare_app(slack_url))
    print(port, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


# ---- measurements -----------------------------------------------------------------------


def rss_of(pid: int) -> int:
    """A process's resident set size."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_of(pid: int) -> float:
    """A process's CPU seconds so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def creates(
    url: str, numbers: range, *, connections: int
) -> tuple[dict[int, int], float, list[str]]:
    """``POST /v1/asks`` for each number, ``connections`` at a time; statuses, seconds, ids."""
    statuses: dict[int, int] = {}
    ids: list[str] = []
    queue = iter(numbers)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def worker() -> None:
            for n in queue:
                async with http.post(f"{url}/v1/asks", json=body(n), headers=HEADERS) as r:
                    data = await r.json(content_type=None)
                    statuses[r.status] = statuses.get(r.status, 0) + 1
                    if r.status == 201:
                        ids.append(data["id"])

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(connections)))
        return statuses, time.perf_counter() - began, ids


async def open_polls(url: str) -> float:
    """``relay_long_polls`` on the relay's ``/metrics``."""
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{url}/metrics", headers=HEADERS) as r,
    ):
        match = _POLLS.search(await r.read())
        return float(match.group(1)) if match else -1.0


async def hold_polls(
    replica: Replica, slack: FakeSlack, ids: list[str], *, samples: int, offset: int
) -> dict[str, Any]:
    """Hold a long-poll on every id at once; RSS per poll, early answers, and click ->
    long-poll latency while they are held."""
    assert replica.process.pid is not None
    pid = replica.process.pid
    rss_before = rss_of(pid)
    early: dict[int, int] = {}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def poll(ask_id: str) -> None:
            try:
                async with http.get(
                    f"{replica.url}/v1/asks/{ask_id}?wait=120", headers=HEADERS
                ) as r:
                    await r.read()
                    early[r.status] = early.get(r.status, 0) + 1
            except aiohttp.ClientError:
                early[-1] = early.get(-1, 0) + 1

        began = time.perf_counter()
        tasks = [asyncio.create_task(poll(i)) for i in ids]
        deadline = time.perf_counter() + 120
        held = 0.0
        while time.perf_counter() < deadline:
            held = await open_polls(replica.url)
            if held >= len(ids) or sum(early.values()) + held >= len(ids):
                break
            await asyncio.sleep(0.2)  # polling /metrics for a condition, with a deadline
        all_held = time.perf_counter() - began
        rss_held = rss_of(pid)
        latency: list[float] = []
        async with aiohttp.ClientSession() as agent:
            for k in range(samples):
                latency.append(await one_sample(agent, slack, replica, replica, offset + k))
        still = await open_polls(replica.url)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "polls": len(ids),
        "held": held,
        "still_held_after_samples": still,
        "seconds_to_hold_all": all_held,
        "answered_early": early,
        "rss_before": rss_before,
        "rss_held": rss_held,
        "rss_per_poll_bytes": (rss_held - rss_before) / max(1, len(ids)),
        "click_to_long_poll": latency_ms(latency),
    }


async def measure(sizes: Sizes, stores: list[str]) -> dict[str, Any]:
    """Everything, for every store; the figures."""
    pin_to_cpu(1)
    redis = Redis(cpu=1) if "redis" in stores else None
    env = {
        "RELAY_MAX_LONG_POLLS": str(sizes.polls * 2),
        "RELAY_MAX_PENDING": "1000000",
        "RELAY_RATE_LIMIT": "1000000",
        "RELAY_TIMEOUT": "none",
        "RELAY_MAX_WAIT": "120",
        "RELAY_ALLOWED_CHANNELS": ",".join(CHANNELS),
    }
    out: dict[str, Any] = {"sizes": sizes.__dict__, "stores": stores}
    try:
        async with bench_slack(signing_secret=SECRET, rate_limits=False) as slack:
            bare, bare_url = await start_bare(slack)
            relays: dict[str, Replica] = {}
            try:
                for store in stores:
                    relays[store] = await start_replica(
                        store,
                        slack,
                        redis.url if store == "redis" and redis else None,
                        env=env,
                        cpu=0,
                    )
                urls = {"bare": bare_url, **{s: r.url for s, r in relays.items()}}
                pids = {"bare": bare.pid, **{s: r.process.pid for s, r in relays.items()}}
                number = 0
                for url in urls.values():
                    await creates(url, range(number, number + sizes.warmup), connections=4)
                    number += sizes.warmup
                rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in urls}
                names = list(urls)
                ids: dict[str, list[str]] = {s: [] for s in stores}
                for r in range(sizes.rounds):
                    for name in names[r % len(names) :] + names[: r % len(names)]:
                        cpu = cpu_of(pids[name] or 0)
                        statuses, seconds, made = await creates(
                            urls[name],
                            range(number, number + sizes.creates),
                            connections=sizes.connections,
                        )
                        number += sizes.creates
                        used = cpu_of(pids[name] or 0) - cpu
                        if name in ids:
                            ids[name] += made
                        rounds[name].append(
                            {
                                "statuses": statuses,
                                "seconds": seconds,
                                "creates_per_second": sizes.creates / seconds,
                                "server_cpu_us_per_create": used / sizes.creates * 1e6,
                            }
                        )
                out["rounds"] = rounds
                out["median_creates_per_second"] = {
                    name: statistics.median(x["creates_per_second"] for x in runs)
                    for name, runs in rounds.items()
                }
                for store in stores:
                    out[f"{store}_over_bare_by_round"] = [
                        a["creates_per_second"] / b["creates_per_second"]
                        for a, b in zip(rounds[store], rounds["bare"], strict=True)
                    ]
                for store, replica in relays.items():
                    statuses, seconds, made = await creates(
                        replica.url, range(number, number + sizes.burst), connections=sizes.burst
                    )
                    number += sizes.burst
                    ids[store] += made
                    out[f"{store}_burst"] = {"statuses": statuses, "seconds": seconds}
                    missing = sizes.polls - len(ids[store])
                    if missing > 0:
                        _, _, made = await creates(
                            replica.url, range(number, number + missing), connections=32
                        )
                        number += missing
                        ids[store] += made
                    out[f"{store}_polls"] = await hold_polls(
                        replica,
                        slack,
                        ids[store][: sizes.polls],
                        samples=sizes.samples,
                        offset=number,
                    )
                    number += sizes.samples
            finally:
                bare.kill()
                await bare.wait()
                for replica in relays.values():
                    await stop_replica(replica)
    finally:
        if redis is not None:
            redis.stop()
    return out


def report(result: dict[str, Any], *, smoke: bool) -> dict[str, Any]:
    """Print the tables; the targets and whether each is met."""
    stores = result["stores"]
    labels = {
        "bare": "bare aiohttp handler",
        "memory": "relay serve, memory",
        "redis": "relay serve, Redis",
    }
    print_table(
        f"POST /v1/asks, {result['sizes']['connections']} connections (posting to the fake)",
        ["server", "round", "creates/s", "server CPU us/create", "statuses"],
        [
            [
                labels[name],
                i,
                x["creates_per_second"],
                x["server_cpu_us_per_create"],
                str(x["statuses"]),
            ]
            for name, runs in result["rounds"].items()
            for i, x in enumerate(runs, start=1)
        ],
    )
    rows = []
    for store in stores:
        burst = result[f"{store}_burst"]
        polls = result[f"{store}_polls"]
        lat = polls["click_to_long_poll"]
        rows.append(
            [
                labels[store],
                str(burst["statuses"]),
                f"{polls['held']:,.0f} / {polls['polls']:,}",
                str(polls["answered_early"]),
                polls["rss_per_poll_bytes"] / 1024,
                lat["p50_ms"],
                lat["p99_ms"],
            ]
        )
    print_table(
        f"{result['sizes']['burst']:,} creates at once; {result['sizes']['polls']:,} long-polls"
        " held at once; click -> long-poll while they are held",
        [
            "server",
            "burst statuses",
            "polls held",
            "answered early",
            "KB per held poll",
            "click->poll p50 ms",
            "p99 ms",
        ],
        rows,
    )
    targets: dict[str, tuple[float, float, bool]] = {}
    for store in stores:
        ratio = statistics.median(result[f"{store}_over_bare_by_round"])
        targets[f"{store}: creates/s >= 85% of the bare handler"] = (ratio, 0.85, ratio >= 0.85)
        burst = result[f"{store}_burst"]["statuses"]
        errors = sum(n for status, n in burst.items() if status != "201" and status != 201)
        polls = result[f"{store}_polls"]
        errors += sum(polls["answered_early"].values())
        targets[f"{store}: errors in the burst and the held polls == 0"] = (
            float(errors),
            0.0,
            errors == 0,
        )
    return report_targets(targets, smoke=smoke)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bare", action="store_true", help="run the baseline server only")
    parser.add_argument("--slack-url", help="with --bare: the Web API to post to")
    parser.add_argument(
        "--rounds", type=int, default=None, help="rounds of creates per server (default 3)"
    )


def main() -> None:
    """Run the benchmark and write ``bench/results/api_path.json``."""
    args = arguments(__doc__ or "", stores=True, extra=_options)
    if args.bare:
        asyncio.run(run_bare(args.slack_url))
        return
    sizes = SMOKE if args.smoke else FULL
    if args.rounds is not None:
        if args.rounds < 1:
            raise SystemExit("--rounds must be at least 1")
        sizes = dataclasses.replace(sizes, rounds=args.rounds)
    result = asyncio.run(measure(sizes, stores_of(args)))
    result["targets"] = report(result, smoke=args.smoke)
    write_json("api_path" + ("_smoke" if args.smoke else ""), {"smoke": args.smoke, **result})


if __name__ == "__main__":
    main()
