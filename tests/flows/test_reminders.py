"""Flow: reminders in the thread of a pending ask, never more than asked, none after the end,
and exactly once across replicas, also when a replica dies between claiming and sending."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from relay import AskUserQuestionItem, AskUserQuestionRequest, ErrorCode, UserInteractionError
from relay.server.api import read_slack_section
from relay.slack import SlackProvider, SlackTarget
from relay.store.redis import RedisStore
from relay.testing import FakeMessage, FakeSlack
from tests.server_env import TOKEN, relay_server
from tests.slack_env import question, slack_env


def reminders(env_messages: list[FakeMessage]) -> list[FakeMessage]:
    return [m for m in env_messages if "Reminder" in m.text]


def ask(*questions: AskUserQuestionItem) -> AskUserQuestionRequest:
    return AskUserQuestionRequest(questions)


def target(**kw: object) -> SlackTarget:
    return SlackTarget(
        "C0APPROVALS",
        allowed_users=["U0ALICE"],
        allowed_groups=["S0OPS"],
        timeout=30,
        **kw,  # type: ignore[arg-type]
    )


async def test_reminders_mention_who_may_answer_with_the_time_left_and_stop_at_the_count() -> None:
    routed = target(remind_after=0.2, reminders=2)
    async with slack_env(route=lambda _: routed) as env:
        env.slack.usergroups = {"S0OPS": ["U0BOB"]}
        task = env.ask(question())
        message = await env.message()
        first = await env.message(2)
        second = await env.message(3)
        for number, reply in enumerate((first, second), start=1):
            assert reply.thread_ts == message.ts
            assert reply.text.startswith(f":alarm_clock: Reminder {number} of 2. <@U0ALICE>,")
            assert "<!subteam^S0OPS>" in reply.text
            assert "It times out in 2" in reply.text  # about 29 s left, shown as "29 s"
        # A control ask posted now reminds after 0.6 s: by then a third would have come.
        control = target(remind_after=0.6, reminders=1)
        await env.provider.start(ask(question("other")), target=control)
        await env.slack.wait_until(lambda: len(reminders(env.slack.messages)) == 3, timeout=5)
        assert [m.thread_ts for m in reminders(env.slack.messages)][:2] == [message.ts] * 2
        assert not task.done()


async def test_no_reminder_after_the_ask_is_answered() -> None:
    async with slack_env() as env:
        task = asyncio.ensure_future(
            env.provider.start(ask(question()), target=target(remind_after=0.4, reminders=3))
        )
        await task
        message = await env.message()
        await env.slack.click(message, "prod", user="U0ALICE")
        await env.slack.wait_until(lambda: message.updated)
        started = time.monotonic()
        await env.provider.start(
            ask(question("other")), target=target(remind_after=0.8, reminders=1)
        )
        await env.slack.wait_until(lambda: len(reminders(env.slack.messages)) == 1, timeout=5)
        assert time.monotonic() - started >= 0.7
        (only,) = reminders(env.slack.messages)
        assert only.thread_ts != message.ts  # the control's: the answered ask sent none


async def test_two_replicas_send_each_reminder_once(redis_url: str) -> None:
    async with slack_env(store=RedisStore(url=redis_url, prefix="rem2:")) as env:
        other = SlackProvider(
            client=AsyncWebClient(token=env.slack.bot_token, base_url=env.slack.base_url),
            channel="C0APPROVALS",
            store=RedisStore(url=redis_url, prefix="rem2:"),
            sweep_interval=0.05,
        )
        other.start_expiry()
        try:
            record = await env.provider.start(
                ask(question()), target=target(remind_after=0.3, reminders=3)
            )
            parent = await env.message()
            await env.slack.wait_until(lambda: len(reminders(env.slack.messages)) == 3, timeout=5)
            control = await env.provider.start(
                ask(question("other")), target=target(remind_after=0.6, reminders=1)
            )
            await env.slack.wait_until(lambda: len(reminders(env.slack.messages)) == 4, timeout=5)
            mine = [m for m in reminders(env.slack.messages) if m.thread_ts == parent.ts]
            assert [m.text.split(".")[0] for m in mine] == [
                f":alarm_clock: Reminder {n} of 3" for n in (1, 2, 3)
            ]
            assert record.id != control.id
        finally:
            await other.aclose()
            await other.store.aclose()


async def test_a_replica_that_dies_after_claiming_a_reminder_leaves_it_to_another(
    redis_url: str,
) -> None:
    dead = RedisStore(url=redis_url, prefix="rem3:")
    async with slack_env(
        store=RedisStore(url=redis_url, prefix="rem3:"), reminder_lease=0.5
    ) as env:
        recorded = asyncio.Event()
        env.provider.events.subscribe(lambda e: recorded.set() if e.name == "reminded" else None)
        try:
            record = await env.provider.start(
                ask(question()), target=target(remind_after=1.5, reminders=1)
            )
            due = await dead.next_reminder()  # (1.5 s off: this replica claims first)
            assert due is not None
            # The dying replica claims it at its due time, then never sends it.
            claimed = await dead.claim_reminders(now=due, lease=0.6)
            assert claimed == [(record.id, 0)]
            sent = await env.slack.wait_for_message(
                count=1, where=lambda m: "Reminder" in m.text, timeout=5
            )
            assert time.time() >= due + 0.6 - 0.05  # only once the dead claim had lapsed
            assert sent.text.startswith(":alarm_clock: Reminder 1 of 1.")
            # ...and exactly once: the dead replica's late record changes nothing.
            await asyncio.wait_for(recorded.wait(), 5)
            assert not await dead.reminded(ask_id=record.id, sent=0, next_at=None)
            assert len(reminders(env.slack.messages)) == 1
        finally:
            await dead.aclose()


@pytest.mark.parametrize(
    ("section", "fragment"),
    [
        ({"remind_after_s": 0}, "slack.remind_after_s must be a positive number"),
        ({"remind_after_s": "soon"}, "slack.remind_after_s must be a positive number"),
        # (a command line's float: relay ask --remind-after nan)
        ({"remind_after_s": float("nan")}, "slack.remind_after_s must be a positive number"),
        ({"reminders": 0}, "slack.reminders must be a whole number from 1 to 10"),
        ({"reminders": 11}, "slack.reminders must be a whole number from 1 to 10"),
        ({"reminders": True}, "slack.reminders must be a whole number from 1 to 10"),
    ],
)
def test_the_api_refuses_impossible_reminders(section: dict[str, object], fragment: str) -> None:
    with pytest.raises(UserInteractionError) as info:
        read_slack_section(section)
    assert info.value.code == ErrorCode.BAD_REQUEST
    assert fragment in str(info.value)


async def test_relay_serve_reminds_and_relay_ask_takes_the_flags() -> None:
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack) as relay,
    ):
        body = {
            "questions": [{"id": "go", "question": "Ship?", "options": [{"label": "Ship"}]}],
            "slack": {"remind_after_s": 0.3, "reminders": 1, "allowed_users": ["U0ALICE"]},
        }
        status, created = await relay.request("POST", "/v1/asks", json=body)
        assert status == 201
        message = await slack.wait_for_message()
        reply = await slack.wait_for_message(count=2)
        assert reply.thread_ts == message.ts
        assert reply.text.startswith(":alarm_clock: Reminder 1 of 1. <@U0ALICE>: ")
        await relay.request("DELETE", f"/v1/asks/{created['id']}")

        process = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "relay.cli", "ask", "-q", "Ship 1.4?", "-o", "Ship", "-o", "Reject"),
            *("--approvals", "2", "--veto", "Reject", "--approve", "Ship"),
            *("--remind-after", "0.3", "--reminders", "2"),
            env={**relay.env, "RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        ask_message = await slack.wait_for_message(count=3, timeout=30)  # a process starts
        assert "Needs 2 votes" in str(ask_message.blocks)
        await slack.wait_until(
            lambda: len([m for m in slack.messages if m.thread_ts == ask_message.ts]) == 2
        )
        await slack.click(ask_message, "Ship", user="U0ALICE")
        await slack.wait_for_ephemeral(user="U0ALICE")
        await slack.click(ask_message, "Ship", user="U0BOB")
        out, _ = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 0  # two people chose the approve label
        assert json.loads(out) == {"answers": [{"id": "answer", "selected": ["Ship"]}]}
