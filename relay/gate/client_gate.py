"""The client's door: its own rules first (they may only make a decision stricter), then
the Decider, in this process or a hosted relay's.

``relay hook``, ``relay exec`` and ``relay mcp`` call ``ClientGate.decide``; they differ only in
how they read the request and write the answer. The grant's scope, the approvers and the
quorum are the Decider's (``relay.gate.decider``), never the client's to set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from relay.canonical.match import subject
from relay.gate.approval import ApprovalRequest, Approver, Decision
from relay.gate.rules import Rules, RuleVerdict
from relay.gate.team import escalation
from relay.seam.abort import AbortSignal
from relay.seam.questions import AgentRef

__all__ = ["ClientGate", "ToolUse"]


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool use to decide: what, by whom, and where."""

    tool: str
    input: Mapping[str, Any]
    agent: AgentRef
    tool_use_id: str | None = None
    cwd: str | None = None
    context: Mapping[str, str] | None = None
    # The harness runs an edited input if the reviewer makes one (see ``ApprovalRequest``).
    editable: bool = False
    input_schema: Mapping[str, Any] | None = None


class ClientGate:
    """Decides tool uses by ``rules``, asking ``approver`` when a human is needed."""

    def __init__(self, *, rules: Rules, approver: Approver, confirm_allows: bool = False) -> None:
        self.rules = rules
        self.approver = approver
        # Every allow of these rules goes to the approver too (see ``decide``).
        self.confirm_allows = confirm_allows

    def verdict(self, use: ToolUse) -> RuleVerdict:
        """What the rules alone say about ``use``."""
        return self.rules.verdict(subject(use.tool, use.input, cwd=use.cwd))

    async def decide(
        self,
        use: ToolUse,
        *,
        signal: AbortSignal | None = None,
        allow_pass: bool = False,
        confirm_allow: bool = False,
        verdict: RuleVerdict | None = None,
    ) -> Decision | None:
        """Allow or deny ``use``; ``None`` only for a ``pass`` verdict when ``allow_pass``.
        With ``confirm_allow`` an allow of these rules (which the agent may have written)
        goes to the approver too, whose operator's rules may make it stricter. ``verdict``:
        these rules' verdict on ``use`` when the caller has it already (never evaluated twice)."""
        if verdict is None:
            verdict = self.verdict(use)
        source = self.rules.source
        if verdict.action == "deny":
            return Decision.deny(verdict.reason(source))
        if verdict.action == "allow" and not (confirm_allow or self.confirm_allows):
            return Decision(behavior="allow", message=verdict.reason(source), outcome="allowed")
        if verdict.action == "pass" and allow_pass:
            return None
        rule = verdict.rule
        team = self.rules.team_for(verdict)
        request = ApprovalRequest(
            tool=use.tool,
            input=use.input,
            agent=use.agent,
            tool_use_id=use.tool_use_id,
            context=dict(use.context or {}),
            session_grants=self.rules.session_grants,
            grant_minutes=self.rules.grant_minutes,
            reason=rule.reason if rule is not None else None,
            channel=self.rules.channel,
            approvers=rule.approvers
            if rule and rule.approvers is not None
            else self.rules.approvers,
            approver_groups=(
                rule.approver_groups
                if rule and rule.approver_groups is not None
                else self.rules.approver_groups
            ),
            timeout=self.rules.timeout_for(verdict),
            remind_after=team.remind_after,
            reminders=team.reminders,
            **escalation(team),
            approvals=team.approvals,
            deny_vetoes=team.deny_vetoes,
            rules_allow=verdict.action == "allow",
            editable=use.editable,
            input_schema=use.input_schema,
            cwd=use.cwd,
        )
        decision = await self.approver.approve(request, signal=signal)
        if decision.allowed and decision.updated_input is not None:
            # An edit is a new proposal: these rules may only make it stricter.
            edited = self.rules.verdict(subject(use.tool, decision.updated_input, cwd=use.cwd))
            if edited.action == "deny":
                why = edited.reason(source)
                return Decision.deny(
                    f"a reviewer edited this call into one these rules deny: {why}"
                )
        return decision
