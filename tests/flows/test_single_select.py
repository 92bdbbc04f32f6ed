"""Flow: a single-select question answered by clicking one button."""

from __future__ import annotations

from relay import AgentRef
from tests.slack_env import CHANNEL, question, result, slack_env


async def test_a_click_answers_the_waiting_agent_and_locks_the_message() -> None:
    async with slack_env() as env:
        task = env.ask(question(), agent=AgentRef("deployer", "Deploy bot"))
        message = await env.message()
        assert message.channel == CHANNEL
        assert "Deploy where?" in message.text

        click = await env.slack.click(message, "prod", user="U0ALICE")
        assert click.status == 200

        answer = await result(task)
        assert answer.to_dict() == {"answers": [{"id": "env", "selected": ["prod"]}]}
        item = answer.answers[0]
        assert item.answered_by is not None
        assert item.answered_by.id == "U0ALICE"
        assert item.answered_at is not None

        update = await env.slack.wait_for_call("chat.update")
        assert update.args["ts"] == message.ts
        final = message.blocks
        assert not [b for b in final if b["type"] in ("actions", "input")]
        assert "Answered by <@U0ALICE>" in str(final)
        assert "*prod*" in str(final)
