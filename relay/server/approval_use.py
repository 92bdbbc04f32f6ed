"""``POST /v1/approvals/{id}/consume``: run the one call an approval was asked for, once.

A paused run (``relay.integrations.core.RelayApprovals``) keeps its approval ids with the
run's state, where whoever can write that state can copy, swap or replay them, and recompute
any digest the client keeps. So the client names the call it is about to run, and the relay,
which recorded what the reviewer was shown (``Offer.call``, ``Offer.tool_use_id``), answers:

- ``409 NOT_THIS_CALL`` unless the approval was asked for exactly this tool and input
  (``relay.canonical.match.fingerprint``) under this ``tool_use_id``; nothing is used.
- An allow: its first use is recorded in the store, atomically across replicas
  (``relay.store.uses``), and the approval answered; any later use is ``409 CONSUMED``. The
  same ``Idempotency-Key`` sent again (its reply was lost) is the same use.
- A deny, or a pending approval (``?wait=S`` long-polls as ``GET`` does), is answered as
  ``GET`` answers it, and nothing is used.

A grant the reviewer chose still covers later identical calls at ``POST /v1/approvals``; the
approval itself runs one call. Another token's approval is ``404 NOT_FOUND``, as everywhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from relay.canonical.match import fingerprint
from relay.errors import ErrorCode
from relay.grants.base import GrantStore
from relay.server.api import AskApi
from relay.server.approvals import ApprovalApi, approval_json
from relay.server.errors import ApiError
from relay.server.idempotency import read_key
from relay.store.uses import ApprovalUses

__all__ = ["ApprovalUseApi"]

# How long a use is remembered: as long as the approval's offer lives (its ask's timeout, or
# a week, plus a day: ``relay.server.approvals``), counted from now, so from later than the
# offer's own count. Once the offer is gone the approval reads as NOT_FOUND anyway.
_WEEK = 7 * 24 * 3600.0
_DAY = 24 * 3600.0
_KEYS = frozenset({"tool", "input", "tool_use_id"})


class ApprovalUseApi:
    """The handler of ``POST /v1/approvals/{id}/consume``; requests arrive authenticated.
    ``uses`` records each approval's use (the ask store's part)."""

    def __init__(
        self,
        *,
        asks: AskApi,
        approvals: ApprovalApi,
        grants: GrantStore,
        uses: ApprovalUses,
    ) -> None:
        self._asks = asks
        self._approvals = approvals
        self._grants = grants
        self._uses = uses

    def routes(self) -> list[web.RouteDef]:
        """The route to add to the application."""
        return [web.post("/v1/approvals/{ask_id}/consume", self.consume)]

    async def consume(self, request: web.Request) -> web.Response:
        """The approval, its allow used by this call once; ``409`` for any other use."""
        wait = self._asks.wait_param(request)
        key = read_key(request) or f"use-{uuid.uuid4()}"
        body = await self._asks.json_body(request, hint="send less of the tool input")
        tool, tool_input, tool_use_id = _read_call(body)
        record = await self._approvals.owned(request)
        offer = await self._grants.get_offer(ask_id=record.id)
        if offer is None or offer.call is None:
            raise _not_this_call(
                f"approval {record.id} does not say which call it was asked for (an older relay"
                " asked it), so it runs none"
            )
        if offer.call != fingerprint(tool, tool_input):
            raise _not_this_call(
                f"approval {record.id} was asked for another call than this {tool} call with"
                " this input; it runs only the call its reviewers were shown"
            )
        if offer.tool_use_id != tool_use_id:
            raise _not_this_call(
                f"approval {record.id} was asked for another run or tool use id than"
                f" {tool_use_id!r}; it runs only the call it was asked for"
            )
        record = await self._asks.waited(request, record, wait)
        decision = await self._approvals.decision(record)
        if decision is not None and decision.allowed:
            ttl = (record.target.timeout or _WEEK) + _DAY
            if not await self._uses.use_once(ask_id=record.id, key=key, ttl=ttl):
                raise ApiError(
                    ErrorCode.CONSUMED,
                    f"approval {record.id} was already used to run its call once; submit the"
                    " call again to ask for another run of it",
                )
        return web.json_response(approval_json(record.id, decision, record))


def _not_this_call(what: str) -> ApiError:
    return ApiError(ErrorCode.NOT_THIS_CALL, f"{what}: submit this call to ask for it")


def _read_call(body: object) -> tuple[str, Mapping[str, Any], str | None]:
    """The call about to run: ``tool``, ``input`` and ``tool_use_id`` as the approval's."""
    if not isinstance(body, Mapping):
        raise ApiError(
            ErrorCode.BAD_REQUEST, "the body must be a JSON object with the call's tool and input"
        )
    for name in body:
        if name not in _KEYS:
            raise ApiError(
                ErrorCode.BAD_REQUEST, f"{name} is not a known field (tool, input, tool_use_id)"
            )
    tool = body.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        raise ApiError(ErrorCode.BAD_REQUEST, "tool is required: the name of the tool about to run")
    tool_input = body.get("input")
    tool_input = {} if tool_input is None else tool_input
    if not isinstance(tool_input, Mapping):
        raise ApiError(
            ErrorCode.BAD_REQUEST, "input must be an object: the tool's input about to run"
        )
    tool_use_id = body.get("tool_use_id")
    if tool_use_id is not None and not isinstance(tool_use_id, str):
        raise ApiError(
            ErrorCode.BAD_REQUEST, "tool_use_id must be a string, as sent with the approval"
        )
    return tool, tool_input, tool_use_id
