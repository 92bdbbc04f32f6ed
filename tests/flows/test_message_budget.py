"""Flow: a large plan review posts, answers and updates within what Slack takes.

Slack refuses a message at about 13,200 characters of block text in total
(``msg_blocks_too_long``, slackapi/bolt-js#2509), even when every block is within its own
limit; FakeSlack refuses it too. A 12,000-character plan with a 3,000-character question used
to render ~15,000 and fail to post.
"""

from __future__ import annotations

from relay import AskUserQuestionItem, plan_review_question
from relay.testing import check_blocks
from tests.slack_env import result, slack_env

PLAN = "# Plan\n\n" + "".join(f"{i}. migrate table {i} and check the counts\n" for i in range(300))


def big_review() -> AskUserQuestionItem:
    review = plan_review_question(PLAN[:12_000])
    return AskUserQuestionItem(
        id=review.id,
        question="Please review this plan carefully before approving. " * 57,
        header=review.header,
        detail=review.detail,
        options=review.options,
        intent=review.intent,
    )


async def test_a_large_plan_review_is_posted_answered_and_updated() -> None:
    question = big_review()
    assert len(question.question) > 2_900
    assert len(question.detail or "") == 12_000
    async with slack_env() as env:
        task = env.ask(question)
        message = await env.message()
        reply = await env.message(2)
        assert reply.thread_ts == message.ts
        shown = [b["text"] for m in (message, reply) for b in m.blocks if b["type"] == "markdown"]
        assert "".join(shown) == PLAN[:12_000]  # nothing cut: it continues in the thread

        await env.slack.type(message, "also back up first " * 150, user="U0ALICE")
        await env.slack.press_enter(message, user="U0ALICE")
        answer = await result(task)
        assert answer.answers[0].custom == "also back up first " * 150
        update = await env.slack.wait_for_call("chat.update")
        assert update.ok, update.response  # the final update fits as well
        assert check_blocks(message.blocks) is None
        assert not [c for c in env.slack.calls if not c.ok]
