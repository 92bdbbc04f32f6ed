"""An agent that asks before it deploys, with the seam in-process (``SlackProvider``).

It connects to Slack over Socket Mode (no public URL needed), asks where to deploy, and acts
on the answer. Run it with your Slack app's tokens:

    SLACK_BOT_TOKEN=xoxb-… SLACK_APP_TOKEN=xapp-… RELAY_CHANNEL=C… python examples/deploy_agent.py

``SLACK_API_URL`` points it at another Slack Web API, such as ``relay.testing.FakeSlack``
(that is how tests/test_examples.py runs it).
"""

from __future__ import annotations

import asyncio
import os

from relay import (
    AgentRef,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    UserInteractionError,
    UserInteractionService,
)
from relay.slack import SlackProvider


async def main() -> int:
    service = UserInteractionService()
    async with SlackProvider(
        token=os.environ["SLACK_BOT_TOKEN"],
        base_url=os.environ.get("SLACK_API_URL"),  # unset: Slack itself
        channel=os.environ["RELAY_CHANNEL"],
        timeout=600.0,
    ) as provider:
        service.register_provider(provider)
        await provider.connect_socket_mode(os.environ["SLACK_APP_TOKEN"])
        question = AskUserQuestionItem(
            id="env",
            header="Deploy gate",
            question="Deploy release 1.4 where?",
            options=(
                AskUserQuestionOption("staging"),
                AskUserQuestionOption("prod", "customers see it"),
                AskUserQuestionOption("nowhere", "cancel the deploy"),
            ),
        )
        try:
            answer = await service.ask(
                AskUserQuestionRequest((question,), agent=AgentRef("deployer", "Deploy bot"))
            )
        except UserInteractionError as exc:  # timed out, withdrawn, or Slack failed
            print(f"not deploying: {exc.code}: {exc}")
            return 1
    choice = answer.answers[0]
    who = choice.answered_by.name if choice.answered_by else "someone"
    if choice.custom is not None:
        print(f"not deploying: {who} wrote {choice.custom!r}")
        return 1
    target = choice.selected[0]
    if target == "nowhere":
        print(f"not deploying: {who} cancelled it")
        return 1
    print(f"deploying release 1.4 to {target} (approved by {who})")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
