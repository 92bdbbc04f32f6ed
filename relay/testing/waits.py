"""What a test observes of the fake Slack: the recorded calls and ephemeral messages, and the
``wait_for_*`` helpers that await them (re-checked on every change, never by polling)."""

from __future__ import annotations

from collections.abc import Callable

from .changes import ChangeFeed
from .mentions import Link, Mention
from .records import FakeMessage, RecordedCall

__all__ = ["CallLog"]


class CallLog:
    """The recording half of ``FakeSlack``: ``calls``, ``ephemerals`` and the waits."""

    def __init__(self) -> None:
        self.calls: list[RecordedCall] = []
        """Every Web API call and ``response_url`` post, in arrival order."""
        self.ephemerals: list[RecordedCall] = []
        """``chat.postEphemeral`` calls and ephemeral ``response_url`` posts (``args`` has
        ``user`` and ``text``)."""
        self.mentions: list[Mention] = []
        """Every notification the messages sent would set off (``<!here>``, ``<@U…>``…)."""
        self.links: list[Link] = []
        """Every link the messages sent show, with the text shown for it."""
        self._changes = ChangeFeed()

    @property
    def messages(self) -> list[FakeMessage]:
        """Every message the bot posted, in post order."""
        raise NotImplementedError

    @property
    def socket_connections(self) -> int:
        """How many Socket Mode connections are open."""
        raise NotImplementedError

    def calls_to(self, method: str) -> list[RecordedCall]:
        """The recorded calls of ``method``, in order."""
        return [call for call in self.calls if call.method == method]

    async def wait_for_call(
        self,
        method: str,
        *,
        count: int = 1,
        timeout: float = 5.0,
        where: Callable[[RecordedCall], bool] | None = None,
    ) -> RecordedCall:
        """The ``count``-th call of ``method`` (matching ``where``), once it was answered."""

        def found() -> RecordedCall | None:
            matches = [c for c in self.calls_to(method) if where is None or where(c)]
            return matches[count - 1] if len(matches) >= count else None

        what = f"call #{count} of {method}" + (" matching `where`" if where else "")
        return await self._changes.wait_for(found, timeout=timeout, describe=self._missing(what))

    async def wait_for_message(
        self,
        *,
        channel: str | None = None,
        count: int = 1,
        where: Callable[[FakeMessage], bool] | None = None,
        timeout: float = 5.0,
    ) -> FakeMessage:
        """The ``count``-th message posted (to ``channel``, matching ``where``)."""

        def found() -> FakeMessage | None:
            matches = [
                m
                for m in self.messages
                if (channel is None or m.channel == channel) and (where is None or where(m))
            ]
            return matches[count - 1] if len(matches) >= count else None

        what = f"message #{count}" + (f" in {channel}" if channel else "")
        return await self._changes.wait_for(found, timeout=timeout, describe=self._missing(what))

    async def wait_for_ephemeral(
        self, *, user: str | None = None, count: int = 1, timeout: float = 5.0
    ) -> RecordedCall:
        """The ``count``-th ephemeral message (to ``user``)."""

        def found() -> RecordedCall | None:
            matches = [e for e in self.ephemerals if user is None or e.args.get("user") == user]
            return matches[count - 1] if len(matches) >= count else None

        what = f"ephemeral #{count}" + (f" to {user}" if user else "")
        return await self._changes.wait_for(found, timeout=timeout, describe=self._missing(what))

    async def wait_until(self, predicate: Callable[[], bool], *, timeout: float = 5.0) -> None:
        """Return once ``predicate()`` is true, re-checking it on every change of the fake."""
        await self._changes.wait_for(
            lambda: True if predicate() else None,
            timeout=timeout,
            describe=self._missing("the condition to hold"),
        )

    async def wait_for_socket(self, *, timeout: float = 5.0) -> None:
        """Return once a Socket Mode client is connected."""
        await self._changes.wait_for(
            lambda: True if self.socket_connections else None,
            timeout=timeout,
            describe=self._missing("a Socket Mode connection"),
        )

    def _missing(self, what: str) -> Callable[[], str]:
        def describe() -> str:
            seen = "; ".join(_summary(c) for c in self.calls) or "none"
            return f"no {what}; calls seen: {seen}"

        return describe


def _summary(call: RecordedCall) -> str:
    channel = call.args.get("channel")
    where = f"({channel})" if channel else ""
    outcome = "ok" if call.ok else f"{call.status} {call.error or ''}".strip()
    return f"{call.method}{where} -> {outcome}"
