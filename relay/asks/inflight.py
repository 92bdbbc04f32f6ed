"""``InFlightWaits``: the waits for an ask's outcome in progress, which a stopping relay ends
at once.

A long-poll (``GET /v1/asks/{id}?wait=60``) on an ask this replica does not own would hold a
stopping process for its whole wait, past Kubernetes' 30 s grace. ``release`` ends every
wait run here, and every later one, without an outcome: the caller answers with the record
as it stands and the client polls again, on another replica.

Releasing does not rely on cancelling the waiting code: redis-py 8.1 was seen to swallow a
cancellation that arrives while it opens a connection, and the wait then went on for its
whole minute. Each wait runs as its own task and its caller awaits a gate that either the
task's end or ``release`` opens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from relay.errors import RelayException

__all__ = ["InFlightWaits", "Released"]

T = TypeVar("T")


class Released(RelayException):
    """The wait ended because the relay is stopping, not because the ask ended."""


class InFlightWaits:
    """Every wait in progress, so that ``release`` can end them all."""

    def __init__(self) -> None:
        self._gates: set[asyncio.Future[None]] = set()
        self._released = False

    @property
    def released(self) -> bool:
        """Whether ``release`` was called: every wait now ends at once."""
        return self._released

    def __len__(self) -> int:
        return len(self._gates)

    async def run(self, wait: Coroutine[Any, Any, T]) -> T:
        """``wait``'s result, or ``Released`` once ``release`` is called (``wait`` is then
        cancelled); cancelling the caller cancels ``wait`` too."""
        if self._released:
            wait.close()
            raise Released
        loop = asyncio.get_running_loop()
        task = loop.create_task(wait)
        task.add_done_callback(_collect)
        gate: asyncio.Future[None] = loop.create_future()
        task.add_done_callback(lambda _: _open(gate))
        self._gates.add(gate)
        try:
            await gate
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            self._gates.discard(gate)
        if task.done():
            return task.result()
        task.cancel()
        raise Released

    def release(self) -> None:
        """End every wait in progress now, and every later one at once."""
        self._released = True
        for gate in list(self._gates):
            _open(gate)


def _open(gate: asyncio.Future[None]) -> None:
    if not gate.done():
        gate.set_result(None)


def _collect(task: asyncio.Task[Any]) -> None:
    """Retrieve a wait's outcome, so that asyncio never logs one nobody awaits as lost."""
    if not task.cancelled():
        task.exception()
