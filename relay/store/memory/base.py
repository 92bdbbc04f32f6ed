"""What every part of the memory store shares: the asks themselves (kept packed), their
retention, and what an ask's end and expiry change in every part."""

from __future__ import annotations

import asyncio
import heapq
import math
import time
from collections import deque
from dataclasses import dataclass

from relay.seam.questions import Vote
from relay.store.packed import pack, pack_end, unpack
from relay.store.receipts import ChainHead
from relay.store.record import (
    AskRecord,
)

__all__ = ["MemoryBase"]


class MemoryBase:
    """The state of ``MemoryStore`` (each part is a subclass): asks held in this process;
    atomic because every method runs without awaiting.

    Finished asks are kept ``retention`` seconds, and while the text of those kept stays
    under ``retention_bytes`` (the oldest finished go first; pending asks are never
    dropped). ``max_pending_per_owner`` bounds the asks one owner has pending at once.

    Asks are kept packed (one ``bytes`` object each, which the cycle collector does not
    track: ``relay.store.packed``), so that neither the hundreds of thousands a day's
    retention holds nor a hundred thousand pending cost collector time; reading one back
    unpacks it (~8-20 µs). A finished ask is packed at the next create (or once a batch of
    256 ends), so that the click that ends it does not pay for it. A pending ask stays an
    object while it is among the last 4,096 pending asks created, changed or read (the one a
    click reads is the one it claims); the older ones are packed once the loop has done what
    the touch was for (two turns on).
    One that was only read goes back to the bytes it came from, and one that ends from
    there keeps them and adds the fields its end changed (``pack_end``): an ask's questions
    are encoded once, not at every turn.
    """

    durable = False

    def __init__(
        self,
        *,
        retention: float = 24 * 3600.0,
        retention_bytes: int | None = None,
        max_pending_per_owner: int | None = None,
    ) -> None:
        self._records: dict[str, AskRecord | bytes] = {}  # pending; the coldest encoded
        self._warm: deque[str] = deque()  # pending asks held as objects, oldest first
        self._cooling = False  # an encoding pass is scheduled
        self._ended: dict[str, bytes | AskRecord] = {}  # finished, packed (see relay.store.packed)
        self._unencoded: list[str] = []  # finished since the last create, not encoded yet
        # Warm pending asks unchanged since they were decoded: the bytes they came from, so
        # that cooling one puts them back and its end packs only what changed (pack_end).
        self._pristine: dict[str, bytes] = {}
        self._ended_from: dict[str, tuple[bytes, AskRecord]] = {}  # unencoded: (bytes, was)
        # One waiter's future alone, several's in a list (most asks have one waiter or none).
        self._waiters: dict[str, _Future | list[_Future]] = {}
        self._deadlines: list[tuple[float, str]] = []
        self._finished: deque[tuple[float, str]] = deque()
        self._retention = retention
        self._retention_bytes = retention_bytes
        self._max_pending = max_pending_per_owner
        self._pending = 0
        self._by_owner: dict[str, int] = {}
        self._sizes: dict[str, int] = {}
        self.finished_bytes = 0
        """About how many bytes of question text the finished asks kept hold."""
        self._keys: dict[tuple[str, str], _Key] = {}
        self._owned: dict[str, dict[str, float]] = {}  # owner → ask id → created (epoch)
        self._hooks: dict[str, str] = {}  # ask id → webhook subscription (JSON)
        self._hooks_watched: dict[str, None] = {}  # subscribed asks not yet enqueued, in order
        self._outbox: dict[str, _Delivery] = {}
        self._key_expiry: deque[tuple[float, tuple[str, str]]] = deque()
        self._votes: dict[str, list[tuple[Vote, ...]]] = {}
        self._revisions: dict[str, list[str | None]] = {}  # ask id -> each question's edit
        self._reminders: dict[str, float] = {}  # ask id -> when its next reminder is due
        self._reminder_queue: list[tuple[float, str]] = []
        self._reminders_sent: dict[str, int] = {}
        # Ended asks whose messages may still show live inputs (see settled): ask id -> when
        # it may be claimed, less the grace; the heap holds stale entries until popped.
        self._unsettled: dict[str, float] = {}
        self._unsettled_queue: list[tuple[float, str]] = []
        # Pending asks' settled messages (None: all of them); once an ask ends, its posted
        # messages not settled yet (only while there are some: a settled ask holds nothing).
        self._shown: dict[str, set[int] | None] = {}
        self._unshown_ended: dict[str, set[int]] = {}
        # The receipt chain (relay.store.receipts): receipts in order, each ask's place.
        self._receipts: list[str] = []
        self._receipt_at: dict[str, int] = {}
        self._receipt_head = ChainHead(0, None)
        self._receipts_owed: dict[str, float] = {}  # ended asks owing one -> since when
        self._receipt_base = ChainHead(0, None)  # the last place trimmed and its digest
        self._checkpoints: list[tuple[tuple[int, int], str]] = []  # ((last, first), entry)
        # Approvals' uses (relay.store.uses): ask id -> (expires, the first use's key).
        self._uses: dict[str, tuple[float, str]] = {}
        self._use_expiry: list[tuple[float, str]] = []  # a heap of (expires, ask id)

    def __len__(self) -> int:
        return len(self._records) + len(self._ended)

    def _lookup(self, ask_id: str) -> AskRecord | None:
        record = self._pending_record(ask_id)
        if record is not None:
            return record
        ended = self._ended.get(ask_id)
        return unpack(ended) if ended is not None else None

    def _pending_record(self, ask_id: str) -> AskRecord | None:
        """The pending ask ``ask_id`` as an object (decoded, and kept so, if it was cold)."""
        kept = self._records.get(ask_id)
        if not isinstance(kept, bytes):
            return kept
        record = unpack(kept)
        self._keep(ask_id, record, warm=False)
        self._pristine[ask_id] = kept
        return record

    def _keep(self, ask_id: str, record: AskRecord, *, warm: bool) -> None:
        """Hold pending ``record`` as an object; ``warm``: it is one already (it is queued)."""
        self._records[ask_id] = record
        if warm:
            self._pristine.pop(ask_id, None)  # (a change: its old bytes are stale)
            return
        self._warm.append(ask_id)
        if len(self._warm) > _WARM and not self._cooling:
            # Two turns of the loop on: after the click that read it and its answer reaching
            # the waiter (woken in the next turn), so encoding is no part of anyone's wait.
            self._cooling = True
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # (no loop: a caller outside asyncio)
                self._cool()
            else:
                loop.call_soon(loop.call_soon, self._cool)

    def _cool(self) -> None:
        """Encode the oldest warm asks past the last ``_WARM`` (those still pending)."""
        self._cooling = False
        records, warm, pristine = self._records, self._warm, self._pristine
        while len(warm) > _WARM:
            ask_id = warm.popleft()
            kept = records.get(ask_id)
            if isinstance(kept, AskRecord):
                unchanged = pristine.pop(ask_id, None)
                records[ask_id] = pack(kept) if unchanged is None else unchanged

    def _settle(self, record: AskRecord) -> None:
        was = self._records.pop(record.id)
        unchanged = self._pristine.pop(record.id, None)
        if unchanged is not None and isinstance(was, AskRecord):
            self._ended_from[record.id] = (unchanged, was)
        # Encoded later, off the click that ended it (the next create, or a batch of them).
        self._ended[record.id] = record
        self._unencoded.append(record.id)
        if len(self._unencoded) >= _ENCODE_BATCH:
            self._encode_ended()
        self._pending -= 1
        if record.owner is not None:
            left = self._by_owner.get(record.owner, 1) - 1
            if left > 0:
                self._by_owner[record.owner] = left
            else:
                self._by_owner.pop(record.owner, None)
        self._finished.append((time.monotonic() + self._retention, record.id))
        ended = record.finished_at.timestamp() if record.finished_at else time.time()
        self._unsettle(record.id, ended)
        shown = self._shown.pop(record.id, _NONE)
        if shown is not None:
            unshown = {i for i, m in enumerate(record.messages) if m is not None} - shown
            if unshown:
                self._unshown_ended[record.id] = unshown
        self.finished_bytes += self._sizes.get(record.id, 0)
        held = self._waiters.pop(record.id, ())
        for future in held if isinstance(held, list | tuple) else (held,):
            if not future.done():
                future.set_result(record)
        if self._retention_bytes is not None:
            while self._finished and self.finished_bytes > self._retention_bytes:
                self._drop(self._finished.popleft()[1])

    def _encode_ended(self) -> None:
        for ask_id in self._unencoded:
            kept = self._ended.get(ask_id)
            origin = self._ended_from.pop(ask_id, None)
            if isinstance(kept, AskRecord):
                self._ended[ask_id] = pack(kept) if origin is None else pack_end(kept, *origin)
        self._unencoded.clear()

    def _forget_expired(self) -> None:
        now = time.monotonic()
        while self._finished and self._finished[0][0] <= now:
            self._drop(self._finished.popleft()[1])

    def _drop(self, ask_id: str) -> None:
        kept = self._ended.pop(ask_id, None)
        if kept is not None:
            self.finished_bytes -= self._sizes.pop(ask_id, 0)
            self._unindex_owned(unpack(kept))
            self._votes.pop(ask_id, None)
            self._revisions.pop(ask_id, None)
            self._reminders_sent.pop(ask_id, None)
            self._shown.pop(ask_id, None)
            self._unshown_ended.pop(ask_id, None)
            self._ended_from.pop(ask_id, None)
            self._unsettled.pop(ask_id, None)

    # The audit index (``relay.store.listing``).

    def _index_owned(self, record: AskRecord) -> None:
        if record.owner is not None:
            owned = self._owned.setdefault(record.owner, {})
            owned[record.id] = record.created_at.timestamp()

    def _unindex_owned(self, record: AskRecord) -> None:
        if record.owner is not None and (owned := self._owned.get(record.owner)) is not None:
            owned.pop(record.id, None)
            if not owned:
                del self._owned[record.owner]

    def _unsettle(self, ask_id: str, at: float) -> None:
        self._unsettled[ask_id] = at
        heapq.heappush(self._unsettled_queue, (at, ask_id))


_Future = asyncio.Future[AskRecord | None]
_NONE: frozenset[int] = frozenset()  # (no message settled yet: nothing built per click)


@dataclass(slots=True)
class _Delivery:
    delivery: str
    due: float
    attempts: int = 0
    state: str = "pending"
    error: str | None = None
    forget_at: float = math.inf


@dataclass(frozen=True, slots=True)
class _Key:
    fingerprint: str
    ask_id: str | None
    expires: float  # time.monotonic()


# Pending asks held as objects at most: the last created, changed or read. Decoding one
# takes ~8-20 µs (a click pays it), and a full collection walks ~12 objects per ask held
# (~2.5 µs): 4,096 keeps clicks on the asks of the last few thousand free of it and a full
# pass within ~10 ms of what it takes with none pending.
_WARM = 4_096

# Finished asks left as objects at most (the collector walks them until they are encoded).
_ENCODE_BATCH = 256


def _size(record: AskRecord) -> int:
    """About how many bytes ``record`` holds: its text, plus a little per object."""
    size = 512
    for q in record.request.questions:
        size += 256 + len(q.id) + len(q.question) + len(q.detail or "") + len(q.header or "")
        for option in q.options or ():
            size += 128 + len(option.label) + len(option.description or "")
    return size


def _check_index(record: AskRecord, index: int) -> None:
    # A negative index would silently address another question from the end.
    if not 0 <= index < len(record.request.questions):
        raise IndexError(f"ask {record.id} has no question {index}")
