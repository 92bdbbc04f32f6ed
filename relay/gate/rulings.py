"""The rules' part of the Decider (``relay.gate.decider``), pure: the operator's rules and the
client's verdict combined (the client may only make a decision stricter), and the approval a
call the rules ask about is put to people with (approvers, quorum, timeout, team settings, the
grant's scope).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from relay.asks.edit_review import EditTerms
from relay.canonical.match import Pattern
from relay.gate.approval import (
    ALLOW_ONCE,
    ALLOW_SESSION,
    ApprovalRequest,
    Decision,
    allow_minutes_label,
)
from relay.gate.core import grant_scope
from relay.gate.policy import combine
from relay.gate.proposal import Proposal
from relay.gate.rules import Rules, RuleVerdict
from relay.gate.team import escalation
from relay.gate.witness import ruled_by
from relay.seam.questions import (
    AgentRef,
)
from relay.store.record import AskRecord

__all__ = ["Rulings"]

_OPERATOR = "the relay's rules (RELAY_RULES_FILE)"

RulesFor = Callable[[str], "Rules | None"]
"""The operator's rules for an owner (a token's fingerprint); ``None``: the relay has none."""


class Rulings:
    """The rules' part of deciding, pure: the operator's ``rules`` for an owner (``None``: no
    rules file, then the client's verdict stands, as documented) and ``min_approvals``
    (``RELAY_APPROVALS_REQUIRED``)."""

    def __init__(
        self,
        *,
        rules: RulesFor,
        min_approvals: int | None = None,
        source: str = _OPERATOR,
    ) -> None:
        self._rules = rules
        self._min_approvals = min_approvals
        self._source = source

    def judge(self, proposal: Proposal, *, person: bool = False) -> Decision | ApprovalRequest:
        """A decision the rules make at once, or the approval to put to people (with the
        operator's approvers, quorum, timeout and grant scope); with ``person`` what the
        rules allow is put to people too (a plan review: no scope without a person)."""
        return self.ruled(proposal, person=person)[0]

    def ruled(
        self, proposal: Proposal, *, person: bool = False
    ) -> tuple[Decision | ApprovalRequest, dict[str, Any] | None]:
        """``judge``'s answer, and what decided when it is a decision at once (the rule,
        the file's default or the client's rules: ``relay.gate.witness.ruled_by``)."""
        request = proposal.request
        rules = self._rules(proposal.owner)
        verdict = rules.verdict(proposal.subject) if rules is not None else RuleVerdict("pass")
        client = "allow" if request.rules_allow else proposal.client
        action = combine(client, verdict)
        if action == "deny":
            return Decision.deny(verdict.reason(self._source)), ruled_by(verdict, rules)
        if action == "allow" and not person:
            if verdict.action == "allow":
                why = verdict.reason(self._source)
            else:
                why = "allowed by the client's rules (the relay has no rules for it)"
            allowed = Decision(behavior="allow", message=why, outcome="allowed")
            return allowed, ruled_by(verdict, rules)
        request = replace(request, rules_allow=False, pattern=None)
        return self._tightened(request, rules, verdict), None

    def _tightened(
        self, request: ApprovalRequest, rules: Rules | None, verdict: RuleVerdict
    ) -> ApprovalRequest:
        """``request`` with the operator's requirements: the client may only add to them."""
        floor = self._min_approvals or 1
        if rules is None:
            return replace(request, approvals=_most(request.approvals, floor))
        rule = verdict.rule
        team = rules.team_for(verdict)
        approvers = rule.approvers if rule and rule.approvers is not None else rules.approvers
        groups = (
            rule.approver_groups
            if rule and rule.approver_groups is not None
            else rules.approver_groups
        )
        approvals = _most(request.approvals, _most(team.approvals, floor))
        return replace(
            request,
            pattern=_scope(request, rule),
            reason=rule.reason if rule is not None and rule.reason else request.reason,
            channel=rules.channel or request.channel,
            approvers=_within(request.approvers, approvers),
            approver_groups=_within(request.approver_groups, groups),
            # The operator's time, where its file sets one, bounds the client's.
            timeout=_least(request.timeout, rules.given_timeout_for(verdict)),
            session_grants=request.session_grants and rules.session_grants,
            grant_minutes=min(request.grant_minutes, rules.grant_minutes),
            remind_after=team.remind_after
            if team.remind_after is not None
            else request.remind_after,
            reminders=team.reminders if team.reminders is not None else request.reminders,
            approvals=approvals if approvals > 1 else request.approvals,
            # One deny deciding is the stricter reading: the client may ask for it.
            deny_vetoes=True
            if request.deny_vetoes or team.deny_vetoes
            else (team.deny_vetoes if team.deny_vetoes is not None else request.deny_vetoes),
            **escalation(team),
        )

    def edit_terms(self, record: AskRecord, index: int, edited: Mapping[str, Any]) -> EditTerms:
        """What the rules require of an edited call in question ``index`` of ``record`` (a
        new proposal, decided again): a refusal, or the approvers, quorum and grants under
        which its reviewer may allow it."""
        question = record.request.questions[index]
        edit = question.intent.edit if question.intent is not None else None
        if edit is None:
            return EditTerms(refusal="this question offers no edits")
        return self.terms_of(edit.tool, edited, record.owner or "local", record.request.agent)

    def terms_of(
        self, tool: str, edited: Mapping[str, Any], owner: str, agent: AgentRef | None
    ) -> EditTerms:
        """The terms for ``tool`` with the ``edited`` input, proposed by ``owner``'s agent."""
        request = ApprovalRequest(
            tool=tool, input=dict(edited), agent=agent or AgentRef(id="unknown"), editable=True
        )
        judged = self.judge(Proposal(request, owner=owner))
        if isinstance(judged, Decision):
            return EditTerms() if judged.allowed else EditTerms(refusal=judged.message)
        session, minutes = judged.grants_offered
        choices = (ALLOW_ONCE, *((ALLOW_SESSION,) if session else ()))
        if minutes:
            choices += (allow_minutes_label(minutes),)
        return EditTerms(
            approvers=judged.approvers,
            approver_groups=judged.approver_groups,
            quorum=judged.quorum,
            session_grants=session,
            grant_minutes=minutes,
            choices=choices,
        )


def _scope(request: ApprovalRequest, rule: Any) -> Pattern | None:
    """A grant's scope: the operator's ask rule's commands or paths (globs, never a regex)
    when they cover this very input, else ``None`` (exactly this input)."""
    if rule is None or rule.action != "ask" or not rule.narrow:
        return None
    pattern: Pattern = rule.pattern
    if pattern.command_regex or pattern.path_regex:
        return None
    scope = grant_scope(request.tool, request.input, pattern)
    return None if scope.digest is not None else scope


def _most(a: int | None, b: int | None) -> int:
    return max(a or 1, b or 1)


def _least(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _within(asked: tuple[str, ...] | None, operator: tuple[str, ...] | None) -> Any:
    """The client's list if it names only the operator's ids, else the operator's."""
    if operator is None:
        return asked
    if asked is not None and set(asked) <= set(operator):
        return asked
    return operator
