"""Receipts: the click path with receipts and checkpoints on and off in one run, and what a
receipt costs.

One process holds a ``FakeSlack`` and two ``SlackProvider``s behind their aiohttp apps, each
with its own store: one signs and chains a receipt for every ended ask (``ReceiptWriter``)
and runs a ``Checkpointer`` signing a checkpoint of the chain after every receipt (at most
every 50 ms: far more often than the defaults, so that its work overlaps the clicks), the
other does neither. Every round sends one signed click to each, in rotating order, and
times it to the moment the waiting ``ask()`` returns (and to the HTTP ack); each provider's
background work (the message update, and the receipt) is drained before the next request,
so that no measurement overlaps another's work. The receipt is written after the ask ends,
off the agent's path, so the two click paths should match. Then the cost of one receipt
alone: building and signing its payload, and signing plus appending it to the chain.

    .venv/bin/python -m bench.receipts [--smoke] [--store memory|redis|both]
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.click_latency import _NUMBER, close_into_stub, fill
from bench.common import (
    CHANNEL,
    SECRET,
    Redis,
    arguments,
    bench_slack,
    click_body,
    latency_ms,
    print_table,
    serve,
    signed_headers,
    stores_of,
    verdict,
    web_client,
    write_json,
)
from relay.receipts import ReceiptWriter, SigningKey
from relay.receipts.checkpoint import Checkpointer
from relay.slack import SlackProvider
from relay.store.base import AskStore
from relay.store.memory import MemoryStore
from relay.store.receipts import ChainHead
from relay.testing import FakeMessage


@dataclass(frozen=True)
class Sizes:
    """How much to measure."""

    samples: int  # measured rounds (one click per provider each)
    warmup: int
    signs: int  # receipts signed (and appended) in the cost-per-receipt part


FULL = Sizes(samples=1_000, warmup=100, signs=2_000)
SMOKE = Sizes(samples=20, warmup=5, signs=20)


def _store(redis: Redis | None, prefix: str) -> AskStore:
    if redis is None:
        return MemoryStore()
    from relay.store.redis import RedisStore

    return RedisStore(url=redis.url, prefix=prefix)


async def measure(sizes: Sizes, store: str) -> dict[str, Any]:
    """The click path with receipts on and off, and a receipt's cost, on ``store``."""
    redis = Redis(cpu=1) if store == "redis" else None
    try:
        return await _measure(sizes, redis)
    finally:
        if redis is not None:
            redis.stop()


async def _measure(sizes: Sizes, redis: Redis | None) -> dict[str, Any]:
    rounds = sizes.warmup + sizes.samples
    key = SigningKey.generate()
    async with bench_slack(signing_secret=SECRET, rate_limits=False) as slack:
        providers: dict[str, SlackProvider] = {}
        writer: ReceiptWriter | None = None
        checkpointer: Checkpointer | None = None
        runners: list[Any] = []
        urls: dict[str, str] = {}
        for name in ("off", "on"):
            store = _store(redis, f"bench-receipts-{name}:")
            provider = SlackProvider(
                client=web_client(slack),
                signing_secret=SECRET,
                channel=CHANNEL,
                timeout=None,
                store=store,
            )
            if name == "on":
                writer = ReceiptWriter(store=store, key=key, issuer="bench")  # type: ignore[arg-type]
                provider.events.subscribe(writer.observe)
                checkpointer = Checkpointer(
                    store=store,  # type: ignore[arg-type]
                    key=key,
                    issuer="bench",
                    interval=0.05,
                    every=1,
                )
                checkpointer.start()
            providers[name] = provider
            runner, port = await serve(provider.web_app())
            runners.append(runner)
            urls[name] = f"http://127.0.0.1:{port}/slack/events"
        assert writer is not None
        assert checkpointer is not None
        # Numbers 0..rounds-1 on "off", rounds..2*rounds-1 on "on": one ask per click.
        offsets = {"off": 0, "on": rounds}
        agents: dict[str, list[asyncio.Task[None]]] = {}
        answered: dict[int, asyncio.Future[float]] = {}
        for name, provider in providers.items():
            start = offsets[name]
            tasks, futures = await fill(slack, provider, range(start, start + rounds), 50)
            agents[name] = tasks
            answered.update(futures)
            posted = start + rounds  # (fill counts messages from zero: wait for these too)
            await slack.wait_until(lambda n=posted: len(slack.messages) >= n, timeout=120)
        by_number: dict[int, FakeMessage] = {}
        for message in slack.messages:
            match = _NUMBER.search(message.text)
            if match:
                by_number[int(match.group(1))] = message
        samples: dict[str, list[float]] = {"on": [], "off": [], "on_ack": [], "off_ack": []}
        order = ["off", "on"]
        try:
            async with aiohttp.ClientSession() as http:
                for k in range(rounds):
                    for name in order[k % 2 :] + order[: k % 2]:
                        number = offsets[name] + k
                        body = click_body(slack, by_number[number])
                        sent = time.perf_counter()
                        async with http.post(
                            urls[name], data=body, headers=signed_headers(body)
                        ) as response:
                            await response.read()
                            acked = time.perf_counter()
                        returned = await asyncio.wait_for(answered[number], 5.0)
                        await providers[name].drain()
                        if name == "on":
                            await writer.drain()
                        if k >= sizes.warmup:
                            samples[name].append(returned - sent)
                            samples[f"{name}_ack"].append(acked - sent)
            written = writer.written
            await checkpointer.aclose()
            checkpoints = checkpointer.made
            cost = await _receipt_cost(sizes, providers["on"].store, writer)
        finally:
            for name, provider in providers.items():
                await close_into_stub(provider, agents[name], runners)
            for runner in runners:
                await runner.cleanup()
    return {
        "store": "memory" if redis is None else "redis",
        "sizes": sizes.__dict__,
        "receipts_written_by_clicks": written,
        "checkpoints_made": checkpoints,
        "latency": {name: latency_ms(values) for name, values in samples.items()},
        "receipt": cost,
    }


async def _receipt_cost(sizes: Sizes, store: AskStore, writer: ReceiptWriter) -> dict[str, Any]:
    """Sign alone, and sign + append, for one ended ask's record, ``sizes.signs`` times."""
    ended = await _ended(store, sizes.signs)
    head = ChainHead(0, None)
    signing: list[float] = []
    for record in ended:
        started = time.perf_counter()
        writer.sign(record, head)
        signing.append(time.perf_counter() - started)
    appending: list[float] = []
    for record in ended:
        # A fresh id each: one receipt per ask, and these asks have theirs already.
        fresh = record.with_(id=f"bench-{len(appending)}-{record.id}")
        started = time.perf_counter()
        await writer.write(fresh)
        appending.append(time.perf_counter() - started)
    return {"sign": latency_ms(signing), "sign_and_append": latency_ms(appending)}


async def _ended(store: AskStore, count: int) -> list[Any]:
    """The run's ended asks (those with a receipt), reused round robin up to ``count``."""
    chain = getattr(store, "receipt_range")  # noqa: B009 - the store's chain part
    found: list[Any] = []
    for token in await chain(start=1, limit=count):
        record = await store.get(ask_id=_ask_of(token))
        if record is not None:
            found.append(record)
    if not found:
        raise RuntimeError("no ended ask to sign a receipt for")
    return [found[i % len(found)] for i in range(count)]


def _ask_of(token: str) -> str:
    part = token.split(".")[1]
    return str(json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))["ask"])


def report(runs: list[dict[str, Any]], *, smoke: bool) -> dict[str, Any]:
    """Print the tables; the targets and whether each is met."""
    rows = []
    labels = {
        "off": "receipts off: click -> ask() returns",
        "on": "receipts + checkpoints on: click -> ask() returns",
        "off_ack": "receipts off: click -> HTTP ack",
        "on_ack": "receipts + checkpoints on: click -> HTTP ack",
    }
    for run in runs:
        for key, label in labels.items():
            f = run["latency"][key]
            rows.append([run["store"], label, f["n"], f["p50_ms"], f["p90_ms"], f["p99_ms"]])
        for key, label in (("sign", "one receipt: sign"), ("sign_and_append", "sign + append")):
            f = run["receipt"][key]
            rows.append([run["store"], label, f["n"], f["p50_ms"], f["p90_ms"], f["p99_ms"]])
    print_table("Receipts", ["store", "path", "n", "p50 ms", "p90 ms", "p99 ms"], rows)
    targets: dict[str, tuple[float, float]] = {}
    for run in runs:
        on, off = run["latency"]["on"]["p50_ms"], run["latency"]["off"]["p50_ms"]
        name = f"{run['store']}: click p50 with / without receipts and checkpoints <= 1.1"
        targets[name] = (on / off, 1.1)
    met = {name: None if smoke else value <= limit for name, (value, limit) in targets.items()}
    print_table(
        "Targets",
        ["target", "measured", "verdict"],
        [[name, value, verdict(met[name])] for name, (value, _) in targets.items()],
    )
    return {
        name: {"measured": v, "limit": lim, "met": met[name]} for name, (v, lim) in targets.items()
    }


def main() -> None:
    """Run the benchmark and write ``bench/results/receipts.json``."""
    args = arguments(__doc__ or "", stores=True)
    sizes = SMOKE if args.smoke else FULL
    runs = [asyncio.run(measure(sizes, store)) for store in stores_of(args)]
    targets = report(runs, smoke=args.smoke)
    write_json(
        "receipts" + ("_smoke" if args.smoke else ""),
        {"smoke": args.smoke, "runs": runs, "targets": targets},
    )


if __name__ == "__main__":
    main()
