"""Flow: labels longer than a button and details longer than a message come back whole."""

from __future__ import annotations

from relay import AskUserQuestionItem, AskUserQuestionOption
from tests.slack_env import result, slack_env

LONG = "Roll back the payments service to the last green build and page the on-call " * 3


async def test_a_200_character_label_is_answered_exactly() -> None:
    labels = (LONG[:200], "Leave it running")
    q = AskUserQuestionItem(
        id="act", question="What now?", options=tuple(AskUserQuestionOption(x) for x in labels)
    )
    async with slack_env() as env:
        task = env.ask(q)
        message = await env.message()
        # Cut on its button (numbered, and listed whole under the question): found by what
        # a human sees of it.
        await env.slack.click(message, "1. " + LONG[:200], user="U0ALICE")
        answer = await result(task)
        assert answer.answers[0].selected == (LONG[:200],)
        assert len(answer.answers[0].selected[0]) == 200


async def test_a_long_detail_continues_in_the_thread_and_nothing_is_cut() -> None:
    detail = "# Plan\n\n" + "".join(f"{i}. step number {i} of the plan\n" for i in range(1200))
    assert len(detail) > 30_000
    q = AskUserQuestionItem(id="ok", question="Proceed?", detail=detail)
    async with slack_env() as env:
        env.ask(q)
        message = await env.message()
        replies = [await env.message(n) for n in (2, 3, 4, 5)]  # 10,000 characters each
        assert all(r.thread_ts == message.ts for r in replies)
        shown = [
            b["text"] for m in (message, *replies) for b in m.blocks if b["type"] == "markdown"
        ]
        assert "".join(shown) == detail
