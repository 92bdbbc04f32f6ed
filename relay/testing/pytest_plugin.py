"""A pytest plugin with fixtures for testing an agent against ``FakeSlack``.

Installing slack-relay registers it (entry point ``pytest11``: ``relay``), so a test only asks
for a fixture by name; async tests need pytest-asyncio (``pip install 'slack-relay[testing]'``):

- ``fake_slack``: a started ``FakeSlack`` whose people are ``U0ALICE`` (alice) and
  ``U0BOB`` (bob) and whose one channel is ``C0TEST`` (add more with ``add_user`` and
  ``add_channel``: others answer ``user_not_found``/``channel_not_found``);
- ``slack_provider``: a ``SlackProvider`` posting to ``fake_slack`` in ``C0TEST``, its
  ``/slack/events`` served on a free loopback port where ``fake_slack`` delivers clicks
  (signed, as Slack signs them); closed after the test;
- ``relay_service``: a ``UserInteractionService`` with ``slack_provider`` registered.

Each test gets its own of each, so nothing leaks from one test to the next.

When ``ask()`` returns, the Slack calls it made are already recorded: ``slack_provider``
finishes its message updates and notices first, so ``fake_slack.calls_to("chat.update")``
holds the message's final form without waiting for it. With pytest-asyncio, fixtures run
in the test's own event loop unless the project's configuration says otherwise (so a new
project needs no ``asyncio_default_fixture_loop_scope`` to run without a warning).

This is the one module of ``relay.testing`` that uses the rest of relay (``SlackProvider``,
the service), and only inside its fixtures: ``FakeSlack`` itself still depends on nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

__all__ = ["CHANNEL", "PEOPLE", "SIGNING_SECRET", "fake_slack", "relay_service", "slack_provider"]

CHANNEL = "C0TEST"
"""The channel ``slack_provider`` asks in."""
SIGNING_SECRET = "relay-pytest-signing-secret"  # noqa: S105 - a test fake's secret
"""The secret ``fake_slack`` signs with and ``slack_provider`` checks."""
PEOPLE = {"U0ALICE": "alice", "U0BOB": "bob"}
"""The people ``fake_slack`` knows (user id -> name)."""

pytest_asyncio: Any
try:
    import pytest_asyncio
except ImportError:  # pragma: no cover - the fixtures then say what to install
    pytest_asyncio = None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Give pytest-asyncio's fixture loop scope the value it will default to, ``function``,
    where the project sets none: otherwise every run of a project that just installed
    relay to use these fixtures starts with pytest-asyncio's deprecation warning (an error
    under ``-W error``). A project's own setting is left alone."""
    if pytest_asyncio is None:
        return
    try:
        unset = not config.getini(_LOOP_SCOPE)
    except ValueError:  # pytest-asyncio declares no such option: nothing to quiet
        return
    cache = getattr(config, "_inicache", None)
    if unset and isinstance(cache, dict):
        # pytest has no public setter for an ini value; its cache of them is what getini reads.
        cache[_LOOP_SCOPE] = "function"


_LOOP_SCOPE = "asyncio_default_fixture_loop_scope"


def _async_fixture(fn: Any) -> Any:
    if pytest_asyncio is not None:
        return pytest_asyncio.fixture(fn)

    @pytest.fixture(name=fn.__name__)
    def missing() -> None:
        pytest.fail(
            f"the {fn.__name__} fixture needs pytest-asyncio: pip install 'slack-relay[testing]'"
        )

    return missing


@_async_fixture
async def fake_slack() -> AsyncIterator[Any]:
    """A started ``FakeSlack`` (``U0ALICE`` alice and ``U0BOB`` bob among its people)."""
    from relay.testing import FakeSlack

    async with FakeSlack(signing_secret=SIGNING_SECRET, channels={CHANNEL: "test"}) as slack:
        for user, name in PEOPLE.items():
            slack.add_user(user, name=name)
        yield slack


@_async_fixture
async def slack_provider(fake_slack: Any) -> AsyncIterator[Any]:
    """A ``SlackProvider`` on ``fake_slack``, its click endpoint served and wired up."""
    from aiohttp import web

    from relay.slack import SlackProvider

    class SettledSlackProvider(SlackProvider):
        """Returns from ``ask`` once the Slack calls the ask set off (the message's update,
        notices) are done, so a test reads them from ``fake_slack`` at once."""

        async def ask(self, request: Any) -> Any:
            try:
                return await super().ask(request)
            finally:
                await self.drain()

    provider = SettledSlackProvider(
        token=fake_slack.bot_token,
        base_url=fake_slack.base_url,
        signing_secret=SIGNING_SECRET,
        channel=CHANNEL,
    )
    runner = web.AppRunner(provider.web_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    fake_slack.interactivity_url = f"http://127.0.0.1:{port}/slack/events"
    try:
        yield provider
    finally:
        await provider.aclose()
        await runner.cleanup()


@_async_fixture
async def relay_service(slack_provider: Any) -> AsyncIterator[Any]:
    """A ``UserInteractionService`` whose provider is ``slack_provider``."""
    from relay.seam.service import UserInteractionService

    service = UserInteractionService()
    dispose = service.register_provider(slack_provider)
    try:
        yield service
    finally:
        dispose()
