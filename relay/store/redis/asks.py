"""Asks and claims on Redis (``relay.store.asks``): creating an ask, recording its messages,
claiming answers (a click in one script) and final outcomes, and the deadline index."""

from __future__ import annotations

import json
import math
import random
from datetime import datetime
from typing import Any

from redis.exceptions import RedisError

from relay.seam.questions import AskUserQuestionAnswerItem
from relay.store.base import ClickClaim, PendingLimitReached
from relay.store.record import (
    AnswerResult,
    AskError,
    AskRecord,
    AskStatus,
    MessageRef,
    item_to_json,
)
from relay.store.redis.base import translated
from relay.store.redis.codec import (
    NO_META,
    Core,
    as_text,
    compact,
    decode_flat,
    epoch,
    message_json,
    wire,
)
from relay.store.redis.waits import RedisWaits


class RedisAsks(RedisWaits):
    """Asks and their claims: each claim one script, so the first claim wins across replicas;
    its reply settles this process's waiters (``RedisWaits``) without a read."""

    @translated
    async def create(self, *, record: AskRecord) -> None:
        """Store a new pending ask (all fields in one script: nothing half-written)."""
        core = {
            "id": record.id,
            "request": record.request.to_dict(),
            "target": record.target.to_dict(),
            "created_at": record.created_at.isoformat(),
            "deadline": record.deadline,
            "owner": record.owner,
            "meta": record.meta,
        }
        fields: list[str] = [
            "n",
            str(len(record.request.questions)),
            "status",
            record.status.value,
        ]
        for i, message in enumerate(record.messages):
            if message is not None:
                fields += [f"msg:{i}", message_json(message)]
        score = record.deadline if record.deadline is not None else math.inf
        text = compact(core)
        reserved = await self._reserve(record, score) if self._cluster else 0
        keys: list[str | bytes] = [*self._claim_keys(record.id)]
        if record.owner is not None and not self._cluster:
            keys.append(self._owned_key(record.owner))
        try:
            created = int(
                await self._run(
                    self._create,
                    keys,
                    [
                        score,
                        record.id,
                        text,
                        wire(record.owner or ""),
                        self._max_pending or 0,
                        record.created_at.timestamp(),
                        self._ask_prefix,
                        _OWNED_TRIM,
                        *fields,
                    ],
                )
            )
        except (RedisError, OSError):
            if reserved == 1:
                # The caller is told the create failed, so nobody will wait on this ask: undo
                # its entry rather than leave its owner counted for an ask that may not exist.
                await self._release(record.id)
            raise
        if reserved == 1 and created != 1:
            # Indexed just now, yet the ask was there: another ask's, or this one finished
            # already (a pending ask is always indexed first). Undo the entry.
            await self._release(record.id)
        if created < 0 and record.owner is not None and self._max_pending is not None:
            raise PendingLimitReached(record.owner, self._max_pending)
        if created <= 0:
            raise ValueError(f"ask {record.id} exists already")
        if self._cluster:
            await self._index_owned(record)
        # Reading it back (posting, clicks) reuses these objects instead of decoding them.
        self._cores.put(
            text,
            Core(
                id=record.id,
                request=record.request,
                target=record.target,
                created_at=record.created_at,
                deadline=record.deadline,
                owner=record.owner,
                meta=dict(record.meta) if record.meta else NO_META,
                digest=hash(text),
            ),
        )

    @translated
    async def set_message(
        self, *, ask_id: str, index: int, message: MessageRef
    ) -> AskRecord | None:
        """Remember where question ``index`` was posted; the ask as it stands then, read by
        the same script (``None`` if the ask is gone)."""
        reply = await self._run(
            self._set_message, [self._key(ask_id)], [index, message_json(message)]
        )
        if isinstance(reply, int):
            if reply < 0:
                raise IndexError(f"ask {ask_id} has no question {index}")
            return None
        return decode_flat(reply, self._cores, self._known_core(ask_id))

    @translated
    async def answer(
        self, *, ask_id: str, index: int, item: AskUserQuestionAnswerItem
    ) -> AnswerResult:
        """Claim question ``index``'s answer atomically; completes the ask on the last one."""
        outcome, record = await self._claim(ask_id, index, item, None)
        return AnswerResult(outcome, record)  # type: ignore[arg-type]

    def known(self, *, ask_id: str) -> AskRecord | None:
        """The unchanging part of an ask this process created or read lately, or waits for
        (``ClickClaims``): shown as pending, with no messages or answers; no I/O."""
        core = self._known_core(ask_id)
        if core is None:
            return None
        return AskRecord(
            id=core.id,
            request=core.request,
            target=core.target,
            created_at=core.created_at,
            deadline=core.deadline,
            owner=core.owner,
            meta=dict(core.meta),
        )

    def _known_core(self, ask_id: str) -> Core | None:
        watch = self._watches.get(ask_id)
        if watch is not None and watch.core is not None:
            return watch.core
        return self._cores.of(ask_id)

    @translated
    async def claim_click(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        message: tuple[str | None, str | None],
    ) -> ClickClaim:
        """A click's checks and claim in one script (``_ANSWER`` with the click's message):
        one round trip, whose reply also settles this process's waiters."""
        outcome, record = await self._claim(ask_id, index, item, compact(list(message)))
        return ClickClaim(outcome, record)  # type: ignore[arg-type]

    async def _claim(
        self, ask_id: str, index: int, item: AskUserQuestionAnswerItem, clicked: str | None
    ) -> tuple[str, AskRecord | None]:
        at = item.answered_at.isoformat() if item.answered_at else ""
        known = self._known_core(ask_id)
        args: list[Any] = [
            index,
            compact(item_to_json(item)),
            at,
            ask_id,
            self._retention_ms,
            self._channel,
            epoch(item.answered_at),
            "0" if known is None else "1",
        ]
        if clicked is not None:
            args.append(clicked)
        # Settled inside ``_claiming``: a pub/sub wake-up that came before the caller resumed
        # then finds the waiters settled and reads nothing.
        with self._claiming(ask_id):
            reply = await self._run(self._answer, self._claim_keys(ask_id), args)
            outcome = as_text(reply[0])
            if outcome == "bad_index":
                raise IndexError(f"ask {ask_id} has no question {index}")
            if self._cluster and outcome in ("completed", "not_pending", "unknown"):
                await self._release(ask_id)
                if outcome == "completed":
                    await self._unsettle(ask_id, epoch(item.answered_at))
            # Our own answer, if it was recorded, is the item we sent: not read back.
            mine = (index, item) if outcome in ("accepted", "completed") else None
            record = decode_flat(reply[1], self._cores, known, mine) if len(reply) > 1 else None
            if record is not None and not record.pending:
                self._settle_local(ask_id, record)  # no pub/sub hop, no re-read, for waiters
        return outcome, record

    @translated
    async def finish(
        self, *, ask_id: str, status: AskStatus, error: AskError | None, at: datetime
    ) -> tuple[bool, AskRecord | None]:
        """Claim a final outcome atomically; the first claim wins."""
        if status is AskStatus.PENDING:
            raise ValueError("finish needs a final status, not pending")
        error_json = ""
        if error is not None:
            error_json = json.dumps(
                {"code": error.code, "message": error.message, "reason": error.reason}
            )
        with self._claiming(ask_id):
            reply = await self._run(
                self._finish,
                self._claim_keys(ask_id),
                [
                    status.value,
                    error_json,
                    at.isoformat(),
                    ask_id,
                    self._retention_ms,
                    self._channel,
                    epoch(at),
                ],
            )
            record = decode_flat(reply[1], self._cores) if len(reply) > 1 else None
            if self._cluster:
                await self._release(ask_id)  # won: its index entry goes; lost: a stale one
                if int(reply[0]):
                    await self._unsettle(ask_id, epoch(at))
            if record is not None and not record.pending:
                self._settle_local(ask_id, record)  # (settled inside _claiming, as in _claim)
        return bool(int(reply[0])), record

    @translated
    async def due(self, *, now: float, limit: int = 100) -> list[str]:
        """Pending asks whose deadline has passed (again, until someone settles them)."""
        upper = "+inf" if math.isinf(now) else repr(now)
        ids = await self._redis.zrangebyscore(self._deadlines, "-inf", upper, start=0, num=limit)
        return [as_text(i) for i in ids]

    @translated
    async def next_deadline(self) -> float | None:
        """The earliest deadline of a pending ask."""
        first = await self._redis.zrange(self._deadlines, 0, 0, withscores=True)
        if not first:
            return None
        score = float(first[0][1])
        return None if math.isinf(score) else score

    @translated
    async def count_pending(self) -> int:
        """How many asks are pending, across every replica."""
        return int(await self._redis.zcard(self._deadlines))

    async def _index_owned(self, record: AskRecord) -> None:
        """Cluster only: add the ask to its owner's audit index (there a slot of its own, so
        the client does what ``_CREATE`` does on one Redis)."""
        if record.owner is None:
            return
        key = self._owned_key(record.owner)
        if random.random() >= _CLUSTER_TRIM_SHARE:  # noqa: S311 - load spreading, not a secret
            await self._redis.zadd(key, {record.id: record.created_at.timestamp()})
            return
        # Now and then (one create in four), check a few of the oldest: on average more
        # leave than come, so the index stays about as long as retention keeps asks.
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.zadd(key, {record.id: record.created_at.timestamp()})
            pipe.zrange(key, 0, _CLUSTER_TRIM - 1)
            _, oldest = await pipe.execute()
        await self._drop_gone(key, [as_text(i) for i in oldest])


# How many of an owner's oldest indexed asks a create checks for expiry (more than one, so
# that more leave than come); on a cluster, the client checks more, less often.
_OWNED_TRIM = 2
_CLUSTER_TRIM = 8
_CLUSTER_TRIM_SHARE = 0.25
