"""The receipts over HTTP: an ask's or approval's receipt, the chain, and the public keys.

``GET /v1/asks/{id}/receipt`` and ``GET /v1/approvals/{id}/receipt`` answer the compact JWS
(``application/jose``) once the ask has ended (written then and there if no replica has
yet), to the token that made the ask; ``GET /v1/receipts`` pages through the chain in order
(what ``relay audit --receipts`` exports): a token's own receipts, or, to an operator token
(``RELAY_OPERATOR_TOKENS``, which may read these routes and no other), all of them.
``GET /.well-known/jwks.json`` publishes the keys receipts verify with (RFC 7517), with no
token, as keys are meant to be. So do ``GET /receipts/checkpoint`` (the latest signed
checkpoint of the chain) and ``GET /receipts/checkpoints?after=N`` (all of them in order):
a checkpoint holds places, digests, a count and a time, nothing of any ask, and anyone who
keeps one (an auditor, a witness) can later show the chain was cut or rewritten.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from aiohttp import web

from relay.errors import ErrorCode
from relay.receipts import ReceiptWriter
from relay.receipts.checkpoint import Checkpointer, Stored
from relay.server.api import OPERATOR, OWNER, AskApi
from relay.server.approvals import ApprovalApi
from relay.server.errors import ApiError
from relay.store.receipts import Checkpoints, ReceiptChain
from relay.store.record import AskRecord

__all__ = ["ReceiptApi", "operator_may"]

JOSE = "application/jose"
JWK_SET = "application/jwk-set+json"
_PAGE_DEFAULT, _PAGE_MAX = 200, 1000
# Receipts one request reads past looking for its token's own (the page says where it
# stopped: the next one goes on from there).
_SCAN_BUDGET = 20_000
RECEIPT_ROUTES = frozenset(
    {"/v1/receipts", "/v1/asks/{ask_id}/receipt", "/v1/approvals/{ask_id}/receipt"}
)
"""The routes an operator token may read (``GET`` only)."""


def operator_may(request: web.Request) -> bool:
    """Whether an operator token may make ``request``: a read of a receipt route."""
    resource = request.match_info.route.resource
    return (
        request.method in ("GET", "HEAD")
        and resource is not None
        and resource.canonical in RECEIPT_ROUTES
    )


def _off() -> ApiError:
    return ApiError(
        ErrorCode.NOT_FOUND,
        "this relay signs no receipts; its operator turns them on with RELAY_RECEIPT_KEY_FILE",
    )


class ReceiptApi:
    """The receipt routes; ``writer`` is ``None`` when the relay signs none."""

    def __init__(
        self,
        *,
        asks: AskApi,
        approvals: ApprovalApi,
        writer: ReceiptWriter | None,
        checkpoints: Checkpointer | None = None,
    ) -> None:
        self._asks = asks
        self._approvals = approvals
        self._writer = writer
        self._checkpoints = checkpoints

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the application."""
        return [
            web.get("/v1/asks/{ask_id}/receipt", self.ask_receipt),
            web.get("/v1/approvals/{ask_id}/receipt", self.approval_receipt),
            web.get("/v1/receipts", self.chain),
            web.get("/.well-known/jwks.json", self.jwks),
            web.get("/receipts/checkpoint", self.checkpoint),
            web.get("/receipts/checkpoints", self.checkpoint_list),
        ]

    async def ask_receipt(self, request: web.Request) -> web.Response:
        """``GET /v1/asks/{id}/receipt``."""
        return await self._receipt(await self._asks.owned(request))

    async def approval_receipt(self, request: web.Request) -> web.Response:
        """``GET /v1/approvals/{id}/receipt``."""
        return await self._receipt(await self._approvals.owned(request))

    async def _receipt(self, record: AskRecord) -> web.Response:
        if self._writer is None:
            raise _off()
        token = None if record.pending else await self._writer.ensure(record.id)
        if token is None:
            raise ApiError(
                ErrorCode.NOT_FOUND,
                f"ask {record.id} has not ended yet: its receipt is signed when it ends;"
                " read it again then (GET /v1/asks/{id}?wait= waits for the end)",
            )
        return web.Response(text=token, content_type=JOSE)

    async def chain(self, request: web.Request) -> web.Response:
        """``GET /v1/receipts?after=N&limit=M``: receipts after place N, in chain order: the
        token's own, or every one to an operator token; ``next_after`` is where to go on."""
        after = _whole(request.query.get("after"), "after", 0, None)
        limit = _whole(request.query.get("limit"), "limit", _PAGE_DEFAULT, _PAGE_MAX)
        if self._writer is None:
            raise _off()
        store = self._asks.channel.store
        if not isinstance(store, ReceiptChain):
            raise _off()
        owner = None if request.get(OPERATOR) else request[OWNER]
        items: list[dict[str, Any]] = []
        place, scanned, more = after, 0, True
        while len(items) < limit and scanned < _SCAN_BUDGET:
            asked = limit - len(items) if owner is None else _PAGE_MAX
            tokens = await store.receipt_range(start=place + 1, limit=asked)
            scanned += len(tokens)
            for token in tokens:
                # Its own place: after a trim (RELAY_RECEIPT_RETENTION) the chain starts later.
                seq = _claim(token, "seq")
                place = seq if isinstance(seq, int) else place + 1
                if owner is None or _owner(token) == owner:
                    ask = _claim(token, "ask")
                    items.append(
                        {"seq": place, "id": _claim(token, "jti"), "ask": ask, "receipt": token}
                    )
                    if len(items) == limit:
                        break  # (with more to read, maybe: the page says where to go on)
            else:
                if len(tokens) < asked:
                    more = False  # read to the chain's end
                    break
        return web.json_response({"receipts": items, "next_after": place if more else None})

    async def jwks(self, _: web.Request) -> web.Response:
        """``GET /.well-known/jwks.json``: the current and retired public keys."""
        if self._writer is None:
            raise _off()
        return web.json_response(self._writer.published.jwks(), content_type=JWK_SET)

    def _checkpoint_store(self) -> Checkpoints:
        store = self._asks.channel.store
        if self._checkpoints is None or not isinstance(store, Checkpoints):
            raise _off()
        return store

    async def checkpoint(self, _: web.Request) -> web.Response:
        """``GET /receipts/checkpoint``: the latest signed checkpoint, with no token."""
        latest = await self._checkpoint_store().checkpoint_latest()
        if latest is None:
            raise ApiError(
                ErrorCode.NOT_FOUND,
                "no checkpoint yet: one is signed once receipts exist (RELAY_CHECKPOINT_INTERVAL"
                " seconds apart); read this again then",
            )
        number, entry = latest
        return web.json_response(_item(number, entry))

    async def checkpoint_list(self, request: web.Request) -> web.Response:
        """``GET /receipts/checkpoints?after=N&limit=M``: the checkpoints after the N-th, in
        the order made; ``next_after`` is where to go on."""
        after = _whole(request.query.get("after"), "after", 0, None)
        limit = _whole(request.query.get("limit"), "limit", _PAGE_DEFAULT, _PAGE_MAX)
        entries = await self._checkpoint_store().checkpoint_range(start=after + 1, limit=limit)
        items = [_item(after + i + 1, e) for i, e in enumerate(entries)]
        following = after + len(items) if len(items) == limit else None
        return web.json_response({"checkpoints": items, "next_after": following})


def _item(number: int, entry: str) -> dict[str, Any]:
    stored = Stored.read(entry)
    return {"number": number, **json.loads(stored.entry())}


def _whole(raw: str | None, name: str, default: int, most: int | None) -> int:
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 12:
        raise ApiError(ErrorCode.BAD_REQUEST, f"{name} must be a whole number")
    value = int(raw)
    if most is not None and not 1 <= value <= most:
        raise ApiError(ErrorCode.BAD_REQUEST, f"{name} must be from 1 to {most}")
    return value


def _owner(token: str) -> Any:
    agent = _claim(token, "agent")
    return agent.get("owner") if isinstance(agent, dict) else None


def _claim(token: str, name: str) -> Any:
    """A field of the receipt's payload (read for the page's convenience, not verified)."""
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))).get(name)
