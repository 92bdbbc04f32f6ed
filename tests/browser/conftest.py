"""Fixtures for the browser tests: one headless Chromium per session, a fresh sandbox
(``relay serve --sandbox`` as a subprocess) per test, and an agent asking through its API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from relay import UserInteractionService
from relay.client import RelayProvider
from tests.browser.browser import Page, start_chromium, stop_chromium
from tests.sandbox_env import ALICE, BOB, CAROL, DAVE, TOKEN, running_sandbox
from tests.server_env import Relay

__all__ = ["ALICE", "BOB", "CAROL", "DAVE", "TOKEN", "Agent"]

T = TypeVar("T")


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
