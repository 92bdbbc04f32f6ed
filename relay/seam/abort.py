"""Cancellation in the style of the web's ``AbortController``: one controller, one signal."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["AbortController", "AbortSignal"]

_log = logging.getLogger("relay.abort")  # the operators' name, wherever the module lives


class AbortSignal:
    """Tells whoever holds it that the work it belongs to should stop."""

    __slots__ = ("_aborted", "_listeners", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: Any = None
        self._listeners: list[Callable[[], None]] = []

    @property
    def aborted(self) -> bool:
        """Whether the signal has aborted."""
        return self._aborted

    @property
    def reason(self) -> Any:
        """What ``abort()`` was given, or ``None``."""
        return self._reason

    def add_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` once on abort (at once if already aborted); returns a remover."""
        if self._aborted:
            _call(callback)
            return _noop
        self._listeners.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return remove

    async def wait(self) -> None:
        """Return once the signal has aborted."""
        if self._aborted:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        remove = self.add_listener(wake)
        try:
            await future
        finally:
            remove()

    def _abort(self, reason: Any) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        listeners, self._listeners = self._listeners, []
        for callback in listeners:
            _call(callback)

    def __repr__(self) -> str:
        return f"AbortSignal(aborted={self._aborted}, reason={self._reason!r})"


class AbortController:
    """Owns an ``AbortSignal`` and is the only one that can abort it."""

    __slots__ = ("_signal",)

    def __init__(self) -> None:
        self._signal = AbortSignal()

    @property
    def signal(self) -> AbortSignal:
        """The signal to hand to the work that may be aborted."""
        return self._signal

    def abort(self, reason: Any = None) -> None:
        """Abort the signal; a second call does nothing."""
        self._signal._abort(reason)


def _call(callback: Callable[[], None]) -> None:
    # One failing listener must not stop the others from hearing the abort.
    try:
        callback()
    except Exception:
        _log.exception("abort listener %r failed", callback)


def _noop() -> None:
    return None
