"""``ReceiptWriter``: signs each ended ask's receipt and appends it to the store's chain.

It runs off the click's path: the lifecycle's end event only schedules a task (the agent's
answer never waits on a signature or the chain), and that task reads the ended record, signs
its payload after the chain's head and appends it; another replica's receipt landing first
makes the append answer ``moved``, and the receipt is signed again after the new head.
Anything that needs the receipt (the webhook's body, ``GET …/receipt``) calls ``ensure``,
which writes it there and then if no replica has yet. The debt is noted in the store when the
ask is created (and again at its end), and every replica's sweep (``start``) writes the debts
older than a grace whose asks have ended, putting a still pending ask's back in line: a
replica killed at any step after the ask was created, its end included, leaves the receipt to
another replica (or to the next reader), not to nobody.

A record whose receipt cannot be built (a value JCS cannot encode, stored before the doors
refused such values) is quarantined: its place in the chain gets an *error receipt*, signed
like any other, saying which ask it is, how it ended and why its receipt could not be made.
Building a payload is pure, so retrying would fail forever; the chain has no hole, the ask's
readers get an answer, and the asks after it are receipted as usual.

A call the Decider decides at once, without a person (``decided_at_once``: the rules, a
grant, a plan) gets a receipt in the same chain (``relay.receipts.at_once``), written the
same way: after the decision's answer is on its way, and waited for by ``drain`` (a stopping
relay's ``aclose``). No ask holds that debt, so a process killed outright (not stopped) in
those few milliseconds, or a store failing the append, loses it, and says so in the log.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from typing import Any, Protocol

from relay.asks.events import AskEvent
from relay.receipts.at_once import AtOnce
from relay.receipts.jcs import canonical
from relay.receipts.jws import sign
from relay.receipts.keys import PublicKeys, SigningKey
from relay.receipts.payload import (
    ERROR_CODE,
    VERSION,
    digest,
    receipt_id,
    receipt_payload,
    record_time,
)
from relay.seam.tasks import stop_task
from relay.store.receipts import ChainHead, ReceiptChain
from relay.store.record import AskRecord

__all__ = ["END_EVENTS", "ERROR_CODE", "TYPE", "ReceiptWriter"]

_log = logging.getLogger("relay.receipts")

# The lifecycle events (relay.asks.events) after which an ask is over (as the webhooks' own).
END_EVENTS = frozenset({"answered", "defaulted", "timed_out", "aborted", "closed", "failed"})
# The JWS ``typ`` of a receipt (RFC 7515 §4.1.9: the media type without ``application/``).
TYPE = "relay-receipt+jws"
# Appends lost to other replicas before giving up (each loss means the chain moved on).
_ATTEMPTS = 1_000
# Debts swept per pass.
_SWEEP_BATCH = 100


class _Store(ReceiptChain, Protocol):
    async def get(self, *, ask_id: str) -> AskRecord | None: ...


class ReceiptWriter:
    """Writes ended asks' receipts to ``store``'s chain, signed with ``key`` as ``issuer``;
    ``published`` are the public keys a verifier needs (``key``'s and retired ones). Once
    started, every ``sweep_interval`` seconds it writes the receipts owed for over ``grace``
    seconds (their replica died, or the store failed it)."""

    def __init__(
        self,
        *,
        store: _Store,
        key: SigningKey,
        issuer: str,
        retired: PublicKeys | None = None,
        sweep_interval: float = 5.0,
        grace: float = 10.0,
    ) -> None:
        self._store = store
        self._key = key
        self.issuer = issuer
        current = PublicKeys.of([key.private.public_key()])
        self.published = current if retired is None else retired.merged(current)
        self._header: dict[str, Any] = {"alg": "EdDSA", "kid": key.kid, "typ": TYPE}
        self._head: ChainHead | None = None  # the head as last seen here (a hint only)
        self._background: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()
        self._deferred = 0  # ends seen whose task is not started yet
        self._sweep_interval = sweep_interval
        self._grace = grace
        self._sweeper: asyncio.Task[None] | None = None
        self._closed = False
        self.written = 0
        """Receipts this process appended (for tests and the bench)."""

    @property
    def key(self) -> SigningKey:
        """The key receipts are signed with (the chain's checkpoints are signed with it too)."""
        return self._key

    def observe(self, event: AskEvent) -> None:
        """An ``Events`` observer: note that an ask just created will owe a receipt, and
        write the receipt of an ask that just ended, in the background."""
        if self._closed:
            return
        if event.name == "created":
            # Noted from the start, so that a replica killed between an ask's end and the
            # note below still leaves the debt for another's sweep (not for nobody).
            self._spawn(self._owe(event.ask_id))
            return
        if event.name not in END_EVENTS:
            return
        # Started two turns of the loop on: after the waiter wakes and the click's ack is on
        # its way, so that signing is no part of either.
        loop = asyncio.get_running_loop()
        self._deferred += 1
        loop.call_soon(loop.call_soon, self._start, event.ask_id)

    def _start(self, ask_id: str) -> None:
        self._deferred -= 1
        self._spawn(self._on_end(ask_id))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _owe(self, ask_id: str) -> None:
        try:
            await self._store.receipt_owe(ask_id=ask_id, at=time.time())
        except Exception:
            # Its end notes the debt again (and writes the receipt).
            _log.warning("could not note the receipt ask %s will owe", ask_id, exc_info=True)

    async def _on_end(self, ask_id: str) -> None:
        try:
            await self._store.receipt_owe(ask_id=ask_id, at=time.time())
            await self.ensure(ask_id)
        except Exception:
            # A sweep (once the debt is noted) or the next reader (ensure) writes it.
            _log.warning("could not write the receipt of ask %s", ask_id, exc_info=True)

    async def ensure(self, ask_id: str) -> str | None:
        """``ask_id``'s receipt, written now if the ask has ended and no replica wrote it;
        ``None`` while the ask is pending or unknown."""
        found = await self._store.receipt_of(ask_id=ask_id)
        if found is not None:
            return found
        record = await self._store.get(ask_id=ask_id)
        if record is None or record.pending:
            return None
        return await self.write(record)

    async def write(self, record: AskRecord) -> str:
        """Sign ended ``record``'s receipt after the chain's head and append it (or the
        receipt another replica appended for it first).

        One append at a time per process: ends that come together would otherwise all sign
        after the same head, and all but one sign again, round after round."""
        async with self._lock:
            return await self._append(record)

    async def _append(self, record: AskRecord) -> str:
        quarantined = False

        def body(head: ChainHead) -> bytes:
            nonlocal quarantined
            data, quarantined = self._body(record, head)
            return data

        token, appended = await self._chained(record.id, body)
        if appended and quarantined:
            # Once: only the replica whose append landed logs it (no text of the ask).
            _log.error(
                "ask %s could not be receipted; an error receipt (%s) took its place",
                record.id,
                ERROR_CODE,
            )
        return token

    async def _chained(self, key: str, body: Callable[[ChainHead], bytes]) -> tuple[str, bool]:
        """Sign ``body`` (the JCS payload at the place after a head) after the chain's head
        and append it as ``key``'s receipt; the receipt, and whether this append landed (not
        one another replica appended for ``key`` first)."""
        head = self._head or await self._store.receipt_head()
        for _ in range(_ATTEMPTS):
            token = sign(body(head), self._key.private, header=self._header)
            result = await self._store.receipt_append(
                ask_id=key,
                receipt=token,
                seq=head.seq + 1,
                prev=head.digest,
                digest=digest(token.encode("ascii")),
            )
            if result.outcome == "appended":
                self._head = ChainHead(head.seq + 1, digest(token.encode("ascii")))
                self.written += 1
                return token, True
            if result.outcome == "exists" and result.receipt is not None:
                return result.receipt, False
            head = result.head or await self._store.receipt_head()
        raise RuntimeError(f"the receipt chain kept moving: {key} got no receipt")

    def decided_at_once(
        self,
        *,
        owner: str,
        agent: str,
        tool: str,
        call: str,
        decision: str,
        by: Mapping[str, Any],
        at: datetime,
    ) -> str | None:
        """Receipt, in the background, a call the Decider decided without a person (the
        Decider's ``Witness``): ``call`` is the digest of its canonical form, ``by`` what
        decided (``relay.receipts.at_once``). Started after the decision's answer is on its
        way; ``drain`` (and so a stopping relay) waits for it. The receipt's id, which the
        answer names (``None``: a closed writer writes none)."""
        if self._closed:
            return None
        note = AtOnce(
            owner=owner, agent=agent, tool=tool, call=call, decision=decision, by=by, at=at
        )
        loop = asyncio.get_running_loop()
        self._deferred += 1
        loop.call_soon(loop.call_soon, self._start_at_once, note)
        return receipt_id(note.id)

    def _start_at_once(self, note: AtOnce) -> None:
        self._deferred -= 1
        self._spawn(self._write_at_once(note))

    async def _write_at_once(self, note: AtOnce) -> None:
        try:
            await self.write_at_once(note)
        except Exception:
            # No ask holds it for a sweep: the log says which call went unreceipted.
            _log.error(
                "could not write the receipt of a %s decided at once", note.tool, exc_info=True
            )

    async def write_at_once(self, note: AtOnce) -> str:
        """Sign ``note``'s receipt after the chain's head and append it (one append at a
        time per process, as ``write``)."""

        def body(head: ChainHead) -> bytes:
            payload = note.payload(
                issuer=self.issuer, kid=self._key.kid, seq=head.seq + 1, prev=head.digest
            )
            return canonical(payload)

        async with self._lock:
            return (await self._chained(note.id, body))[0]

    def sign(self, record: AskRecord, head: ChainHead) -> str:
        """The compact JWS of ``record``'s receipt at place ``head.seq + 1`` after ``head``;
        its error receipt when the record cannot be receipted."""
        return sign(self._body(record, head)[0], self._key.private, header=self._header)

    def _body(self, record: AskRecord, head: ChainHead) -> tuple[bytes, bool]:
        # The JCS payload at place head.seq + 1, and whether it is an error receipt.
        seq, prev = head.seq + 1, head.digest
        try:
            payload = receipt_payload(
                record, issuer=self.issuer, kid=self._key.kid, seq=seq, prev=prev
            )
            return canonical(payload), False
        except Exception as exc:  # pure and deterministic: it would fail every time
            error = self._error_payload(record, seq=seq, prev=prev, reason=_why(exc))
            return canonical(error), True

    def _error_payload(
        self, record: AskRecord, *, seq: int, prev: str | None, reason: str
    ) -> dict[str, Any]:
        # Only what the relay itself made (ids, times, status, the owner's fingerprint):
        # nothing a client or reviewer typed, which is what could not be encoded.
        return {
            "v": VERSION,
            "iss": self.issuer,
            "kid": self._key.kid,
            "jti": receipt_id(record.id),
            "seq": seq,
            "prev": prev,
            "ask": record.id,
            "agent": {"owner": _text(record.owner), "name": None},
            "created": record_time(record.created_at),
            "ended": record_time(record.finished_at),
            "outcome": {"status": record.status.value},
            "error": {"code": ERROR_CODE, "reason": reason},
        }

    def start(self) -> None:
        """Start sweeping owed receipts (one background task; idempotent; needs a loop)."""
        if self._sweeper is None:
            loop = asyncio.get_running_loop()
            self._sweeper = loop.create_task(self._sweep_forever(), name="relay-receipts")

    async def _sweep_forever(self) -> None:
        while not self._closed:
            try:
                await self.sweep(now=time.time())
            except Exception:
                _log.warning("could not sweep the owed receipts", exc_info=True)
            await asyncio.sleep(self._sweep_interval)

    async def sweep(self, *, now: float) -> int:
        """Write the receipts owed since before ``now`` less the grace; how many asks now
        have theirs. A debt is dropped once its receipt exists, or its ask expired unsigned."""
        settled = 0
        for ask_id in await self._store.receipt_owed(before=now - self._grace, limit=_SWEEP_BATCH):
            try:
                if await self.ensure(ask_id) is not None:
                    settled += 1
                    continue
                if await self._store.get(ask_id=ask_id) is not None:
                    # Still pending: its debt goes back in line, so that asks pending for
                    # long never crowd the ended ones out of a sweep's batch.
                    await self._store.receipt_owe(ask_id=ask_id, at=now, again=True)
                    continue
            except Exception:
                # One ask's trouble (the store failing it) must not hold up the others'.
                _log.warning("could not write the receipt of ask %s", ask_id, exc_info=True)
                continue
            # Written (found so, not appended here: nothing settled it) or gone: no debt.
            await self._store.receipt_forget(ask_id=ask_id)
        return settled

    async def drain(self) -> None:
        """Wait until the receipts being written in the background are written."""
        while self._background or self._deferred:
            if self._background:
                await asyncio.gather(*self._background, return_exceptions=True)
            else:
                await asyncio.sleep(0)  # (a deferred start is two turns away)

    async def aclose(self) -> None:
        """Stop taking ends; wait for the receipts being written (idempotent)."""
        await self.drain()
        self._closed = True
        if self._sweeper is not None:
            await stop_task(self._sweeper)


def _why(exc: Exception) -> str:
    # JCS's own messages name the kind of value, never the value; anything else by its type
    # alone (a message could quote the record).
    if isinstance(exc, ValueError) and str(exc).startswith("JCS: "):
        return f"the record holds a value JCS cannot encode ({str(exc)[5:]})"
    return f"building its receipt failed ({type(exc).__name__})"


def _text(value: str | None) -> str | None:
    # The owner is the token's fingerprint (hex) on every record written by this relay.
    return value if value is None or value.isascii() else None
