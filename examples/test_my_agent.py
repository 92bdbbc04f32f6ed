"""Testing an agent against FakeSlack with relay's pytest plugin: no Slack workspace, no
setup code. The plugin comes with slack-relay; async tests need pytest-asyncio
(``pip install 'slack-relay[testing]'``). Run it with ``pytest examples/test_my_agent.py``."""

import asyncio

import pytest

from relay import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    UserInteractionService,
)


async def deploy_agent(service: UserInteractionService) -> str:
    """Your agent: asks before deploying, and does what it is told."""
    question = AskUserQuestionItem(
        id="go",
        question="Deploy 1.4 to prod?",
        options=(AskUserQuestionOption("Deploy"), AskUserQuestionOption("Hold")),
    )
    answer = await service.ask(AskUserQuestionRequest((question,)))
    return "deployed" if answer.answers[0].selected == ["Deploy"] else "held"


@pytest.mark.asyncio
async def test_the_agent_deploys_when_approved(fake_slack, relay_service):
    run = asyncio.create_task(deploy_agent(relay_service))
    message = await fake_slack.wait_for_message()  # no sleeps: waits for the post
    await fake_slack.click(message, "Deploy", user="U0ALICE")
    assert await run == "deployed"


@pytest.mark.asyncio
async def test_the_agent_holds_when_told_to(fake_slack, relay_service):
    run = asyncio.create_task(deploy_agent(relay_service))
    message = await fake_slack.wait_for_message()
    await fake_slack.click(message, "Hold", user="U0BOB")
    assert await run == "held"
    # Recorded by the time the ask returned: the message now says who answered.
    [update] = fake_slack.calls_to("chat.update")
    assert "Answered by" in str(update.args["blocks"])
