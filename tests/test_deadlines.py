"""relay.slack.webapi.deadlines: one timer per tick cuts the calls that outlive their limit."""

from __future__ import annotations

import asyncio
import time

import pytest

from relay.slack.webapi.deadlines import Deadlines


async def test_a_block_past_its_limit_raises_timeout_error_within_a_tick() -> None:
    deadlines = Deadlines(tick=0.05)
    began = time.monotonic()
    with pytest.raises(TimeoutError), deadlines.within(0.2):
        await asyncio.Event().wait()  # (never set)
    took = time.monotonic() - began
    assert 0.2 <= took < 0.2 + 0.05 + 0.2  # (never early; a tick late at most, plus slack)
    task = asyncio.current_task()
    assert task is not None
    assert task.cancelling() == 0  # (the cut is no cancellation once it is a TimeoutError)


async def test_blocks_that_finish_in_time_are_left_alone_after_their_tick() -> None:
    deadlines = Deadlines(tick=0.05)
    with deadlines.within(0.1):
        await asyncio.sleep(0)
    # Past the tick the block would have ended in: nothing cancels this task later (the
    # sleep is the test: time passing with no event to wait on).
    await asyncio.sleep(0.25)
    with deadlines.within(None):  # (no limit)
        await asyncio.sleep(0.01)


async def test_calls_in_flight_together_share_one_timer_and_each_is_cut() -> None:
    deadlines = Deadlines(tick=0.1)
    loop = asyncio.get_running_loop()
    armed: list[float] = []
    call_at = loop.call_at

    def counting_call_at(when: float, *args: object) -> asyncio.TimerHandle:
        armed.append(when)
        return call_at(when, *args)  # type: ignore[arg-type]

    async def hung() -> None:
        with deadlines.within(0.3):
            await asyncio.Event().wait()

    loop.call_at = counting_call_at  # type: ignore[method-assign]
    try:
        results = await asyncio.gather(*(hung() for _ in range(50)), return_exceptions=True)
    finally:
        del loop.call_at  # type: ignore[method-assign]
    assert all(isinstance(r, TimeoutError) for r in results)
    assert 1 <= len(armed) <= 2  # (50 calls begun in one turn of the loop: one tick, or two)


async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    deadlines = Deadlines(tick=0.05)
    started = asyncio.Event()

    async def waiting() -> None:
        with deadlines.within(5.0):
            started.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(waiting())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_a_tick_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        Deadlines(tick=0)


def test_one_deadlines_serves_a_loop_after_another() -> None:
    # A provider can outlive an event loop (asyncio.run twice): a tick armed in the first
    # loop whose timer never fired must not hold a call of the second, which would then
    # never be cut. (Both calls land in one tick unless a second's boundary falls between.)
    deadlines = Deadlines(tick=1.0)

    async def left_early() -> None:
        with deadlines.within(0.9):
            await asyncio.sleep(0)

    async def cut() -> None:
        async with asyncio.timeout(5):  # (a call never cut would hang the test)
            with pytest.raises(TimeoutError), deadlines.within(0.9):
                await asyncio.Event().wait()

    asyncio.run(left_early())  # (its loop closes before the tick's timer fires)
    asyncio.run(cut())
