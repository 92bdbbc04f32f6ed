"""Waiting in memory (``relay.store.waits``): a future per waiter, settled when the ask ends."""

from __future__ import annotations

import asyncio

from relay.store.memory.base import MemoryBase, _Future
from relay.store.record import (
    AskRecord,
)


class MemoryWaits(MemoryBase):
    """Long-polls on this process's asks."""

    async def wait(self, *, ask_id: str, within: float | None) -> AskRecord | None:
        """Wait until the ask is final or ``within`` seconds pass."""
        if ask_id not in self._records or (within is not None and within <= 0):
            return self._lookup(ask_id)
        future: _Future = asyncio.get_running_loop().create_future()
        held = self._waiters.get(ask_id)
        if held is None:
            self._waiters[ask_id] = future
        elif isinstance(held, list):
            held.append(future)
        else:
            self._waiters[ask_id] = [held, future]
        try:
            if within is None:
                await future  # (no timeout object: this waits for every pending ask())
            else:
                async with asyncio.timeout(within):  # (wait_for could swallow a cancellation)
                    await future
        except TimeoutError:
            pass
        finally:
            if not future.done():
                future.cancel()
            self._unwait(ask_id, future)
        if not future.cancelled() and (final := future.result()) is not None:
            return final  # the record it ended with: nothing to decode
        return self._lookup(ask_id)

    def _unwait(self, ask_id: str, future: _Future) -> None:
        held = self._waiters.get(ask_id)
        if held is future:
            del self._waiters[ask_id]
        elif isinstance(held, list) and future in held:
            held.remove(future)
            if not held:
                del self._waiters[ask_id]
