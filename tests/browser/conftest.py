"""Fixtures for the browser tests: one headless Chromium per session, a fresh sandbox
(``relay serve --sandbox`` as a subprocess) per test, and an agent asking through its API."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from relay import UserInteractionService
from relay.client import RelayProvider
from tests.browser.browser import Page, start_chromium, stop_chromium
from tests.server_env import Relay, free_port, start_relay

T = TypeVar("T")
TOKEN = "sandbox-test-token-0123456789"
ALICE, BOB, CAROL, DAVE = "U0SBALICE", "U0SBBOB", "U0SBCAROL", "U0SBDAVE"


def sandbox_env(port: int, **extra: str) -> dict[str, str]:
    """The environment of a test sandbox: nothing from the developer's shell but PATH & co."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLACK_", "RELAY_")) and k not in ("REDIS_URL", "PORT")
    }
    env.update(PORT=str(port), RELAY_API_TOKENS=TOKEN, PYTHONUNBUFFERED="1", **extra)
    return env


@asynccontextmanager
async def running_sandbox(**extra: str) -> AsyncIterator[Relay]:
    """``relay serve --sandbox`` on a free port, stopped with SIGTERM afterwards."""
    relay = await start_relay(sandbox_env(free_port(), **extra), "--sandbox")
    try:
        yield relay
    finally:
        code = await relay.stop()
        assert code == 0, f"the sandbox exited with {code}; log:\n{''.join(relay.log)}"


@dataclass
class Agent:
    """An agent using the sandbox through its HTTP API, as any agent would."""

    service: UserInteractionService
    provider: RelayProvider
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    def spawn(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``work`` (an ask) in the background; cancelled at the end of the test."""
        task = asyncio.create_task(work)
        self.tasks.append(task)
        return task


@pytest.fixture(scope="session")
def chromium() -> Iterator[WebDriver]:
    """Headless Chromium for the whole session (each test gets a fresh sandbox and tab)."""
    driver, profile = start_chromium()
    try:
        yield driver
    finally:
        stop_chromium(driver, profile)


@pytest.fixture
async def sandbox() -> AsyncIterator[Relay]:
    """A fresh sandbox for this test."""
    async with running_sandbox() as relay:
        yield relay


@pytest.fixture
async def page(chromium: WebDriver, sandbox: Relay) -> AsyncIterator[Page]:
    """The sandbox page in the browser; left on about:blank afterwards."""
    opened = Page(chromium, sandbox.url)
    try:
        yield opened
    finally:
        for handle in chromium.window_handles[1:]:
            chromium.switch_to.window(handle)
            chromium.close()
        chromium.switch_to.window(chromium.window_handles[0])
        chromium.get("about:blank")


@pytest.fixture
async def agent(sandbox: Relay) -> AsyncIterator[Agent]:
    """An agent with a ``RelayProvider`` pointed at the sandbox's API."""
    service = UserInteractionService()
    provider = RelayProvider(sandbox.url, TOKEN, poll=5.0)
    dispose = service.register_provider(provider)
    agent = Agent(service=service, provider=provider)
    try:
        yield agent
    finally:
        for task in agent.tasks:
            task.cancel()
        await asyncio.gather(*agent.tasks, return_exceptions=True)
        dispose()
        await provider.aclose()
