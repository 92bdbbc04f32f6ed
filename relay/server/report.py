"""``GET /report``: the approvals report as a page, for an operator (``RELAY_OPERATOR_TOKENS``).

The page is made from the relay's own receipt chain, verified against the relay's published
keys before anything is counted (``relay.report``), and names a repeated call only from an
ask still kept whose question hashes to the digest its receipts signed.

The credential is an operator token, sent as ``Authorization: Bearer <token>``, or as the
password of HTTP Basic (any user name), so that a browser can ask for it: a request with no
credential gets a 401 with ``WWW-Authenticate: Basic``. An agent's API token is refused
(``UNAUTHORIZED``) like no token: the report shows every token's approvals.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from typing import Any

from aiohttp import web

from relay.errors import ErrorCode
from relay.receipts import ReceiptWriter
from relay.report import Evidence, RuleFor, figures, verified
from relay.report.labels import labels_for
from relay.report.page import PAGE_POLICY, render_page
from relay.report.suggested import learned_rules
from relay.server.auth import Authenticator
from relay.server.errors import ApiError, error_response
from relay.store.base import AskStore
from relay.store.receipts import Checkpoints, ReceiptChain
from relay.store.record import AskRecord

__all__ = ["ReportPage"]

REPORT_PATH = "/report"
_PAGE = 1000
_READS = 100  # asks read from the store at once
_HEADERS = {
    "Content-Security-Policy": PAGE_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_CHALLENGE = {"WWW-Authenticate": 'Basic realm="relay report", charset="UTF-8"'}


class ReportPage:
    """Serves ``/report`` from ``store``'s receipt chain, signed by ``writer`` (``None``: the
    relay signs no receipts, and the page says how to turn them on); a repeated call is shown
    with the rule ``relay rules suggest`` offers for it, learned from the receipts and the
    asks the relay still keeps (``rule_for``, when given, suggests instead)."""

    def __init__(
        self,
        *,
        auth: Authenticator,
        store: AskStore,
        writer: ReceiptWriter | None,
        rule_for: RuleFor | None = None,
    ) -> None:
        self._auth = auth
        self._store = store
        self._writer = writer
        self._rule_for = rule_for

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the application."""
        return [web.get(REPORT_PATH, self.page)]

    async def page(self, request: web.Request) -> web.StreamResponse:
        """``GET /report``: the page, to an operator's credential."""
        refused = self._refusal(request.headers.get("Authorization"))
        if refused is not None:
            return refused
        evidence = await self._evidence()
        got = figures(evidence.payloads)
        labels = await labels_for(got.repeated, self._ask)
        rule_for = self._rule_for
        if rule_for is None and got.repeated:
            asks = await self._asks_of(evidence.payloads)
            # Learned and replayed on thousands of calls: off the loop, which serves clicks.
            rule_for = await asyncio.to_thread(learned_rules, evidence.payloads, asks)
        got = figures(evidence.payloads, labels=labels, rule_for=rule_for)
        html = render_page(got, source=request.host)
        return web.Response(text=html, content_type="text/html", headers=_HEADERS)

    def _refusal(self, header: str | None) -> web.Response | None:
        bearer = _as_bearer(header)
        if self._auth.operator(bearer) is not None:
            return None
        if self._auth.owner(bearer) is not None:
            return error_response(
                ErrorCode.UNAUTHORIZED,
                "an agent's API token cannot read the report (it shows every token's"
                " approvals): send an operator token (RELAY_OPERATOR_TOKENS)",
            )
        return error_response(
            ErrorCode.UNAUTHORIZED,
            "the report needs an operator token (RELAY_OPERATOR_TOKENS): send it as"
            " 'Authorization: Bearer <token>', or as the password when the browser asks",
            headers=_CHALLENGE,
        )

    async def _ask(self, ask_id: str) -> AskRecord | None:
        return await self._store.get(ask_id=ask_id)

    async def _asks_of(self, payloads: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
        """The asks the receipts decided that the relay still keeps (as ``relay audit``
        exports them: id and questions), for ``relay rules suggest``'s learner."""
        ids = [p["ask"] for p in payloads if isinstance(p.get("ask"), str)]
        found: list[dict[str, Any]] = []
        for start in range(0, len(ids), _READS):
            records = await asyncio.gather(*(self._ask(i) for i in ids[start : start + _READS]))
            found += [
                {"id": r.id, "questions": [q.to_dict() for q in r.request.questions]}
                for r in records
                if r is not None
            ]
        return found

    async def _evidence(self) -> Evidence:
        store = self._store
        if self._writer is None or not isinstance(store, ReceiptChain):
            raise ApiError(
                ErrorCode.NOT_FOUND,
                "this relay signs no receipts, and the report is made from them; its operator"
                " turns them on with RELAY_RECEIPT_KEY_FILE",
            )
        kept = store if isinstance(store, Checkpoints) else None
        # The checkpoints first: each then covers receipts that the chain read after holds.
        checkpoints: list[tuple[str, str]] = []
        while kept is not None:
            entries = await kept.checkpoint_range(start=len(checkpoints) + 1, limit=_PAGE)
            number = len(checkpoints)
            checkpoints += [(f"checkpoint {number + i}", e) for i, e in enumerate(entries, 1)]
            if len(entries) < _PAGE:
                break
        # A chain trimmed by retention starts past its base (its checkpoints say where).
        place = (await kept.receipt_base()).seq if kept is not None else 0
        receipts: list[tuple[str, str]] = []
        while True:
            tokens = await store.receipt_range(start=place + 1, limit=_PAGE)
            receipts += [(f"place {place + i + 1}", t) for i, t in enumerate(tokens)]
            place += len(tokens)
            if len(tokens) < _PAGE:
                break
        keys = self._writer.published
        # Thousands of signatures: off the event loop, which serves the clicks.
        evidence = await asyncio.to_thread(verified, receipts, checkpoints, keys)
        if evidence.refusal is not None:
            raise ApiError(ErrorCode.INTERNAL, evidence.refusal, status=500)
        return evidence


def _as_bearer(header: str | None) -> str | None:
    """``header`` as a bearer credential: a Basic one's password is the token."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return header
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    _, colon, password = decoded.partition(":")
    return f"Bearer {password}" if colon and password else None
