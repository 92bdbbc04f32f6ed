"""Slack API economy: Web API calls per answered question, and posting under a rate limit.

1. Calls per answered question: agents ask one-question and three-question asks through a
   ``SlackProvider`` served over HTTP; a simulated human answers every question with a
   click; every Web API call the fake Slack answered is counted by method.
2. Rate limit: the fake answers ``chat.postMessage`` above 1 message per second per channel
   with HTTP 429 and ``Retry-After``, as Slack does; 200 asks go to one channel at once. All
   must be posted, none lost, in about 199 s (the first post is free, then one per second).

    .venv/bin/python -m bench.slack_economy [--smoke]
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bench.common import (
    CHANNEL,
    SECRET,
    USER,
    arguments,
    bench_slack,
    first_button,
    print_table,
    question,
    serve,
    verdict,
    web_client,
    write_json,
)
from relay import AskUserQuestionAnswer, AskUserQuestionRequest
from relay.asks.events import AskEvent
from relay.slack import SlackProvider

RATE = 1.0  # chat.postMessage per second per channel


@dataclass(frozen=True)
class Sizes:
    """How much to measure."""

    single: int  # one-question asks answered
    batches: int  # three-question asks answered
    limited: int  # asks posted to one rate-limited channel


FULL = Sizes(single=100, batches=50, limited=200)
SMOKE = Sizes(single=3, batches=2, limited=3)


async def calls_per_question(sizes: Sizes) -> dict[str, Any]:
    """Answer every question of ``single`` + ``batches`` asks; the calls made, by method."""
    async with bench_slack(signing_secret=SECRET) as slack:
        provider = SlackProvider(client=web_client(slack), signing_secret=SECRET, channel=CHANNEL)
        runner, port = await serve(provider.web_app())
        slack.interactivity_url = f"http://127.0.0.1:{port}/slack/events"
        try:
            requests = [
                AskUserQuestionRequest(questions=(question(n),)) for n in range(sizes.single)
            ]
            requests += [
                AskUserQuestionRequest(
                    questions=tuple(question(1000 * (b + 1) + i) for i in range(3))
                )
                for b in range(sizes.batches)
            ]
            questions = sum(len(r.questions) for r in requests)
            tasks = [asyncio.create_task(provider.ask(r)) for r in requests]
            await slack.wait_until(lambda: len(slack.messages) >= questions, timeout=60)
            for message in list(slack.messages):
                result = await slack.click(
                    message, first_button(message)["text"]["text"], user=USER
                )
                if not result.ok:
                    raise RuntimeError(f"the click was answered {result.status}")
            answers: list[AskUserQuestionAnswer] = await asyncio.wait_for(
                asyncio.gather(*tasks), 60
            )
            await provider.drain()  # every chat.update has been sent
        finally:
            await provider.aclose()
            await runner.cleanup()
        by_method = Counter(call.method for call in slack.calls)
        answered = sum(len(a.answers) for a in answers)
    return {
        "asks": len(requests),
        "questions": questions,
        "answered_questions": answered,
        "calls": dict(by_method),
        "posts_per_question": by_method["chat.postMessage"] / questions,
        "updates_per_question": by_method["chat.update"] / questions,
        "other_calls": {
            m: n for m, n in by_method.items() if m not in ("chat.postMessage", "chat.update")
        },
    }


async def under_rate_limit(sizes: Sizes) -> dict[str, Any]:
    """Post ``limited`` asks to one channel limited to 1 post/s; how it went."""
    async with bench_slack(signing_secret=SECRET) as slack:
        slack.rate_limit("chat.postMessage", per_channel_per_second=RATE)
        provider = SlackProvider(client=web_client(slack), signing_secret=SECRET, channel=CHANNEL)
        posted: list[float] = []
        failed: list[str] = []
        settled = asyncio.Event()  # every ask posted or failed

        def observe(event: AskEvent) -> None:
            if event.name == "posted":
                posted.append(time.perf_counter())
            elif event.name == "failed":
                failed.append(str(event.fields.get("detail")))
            if len(posted) + len(failed) >= sizes.limited:
                settled.set()

        provider.events.subscribe(observe)
        began = time.perf_counter()
        tasks = [
            asyncio.create_task(provider.ask(AskUserQuestionRequest(questions=(question(n),))))
            for n in range(sizes.limited)
        ]
        try:
            # Every ask ends up posted or failed; the bound is generous (ideal + 50%).
            limit = (sizes.limited / RATE) * 1.5 + 30
            await asyncio.wait_for(settled.wait(), limit)
            pending = await provider.store.count_pending()
        finally:
            await provider.aclose()
            await asyncio.gather(*tasks, return_exceptions=True)
        calls = slack.calls_to("chat.postMessage")
    seconds = (max(posted) - began) if posted else float("nan")
    ideal = (sizes.limited - 1) / RATE
    return {
        "asks": sizes.limited,
        "posted": len(posted),
        "lost": sizes.limited - len(posted),
        "failed_reasons": dict(Counter(failed)),
        "pending_after": pending,
        "messages_in_slack": len({(c.response.get("ts")) for c in calls if c.ok}),
        "post_attempts": len(calls),
        "rate_limited_429": sum(1 for c in calls if c.status == 429),
        "seconds": seconds,
        "ideal_seconds": ideal,
        "seconds_over_ideal": seconds / ideal if ideal else float("nan"),
    }


def report(result: dict[str, Any], *, smoke: bool) -> dict[str, Any]:
    """Print the tables; the targets and whether each is met."""
    calls, limited = result["calls"], result["rate_limit"]
    print_table(
        f"Web API calls for {calls['questions']} answered questions ({calls['asks']} asks)",
        ["method", "calls", "per question"],
        [[m, n, n / calls["questions"]] for m, n in sorted(calls["calls"].items())],
    )
    print_table(
        f"{limited['asks']} asks to one channel at {RATE:g} post/s",
        ["figure", "value"],
        [
            ["posted", limited["posted"]],
            ["lost (failed to post)", limited["lost"]],
            ["messages in Slack", limited["messages_in_slack"]],
            ["chat.postMessage attempts", limited["post_attempts"]],
            ["  answered 429", limited["rate_limited_429"]],
            ["seconds to post all", limited["seconds"]],
            ["ideal seconds", limited["ideal_seconds"]],
            ["seconds / ideal", limited["seconds_over_ideal"]],
        ],
    )
    per_process = set(calls["other_calls"]) <= {"auth.test"} and all(
        n <= 1 for n in calls["other_calls"].values()
    )
    economy_ok = (
        calls["posts_per_question"] == 1.0 and calls["updates_per_question"] == 1.0 and per_process
    )
    limit_ok = limited["lost"] == 0 and limited["seconds_over_ideal"] <= 1.1
    targets = {
        "1 post + 1 update per question, nothing else per ask": (
            f"{calls['posts_per_question']:g} + {calls['updates_per_question']:g};"
            f" other: {calls['other_calls'] or 'none'}",
            economy_ok,
        ),
        "rate limit: all posted, none lost, time <= 1.1 x ideal": (
            f"{limited['posted']}/{limited['asks']} in {limited['seconds']:.1f} s"
            f" ({limited['seconds_over_ideal']:.2f} x)",
            limit_ok,
        ),
    }
    print_table(
        "Targets",
        ["target", "measured", "verdict"],
        [[name, v, verdict(None if smoke else ok)] for name, (v, ok) in targets.items()],
    )
    return {
        name: {"measured": v, "met": None if smoke else ok} for name, (v, ok) in targets.items()
    }


async def measure(sizes: Sizes) -> dict[str, Any]:
    """Both parts."""
    return {
        "sizes": sizes.__dict__,
        "calls": await calls_per_question(sizes),
        "rate_limit": await under_rate_limit(sizes),
    }


def main() -> None:
    """Run the benchmark and write ``bench/results/slack_economy.json``."""
    args = arguments(__doc__ or "")
    result = asyncio.run(measure(SMOKE if args.smoke else FULL))
    result["targets"] = report(result, smoke=args.smoke)
    write_json("slack_economy" + ("_smoke" if args.smoke else ""), {"smoke": args.smoke, **result})


if __name__ == "__main__":
    main()
