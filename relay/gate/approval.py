"""An approval: "may this agent use this tool with this input?", asked as one question. Pure.

``approval_question`` turns an ``ApprovalRequest`` into the seam's question (the reviewer
picks *Allow once*, *Allow for this session*, *Allow for N minutes* or *Deny*, or types a
reason, which denies with it); ``decide_answer`` and ``decide_error`` turn what came back
into a ``Decision`` (``relay.gate.decision``, whose names this module gives too). Anything
but a reviewer's allow is a deny: the gate fails closed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from relay.canonical.match import Pattern, fingerprint
from relay.gate.decision import Decision, Outcome, decide_error, gave_up
from relay.gate.describe import describe_tool_use, outside_plan, safe
from relay.grants.record import SESSION_HOURS, GrantKind, Offer
from relay.plans.record import Plan
from relay.seam.edits import read_edit
from relay.seam.questions import (
    AgentRef,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ToolEdit,
)

if TYPE_CHECKING:
    from relay.seam.abort import AbortSignal

__all__ = [
    "ADD_TO_PLAN",
    "ALLOW_ONCE",
    "ALLOW_SESSION",
    "DECISION_GRACE",
    "DENY",
    "QUESTION_ID",
    "STOP_PLAN",
    "ApprovalRequest",
    "Approver",
    "Decision",
    "Outcome",
    "allow_minutes_label",
    "approval_question",
    "decide_answer",
    "decide_error",
    "gave_up",
    "offer_for",
]

QUESTION_ID = "approval"
ALLOW_ONCE = "Allow once"
ALLOW_SESSION = "Allow for this session"
DENY = "Deny"
# Offered when the call is outside the session's approved plan (``relay.gate.decider``).
ADD_TO_PLAN = "Add to the plan's scope"
STOP_PLAN = "Stop the plan"
_MINUTES = re.compile(r"Allow for \d+ minutes")
# Seconds past the reviewer's time that `relay exec` and the hook wait for the relay's answer
# (the relay decides at the timeout itself); past them the relay is gone, and they deny.
DECISION_GRACE = 15.0


def allow_minutes_label(minutes: int) -> str:
    """The option that grants ``minutes`` minutes."""
    return f"Allow for {minutes} minutes"


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A tool use to put to a reviewer, who asks, and what a grant would cover."""

    tool: str
    input: Mapping[str, Any]
    agent: AgentRef
    tool_use_id: str | None = None
    context: Mapping[str, str] = field(default_factory=dict)
    pattern: Pattern | None = None
    session_grants: bool = True
    grant_minutes: int = 30
    reason: str | None = None
    channel: str | None = None
    approvers: tuple[str, ...] | None = None
    approver_groups: tuple[str, ...] | None = None
    timeout: float | None = None
    remind_after: float | None = None
    reminders: int | None = None
    escalate_after: float | None = None
    escalate_users: tuple[str, ...] | None = None
    escalate_groups: tuple[str, ...] | None = None
    escalate_channel: str | None = None
    approvals: int | None = None
    deny_vetoes: bool | None = None
    # The client's own rules allow this: a hosted relay allows it at once only if its
    # operator's rules do too (else asks or denies); asking Slack directly, it is allowed.
    rules_allow: bool = False
    # The harness runs an edited input if one comes back (Claude Code's updatedInput, the
    # API's updated_input read by the client): only then is "Edit…" offered.
    editable: bool = False
    # The tool's input JSON Schema when known (MCP tools carry one): the edit form's fields.
    input_schema: Mapping[str, Any] | None = None
    # The working directory relative paths are read against (the hook's), if known.
    cwd: str | None = None
    # The session's approved plan this call is outside of (set by the Decider, never read
    # from a client), and whether the reviewer may add the call to it.
    plan: Plan | None = None
    plan_widens: bool = False
    # Inside that plan's scope, asked only because its rules need other approvers.
    plan_inside: bool = False

    @property
    def quorum(self) -> int:
        """How many distinct people must allow (1 unless ``approvals`` says more)."""
        return self.approvals or 1

    @property
    def grants_offered(self) -> tuple[bool, int]:
        """The session grant and the minutes grant offered: none when several must allow
        (a grant would let the next uses through on fewer people's word, and votes split
        between *Allow once* and a grant would decide nothing)."""
        if self.quorum > 1:
            return False, 0
        return self.session_grants, self.grant_minutes

    @property
    def veto_labels(self) -> tuple[str, ...] | None:
        """The labels one vote decides: *Deny* when several must allow, unless
        ``deny_vetoes`` is false (then none, not even the relay's ``RELAY_VETO``)."""
        if self.quorum == 1:
            return None
        return (DENY,) if self.deny_vetoes is not False else ()

    @property
    def scope(self) -> Pattern:
        """What a grant made from this approval covers: the rule's pattern, else this input."""
        return self.pattern if self.pattern is not None else Pattern.exact(self.tool, self.input)

    def offer(self, owner: str) -> Offer:
        """The grants this approval offers (perhaps none: then only "Allow once")."""
        session, minutes = self.grants_offered
        return Offer(
            owner=owner,
            agent=self.agent.id,
            pattern=self.scope,
            session=session,
            minutes=minutes,
            call=fingerprint(self.tool, self.input),
            tool_use_id=self.tool_use_id,
            plan=self.plan.id if self.plan is not None else None,
            plan_widens=self.plan_widens,
        )


def offer_for(offer: Offer, tool: str, decision: Decision) -> Offer:
    """``offer`` as it stands for ``decision``: after an edit, a grant covers exactly the
    edited input and nothing else (the rule's scope was judged against the original)."""
    if decision.updated_input is None:
        return offer
    return replace(offer, pattern=Pattern.exact(tool, decision.updated_input))


def approval_question(request: ApprovalRequest) -> AskUserQuestionRequest:
    """The question a reviewer answers for ``request``."""
    view = describe_tool_use(request.tool, request.input)
    who = request.agent.display_name
    lines = []
    if request.reason:
        lines.append(f"*Why a human is asked:* {safe(request.reason)}")
    for key, value in request.context.items():
        lines.append(f"*{safe(key)}:* `{safe(value)}`")
    plan = request.plan
    if plan is not None:
        lines.append(outside_plan(plan, inside=request.plan_inside))
    detail = "\n".join(lines) + ("\n\n" if lines else "") + view.detail
    scope = request.scope.describe()
    session, minutes = request.grants_offered
    quorum = request.quorum
    options = [
        AskUserQuestionOption(
            ALLOW_ONCE,
            f"Allow this one {request.tool} call, as shown"
            if quorum == 1
            else f"{quorum} people must allow",
        )
    ]
    if session:
        options.append(
            AskUserQuestionOption(
                ALLOW_SESSION,
                f"Also allow {scope} for this agent session (at most {SESSION_HOURS} h)",
            )
        )
    if minutes:
        options.append(
            AskUserQuestionOption(
                allow_minutes_label(minutes),
                f"Also allow {scope} for this agent for {minutes} minutes",
            )
        )
    if plan is not None and request.plan_widens and quorum == 1:
        options.append(
            AskUserQuestionOption(
                ADD_TO_PLAN, "Allow this exact call now and again for the rest of the plan"
            )
        )
    if plan is not None:
        options.append(
            AskUserQuestionOption(
                STOP_PLAN, "Deny this call and end the plan: every later call is asked"
            )
        )
    veto = request.veto_labels
    if quorum == 1:
        deny = "Type a reason instead to deny with it"
    else:
        deny = "One deny decides" if veto else f"{quorum} people must deny"
    options.append(AskUserQuestionOption(DENY, deny))
    edit = None
    if request.editable:
        edit = ToolEdit(request.tool, dict(request.input), request.input_schema)
    item = AskUserQuestionItem(
        id=QUESTION_ID,
        header=f"{request.tool}: permission request"[:150],
        question=f"{who} wants to {view.summary}"
        + (", outside the approved plan" if plan is not None else "")
        + ". Allow it?",
        detail=detail,
        options=tuple(options),
        # A tool approval, for a UI that knows the kind (one that does not shows the options).
        intent=AskUserQuestionIntent(approve=ALLOW_ONCE, kind="tool-approval", edit=edit),
        approvals_required=request.approvals,
        veto=veto,
    )
    return AskUserQuestionRequest((item,), agent=request.agent)


def decide_answer(
    item: AskUserQuestionAnswerItem, *, session: bool, minutes: int, editable: bool = False
) -> tuple[Decision, GrantKind | None]:
    """The decision a reviewer's answer makes, and the grant it asks for if one was offered
    (``session``, ``minutes``); an allow whose grant was not offered still allows once.
    With ``editable`` (the question offered edits) an edit in ``custom`` allows its input."""
    by = item.answered_by
    name = by.display_name if by is not None else "a reviewer"
    edit = read_edit(item.custom)
    if edit is not None:
        if not editable:  # never run an input nobody offered to take: fail closed
            return (
                Decision(
                    behavior="deny",
                    message=f"{name} edited this call in Slack, but this harness cannot run an"
                    " edited call, so it is denied; ask again",
                    outcome="denied",
                    by=by,
                    at=item.answered_at,
                ),
                None,
            )
        item = replace(item, selected=(edit.choice,), custom=None)
    if item.custom is not None:
        return (
            Decision(
                behavior="deny",
                message=f"{name} denied this in Slack: {item.custom.strip()}",
                outcome="denied",
                by=by,
                at=item.answered_at,
            ),
            None,
        )
    choice = item.selected[0] if item.selected else DENY
    kind: GrantKind | None = None
    if choice == ALLOW_SESSION:
        kind = "session" if session else None
    elif _MINUTES.fullmatch(choice):
        kind = "minutes" if minutes and choice == allow_minutes_label(minutes) else None
    elif choice != ALLOW_ONCE:
        return (
            Decision(
                behavior="deny",
                message=f"{name} denied this in Slack",
                outcome="denied",
                by=by,
                at=item.answered_at,
            ),
            None,
        )
    version = edit.version if edit is not None else 1
    voters = [v.by.display_name for v in item.votes if v.label == choice and v.version == version]
    if len(voters) > 1:  # a quorum: everyone whose vote counted, in the order they voted
        name = ", ".join(voters[:-1]) + f" and {voters[-1]}"
    edited = ""
    if edit is not None:
        edited = f"; the reviewer edited the call (version {edit.version}): run the edited input"
    return (
        Decision(
            behavior="allow",
            message=f"{name} allowed this in Slack ({choice[0].lower()}{choice[1:]}){edited}",
            outcome="granted" if kind else "approved",
            by=by,
            at=item.answered_at,
            updated_input=dict(edit.input) if edit is not None else None,
            edited_by=edit.edited_by if edit is not None else None,
        ),
        kind,
    )


class Approver(Protocol):
    """Decides approvals (a seam ``Protocol``): in this process, or through a hosted relay."""

    async def approve(
        self, request: ApprovalRequest, *, signal: AbortSignal | None = None
    ) -> Decision:
        """Allow or deny ``request``; never raises for a failure (it denies instead)."""
        ...

    async def aclose(self) -> None:
        """Release what the approver holds."""
        ...
