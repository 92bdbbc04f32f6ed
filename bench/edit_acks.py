"""Acks of the "Edit…" click and of the edit form's submit, when Slack itself is slow.

Slack wants every interaction acknowledged within 3 s (else the user sees an error) and a
``trigger_id`` used within 3 s. Each row is a fresh ``FakeSlack`` and ``SlackProvider`` (an
approval answerable by one user group's members, cold group cache unless said), one
interaction timed from sending it to its HTTP response (or Socket Mode ack), next to bare
Bolt's ack of the same click in the same run (the baseline: a listener that only acks).

    .venv/bin/python -m bench.edit_acks [--smoke]

``--smoke`` divides every delay by 10 and judges nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from bench.common import (
    CHANNEL,
    SECRET,
    arguments,
    bare_bolt_app,
    bench_slack,
    print_table,
    report_targets,
    serve,
    web_client,
    write_json,
)
from relay import (
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    UserInteractionService,
)
from relay.seam.intents import ToolEdit
from relay.slack import SlackProvider
from relay.slack.intake.app import build_web_app
from relay.testing import FakeMessage, FakeSlack

GROUP = "S0DEPLOYERS"
USER = "U0BOB"
ACK_LIMIT_MS = 3000.0


@dataclass
class Env:
    slack: FakeSlack
    provider: SlackProvider
    message: FakeMessage
    task: asyncio.Task[Any]


def _approval() -> AskUserQuestionItem:
    intent = AskUserQuestionIntent(
        approve="Allow",
        kind="tool-approval",
        edit=ToolEdit(tool="Bash", input={"command": "terraform apply"}),
    )
    return AskUserQuestionItem(
        id="call",
        question="Allow Bash?",
        detail="```terraform apply```",
        options=(AskUserQuestionOption("Allow"), AskUserQuestionOption("Deny")),
        intent=intent,
    )


@asynccontextmanager
async def _env(*, warm: bool, socket_mode: bool = False) -> AsyncIterator[Env]:
    async with bench_slack(signing_secret=SECRET) as slack:
        slack.add_user(USER, name="bob")
        slack.add_channel(CHANNEL)
        slack.usergroups = {GROUP: [USER]}
        provider = SlackProvider(
            client=web_client(slack),
            signing_secret=SECRET,
            channel=CHANNEL,
            allowed_users=set(),
            allowed_groups={GROUP},
        )
        runner, port = await serve(provider.web_app())
        slack.interactivity_url = f"http://127.0.0.1:{port}/slack/events"
        if socket_mode:
            slack.interactivity_url = None
            await provider.connect_socket_mode(slack.app_token)
            await slack.wait_for_socket()
        service = UserInteractionService()
        dispose = service.register_provider(provider)
        task = asyncio.ensure_future(service.ask(AskUserQuestionRequest(questions=(_approval(),))))
        try:
            message = await slack.wait_for_message(timeout=15)
            if warm:
                await provider.gatekeeper.warm([GROUP])
            else:
                provider.gatekeeper.forget()
            yield Env(slack=slack, provider=provider, message=message, task=task)
        finally:
            task.cancel()
            dispose()
            await provider.aclose()
            await runner.cleanup()


async def _timed(send: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    result = await send()
    return (time.perf_counter() - began) * 1000, result


async def _baseline(env: Env) -> float:
    """Bare Bolt's ack of the same Edit… click (its listener only acks)."""
    runner, port = await serve(build_web_app(bare_bolt_app(web_client(env.slack))))
    kept = env.slack.interactivity_url
    env.slack.interactivity_url = f"http://127.0.0.1:{port}/slack/events"
    try:
        ms, _ = await _timed(lambda: env.slack.click(env.message, "Edit…", user=USER))
    finally:
        env.slack.interactivity_url = kept
        await runner.cleanup()
    return ms


async def _final_view(env: Env, timeout: float = 40.0) -> str:
    """What the user's modal ends as: the form, a refusal, or nothing."""
    try:
        modal = await env.slack.wait_for_modal(user=USER, timeout=10)
        await env.slack.wait_until(
            lambda: "Then" in modal.labels() or "could not" in str(modal.top.blocks),
            timeout=timeout,
        )
    except TimeoutError:
        return "no modal"
    return "form" if "Then" in modal.labels() else "refusal"


async def _click(*, warm: bool, socket: bool = False, **fault: Any) -> list[Any]:
    async with _env(warm=warm, socket_mode=socket) as env:
        baseline = await _baseline(env)
        method = fault.pop("method", "usergroups.users.list")
        if fault:
            env.slack.fail(method, **fault)
        ms, clicked = await _timed(lambda: env.slack.click(env.message, "Edit…", user=USER))
        shown = await _final_view(env)
        opened = [c for c in env.slack.calls if c.method == "views.open"]
        trigger = "ok" if opened and opened[0].ok else (opened[0].error if opened else "-")
        return [baseline, ms, clicked.status, trigger, shown]


async def _submit(**fault: Any) -> list[Any]:
    async with _env(warm=True) as env:
        baseline = await _baseline(env)
        await env.slack.click(env.message, "Edit…", user=USER)
        modal = await env.slack.wait_for_modal(user=USER, timeout=10)
        await env.slack.wait_until(lambda: "Then" in modal.labels(), timeout=10)
        env.provider.gatekeeper.forget()
        env.slack.fail("usergroups.users.list", **fault)
        ms, result = await _timed(lambda: env.slack.submit_view(modal))
        recorded = "recorded" if env.task.done() else "not recorded"
        return [baseline, ms, result.status, "-", f"{result.outcome}, {recorded}"]


async def run(smoke: bool) -> dict[str, Any]:
    scale = 0.1 if smoke else 1.0
    lookup, opening = 4.0 * scale, 2.5 * scale
    rows: dict[str, list[Any]] = {
        "Edit…, warm cache": await _click(warm=True),
        f"Edit…, views.open {opening:g} s": await _click(
            warm=True, method="views.open", delay=opening
        ),
        f"Edit…, cold lookup {lookup:g} s": await _click(warm=False, delay=lookup, times=2),
        "Edit…, cold lookup 429": await _click(
            warm=False, status=429, retry_after=1, times=1 if smoke else 20
        ),
        f"Edit…, Socket Mode, cold lookup {lookup:g} s": await _click(
            warm=False, socket=True, delay=lookup, times=2
        ),
        f"submit, cold lookup {lookup:g} s": await _submit(delay=lookup),
        "submit, cold lookup 429": await _submit(
            status=429, retry_after=1, times=1 if smoke else 20
        ),
    }
    print_table(
        "Edit… and submit acks (ms), bare Bolt's ack of the same click alongside",
        ["case", "bare Bolt ack", "relay ack", "status", "views.open", "then"],
        [[name, *row] for name, row in rows.items()],
    )
    slowest = max(row[1] for row in rows.values())
    all_ok = all(row[2] == 200 for row in rows.values())
    targets = report_targets(
        {
            "slowest ack (ms)": (slowest, ACK_LIMIT_MS, slowest < ACK_LIMIT_MS),
            "acks answered 200": (float(all_ok), 1.0, all_ok),
        },
        smoke=smoke,
    )
    cases = {
        name: dict(zip(["bolt_ms", "relay_ms", "status", "views_open", "then"], row, strict=True))
        for name, row in rows.items()
    }
    return {"smoke": smoke, "cases": cases, "targets": targets}


def main() -> None:
    """Run the cases and write ``bench/results/edit_acks[_smoke].json``."""
    args = arguments(__doc__ or "")
    data = asyncio.run(run(args.smoke))
    write_json("edit_acks_smoke" if args.smoke else "edit_acks", data)


if __name__ == "__main__":
    main()
