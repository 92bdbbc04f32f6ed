"""relay.asks.expiry: stopping is certain, even when a store call swallows the cancellation."""

from __future__ import annotations

import asyncio

from relay.asks.expiry import Expiry
from relay.store import MemoryStore


class SwallowingStore(MemoryStore):
    """A store whose ``next_deadline`` behaves like a client library that catches a
    cancellation mid-call and raises a connection error instead."""

    def __init__(self) -> None:
        super().__init__()
        self.calling = asyncio.Event()

    async def next_deadline(self) -> float | None:
        self.calling.set()
        try:
            await asyncio.sleep(3600)  # (a hanging call stands in: the sleep is the test)
        except asyncio.CancelledError:
            raise ConnectionError("connection reset while cancelled") from None
        return None


async def test_aclose_stops_the_task_even_if_the_store_swallows_the_cancel() -> None:
    store = SwallowingStore()
    expiry = Expiry(store=store, expire=store.get, sweep_interval=0.05)
    expiry.start()
    await asyncio.wait_for(store.calling.wait(), 5)
    await asyncio.wait_for(expiry.aclose(), 5)


async def test_aclose_right_as_the_sweep_timer_fires_never_hangs() -> None:
    # asyncio.wait_for on 3.11 loses a cancellation that lands as its timeout fires; the
    # loop's wait must not. Many closes at staggered moments around a short sweep interval.
    for step in range(40):
        store = MemoryStore()
        expiry = Expiry(store=store, expire=store.get, sweep_interval=0.002)
        expiry.start()
        await asyncio.sleep(0.002 + step * 0.0001)  # (the moment of close is what is tested)
        await asyncio.wait_for(expiry.aclose(), 5)


async def test_nothing_restarts_the_task_after_aclose() -> None:
    store = MemoryStore()
    expiry = Expiry(store=store, expire=store.get)
    expiry.start()
    await expiry.aclose()
    expiry.add(0.0)
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "relay-expiry"]
