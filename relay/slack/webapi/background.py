"""``Background``: the Slack calls made off the agent's path, and the HTTP session they share.

Message updates and private notices run as tasks after the outcome is recorded; at most
``_BACKGROUND_CALLS`` of them talk to Slack at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

__all__ = ["Background"]

_log = logging.getLogger("relay.slack")

# Background Web API calls (updates, notices) in flight at once; Slack's limits are far lower.
_BACKGROUND_CALLS = 100


class Background:
    """Tasks for the Slack calls nobody waits for, and the session lent to ``client``."""

    def __init__(self, client: AsyncWebClient) -> None:
        self._client = client
        self._tasks: set[asyncio.Task[Any]] = set()
        # Closing with 10,000 asks pending withdrew them all at once, a connection each, and
        # ran the process out of file descriptors. Waiting here does not count against a
        # call's timeout (a connection pool's wait would, failing queued calls unsent).
        self.slots = asyncio.Semaphore(_BACKGROUND_CALLS)
        # The HTTP session lent to a client that has none (see lend_session).
        self._session: aiohttp.ClientSession | None = None
        self._session_returned = False

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` as a task; ``drain`` waits for it, a failure is logged."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("background task failed", exc_info=task.exception())

    async def drain(self) -> None:
        """Wait until every task spawned (and every task they spawn) has finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def lend_session(self) -> None:
        """Lend the client one HTTP session for the provider's life, if it has none.

        Without a ``session``, ``AsyncWebClient`` opens a new aiohttp session, and so a new
        connection, for every call; ``return_session`` takes the lent session back and
        closes it. Calls keep the client's timeout and no cap on connections: the background
        updates and notices, which can come in thousands at once, queue for ``slots``
        instead, before their timeout starts.
        """
        if self._session is None and not self._session_returned and self._client.session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self._client.timeout),
                connector=aiohttp.TCPConnector(limit=0),
            )
            self._client.session = self._session

    async def return_session(self) -> None:
        """Take the lent session back and close it; none is lent after."""
        self._session_returned = True
        if self._session is not None:
            if self._client.session is self._session:
                self._client.session = None
            await self._session.close()
            self._session = None
