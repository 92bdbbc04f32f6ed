"""The hook's ``RemoteApprover`` and the integrations' ``RelayApprovals`` call a relay's
``/v1/approvals`` through one ``ApprovalsAPI``; what each makes of the relay's errors differs
only where its user's settings differ (``RELAY_URL``/``RELAY_TOKEN`` against arguments), and
in that a paused run's tickets wait out a 429 while the hook denies."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web
from redis_server import free_port

from relay.errors import UserInteractionError
from relay.gate.approval import ApprovalRequest
from relay.gate.remote import RemoteApprover
from relay.integrations.core import PendingCall, RelayApprovals
from relay.seam.questions import AgentRef
from tests.served import served

AGENT = AgentRef("ops-bot", "Ops bot")
CALL = PendingCall("c1", "deploy", {"env": "prod"})
RUN = "run-1"
TOKEN = "t" * 20
PENDING = (201, {"id": "a1", "status": "pending", "decision": None})
ALLOWED = (
    200,
    {
        "id": "a1",
        "status": "decided",
        "decision": {"behavior": "allow", "message": "alice allowed it", "outcome": "approved"},
    },
)


def refusal(status: int, code: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"code": code, "message": f"the relay says {code}"}}


@asynccontextmanager
async def scripted(
    *replies: tuple[int, dict[str, Any]], seen: list[tuple[str, str | None]] | None = None
) -> AsyncIterator[str]:
    """A relay answering its requests with ``replies`` in turn; its base URL. ``seen`` gets
    each request's method and ``Idempotency-Key``."""
    queue = deque(replies)

    async def answer(request: web.Request) -> web.Response:
        if seen is not None:
            seen.append((request.method, request.headers.get("Idempotency-Key")))
        status, body = queue.popleft()
        return web.Response(status=status, text=json.dumps(body), content_type="application/json")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    async with served(app) as url:
        yield url
    assert not queue, f"the client stopped before these replies: {list(queue)}"


async def hook_decision(url: str) -> str:
    approver = RemoteApprover(url, TOKEN, poll=1)
    try:
        request = ApprovalRequest(tool="deploy", input={"env": "prod"}, agent=AGENT)
        decision = await asyncio.wait_for(approver.approve(request), 10)
    finally:
        await approver.aclose()
    assert not decision.allowed
    return decision.message


async def submit_error(url: str) -> str:
    async with RelayApprovals(url, TOKEN, poll=1) as approvals:
        with pytest.raises(UserInteractionError) as caught:
            await asyncio.wait_for(approvals.submit([CALL], AGENT, run=RUN), 10)
    assert caught.value.code == "PROVIDER_FAILED"
    return str(caught.value)


async def test_a_refused_token_is_named_as_each_user_set_it() -> None:
    async with scripted(refusal(401, "UNAUTHORIZED")) as url:
        assert "UNAUTHORIZED: the relay refused RELAY_TOKEN: the relay says" in (
            await hook_decision(url)
        )
    async with scripted(refusal(401, "UNAUTHORIZED")) as url:
        assert (await submit_error(url)).endswith("UNAUTHORIZED: the relay says UNAUTHORIZED")


async def test_an_unreachable_relay_says_which_url_to_check() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert "; check RELAY_URL and that relay serve is running" in await hook_decision(url)
    assert "; check its URL and that relay serve is running" in await submit_error(url)


async def test_a_rate_limited_poll_waits_for_a_paused_run_and_denies_the_hook() -> None:
    limited = refusal(429, "RATE_LIMITED")
    withdrawn = (200, {"id": "a1", "status": "withdrawn"})
    async with scripted(PENDING, limited, withdrawn) as url:
        assert "RATE_LIMITED: the relay says RATE_LIMITED" in await hook_decision(url)
    async with (
        scripted(limited, ALLOWED, ALLOWED) as url,
        RelayApprovals(url, TOKEN, poll=1) as approvals,
    ):
        tickets = {CALL.call_id: {"id": "a1", "digest": CALL.digest, "run": RUN}}
        verdicts = await asyncio.wait_for(approvals.collect([CALL], AGENT, tickets, run=RUN), 10)
    assert verdicts is not None
    assert verdicts[CALL.call_id].allowed


async def test_both_poll_again_while_the_relay_restarts() -> None:
    unavailable = refusal(503, "UNAVAILABLE")
    async with scripted(PENDING, unavailable, ALLOWED) as url:
        approver = RemoteApprover(url, TOKEN, poll=1)
        try:
            request = ApprovalRequest(tool="deploy", input={"env": "prod"}, agent=AGENT)
            decision = await asyncio.wait_for(approver.approve(request), 10)
        finally:
            await approver.aclose()
    assert decision.allowed, decision.message
    async with (
        scripted(unavailable, ALLOWED, ALLOWED) as url,
        RelayApprovals(url, TOKEN, poll=1) as approvals,
    ):
        tickets = {CALL.call_id: {"id": "a1", "digest": CALL.digest, "run": RUN}}
        verdicts = await asyncio.wait_for(approvals.collect([CALL], AGENT, tickets, run=RUN), 10)
    assert verdicts is not None
    assert verdicts[CALL.call_id].allowed


async def test_a_create_is_sent_again_under_one_key_then_fails_with_a_code() -> None:
    # A 503 or 429 on posting an approval was raised as relay's internal Retry to the
    # framework's caller; now it is sent again (one key: the relay posts it once), and a
    # relay that never takes it ends in PROVIDER_FAILED saying what to check.
    seen: list[tuple[str, str | None]] = []
    replies = (refusal(503, "UNAVAILABLE"), refusal(429, "RATE_LIMITED"), PENDING)
    async with scripted(*replies, seen=seen) as url, RelayApprovals(url, TOKEN) as approvals:
        tickets = await asyncio.wait_for(approvals.submit([CALL], AGENT, run=RUN), 20)
    assert tickets == {CALL.call_id: {"id": "a1", "digest": CALL.digest, "run": RUN}}
    assert [method for method, _ in seen] == ["POST"] * 3
    keys = {key for _, key in seen}
    assert len(keys) == 1
    assert None not in keys
    async with scripted(*[refusal(503, "UNAVAILABLE")] * 5) as url:
        message = await submit_error(url)
    assert "could not take the approval in 5 tries" in message
    assert "check that relay serve and its store are up" in message


async def test_a_use_whose_reply_is_lost_is_sent_again_as_the_same_use() -> None:
    # The relay records an allow's first use; a use sent again under another key would be
    # refused as a second use, so the client keeps one key for all its tries.
    seen: list[tuple[str, str | None]] = []
    replies = (ALLOWED, refusal(503, "UNAVAILABLE"), ALLOWED)
    async with (
        scripted(*replies, seen=seen) as url,
        RelayApprovals(url, TOKEN, poll=1) as approvals,
    ):
        tickets = {CALL.call_id: {"id": "a1", "digest": CALL.digest, "run": RUN}}
        verdicts = await asyncio.wait_for(approvals.collect([CALL], AGENT, tickets, run=RUN), 10)
    assert verdicts is not None
    assert verdicts[CALL.call_id].allowed
    assert [method for method, _ in seen] == ["GET", "POST", "POST"]
    assert seen[1][1] is not None
    assert seen[1][1] == seen[2][1]
