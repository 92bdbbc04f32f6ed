"""Stopping a background task so that it stays stopped."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

__all__ = ["stop_task", "stop_the_rest"]

# How long one cancellation is given before the next: long enough for a task's own cleanup
# (a disconnect, a final write) to run, short enough that a lost one costs little.
_RECANCEL_AFTER = 0.1


async def stop_task(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait until it has ended, cancelling it again while it runs on.

    One ``cancel()`` is not always enough: on Python 3.11 ``asyncio.wait_for``, which
    redis-py runs under every command it writes, drops a cancellation that lands as the
    call it wraps completes (python/cpython#86296), and redis-py can drop one while it
    connects (redis/redis-py#2028). A loop whose cancellation was dropped runs on, and a
    plain ``await task`` after ``cancel()`` waits forever: a replica that never exits on
    SIGTERM. An exception the task ended with is raised here, as ``await task`` would."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=_RECANCEL_AFTER)
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def stop_the_rest() -> None:
    """Stop every other task of the loop (for a process's entry point, after its own
    shutdown): ``asyncio.run`` cancels what is left once and waits for it, and a task that
    dropped that one cancellation would hold the process's exit forever."""
    current = asyncio.current_task()
    rest = [task for task in asyncio.all_tasks() if task is not current]
    await asyncio.gather(*(stop_task(task) for task in rest), return_exceptions=True)
