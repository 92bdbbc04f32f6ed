"""Click to answer: from sending a signed click to the moment the waiting ``ask()`` returns.

One process holds everything: a ``FakeSlack``, a ``SlackProvider`` behind its aiohttp app
with N asks pending (agents blocked in ``ask()``), and the two baselines: bare Bolt in its
fastest configuration (``process_before_response=True``, a listener that only acks), timed
to its HTTP response, and the floor (an aiohttp handler that checks the signature and parses
the payload). Every round sends the same signed bytes to all three, in rotating order, over
one keep-alive ``aiohttp`` session; the relay's background ``chat.update`` is drained before
the next request so that no measurement overlaps another's work.

    .venv/bin/python -m bench.click_latency [--smoke]
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from bench.common import (
    CHANNEL,
    SECRET,
    WebApiStub,
    arguments,
    bare_bolt_app,
    click_body,
    floor_app,
    latency_ms,
    print_table,
    request,
    serve,
    signed_headers,
    verdict,
    web_client,
    write_json,
)
from relay.slack import SlackProvider
from relay.testing import FakeMessage, FakeSlack

_NUMBER = re.compile(r"build (\d+) ")


@dataclass(frozen=True)
class Sizes:
    """How much to measure."""

    pending: int  # asks left pending for the whole run
    samples: int  # measured rounds (one click per target each)
    warmup: int  # rounds run first and not counted
    wave: int = 200  # asks started at once while filling up


FULL = Sizes(pending=10_000, samples=2_000, warmup=200)
SMOKE = Sizes(pending=20, samples=30, warmup=5, wave=20)


async def fill(
    slack: FakeSlack, provider: SlackProvider, numbers: range, wave: int
) -> tuple[list[asyncio.Task[None]], dict[int, asyncio.Future[float]]]:
    """Start one agent per number, blocked in ``ask()``; each resolves its future with the
    ``perf_counter()`` at which ``ask()`` returned."""
    loop = asyncio.get_running_loop()
    answered = {n: loop.create_future() for n in numbers}

    async def agent(number: int) -> None:
        await provider.ask(request(number))
        answered[number].set_result(time.perf_counter())

    tasks: list[asyncio.Task[None]] = []
    for start in range(numbers.start, numbers.stop, wave):
        batch = range(start, min(start + wave, numbers.stop))
        tasks += [asyncio.create_task(agent(n)) for n in batch]
        # Waves keep the number of Web API calls in flight bounded.
        expected = batch.stop - numbers.start
        await slack.wait_until(lambda e=expected: len(slack.messages) >= e, timeout=120)
    return tasks, answered


async def measure(sizes: Sizes) -> dict[str, Any]:
    """Run the interleaved rounds; the figures."""
    async with FakeSlack(signing_secret=SECRET) as slack:
        provider = SlackProvider(
            client=web_client(slack), signing_secret=SECRET, channel=CHANNEL, timeout=None
        )
        bolt = bare_bolt_app(web_client(slack))
        runners = []
        urls: dict[str, str] = {}
        for name, app in (
            ("relay", provider.web_app()),
            ("bolt", bolt.web_app(path="/slack/events")),
            ("floor", floor_app()),
        ):
            runner, port = await serve(app)
            runners.append(runner)
            urls[name] = f"http://127.0.0.1:{port}/slack/events"
        rounds = sizes.warmup + sizes.samples
        started = time.perf_counter()
        tasks, answered = await fill(slack, provider, range(rounds + sizes.pending), sizes.wave)
        fill_seconds = time.perf_counter() - started
        by_number: dict[int, FakeMessage] = {}
        for message in slack.messages:
            match = _NUMBER.search(message.text)
            if match:
                by_number[int(match.group(1))] = message
        samples: dict[str, list[float]] = {"relay": [], "relay_ack": [], "bolt": [], "floor": []}
        order = ["relay", "bolt", "floor"]
        try:
            async with aiohttp.ClientSession() as http:
                for k in range(rounds):
                    body = click_body(slack, by_number[k])
                    for name in order[k % 3 :] + order[: k % 3]:
                        headers = signed_headers(body)
                        sent = time.perf_counter()
                        async with http.post(urls[name], data=body, headers=headers) as response:
                            await response.read()
                            acked = time.perf_counter()
                            if response.status != 200:
                                raise RuntimeError(f"{name} answered HTTP {response.status}")
                        if name == "relay":
                            returned = await asyncio.wait_for(answered[k], 5.0)
                            await provider.drain()  # its chat.update, off the agent's path
                            if k >= sizes.warmup:
                                samples["relay"].append(returned - sent)
                                samples["relay_ack"].append(acked - sent)
                        elif k >= sizes.warmup:
                            samples[name].append(acked - sent)
            pending = await provider.store.count_pending()
        finally:
            # Closing withdraws every pending ask, a chat.update each: send those to a stub,
            # as FakeSlack validates and copies every update (slow for 10,000 of them).
            api = WebApiStub()
            stub, stub_port = await serve(api.app)
            runners.append(stub)
            provider.client.base_url = f"http://127.0.0.1:{stub_port}/api/"
            await provider.aclose()
            await asyncio.gather(*tasks, return_exceptions=True)
            for runner in runners:
                await runner.cleanup()
    figures = {name: latency_ms(values) for name, values in samples.items()}
    return {
        "sizes": sizes.__dict__,
        "pending_during_run": {"at_start": rounds + sizes.pending, "at_end": pending},
        "fill_seconds": fill_seconds,
        "latency": figures,
        "ratios": {
            "relay_over_bolt_p50": figures["relay"]["p50_ms"] / figures["bolt"]["p50_ms"],
            "relay_over_floor_p50": figures["relay"]["p50_ms"] / figures["floor"]["p50_ms"],
            "relay_over_bolt_p99": figures["relay"]["p99_ms"] / figures["bolt"]["p99_ms"],
        },
    }


def report(result: dict[str, Any], *, smoke: bool) -> dict[str, Any]:
    """Print the tables; the targets and whether each is met."""
    latency, ratios = result["latency"], result["ratios"]
    names = {
        "relay": "relay: click -> ask() returns",
        "relay_ack": "relay: click -> HTTP ack",
        "bolt": "bare Bolt: click -> HTTP ack",
        "floor": "floor: click -> HTTP 200",
    }
    rows = [
        [label, f["n"], f["p50_ms"], f["p90_ms"], f["p99_ms"], f["max_ms"]]
        for key, label in names.items()
        for f in [latency[key]]
    ]
    pending = result["pending_during_run"]
    print_table(
        f"Click to answer ({pending['at_start']:,} -> {pending['at_end']:,} asks pending)",
        ["path", "n", "p50 ms", "p90 ms", "p99 ms", "max ms"],
        rows,
    )
    targets = {
        "relay / bare Bolt at p50 <= 1.0": (ratios["relay_over_bolt_p50"], 1.0),
        "relay / floor at p50 <= 1.5": (ratios["relay_over_floor_p50"], 1.5),
        "relay p99 <= 10 ms": (latency["relay"]["p99_ms"], 10.0),
    }
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
    """Run the benchmark and write ``bench/results/click_latency.json``."""
    args = arguments(__doc__ or "")
    result = asyncio.run(measure(SMOKE if args.smoke else FULL))
    result["targets"] = report(result, smoke=args.smoke)
    write_json("click_latency" + ("_smoke" if args.smoke else ""), {"smoke": args.smoke, **result})


if __name__ == "__main__":
    main()
