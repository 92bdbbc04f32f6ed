"""``RemoteApprover``: approvals through a hosted relay's ``/v1/approvals`` (or a sandbox's).

It creates the approval, long-polls it until decided, and withdraws it if aborted or
cancelled, like ``RelayProvider`` does for asks. Grants are the relay's: it neither keeps
nor can make any. Every failure is a deny whose message says what went wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
from dataclasses import replace
from typing import Any

import aiohttp

from relay.canonical.match import fingerprint
from relay.errors import ErrorCode, RelayConfigError, UserInteractionError, ask_aborted
from relay.gate.approval import ApprovalRequest, Decision, decide_error
from relay.gate.decider import PLAN_TOOL
from relay.seam.abort import AbortSignal
from relay.seam.asked import note_ask
from relay.seam.replies import RETRYABLE, RelayError, Retry, read_reply

__all__ = [
    "WITHDRAW_WITHIN",
    "ApprovalsAPI",
    "RemoteApprover",
    "approval_body",
    "plan_decision",
]

WITHDRAW_WITHIN = 3.0
"""Seconds an approval that ends unanswered (aborted, cancelled, failed) spends withdrawing
its question: a caller bounding the whole approval keeps this much of its time for it."""


def approval_body(request: ApprovalRequest) -> dict[str, Any]:
    """The ``POST /v1/approvals`` body for ``request``."""
    body: dict[str, Any] = {
        "tool": request.tool,
        "input": dict(request.input),
        "agent": request.agent.to_dict(),
        "session_grants": request.session_grants,
        "grant_minutes": request.grant_minutes,
    }
    if request.tool_use_id is not None:
        body["tool_use_id"] = request.tool_use_id
    if request.context:
        body["context"] = dict(request.context)
    if request.reason:
        body["reason"] = request.reason
    if request.editable:
        body["editable"] = True
    if request.input_schema is not None:
        body["input_schema"] = dict(request.input_schema)
    slack: dict[str, Any] = {}
    if request.channel:
        slack["channel"] = request.channel
    if request.approvers is not None:
        slack["allowed_users"] = list(request.approvers)
    if request.approver_groups is not None:
        slack["allowed_groups"] = list(request.approver_groups)
    if request.timeout is not None:
        slack["timeout_s"] = request.timeout
    if request.remind_after is not None:
        slack["remind_after_s"] = request.remind_after
    if request.reminders is not None:
        slack["reminders"] = request.reminders
    if request.escalate_after is not None:
        # The rules' escalation is one whole: null keeps the relay's defaults out of it.
        slack["escalate_after_s"] = request.escalate_after
        slack["escalate_users"] = _listed(request.escalate_users)
        slack["escalate_groups"] = _listed(request.escalate_groups)
        slack["escalate_channel"] = request.escalate_channel
    if request.approvals is not None:
        body["approvals_required"] = request.approvals
    if request.deny_vetoes is not None:
        body["deny_vetoes"] = request.deny_vetoes
    if request.rules_allow:
        body["client_verdict"] = "allow"
    if slack:
        body["slack"] = slack
    return body


def _listed(ids: tuple[str, ...] | None) -> list[str] | None:
    return list(ids) if ids is not None else None


class ApprovalsAPI:
    """The HTTP calls ``RemoteApprover`` and the integrations' ``RelayApprovals`` make to a
    hosted relay's ``/v1/approvals``: one bearer-token session, a timeout per call, and the
    relay's errors as ``UserInteractionError`` (``Retry`` when the call may be sent again).

    ``url_name`` and ``bearer_name`` name the URL and token the way the caller's user set
    them, for the error messages; ``retry_rate_limited`` makes a 429 ``RATE_LIMITED`` a
    ``Retry``.
    """

    def __init__(
        self,
        *,
        url: str,
        token: str,
        url_name: str,
        bearer_name: str | None = None,
        retry_rate_limited: bool = False,
    ) -> None:
        self._url = url.rstrip("/")
        self._token = token
        self._url_name = url_name
        self._bearer_name = bearer_name
        self._retry_rate_limited = retry_rate_limited
        self._session: aiohttp.ClientSession | None = None

    async def call(
        self, method: str, path: str, *, timeout: float = 60, retry: bool = False, **kw: Any
    ) -> dict[str, Any]:
        """The relay's JSON reply to ``method path``; with ``retry``, a refused connection
        is raised as is (the caller sends the call again) rather than as an error."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers={"Authorization": f"Bearer {self._token}"},
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            )
        try:
            async with self._session.request(
                method, self._url + path, timeout=aiohttp.ClientTimeout(total=timeout), **kw
            ) as response:
                return await self._reply(response)
        except aiohttp.ClientConnectorError as exc:
            if retry:
                raise
            raise UserInteractionError(
                ErrorCode.PROVIDER_FAILED,
                f"cannot reach the relay at {self._url} ({exc}); check {self._url_name} and"
                " that relay serve is running",
            ) from None

    async def _reply(self, response: aiohttp.ClientResponse) -> dict[str, Any]:
        reply = await read_reply(response)
        if not isinstance(reply, RelayError):
            return reply
        code, message = reply.code, reply.message
        if (reply.status, code) == (503, "UNAVAILABLE") or (
            self._retry_rate_limited and (reply.status, code) == (429, "RATE_LIMITED")
        ):
            raise Retry(message)
        if code == "UNAUTHORIZED" and self._bearer_name is not None:
            message = f"the relay refused {self._bearer_name}: {message}"
        raise UserInteractionError(ErrorCode.PROVIDER_FAILED, f"{code}: {message}")

    async def aclose(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None


class RemoteApprover:
    """Asks a hosted relay at ``url`` (bearer ``token``) to decide approvals."""

    def __init__(self, url: str, token: str, *, poll: float = 30.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise RelayConfigError(f"RELAY_URL must be an http(s) URL (got {url!r})", setting="url")
        if not token:
            raise RelayConfigError("RELAY_TOKEN is empty: set one of the relay's API tokens")
        self._api = ApprovalsAPI(
            url=url, token=token, url_name="RELAY_URL", bearer_name="RELAY_TOKEN"
        )
        self._poll = poll
        # Set by a harness that can defer a call and run it again later (Claude Code's
        # ``defer``): the same tool use re-attaches to its approval (an ``Idempotency-Key``
        # from the agent, the tool use id and the input), and an abort with reason
        # ``"deferred"`` leaves the question open in Slack for that later run.
        self.reattach = False

    async def approve(
        self, request: ApprovalRequest, *, signal: AbortSignal | None = None
    ) -> Decision:
        """Allow or deny ``request`` as the relay decides; any failure denies."""
        try:
            decision = await self._approve(request, signal)
            if decision.updated_input is not None and not request.editable:
                # An edit this caller never offered to run: the call asked about is not
                # what was allowed, so it must not run.
                return Decision.deny(
                    "the relay allowed an edited call, but this caller cannot run an edited"
                    " call, so it is denied; ask again"
                )
            return decision
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return decide_error(exc, timeout=request.timeout)

    async def _approve(self, request: ApprovalRequest, signal: AbortSignal | None) -> Decision:
        if signal is not None and signal.aborted:
            raise ask_aborted()
        plan = request.input.get("plan")
        if request.tool == PLAN_TOOL and isinstance(plan, str):
            return await self._plan(request, plan, signal)
        headers = {}
        if self.reattach and request.tool_use_id:
            headers["Idempotency-Key"] = _reattach_key(request)
        created = await self._api.call(
            "POST", "/v1/approvals", json=approval_body(request), headers=headers
        )
        approval_id = created.get("id")
        if isinstance(approval_id, str):
            note_ask(approval_id)  # (an MCP tool call names this approval's receipt)
        decision = created.get("decision")
        if isinstance(decision, dict):
            return Decision.from_json(decision)
        if not isinstance(approval_id, str):
            raise UserInteractionError(
                ErrorCode.PROVIDER_FAILED, "the relay answered the approval without an id"
            )
        try:
            while True:
                polled = await self._abortable(
                    self._poll_once(f"/v1/approvals/{approval_id}"), signal
                )
                decision = polled.get("decision")
                if isinstance(decision, dict):
                    return Decision.from_json(decision)
        except BaseException:
            # Aborted, cancelled, or failed: withdraw the question in Slack (unless the
            # harness deferred the call: its later run waits for this same approval).
            deferred = signal is not None and signal.aborted and signal.reason == "deferred"
            if not (deferred and self.reattach):
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._delete(approval_id))
            raise

    async def _plan(
        self, request: ApprovalRequest, plan: str, signal: AbortSignal | None
    ) -> Decision:
        """Leaving plan mode: the plan put up for review at ``/v1/plans`` (the relay derives
        its scope); approved, the relay allows this session's calls in the scope."""
        body: dict[str, Any] = {"plan": plan, "agent": request.agent.to_dict()}
        if request.cwd and request.cwd.startswith("/"):
            body["cwd"] = request.cwd
        created = await self._api.call("POST", "/v1/plans", json=body)
        plan_id = created.get("id")
        if not isinstance(plan_id, str):
            return plan_decision(created)
        try:
            while created.get("status") == "pending":
                created = await self._abortable(self._poll_once(f"/v1/plans/{plan_id}"), signal)
            return plan_decision(created)
        except BaseException:
            with contextlib.suppress(Exception):
                await asyncio.shield(
                    self._api.call("DELETE", f"/v1/plans/{plan_id}", timeout=WITHDRAW_WITHIN)
                )
            raise

    async def _abortable(self, work: Any, signal: AbortSignal | None) -> dict[str, Any]:
        task = asyncio.ensure_future(work)
        if signal is None:
            return await task  # type: ignore[no-any-return]
        aborted = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait({task, aborted}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            aborted.cancel()
        if task.done():
            return task.result()  # type: ignore[no-any-return]
        task.cancel()
        raise ask_aborted()

    async def _poll_once(self, path: str) -> dict[str, Any]:
        """One long poll of an approval or plan at ``path``, sent again (with backoff) while
        the relay restarts or the connection drops: what it polls lives on."""
        attempt = 0
        while True:
            try:
                return await self._api.call(
                    "GET",
                    path,
                    params={"wait": str(self._poll)},
                    timeout=self._poll + 30,
                    retry=True,
                )
            except (Retry, *RETRYABLE):
                attempt += 1
                backoff = min(5.0, 0.2 * 2 ** (attempt - 1))
                await asyncio.sleep(backoff * (0.5 + random.random() / 2))  # noqa: S311

    async def _delete(self, approval_id: str) -> None:
        await self._api.call("DELETE", f"/v1/approvals/{approval_id}", timeout=WITHDRAW_WITHIN)

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self._api.aclose()


def plan_decision(plan: dict[str, Any]) -> Decision:
    """What a reviewed plan (the ``Plan`` object) decides about leaving plan mode."""
    status = plan.get("status")
    if status == "active":
        by = plan.get("approved_by")
        who = by.get("name") or by.get("id") if isinstance(by, dict) else "a reviewer"
        return Decision(
            behavior="allow",
            message=f"{who} approved the plan in Slack: the calls in its scope run without"
            f" asking until {plan.get('expires_at')}; any other call is asked",
            outcome="approved",
            plan=plan.get("id") if isinstance(plan.get("id"), str) else None,
        )
    if status == "denied":
        return Decision.deny(str(plan.get("message") or "the relay's rules deny this plan"))
    feedback = plan.get("feedback")
    if isinstance(feedback, str) and feedback.strip():
        words = feedback.strip()
        return replace(Decision.deny(f"Keep planning; the reviewer says: {words}"), feedback=words)
    return Decision.deny("The plan was not approved in Slack: keep planning")


def _reattach_key(request: ApprovalRequest) -> str:
    """The same key for the same tool use of the same agent session, and only for it."""
    use = fingerprint(request.tool, request.input)
    who = f"{request.agent.id}\n{request.tool_use_id}\n{use}"
    return "tool-use-" + hashlib.sha256(who.encode("utf-8", "surrogatepass")).hexdigest()
