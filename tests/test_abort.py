"""``AbortController`` and ``AbortSignal``, and the ``ASK_ABORTED`` errors that say why."""

from __future__ import annotations

import asyncio
import logging

import pytest

from relay import AbortController, AbortSignal, ErrorCode, UserInteractionError
from relay.errors import ABORTED_MESSAGE, ask_aborted, ask_closed, ask_timed_out

TIMEOUT = 2.0


class Calls:
    """A listener that counts how often it was called (always with no arguments)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def test_a_new_signal_has_not_aborted() -> None:
    controller = AbortController()

    assert isinstance(controller.signal, AbortSignal)
    assert controller.signal.aborted is False
    assert controller.signal.reason is None


def test_the_controller_always_hands_out_the_same_signal() -> None:
    controller = AbortController()

    assert controller.signal is controller.signal


def test_abort_with_a_reason() -> None:
    controller = AbortController()
    reason = ValueError("the user closed the tab")

    controller.abort(reason)

    assert controller.signal.aborted is True
    assert controller.signal.reason is reason


def test_abort_without_a_reason_leaves_reason_none() -> None:
    controller = AbortController()

    controller.abort()

    assert controller.signal.aborted is True
    assert controller.signal.reason is None


def test_a_second_abort_does_nothing() -> None:
    controller = AbortController()
    listener = Calls()
    controller.signal.add_listener(listener)
    controller.abort("first")

    controller.abort("second")

    assert controller.signal.reason == "first"
    assert listener.count == 1


def test_listener_is_called_once_on_abort_and_not_before() -> None:
    controller = AbortController()
    listener = Calls()

    controller.signal.add_listener(listener)
    assert listener.count == 0
    controller.abort()

    assert listener.count == 1


def test_listener_sees_the_reason_on_the_signal() -> None:
    controller = AbortController()
    seen: list[object] = []
    controller.signal.add_listener(lambda: seen.append(controller.signal.reason))

    controller.abort("timeout")

    assert seen == ["timeout"]


def test_listeners_are_called_in_the_order_they_were_added() -> None:
    controller = AbortController()
    order: list[int] = []
    for i in range(3):
        controller.signal.add_listener(lambda i=i: order.append(i))

    controller.abort()

    assert order == [0, 1, 2]


def test_listener_added_after_abort_is_called_at_once() -> None:
    controller = AbortController()
    controller.abort("done")
    listener = Calls()

    remove = controller.signal.add_listener(listener)

    assert listener.count == 1
    remove()
    controller.abort()
    assert listener.count == 1


def test_removed_listener_is_not_called() -> None:
    controller = AbortController()
    removed, kept = Calls(), Calls()
    remove = controller.signal.add_listener(removed)
    controller.signal.add_listener(kept)

    remove()
    remove()
    controller.abort()

    assert (removed.count, kept.count) == (0, 1)


def test_a_failing_listener_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    controller = AbortController()
    after = Calls()

    def broken() -> None:
        raise RuntimeError("listener bug")

    controller.signal.add_listener(broken)
    controller.signal.add_listener(after)

    with caplog.at_level(logging.ERROR, logger="relay.abort"):
        controller.abort()

    assert after.count == 1
    assert controller.signal.aborted is True
    assert any("abort listener" in r.getMessage() for r in caplog.records)


async def test_wait_returns_once_the_signal_aborts() -> None:
    controller = AbortController()
    waiter = asyncio.create_task(controller.signal.wait())
    await asyncio.sleep(0)  # let the waiter start waiting; a yield, not a timed wait
    assert not waiter.done()

    controller.abort()

    await asyncio.wait_for(waiter, TIMEOUT)


async def test_wait_on_an_aborted_signal_returns_at_once() -> None:
    controller = AbortController()
    controller.abort()

    await asyncio.wait_for(controller.signal.wait(), TIMEOUT)


async def test_every_waiter_wakes() -> None:
    controller = AbortController()
    waiters = [asyncio.create_task(controller.signal.wait()) for _ in range(3)]
    await asyncio.sleep(0)

    controller.abort()

    await asyncio.wait_for(asyncio.gather(*waiters), TIMEOUT)


async def test_a_cancelled_waiter_leaves_nothing_behind(caplog: pytest.LogCaptureFixture) -> None:
    controller = AbortController()
    waiter = asyncio.create_task(controller.signal.wait())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter

    with caplog.at_level(logging.ERROR, logger="relay.abort"):
        controller.abort()

    assert caplog.records == []


# --- why an ask ended ----------------------------------------------------------------------


def test_aborted_error_says_the_ask_was_aborted() -> None:
    error = ask_aborted()

    assert isinstance(error, UserInteractionError)
    assert error.code == ErrorCode.ASK_ABORTED
    assert str(error) == "ask_user_question was aborted before the user answered"
    assert error.reason == "aborted"
    assert str(error) == ABORTED_MESSAGE


def test_timeout_is_an_abort_whose_message_says_it_timed_out() -> None:
    error = ask_timed_out(900)

    assert error.code == ErrorCode.ASK_ABORTED
    assert str(error) == "ask_user_question timed out after 900 s before the user answered"
    assert error.reason == "timed_out"


def test_timeout_message_keeps_fractional_seconds() -> None:
    assert str(ask_timed_out(1.5)) == (
        "ask_user_question timed out after 1.5 s before the user answered"
    )


def test_closing_the_provider_is_an_abort_that_says_so() -> None:
    error = ask_closed()

    assert error.code == ErrorCode.ASK_ABORTED
    assert str(error).startswith("ask_user_question was aborted")
    assert str(error).endswith("provider was closed")
    assert error.reason == "closed"


@pytest.mark.parametrize("code", [c for c in ErrorCode if c != ErrorCode.ASK_ABORTED])
def test_other_codes_have_no_reason(code: ErrorCode) -> None:
    assert UserInteractionError(code, "message").reason is None
