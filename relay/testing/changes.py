"""Waiting for the fake's state to change, without polling: every recorded call, message
change or socket (dis)connection wakes the waiters, which re-check their condition."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

__all__ = ["ChangeFeed"]

_T = TypeVar("_T")


class ChangeFeed:
    """An ``asyncio.Condition`` notified on every change of the fake."""

    def __init__(self) -> None:
        self._condition: asyncio.Condition | None = None

    def _get(self) -> asyncio.Condition:
        # Created on first use so that the fake can be built outside a running loop.
        if self._condition is None:
            self._condition = asyncio.Condition()
        return self._condition

    async def notify(self) -> None:
        """Wake every waiter to re-check its condition."""
        condition = self._get()
        async with condition:
            condition.notify_all()

    async def wait_for(
        self,
        found: Callable[[], _T | None],
        *,
        timeout: float,
        describe: Callable[[], str],
    ) -> _T:
        """The first non-``None`` result of ``found``, re-checked on every change; after
        ``timeout`` seconds a ``TimeoutError`` with ``describe()`` as the message."""
        condition = self._get()
        try:
            async with asyncio.timeout(timeout), condition:
                while (result := found()) is None:
                    await condition.wait()
                return result
        except TimeoutError:
            raise TimeoutError(f"{describe()} (waited {timeout:g}s)") from None
