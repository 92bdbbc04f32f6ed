"""A SlackProvider served over real HTTP, talking to relay.testing's FakeSlack."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from relay import (
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    UserInteractionService,
)
from relay.slack import SlackProvider
from relay.testing import FakeMessage, FakeSlack

T = TypeVar("T")
SECRET = "test-signing-secret"
CHANNEL = "C0APPROVALS"
WORKSPACE_CHANNELS = (
    "C0APPROVALS", "C0CONTROL", "C0DEPLOYS", "C0GATES", "C0GENERAL", "C0ONCALL", "C0OPS",
    "C0PLANS", "C0X",
)  # fmt: skip
"""The channels of the flows' workspace besides the ask's own: any other is not found."""


@dataclass
class Env:
    """Everything a scenario test touches."""

    slack: FakeSlack
    provider: SlackProvider
    service: UserInteractionService
    tasks: list[asyncio.Task[AskUserQuestionAnswer]] = field(default_factory=list)

    def ask(
        self, *questions: AskUserQuestionItem, **kw: Any
    ) -> asyncio.Task[AskUserQuestionAnswer]:
        """Start an ask in the background, as an agent would."""
        request = AskUserQuestionRequest(questions=questions, **kw)
        task = asyncio.get_running_loop().create_task(self.service.ask(request))
        self.tasks.append(task)
        return task

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``coro`` in the background; it is collected when the environment closes."""
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.append(task)  # type: ignore[arg-type]
        return task

    async def message(self, count: int = 1) -> FakeMessage:
        """The count-th message the relay posted (waits for it)."""
        return await self.slack.wait_for_message(count=count)


@asynccontextmanager
async def slack_env(
    *,
    timeout: float | None = 900.0,
    allowed_users: Collection[str] | None = None,
    channel: str = CHANNEL,
    slack_options: dict[str, Any] | None = None,
    **provider_kw: Any,
) -> AsyncIterator[Env]:
    """Start a FakeSlack (with ``slack_options``) and a provider whose web app listens on a
    free loopback port."""
    async with FakeSlack(signing_secret=SECRET, **(slack_options or {})) as slack:
        for user, name in (("U0ALICE", "alice"), ("U0BOB", "bob"), ("U0EVE", "eve")):
            slack.add_user(user, name=name)
        # A closed workspace, as Slack's is: its channels exist, any other is not found.
        for known in (channel, *WORKSPACE_CHANNELS):
            if not known.startswith(("U", "W")):
                slack.add_channel(known)
        provider = SlackProvider(
            client=AsyncWebClient(token=slack.bot_token, base_url=slack.base_url),
            signing_secret=SECRET,
            channel=channel,
            timeout=timeout,
            allowed_users=allowed_users,
            **provider_kw,
        )
        runner = web.AppRunner(provider.web_app())
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        slack.interactivity_url = f"http://127.0.0.1:{port}/slack/events"
        service = UserInteractionService()
        dispose = service.register_provider(provider)
        env = Env(slack=slack, provider=provider, service=service)
        try:
            yield env
        finally:
            dispose()
            await provider.aclose()
            # Asks a test left pending end with "closed"; collect them so none leaks.
            await asyncio.gather(*env.tasks, return_exceptions=True)
            await runner.cleanup()


def question(
    id: str = "env",
    text: str = "Deploy where?",
    *labels: str,
    multi: bool = False,
    **kw: Any,
) -> AskUserQuestionItem:
    """A question with the given option labels (default: staging, prod)."""
    options = tuple(AskUserQuestionOption(label) for label in (labels or ("staging", "prod")))
    return AskUserQuestionItem(id=id, question=text, options=options, multi_select=multi, **kw)


async def result(task: asyncio.Task[AskUserQuestionAnswer]) -> AskUserQuestionAnswer:
    """The ask's answer, failing the test if it does not come within 5 s."""
    return await asyncio.wait_for(task, 5.0)


def ask_id_of(message: FakeMessage) -> str:
    """The relay ask id a posted message belongs to (from its routing block ids)."""
    for block in message.versions[0]:
        block_id = block.get("block_id", "")
        if block_id.startswith("relay:"):
            return str(block_id.split(":")[1])
    raise LookupError("not a relay question message")


def first_button(message: FakeMessage) -> dict[str, Any]:
    """The first button of a message as posted."""
    return next(
        {**e, "block_id": b["block_id"], "action_ts": "1700000000.000001"}
        for b in message.versions[0]
        if b["type"] == "actions"
        for e in b["elements"]
        if e["type"] == "button"
    )


def elements(message: FakeMessage) -> list[dict[str, Any]]:
    """The interactive elements of a message's actions blocks, as it stands."""
    return [e for b in message.blocks if b["type"] == "actions" for e in b["elements"]]
