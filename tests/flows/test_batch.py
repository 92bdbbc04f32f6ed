"""Flow: several questions in one ask, each in its own message, answered or skipped."""

from __future__ import annotations

from tests.slack_env import elements, question, result, slack_env


async def test_each_message_updates_alone_and_the_ask_resolves_when_all_are_answered() -> None:
    async with slack_env() as env:
        task = env.ask(
            question("env", "Deploy where?"),
            question("when", "When?", "now", "tonight"),
            question("notify", "Notify?", "yes", "no"),
        )
        first, second, third = [await env.message(i) for i in (1, 2, 3)]
        assert "question 2 of 3" in str(second.blocks)

        await env.slack.click(second, "tonight", user="U0BOB")
        await env.slack.wait_until(lambda: second.updated)
        assert not first.updated
        assert not third.updated
        assert not task.done()

        await env.slack.skip(third, user="U0ALICE")
        await env.slack.click(first, "prod", user="U0ALICE")
        answer = await result(task)
        assert answer.to_dict() == {
            "answers": [
                {"id": "env", "selected": ["prod"]},
                {"id": "when", "selected": ["tonight"]},
                {"id": "notify", "selected": []},
            ]
        }
        by = [a.answered_by.id if a.answered_by else None for a in answer.answers]
        assert by == ["U0ALICE", "U0BOB", "U0ALICE"]
        await env.slack.wait_until(lambda: third.updated)
        assert "Skipped by <@U0ALICE>" in str(third.blocks)


async def test_a_single_question_has_no_skip_button() -> None:
    async with slack_env() as env:
        env.ask(question())
        message = await env.message()
        texts = [e.get("text", {}).get("text") for e in elements(message)]
        assert "Skip" not in texts
