"""Signed checkpoints of the receipt chain, its trimming, and their third-party timestamps.

A checkpoint is a JWS like a receipt (same key, ``typ`` ``relay-checkpoint+jws``) over the
JCS of what the chain held when it was made: its first and last place, the digest the first
receipt names as ``prev`` (``base``: ``null`` unless the chain was trimmed), the digest of
the last (``head``), how many receipts lie between, and when. An auditor who keeps one can
later tell a chain with its head or tail cut from a whole one. With a timestamp authority
(RFC 3161) configured, each checkpoint also carries the TSA's response over the SHA-256 of
its compact JWS: proof from a third party that the chain stood so by that time.

``Checkpointer`` makes them off the click's path: a background task looks at the chain's
head every second or so and signs a checkpoint once ``every`` receipts were added since the
last one, or ``interval`` seconds passed with any added; with a ``retention`` it first trims
the receipts that ended longer ago than that, so the checkpoint says where the chain starts.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from relay.errors import RelayException
from relay.receipts.jcs import canonical
from relay.receipts.jws import sign
from relay.receipts.keys import SigningKey
from relay.receipts.payload import VERSION, digest
from relay.seam.tasks import stop_task
from relay.store.receipts import ChainHead, Checkpoints, ReceiptChain

__all__ = ["TYPE", "Checkpointer", "Stored", "checkpointer_for"]

if TYPE_CHECKING:
    from relay.config.settings import Settings
    from relay.receipts.writer import ReceiptWriter

_log = logging.getLogger("relay.receipts")

TYPE = "relay-checkpoint+jws"
"""The JWS ``typ`` of a checkpoint (a receipt's is ``relay-receipt+jws``)."""
# Receipts read per step while looking for the ones to trim.
_TRIM_BATCH = 500
_TRIM_MOST = 5000


def _time(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def checkpoint_payload(
    *, issuer: str, kid: str, base: ChainHead, head: ChainHead, at: float
) -> dict[str, Any]:
    """What a checkpoint of a chain holding places ``base.seq + 1`` to ``head.seq`` says."""
    return {
        "v": VERSION,
        "iss": issuer,
        "kid": kid,
        "first": base.seq + 1,
        "base": base.digest,
        "last": head.seq,
        "head": head.digest,
        "count": head.seq - base.seq,
        "at": _time(at),
    }


@dataclass(frozen=True, slots=True)
class Stored:
    """A checkpoint as kept and published: its compact JWS, and the TSA's DER response
    (RFC 3161 ``TimeStampResp``) over its SHA-256, when a TSA stamped it."""

    checkpoint: str
    timestamp: bytes | None = None

    def entry(self) -> str:
        """The JSON kept in the store and served (the response in base64)."""
        stamp = None if self.timestamp is None else base64.b64encode(self.timestamp).decode()
        return json.dumps({"checkpoint": self.checkpoint, "timestamp": stamp})

    @classmethod
    def read(cls, data: Any) -> Stored:
        """``data`` (the JSON of ``entry``, or it parsed); ``ValueError`` if it is not one."""
        if isinstance(data, str | bytes):
            try:
                data = json.loads(data)
            except json.JSONDecodeError as exc:
                raise ValueError("a checkpoint is a JSON object") from exc
        if not isinstance(data, dict) or not isinstance(data.get("checkpoint"), str):
            raise ValueError("a checkpoint has a 'checkpoint' (a compact JWS)")
        stamp = data.get("timestamp")
        if stamp is not None and not isinstance(stamp, str):
            raise ValueError("a checkpoint's 'timestamp' is base64 or null")
        try:
            raw = None if stamp is None else base64.b64decode(stamp, validate=True)
        except binascii.Error as exc:
            raise ValueError("a checkpoint's 'timestamp' is not base64") from exc
        return cls(data["checkpoint"], raw)


class TimestampError(RelayException, RuntimeError):
    """The TSA did not answer with a granted timestamp."""


class TimestampAuthority:
    """An RFC 3161 TSA reached over HTTP (``application/timestamp-query``)."""

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self.url = url
        self._timeout = timeout

    async def stamp(self, data: bytes) -> bytes:
        """The TSA's DER ``TimeStampResp`` over the SHA-256 of ``data`` (with its
        certificate, and a nonce it must echo)."""
        import aiohttp
        from rfc3161_client import PKIStatus, TimestampRequestBuilder, decode_timestamp_response

        request = TimestampRequestBuilder().data(data).cert_request(cert_request=True).build()
        timeout = aiohttp.ClientTimeout(total=self._timeout)
        headers = {"Content-Type": "application/timestamp-query"}
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(self.url, data=request.as_bytes(), headers=headers) as response,
        ):
            if response.status != 200:
                raise TimestampError(f"the TSA answered HTTP {response.status}")
            body = await response.read()
        try:
            decoded = decode_timestamp_response(body)
        except ValueError as exc:
            raise TimestampError("the TSA's answer is not a TimeStampResp") from exc
        if PKIStatus(decoded.status) != PKIStatus.GRANTED:
            raise TimestampError(f"the TSA did not grant the timestamp ({decoded.status})")
        if decoded.tst_info.nonce != request.nonce:
            raise TimestampError("the TSA's answer is for another request (nonce)")
        return body


class _Store(ReceiptChain, Checkpoints, Protocol):
    pass


class Checkpointer:
    """Signs checkpoints of ``store``'s chain with ``key`` as ``issuer`` in the background;
    trims receipts older than ``retention`` seconds first, when given; has each stamped by
    ``tsa``, when given."""

    def __init__(
        self,
        *,
        store: _Store,
        key: SigningKey,
        issuer: str,
        interval: float = 300.0,
        every: int = 1000,
        retention: float | None = None,
        tsa: TimestampAuthority | None = None,
    ) -> None:
        self._store = store
        self._key = key
        self.issuer = issuer
        self._interval = interval
        self._every = every
        self._retention = retention
        self._tsa = tsa
        self._header: dict[str, Any] = {"alg": "EdDSA", "kid": key.kid, "typ": TYPE}
        self._task: asyncio.Task[None] | None = None
        self._made_at = 0.0
        self._covered: tuple[int, int] | None = None  # (last, first) of the latest made
        self.made = 0
        """Checkpoints this process kept (for tests and the bench)."""

    def start(self) -> None:
        """Start the background task (idempotent; needs a loop)."""
        if self._task is None:
            loop = asyncio.get_running_loop()
            self._task = loop.create_task(self._run(), name="relay-checkpoints")

    async def aclose(self) -> None:
        """Stop the background task (a checkpoint being made is left unmade)."""
        if self._task is not None:
            await stop_task(self._task)
            self._task = None

    async def _run(self) -> None:
        poll = min(self._interval, 1.0)
        while True:
            try:
                await self.tick(now=time.time())
            except Exception:
                _log.warning("could not make a receipt checkpoint", exc_info=True)
            await asyncio.sleep(poll)

    async def tick(self, *, now: float) -> Stored | None:
        """Trim what is past retention, then checkpoint if it is due; the one made."""
        trimmed = await self.trim(now=now) if self._retention is not None else 0
        head = await self._store.receipt_head()
        if head.seq == 0:
            return None
        if self._covered is None:
            latest = await self._store.checkpoint_latest()
            if latest is not None:
                self._covered = _covers(Stored.read(latest[1]).checkpoint)
        last = self._covered[0] if self._covered else 0
        due = (
            trimmed > 0
            or head.seq - last >= self._every
            or (head.seq > last and now - self._made_at >= self._interval)
        )
        return await self.make(now=now) if due else None

    async def make(self, *, now: float) -> Stored | None:
        """Sign a checkpoint of the chain as it stands and keep it (``None``: the chain is
        empty, or another replica's covers as much)."""
        base = await self._store.receipt_base()
        head = await self._store.receipt_head()
        if head.seq == 0:
            return None
        payload = checkpoint_payload(
            issuer=self.issuer, kid=self._key.kid, base=base, head=head, at=now
        )
        token = sign(canonical(payload), self._key.private, header=self._header)
        stamp = None
        if self._tsa is not None:
            # Unstamped rather than none at all: the checkpoint still catches a cut chain.
            try:
                stamp = await self._tsa.stamp(token.encode("ascii"))
            except Exception as exc:
                _log.warning("the TSA gave no timestamp for a checkpoint: %s", exc)
        stored = Stored(token, stamp)
        self._made_at = now
        self._covered = (head.seq, base.seq + 1)
        kept = await self._store.checkpoint_add(
            first=base.seq + 1, last=head.seq, entry=stored.entry()
        )
        if not kept:
            return None
        self.made += 1
        return stored

    async def trim(self, *, now: float) -> int:
        """Drop the receipts at the chain's start that ended over ``retention`` ago (up to
        the first that did not: the chain stays whole from where it starts)."""
        assert self._retention is not None
        cutoff = _time(now - self._retention)
        base = await self._store.receipt_base()
        place, last = base.seq, None
        done = False
        batch = 1  # (a look at the first alone, each poll: mostly nothing is due)
        while not done:
            tokens = await self._store.receipt_range(start=place + 1, limit=batch)
            batch = _TRIM_BATCH
            # At most _TRIM_MOST a tick (one script, its asks' ids as arguments); the next
            # tick goes on.
            done = not tokens or place - base.seq >= _TRIM_MOST
            for token in tokens:
                ended = _claims(token).get("ended")
                # RFC 3339 UTC times of one format compare as text; a receipt with no end
                # time (an error receipt) goes with the ones around it.
                if isinstance(ended, str) and ended >= cutoff:
                    done = True
                    break
                place, last = place + 1, token
        if last is None:
            return 0
        return await self._store.receipt_trim(through=place, digest=digest(last.encode("ascii")))


def checkpointer_for(
    settings: Settings, store: object, writer: ReceiptWriter | None
) -> Checkpointer | None:
    """The checkpointer ``relay serve`` runs beside ``writer`` (none without receipts)."""
    if writer is None or not isinstance(store, ReceiptChain) or not isinstance(store, Checkpoints):
        return None
    tsa = TimestampAuthority(settings.tsa_url) if settings.tsa_url else None
    return Checkpointer(
        store=store,
        key=writer.key,
        issuer=writer.issuer,
        interval=settings.checkpoint_interval,
        every=settings.checkpoint_every,
        retention=settings.receipt_retention,
        tsa=tsa,
    )


def _claims(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    data = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return data if isinstance(data, dict) else {}


def _covers(token: str) -> tuple[int, int]:
    claims = _claims(token)
    return int(claims.get("last", 0)), int(claims.get("first", 0))
