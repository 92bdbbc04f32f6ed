"""Flow: an ask that names a default takes it when nobody answers in time, and says so."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from relay import ErrorCode, UserInteractionError
from relay.asks.events import AskEvent, Events
from relay.asks.lifecycle import AskLifecycle
from relay.seam.questions import AskUserQuestionRequest
from relay.store import AskRecord, MemoryStore, Target, utcnow
from relay.testing import FakeSlack
from tests.server_env import TOKEN, relay_server
from tests.slack_env import ask_id_of, question, slack_env


def inputs(blocks: list[dict[str, object]]) -> list[dict[str, object]]:
    return [b for b in blocks if b["type"] in ("actions", "input")]


async def test_nobody_answers_and_the_default_is_taken_by_nobody() -> None:
    async with slack_env(timeout=0.4) as env:
        seen: list[AskEvent] = []
        env.provider.events.subscribe(seen.append)
        task = env.ask(question(default="staging"))
        message = await env.message()
        assert "then takes *staging*" in str(message.blocks)
        answer = await asyncio.wait_for(task, 5)
        item = answer.answers[0]
        assert (item.selected, item.defaulted, item.answered_by) == (("staging",), True, None)
        assert answer.to_dict() == {
            "answers": [{"id": "env", "selected": ["staging"], "defaulted": True}]
        }
        await env.slack.wait_until(lambda: message.updated)
        assert "No answer in 0.4 s; defaulted to staging" in str(message.blocks)
        assert inputs(message.blocks) == []
        record = await env.provider.store.get(ask_id=ask_id_of(message))
        assert record is not None
        assert record.defaulted
        assert [e.name for e in seen if e.name in ("defaulted", "timed_out", "answered")] == [
            "defaulted"
        ]


async def test_a_click_before_the_deadline_wins_over_the_default() -> None:
    async with slack_env(timeout=60) as env:
        task = env.ask(question(default="staging"))
        message = await env.message()
        await env.slack.click(message, "prod", user="U0ALICE")
        item = (await asyncio.wait_for(task, 5)).answers[0]
        assert (item.selected, item.defaulted) == (("prod",), False)
        assert item.answered_by is not None


async def test_a_batch_mixes_a_persons_answer_and_a_default() -> None:
    async with slack_env(timeout=0.6) as env:
        task = env.ask(question("a", default="staging"), question("b", default="prod"))
        first = await env.message(1)
        second = await env.message(2)
        await env.slack.click(first, "prod", user="U0ALICE")
        answer = await asyncio.wait_for(task, 5)
        a, b = answer.answers
        assert (a.selected, a.defaulted, a.answered_by is not None) == (("prod",), False, True)
        assert (b.selected, b.defaulted, b.answered_by) == (("prod",), True, None)
        await env.slack.wait_until(lambda: second.updated)
        assert "defaulted to prod" in str(second.blocks)
        assert "Answered by" in str(first.blocks)


async def test_without_a_default_for_every_open_question_the_ask_times_out() -> None:
    async with slack_env(timeout=0.3) as env:
        task = env.ask(question("a", default="staging"), question("b"))
        await env.message(2)
        with pytest.raises(UserInteractionError) as info:
            await asyncio.wait_for(task, 5)
        assert (info.value.code, info.value.reason) == (ErrorCode.ASK_ABORTED, "timed_out")


async def test_a_click_after_the_default_is_told_so() -> None:
    async with slack_env(timeout=0.3) as env:
        task = env.ask(question(default="staging"))
        message = await env.message()
        await asyncio.wait_for(task, 5)
        await env.slack.click(message, "prod", user="U0ALICE", version=0)
        notice = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "took its default" in notice.args["text"]


async def test_a_default_that_is_no_option_is_refused_before_anything_is_posted() -> None:
    async with slack_env() as env:
        with pytest.raises(UserInteractionError) as info:
            await env.ask(question(default="Hold"))
        assert info.value.code == ErrorCode.BAD_REQUEST
        assert 'questions[0].default "Hold" names none of the options' in str(info.value)
        assert env.slack.calls_to("chat.postMessage") == []


async def test_two_replicas_taking_the_default_at_once_take_it_once() -> None:
    """Both replicas find the ask due; the store's per-question claim lets one complete it."""
    store = MemoryStore()
    events = Events()
    seen: list[AskEvent] = []
    events.subscribe(seen.append)
    ended: list[AskRecord] = []
    one, two = (AskLifecycle(store=store, events=events, on_end=ended.append) for _ in range(2))
    request = AskUserQuestionRequest(
        (question("a", default="staging"), question("b", default="prod"))
    )
    record = AskRecord(
        id="ask-1",
        request=request,
        target=Target(channel="C1", timeout=1.0),
        created_at=utcnow(),
        deadline=0.0,
        messages=(None, None),
        responses=(None, None),
    )
    await one.create(record, held=False)
    finals = await asyncio.gather(one.expire(record.id), two.expire(record.id))
    assert all(f is not None and f.defaulted for f in finals)
    assert [e.name for e in seen].count("defaulted") == 1
    assert len(ended) == 1


async def test_the_api_record_and_relay_ask_approve_never_count_a_default() -> None:
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack) as relay,
    ):
        body = {
            "questions": [
                {
                    "id": "go",
                    "question": "Ship?",
                    "options": [{"label": "Ship"}, {"label": "Hold"}],
                    "default": "Hold",
                }
            ],
            "slack": {"timeout_s": 0.5},
        }
        status, created = await relay.request("POST", "/v1/asks?wait=10", json=body)
        assert status in (200, 201)
        record = created
        if record["status"] == "pending":
            _, record = await relay.request("GET", f"/v1/asks/{record['id']}?wait=10")
        assert record["status"] == "answered"
        assert record["defaulted"] is True
        assert record["answer"] == {
            "answers": [{"id": "go", "selected": ["Hold"], "defaulted": True}]
        }
        assert "answered_by" not in record
        assert record["responses"][0]["defaulted"] is True
        assert "answered_by" not in record["responses"][0]

        process = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "relay.cli", "ask", "-q", "Ship?", "-o", "Ship", "-o", "Hold"),
            *("--default", "Ship", "--timeout", "0.5", "--approve", "Ship"),
            env={**relay.env, "RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 1  # the default is the approve label, yet no approval
        assert json.loads(out)["answers"][0] == {
            "id": "answer",
            "selected": ["Ship"],
            "defaulted": True,
        }
        assert "nobody answered in time" in err.decode()
