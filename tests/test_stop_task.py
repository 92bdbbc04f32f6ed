"""A background task stops when the relay stops, even where a cancellation is dropped.

Python 3.11's ``asyncio.wait_for`` (under each command redis-py writes) drops a
cancellation that lands as its call completes: a replica's checkpoint loop then ran on and
``relay serve`` never exited on SIGTERM (1 run in about 25 of two replicas under load).
"""

from __future__ import annotations

import asyncio
import sys

import pytest

from relay.receipts.checkpoint import Checkpointer
from relay.seam.tasks import stop_task, stop_the_rest
from relay.store import MemoryStore
from relay.store.receipts import ChainHead
from tests.test_receipts import KEY


async def _quick() -> int:
    return 1


async def _calls_then_waits(called: asyncio.Event) -> None:
    await asyncio.wait_for(_quick(), 5)
    called.set()
    await asyncio.Event().wait()


async def test_a_cancellation_that_wait_for_dropped_is_sent_again() -> None:
    called = asyncio.Event()
    task = asyncio.create_task(_calls_then_waits(called))
    await asyncio.sleep(0)  # the task is in wait_for, whose call is due to run next
    # The cancellation lands after the call's step, before wait_for has heard it ended.
    asyncio.get_running_loop().call_soon(task.cancel)
    await called.wait()
    if sys.version_info < (3, 12):  # (3.12 rebuilt wait_for on asyncio.timeout)
        assert not task.done(), "this Python kept the cancellation"
    stopping = asyncio.create_task(stop_task(task))
    await asyncio.wait({stopping}, timeout=5)
    assert stopping.done()
    assert task.cancelled()


class _DropsOneCancellation(MemoryStore):
    """A store whose first read drops the cancellation that lands in it, as a redis-py
    command under 3.11's ``wait_for`` can."""

    def __init__(self) -> None:
        super().__init__()
        self.reading = asyncio.Event()
        self.dropped = False

    async def receipt_head(self) -> ChainHead:
        if not self.dropped:
            self.reading.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.dropped = True
        return await super().receipt_head()


async def test_the_checkpointer_stops_though_a_read_dropped_its_cancellation() -> None:
    store = _DropsOneCancellation()
    checkpointer = Checkpointer(store=store, key=KEY, issuer="relay.example")
    checkpointer.start()
    await store.reading.wait()
    closing = asyncio.create_task(checkpointer.aclose())
    # (A bound, not a wait: before, the loop ran on and aclose never returned.)
    await asyncio.wait({closing}, timeout=5)
    assert closing.done(), "the checkpointer's loop ran on"
    assert store.dropped


async def test_an_exception_the_task_ended_with_is_raised() -> None:
    async def fails() -> None:
        raise ValueError("broken")

    task = asyncio.create_task(fails())
    await asyncio.sleep(0)
    with pytest.raises(ValueError, match="broken"):
        await stop_task(task)


async def test_the_rest_are_stopped_though_one_drops_its_cancellation() -> None:
    async def alone() -> tuple[bool, bool]:  # a process's main: its loop holds it alone
        called = asyncio.Event()
        stubborn = asyncio.create_task(_calls_then_waits(called))
        await asyncio.sleep(0)
        asyncio.get_running_loop().call_soon(stubborn.cancel)  # dropped on 3.11, as above
        await called.wait()
        plain = asyncio.create_task(asyncio.Event().wait())
        await stop_the_rest()
        return stubborn.cancelled(), plain.cancelled()

    # (In a thread: asyncio.run there would hang, not this test's loop, if it did not stop.)
    running = asyncio.create_task(asyncio.to_thread(asyncio.run, alone()))
    await asyncio.wait({running}, timeout=5)
    assert running.done(), "a task ran on"
    assert running.result() == (True, True)
