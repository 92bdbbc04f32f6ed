"""Asks and claims in memory (``relay.store.asks``): create, read, claim, deadlines."""

from __future__ import annotations

import heapq
import math
from datetime import datetime

from relay.seam.questions import AskUserQuestionAnswerItem
from relay.store.base import ClickClaim, PendingLimitReached
from relay.store.memory.base import MemoryBase, _check_index, _size
from relay.store.packed import pack, unpack
from relay.store.record import (
    AnswerResult,
    AskError,
    AskRecord,
    AskStatus,
    MessageRef,
)


class MemoryAsks(MemoryBase):
    """Asks and their claims; atomic because no method awaits between read and write."""

    async def create(self, *, record: AskRecord) -> None:
        """Store a new pending ask."""
        self._forget_expired()
        self._encode_ended()
        if record.id in self._records or record.id in self._ended:
            raise ValueError(f"ask {record.id} exists already")
        owner = record.owner
        if owner is not None:
            held = self._by_owner.get(owner, 0)
            if self._max_pending is not None and held >= self._max_pending:
                raise PendingLimitReached(owner, self._max_pending)
            self._by_owner[owner] = held + 1
        self._keep(record.id, record, warm=False)
        self._sizes[record.id] = _size(record)
        self._pending += 1
        self._index_owned(record)
        if record.deadline is not None:
            heapq.heappush(self._deadlines, (record.deadline, record.id))

    async def get(self, *, ask_id: str) -> AskRecord | None:
        """The ask as it stands, or ``None`` if unknown or finished over ``retention`` ago."""
        self._forget_expired()
        return self._lookup(ask_id)

    async def set_message(
        self, *, ask_id: str, index: int, message: MessageRef
    ) -> AskRecord | None:
        """Remember where question ``index``'s message was posted; the ask after."""
        record = self._lookup(ask_id)
        if record is None:
            return None
        _check_index(record, index)
        messages = list(record.messages) or [None] * len(record.request.questions)
        messages[index] = message
        record = record.with_(messages=tuple(messages))
        if record.pending:
            self._keep(ask_id, record, warm=True)  # (_lookup left it warm)
        else:
            self._ended[ask_id] = pack(record)
            self._ended_from.pop(ask_id, None)
            self._unshown_ended.setdefault(ask_id, set()).add(index)  # (posted after its end)
        return record

    async def answer(
        self, *, ask_id: str, index: int, item: AskUserQuestionAnswerItem
    ) -> AnswerResult:
        """Claim question ``index``'s answer; completes the ask when it is the last one."""
        record = self._lookup(ask_id)
        if record is None:
            return AnswerResult("unknown", None)
        _check_index(record, index)
        if not record.pending:
            return AnswerResult("not_pending", record)
        responses = list(record.responses) or [None] * len(record.request.questions)
        if responses[index] is not None:
            return AnswerResult("already_answered", record)
        responses[index] = item
        if all(r is not None for r in responses):
            record = record.with_(
                responses=tuple(responses),
                status=AskStatus.ANSWERED,
                finished_at=item.answered_at,
            )
            self._settle(record)
            return AnswerResult("completed", record)
        record = record.with_(responses=tuple(responses))
        self._keep(ask_id, record, warm=True)  # (_lookup left it warm)
        return AnswerResult("accepted", record)

    def known(self, *, ask_id: str) -> AskRecord | None:
        """The ask as it stands (``ClickClaims``: this store holds every ask, no I/O)."""
        return self._lookup(ask_id)

    async def claim_click(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        message: tuple[str | None, str | None],
    ) -> ClickClaim:
        """``answer``, refused if question ``index`` was posted to another message."""
        record = self._lookup(ask_id)
        if record is None:
            return ClickClaim("unknown", None)
        _check_index(record, index)
        posted = record.messages[index] if index < len(record.messages) else None
        if posted is not None and (posted.channel, posted.ts) != message:
            return ClickClaim("message_mismatch", None)
        result = await self.answer(ask_id=ask_id, index=index, item=item)  # (never suspends)
        return ClickClaim(result.outcome, result.record)

    async def finish(
        self, *, ask_id: str, status: AskStatus, error: AskError | None, at: datetime
    ) -> tuple[bool, AskRecord | None]:
        """Claim a final outcome; the first claim wins."""
        if status is AskStatus.PENDING:
            raise ValueError("finish needs a final status, not pending")
        record = self._pending_record(ask_id)
        if record is None:
            return False, self._lookup(ask_id)
        if not record.pending:
            return False, record
        record = record.with_(status=status, error=error, finished_at=at)
        self._settle(record)
        return True, record

    async def due(self, *, now: float, limit: int = 100) -> list[str]:
        """Pending asks whose deadline has passed."""
        found: list[str] = []
        while self._deadlines and self._deadlines[0][0] <= now and len(found) < limit:
            _, ask_id = heapq.heappop(self._deadlines)
            if ask_id in self._records:
                found.append(ask_id)
        if math.isinf(now) and len(found) < limit:
            # Asks with no deadline are due only "at infinity" (when everything is closed).
            found.extend(i for i, kept in self._records.items() if unpack(kept).deadline is None)
            del found[limit:]
        return found

    async def next_deadline(self) -> float | None:
        """The earliest pending deadline still queued."""
        while self._deadlines:
            deadline, ask_id = self._deadlines[0]
            if ask_id in self._records:
                return deadline
            heapq.heappop(self._deadlines)
        return None

    async def count_pending(self) -> int:
        """How many asks are pending."""
        return self._pending

    async def ping(self) -> None:
        """Always reachable."""

    async def aclose(self) -> None:
        """Wake every waiter; nothing else to release."""
        for held in self._waiters.values():
            for future in held if isinstance(held, list) else (held,):
                if not future.done():
                    future.set_result(None)
