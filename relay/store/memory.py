"""``MemoryStore``: the embedded default, for one process with no server."""

from __future__ import annotations

import asyncio
import heapq
import math
import time
from collections import deque
from dataclasses import dataclass, replace
from datetime import datetime

from relay.questions import (
    AskUserQuestionAnswerItem,
    Vote,
)
from relay.store.base import ClickClaim, PendingLimitReached
from relay.store.idempotency import KeyClaim
from relay.store.listing import Position
from relay.store.outbox import ClaimedDelivery
from relay.store.packed import pack, pack_end, unpack
from relay.store.record import (
    AnswerResult,
    AskError,
    AskRecord,
    AskStatus,
    MessageRef,
    VoteResult,
    quorum_reached,
    vote_of,
)

__all__ = ["MemoryStore"]


class MemoryStore:
    """Asks held in this process; atomic because every method runs without awaiting.

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

    async def vote(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        required: int,
        veto: frozenset[str],
    ) -> VoteResult:
        """Count one person's vote; the one that reaches the quorum answers the question."""
        vote = vote_of(item)
        record = self._lookup(ask_id)
        if record is None:
            return VoteResult("unknown", None)
        _check_index(record, index)
        tallies = self._votes.setdefault(ask_id, [()] * len(record.request.questions))
        votes = tallies[index]
        if not record.pending:
            return VoteResult("not_pending", record, votes)
        if index < len(record.responses) and record.responses[index] is not None:
            return VoteResult("already_answered", record, votes)
        if any(v.by.id == vote.by.id for v in votes):
            return VoteResult("already_voted", record, votes)
        votes = tallies[index] = (*votes, vote)
        if not quorum_reached(votes, vote.label, required, veto):
            return VoteResult("counted", record, votes)
        decided = replace(item, votes=votes)
        result = await self.answer(ask_id=ask_id, index=index, item=decided)
        return VoteResult(
            "completed" if result.outcome == "completed" else "decided", result.record, votes
        )

    async def votes(self, *, ask_id: str) -> tuple[tuple[Vote, ...], ...]:
        """Every question's votes so far."""
        record = self._lookup(ask_id)
        if record is None:
            return ()
        return tuple(self._votes.get(ask_id) or [()] * len(record.request.questions))

    async def schedule_reminder(self, *, ask_id: str, at: float) -> None:
        """Remind people of the ask at ``at``."""
        self._reminders[ask_id] = at
        heapq.heappush(self._reminder_queue, (at, ask_id))

    async def next_reminder(self) -> float | None:
        """When the earliest reminder falls due."""
        queue = self._reminder_queue
        while queue and self._reminders.get(queue[0][1]) != queue[0][0]:
            heapq.heappop(queue)  # rescheduled or dropped since
        return queue[0][0] if queue else None

    async def claim_reminders(
        self, *, now: float, lease: float, limit: int = 100
    ) -> list[tuple[str, int]]:
        """Claim due reminders of pending asks for ``lease`` seconds."""
        claimed: list[tuple[str, int]] = []
        queue = self._reminder_queue
        while queue and queue[0][0] <= now and len(claimed) < limit:
            at, ask_id = heapq.heappop(queue)
            if self._reminders.get(ask_id) != at:
                continue
            if ask_id not in self._records:  # (every record there is pending)
                del self._reminders[ask_id]
                continue
            claimed.append((ask_id, self._reminders_sent.get(ask_id, 0)))
            self._reminders[ask_id] = now + lease
            heapq.heappush(queue, (now + lease, ask_id))
        return claimed

    async def reminded(self, *, ask_id: str, sent: int, next_at: float | None) -> bool:
        """Record a reminder sent; schedule the next one."""
        if self._reminders_sent.get(ask_id, 0) != sent:
            return False
        self._reminders_sent[ask_id] = sent + 1
        if next_at is None or ask_id not in self._records:
            self._reminders.pop(ask_id, None)
        else:
            await self.schedule_reminder(ask_id=ask_id, at=next_at)
        return True

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
            self._reminders_sent.pop(ask_id, None)
            self._shown.pop(ask_id, None)
            self._unshown_ended.pop(ask_id, None)
            self._ended_from.pop(ask_id, None)
            self._unsettled.pop(ask_id, None)

    # Idempotency keys (``relay.store.idempotency``).

    async def claim_key(self, *, owner: str, key: str, fingerprint: str, lease: float) -> KeyClaim:
        """Claim ``key`` for ``fingerprint`` (atomic: no await between read and write)."""
        now = time.monotonic()
        self._forget_keys(now)
        held = self._keys.get((owner, key))
        if held is None or held.expires <= now:
            self._keys[(owner, key)] = _Key(fingerprint, None, now + lease)
            self._key_expiry.append((now + lease, (owner, key)))
            return KeyClaim("new")
        if held.fingerprint != fingerprint:
            return KeyClaim("conflict")
        return KeyClaim("same", held.ask_id)

    async def bind_key(
        self, *, owner: str, key: str, fingerprint: str, ask_id: str, window: float
    ) -> None:
        """Point the claimed key at ``ask_id`` for ``window`` seconds."""
        held = self._keys.get((owner, key))
        if held is not None and held.fingerprint == fingerprint:
            expires = time.monotonic() + window
            self._keys[(owner, key)] = _Key(fingerprint, ask_id, expires)
            self._key_expiry.append((expires, (owner, key)))

    async def release_key(self, *, owner: str, key: str, fingerprint: str) -> None:
        """Drop an unbound claim."""
        held = self._keys.get((owner, key))
        if held is not None and held.fingerprint == fingerprint and held.ask_id is None:
            del self._keys[(owner, key)]

    def _forget_keys(self, now: float) -> None:
        while self._key_expiry and self._key_expiry[0][0] <= now:
            _, name = self._key_expiry.popleft()
            held = self._keys.get(name)
            if held is not None and held.expires <= now:
                del self._keys[name]

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

    async def list_owned(
        self,
        *,
        owner: str,
        since: float | None = None,
        until: float | None = None,
        after: Position | None = None,
        limit: int = 100,
    ) -> list[AskRecord]:
        """``owner``'s asks created in ``[since, until)``, newest first, older than ``after``."""
        self._forget_expired()
        owned = self._owned.get(owner, {})
        found: list[AskRecord] = []
        # Newest first is the reverse of creation order (a dict keeps insertion order).
        for ask_id, at in reversed(owned.items()):
            position = (at, ask_id)
            if after is not None and position >= after:
                continue
            if since is not None and at < since:
                break
            if until is not None and at >= until:
                continue
            record = self._lookup(position[1])
            if record is not None:
                found.append(record)
                if len(found) >= limit:
                    break
        return found

    # The webhook outbox (``relay.store.outbox``). Deliveries are few at a time; a scan of
    # them all per claim is cheaper than keeping an index right.

    async def hook_subscribe(self, *, ask_id: str, subscription: str, ttl: float) -> None:
        """Remember ``ask_id``'s subscription (kept as long as the ask is)."""
        if ask_id not in self._hooks:
            self._hooks[ask_id] = subscription
            self._hooks_watched[ask_id] = None

    async def hook_subscription(self, *, ask_id: str) -> str | None:
        """The subscription of ``ask_id``."""
        return self._hooks.get(ask_id)

    async def hook_watched(self, *, limit: int = 100, offset: int = 0) -> list[str]:
        """Subscribed asks whose end is not enqueued yet, oldest first from ``offset``."""
        gone = [i for i in self._hooks_watched if i not in self._records and i not in self._ended]
        for ask_id in gone:
            self._hooks_watched.pop(ask_id, None)  # gone (expired): nothing left to send
            self._hooks.pop(ask_id, None)
        return list(self._hooks_watched)[offset : offset + limit]

    async def hook_enqueue(
        self, *, event_id: str, ask_id: str, delivery: str, due: float, final: bool
    ) -> bool:
        """Owe ``delivery`` unless ``event_id`` is known."""
        self._forget_deliveries()
        if final:
            self._hooks_watched.pop(ask_id, None)
            self._hooks.pop(ask_id, None)  # no event follows the end
        if event_id in self._outbox:
            return False
        self._outbox[event_id] = _Delivery(delivery=delivery, due=due)
        return True

    async def hook_claim(self, *, now: float, lease: float, limit: int) -> list[ClaimedDelivery]:
        """Lease up to ``limit`` due deliveries."""
        claimed: list[ClaimedDelivery] = []
        for event_id, held in sorted(self._outbox.items(), key=lambda item: item[1].due):
            if len(claimed) >= limit or held.due > now:
                break
            if held.state != "pending":
                continue
            held.due = now + lease
            claimed.append(ClaimedDelivery(event_id, held.delivery, held.attempts))
        return claimed

    async def hook_settle(
        self, *, event_id: str, outcome: str, error: str | None, keep: float
    ) -> None:
        """End a delivery; its id is kept ``keep`` seconds."""
        held = self._outbox.get(event_id)
        if held is not None:
            held.state, held.error = outcome, error
            held.attempts += 1
            held.due = math.inf
            held.forget_at = time.monotonic() + keep

    async def hook_retry(self, *, event_id: str, due: float, error: str) -> None:
        """Try again from ``due``."""
        held = self._outbox.get(event_id)
        if held is not None and held.state == "pending":
            held.due, held.error = due, error
            held.attempts += 1

    async def hook_state(self, *, event_id: str) -> dict[str, str] | None:
        """Where a delivery stands."""
        held = self._outbox.get(event_id)
        if held is None:
            return None
        return {"state": held.state, "attempts": str(held.attempts), "error": held.error or ""}

    def _forget_deliveries(self) -> None:
        now = time.monotonic()
        for event_id in [i for i, d in self._outbox.items() if d.forget_at <= now]:
            del self._outbox[event_id]

    # Messages whose final update has not landed (``AskStore.settled``).

    def _unsettle(self, ask_id: str, at: float) -> None:
        self._unsettled[ask_id] = at
        heapq.heappush(self._unsettled_queue, (at, ask_id))

    async def settled(self, *, ask_id: str, index: int | None = None) -> None:
        """Record that question ``index``'s message (``None``: every one) shows its end."""
        if ask_id in self._records:  # pending: remembered for when it ends
            shown = self._shown.setdefault(ask_id, set())
            if index is None:
                self._shown[ask_id] = None
            elif shown is not None:
                shown.add(index)
            return
        unshown = self._unshown_ended.get(ask_id)  # (ended: nothing to decode)
        if unshown is not None and index is not None:
            unshown.discard(index)
        if not unshown or index is None:
            self._unshown_ended.pop(ask_id, None)
            self._unsettled.pop(ask_id, None)

    async def unsettled(self, *, ask_id: str) -> frozenset[int]:
        """The posted questions not yet settled."""
        record = self._pending_record(ask_id)
        if record is None:  # ended (or unknown): nothing to decode
            return frozenset(self._unshown_ended.get(ask_id, ()))
        shown = self._shown.get(ask_id, _NONE)
        if shown is None:
            return frozenset()
        return frozenset(
            i for i, m in enumerate(record.messages) if m is not None and i not in shown
        )

    async def claim_unsettled(
        self, *, now: float, grace: float, lease: float, limit: int = 100
    ) -> list[str]:
        """Claim unsettled asks that ended ``grace`` ago, each for ``lease`` seconds."""
        self._forget_expired()
        claimed: list[str] = []
        queue = self._unsettled_queue
        while queue and queue[0][0] <= now - grace and len(claimed) < limit:
            at, ask_id = heapq.heappop(queue)
            if self._unsettled.get(ask_id) != at:
                continue  # settled, or claimed again since
            claimed.append(ask_id)
            self._unsettle(ask_id, now + lease - grace)
        return claimed

    async def next_unsettled(self, *, grace: float) -> float | None:
        """When the earliest unsettled ask can be claimed."""
        queue = self._unsettled_queue
        while queue and self._unsettled.get(queue[0][1]) != queue[0][0]:
            heapq.heappop(queue)
        return queue[0][0] + grace if queue else None


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
