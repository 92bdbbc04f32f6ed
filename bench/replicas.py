"""Across replicas: what answering through another ``relay serve`` adds to the answer's latency.

Two ``relay serve`` processes, A and B, share one ``redis-server``; the fake Slack lives here.
For every sample an agent creates an ask on A and long-polls A for it
(``POST /v1/asks?wait=30``); once the question is posted and the long-poll has settled, the
human's signed click goes to B (the answer crosses replicas through Redis) or, alternately,
to A itself (the single-process figure of the same deployment). Measured: from sending the
click to the moment the agent's long-poll response arrives.

    .venv/bin/python -m bench.replicas [--smoke]
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.common import (
    BOT_TOKEN,
    CHANNEL,
    SECRET,
    Redis,
    arguments,
    bench_slack,
    click_body,
    free_port,
    latency_ms,
    print_table,
    question,
    signed_headers,
    verdict,
    write_json,
)
from relay.testing import FakeSlack

API_TOKEN = "bench-api-token-0123456789abcdef"
SETTLE = 0.02  # seconds for the agent's long-poll to be waiting before the click


@dataclass(frozen=True)
class Sizes:
    """How much to measure."""

    samples: int  # per path
    warmup: int  # per path


FULL = Sizes(samples=500, warmup=30)
SMOKE = Sizes(samples=5, warmup=1)


@dataclass
class Replica:
    """A running ``relay serve``."""

    name: str
    url: str
    process: asyncio.subprocess.Process
    log: list[str]
    reader: asyncio.Task[None] | None = None


async def start_replica(
    name: str,
    slack: FakeSlack,
    redis_url: str | None,
    *,
    env: dict[str, str] | None = None,
    cpu: int | None = None,
    tree: str | None = None,
) -> Replica:
    """Start ``relay serve`` on a free port (on Redis, or the in-memory store without a
    ``redis_url``; ``env`` adds settings; ``cpu`` pins it; ``tree`` runs the ``relay``
    package of another source tree) and wait until it listens."""
    port = free_port()
    extra = env or {}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "RELAY_", "REDIS_"))}
    env.update(
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=slack.base_url,
        RELAY_API_TOKENS=API_TOKEN,
        RELAY_CHANNEL=CHANNEL,
        RELAY_HOST="127.0.0.1",
        RELAY_MAX_WAIT="60",
        PORT=str(port),
    )
    if redis_url is not None:
        env["REDIS_URL"] = redis_url
    if tree is not None:
        env["PYTHONPATH"] = tree
    env.update(extra)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        "serve",
        env=env,
        cwd=tree,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    if cpu is not None and cpu < (os.cpu_count() or 1) and process.pid is not None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(process.pid, {cpu})
    replica = Replica(name=name, url=f"http://127.0.0.1:{port}", process=process, log=[])
    listening = asyncio.get_running_loop().create_future()

    async def read() -> None:
        assert process.stderr is not None
        while line := await process.stderr.readline():
            text = line.decode(errors="replace")
            replica.log.append(text)
            if "relay listening" in text and not listening.done():
                listening.set_result(None)
        if not listening.done():
            listening.set_exception(RuntimeError(f"relay {name} exited:\n{''.join(replica.log)}"))

    replica.reader = asyncio.create_task(read())
    await asyncio.wait_for(listening, 30)
    return replica


async def stop_replica(replica: Replica) -> None:
    """SIGTERM, then wait for it to shut down."""
    if replica.process.returncode is None:
        replica.process.terminate()
    try:
        await asyncio.wait_for(replica.process.wait(), 30)
    except TimeoutError:
        replica.process.kill()
        await replica.process.wait()
    if replica.reader is not None:
        await replica.reader


@contextlib.asynccontextmanager
async def deployment() -> AsyncIterator[tuple[FakeSlack, Replica, Replica]]:
    """Redis, the fake Slack and two replicas; everything stopped afterwards."""
    redis = Redis()
    try:
        async with bench_slack(signing_secret=SECRET, rate_limits=False) as slack:
            a = await start_replica("A", slack, redis.url)
            try:
                b = await start_replica("B", slack, redis.url)
                try:
                    yield slack, a, b
                finally:
                    await stop_replica(b)
            finally:
                await stop_replica(a)
    finally:
        redis.stop()


async def one_sample(
    http: aiohttp.ClientSession, slack: FakeSlack, waiter: Replica, clicked: Replica, n: int
) -> float:
    """Create an ask on ``waiter`` and long-poll it; click on ``clicked``; the latency."""
    body = {"questions": [question(n).to_dict()]}
    headers = {"Authorization": f"Bearer {API_TOKEN}"}
    posted = len(slack.messages)

    async def long_poll() -> tuple[float, dict[str, Any]]:
        async with http.post(f"{waiter.url}/v1/asks?wait=30", json=body, headers=headers) as r:
            data = await r.json()
            return time.perf_counter(), data

    poll = asyncio.create_task(long_poll())
    await slack.wait_until(lambda: len(slack.messages) > posted, timeout=10)
    await asyncio.sleep(SETTLE)  # pacing: the long-poll is waiting before the human clicks
    click = click_body(slack, slack.messages[posted])
    signed = signed_headers(click)
    sent = time.perf_counter()
    async with http.post(f"{clicked.url}/slack/events", data=click, headers=signed) as r:
        if r.status != 200:
            raise RuntimeError(f"replica {clicked.name} answered the click with {r.status}")
    answered_at, record = await asyncio.wait_for(poll, 30)
    if record.get("status") != "answered":
        raise RuntimeError(f"the ask ended as {record.get('status')}: {record}")
    return answered_at - sent


async def measure(sizes: Sizes) -> dict[str, Any]:
    """Alternate same-replica and cross-replica samples; the figures."""
    samples: dict[str, list[float]] = {"same": [], "cross": []}
    async with deployment() as (slack, a, b), aiohttp.ClientSession() as http:
        for k in range(2 * (sizes.warmup + sizes.samples)):
            path = "same" if k % 2 == 0 else "cross"
            latency = await one_sample(http, slack, a, a if path == "same" else b, k)
            if k >= 2 * sizes.warmup:
                samples[path].append(latency)
        updates = len(slack.calls_to("chat.update"))
        posts = len(slack.calls_to("chat.postMessage"))
    figures = {path: latency_ms(values) for path, values in samples.items()}
    return {
        "sizes": sizes.__dict__,
        "settle_seconds": SETTLE,
        "latency": figures,
        "added_p50_ms": figures["cross"]["p50_ms"] - figures["same"]["p50_ms"],
        "added_p99_ms": figures["cross"]["p99_ms"] - figures["same"]["p99_ms"],
        "slack_calls": {"chat.postMessage": posts, "chat.update": updates},
    }


def report(result: dict[str, Any], *, smoke: bool) -> dict[str, Any]:
    """Print the tables; the target and whether it is met."""
    latency = result["latency"]
    print_table(
        "Click to answer through relay serve + Redis (agent long-polls replica A)",
        ["click sent to", "n", "p50 ms", "p90 ms", "p99 ms", "max ms"],
        [
            [label, f["n"], f["p50_ms"], f["p90_ms"], f["p99_ms"], f["max_ms"]]
            for label, f in (
                ("A (same replica)", latency["same"]),
                ("B (other replica)", latency["cross"]),
            )
        ],
    )
    added = result["added_p99_ms"]
    met = None if smoke else added <= 10.0
    print_table(
        "Target",
        ["target", "added p50 ms", "added p99 ms", "verdict"],
        [["p99 added <= 10 ms", result["added_p50_ms"], added, verdict(met)]],
    )
    return {"p99 added across replicas <= 10 ms": {"measured": added, "limit": 10.0, "met": met}}


def main() -> None:
    """Run the benchmark and write ``bench/results/replicas.json``."""
    args = arguments(__doc__ or "")
    result = asyncio.run(measure(SMOKE if args.smoke else FULL))
    result["targets"] = report(result, smoke=args.smoke)
    write_json("replicas" + ("_smoke" if args.smoke else ""), {"smoke": args.smoke, **result})


if __name__ == "__main__":
    main()
