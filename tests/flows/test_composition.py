"""Flow: a SlackProvider over a lifecycle its caller built, and its settings as one value."""

from __future__ import annotations

import math
from dataclasses import fields

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from relay import AskUserQuestionRequest, ErrorCode, RelayConfigError, UserInteractionError
from relay.asks.events import AskEvent, Events
from relay.asks.lifecycle import AskLifecycle
from relay.slack import SlackProvider, SlackSettings
from relay.slack.settings import LIFECYCLE_OPTIONS, SlackOptions
from relay.store import AskStatus, MemoryStore
from tests.slack_env import ask_id_of, question, result, slack_env


async def test_an_ask_runs_on_the_lifecycle_the_composition_root_built() -> None:
    store, events = MemoryStore(), Events()
    seen: list[AskEvent] = []
    events.subscribe(seen.append)
    lifecycle = AskLifecycle(store=store, events=events)
    async with slack_env(lifecycle=lifecycle) as env:
        assert env.provider.store is store
        task = env.ask(question())
        message = await env.message()
        await env.slack.click(message, "prod", user="U0BOB")
        assert (await result(task)).answers[0].selected == ("prod",)
        # Recorded in the lifecycle's store, told through its events.
        record = await store.get(ask_id=ask_id_of(message))
        assert record is not None
        assert record.status is AskStatus.ANSWERED
        assert seen[0].name == "created"


async def test_an_ask_ending_unanswered_is_withdrawn_by_the_attached_channel() -> None:
    lifecycle = AskLifecycle(store=MemoryStore(), events=Events())
    async with slack_env(lifecycle=lifecycle) as env:
        task = env.ask(question())
        message = await env.message()
        await lifecycle.abort(ask_id_of(message))
        with pytest.raises(UserInteractionError) as caught:
            await result(task)
        assert caught.value.code == ErrorCode.ASK_ABORTED
        # The lifecycle called the provider's on_end: the message was updated in Slack.
        await env.slack.wait_until(lambda: len(message.versions) > 1)
        assert await lifecycle.store.due(now=math.inf, limit=10) == []


async def test_settings_as_one_value_are_the_keyword_form() -> None:
    async with slack_env() as env:
        settings = SlackSettings(
            client=AsyncWebClient(token=env.slack.bot_token, base_url=env.slack.base_url),
            channel="C0DEPLOYS",
            timeout=60.0,
        )
        async with SlackProvider(settings) as provider:
            record = await provider.start(AskUserQuestionRequest(questions=[question()]))
            assert record.target.channel == "C0DEPLOYS"
            assert record.target.timeout == 60.0
            assert (await env.message()).channel == "C0DEPLOYS"


def test_settings_and_their_keywords_together_are_refused() -> None:
    settings = SlackSettings(token="xoxb-x", channel="C1")
    with pytest.raises(TypeError, match="not both: move channel into the SlackSettings"):
        SlackProvider(settings, channel="C2")
    with pytest.raises(TypeError, match="unexpected keyword arguments: chanel"):
        SlackProvider(token="xoxb-x", chanel="C1")


def test_a_handed_in_lifecycle_is_configured_on_itself_and_serves_one_channel() -> None:
    lifecycle = AskLifecycle(store=MemoryStore(), events=Events())
    with pytest.raises(RelayConfigError, match="store: set these on the AskLifecycle"):
        SlackProvider(token="xoxb-x", channel="C1", lifecycle=lifecycle, store=MemoryStore())
    SlackProvider(SlackSettings(token="xoxb-x", channel="C1"), lifecycle=lifecycle)
    with pytest.raises(RelayConfigError, match="already serves a channel"):
        SlackProvider(SlackSettings(token="xoxb-x", channel="C2"), lifecycle=lifecycle)


def test_the_typed_keyword_form_names_every_setting_and_lifecycle_option() -> None:
    # SlackOptions types the older keywords for a type checker; it must not drift from the
    # settings and lifecycle options the constructor accepts at run time.
    typed = set(SlackOptions.__annotations__)
    assert typed == {f.name for f in fields(SlackSettings)} | set(LIFECYCLE_OPTIONS)
