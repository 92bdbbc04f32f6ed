"""What the Decider tells about a call it decided at once, without a person (a seam).

The operator's rules (a rule, or the file's default), the client's own rules where the
relay has none, a live grant or an approved plan decide some calls with nobody asked. The
Decider hands each such decision to its ``Witness`` (``relay serve``: the receipt writer,
``relay.receipts.writer``), in one place for every door. What it hands over names what
decided and the call as the rules saw it (its tool and the digest of its canonical form,
never the input: it may hold secrets). Pure, but for the witness it calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from relay.gate.approval import Decision
from relay.gate.proposal import Proposal
from relay.gate.rules import Rules, RuleVerdict
from relay.store.record import utcnow

__all__ = ["Witness", "ruled_by", "witness"]


class Witness(Protocol):
    """Told of each call decided without a person (a seam ``Protocol``); it must return at
    once (the decision's answer never waits on it), with the id of the receipt it will
    write, or ``None`` when it writes none."""

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
        """``owner``'s ``agent`` had its ``tool`` call (``call``: the digest of its
        canonical form) allowed or denied (``decision``) at ``at`` by ``by``."""
        ...


def ruled_by(verdict: RuleVerdict, rules: Rules | None) -> dict[str, Any]:
    """What decided, when the rules decided at once: the operator's rule (its number as
    the relay's messages count it, its action and pattern) or their file's default; else,
    the relay having no rule on it, the client's own rules."""
    if rules is None or verdict.action == "pass":
        return {"client": "the client's rules (the relay has none for this call)"}
    rule = verdict.rule
    if rule is None:
        return {"rule": {"file": rules.source, "number": None, "action": verdict.action}}
    return {
        "rule": {
            "file": rules.source,
            "number": rule.index + 1,
            "action": rule.action,
            "pattern": rule.pattern.to_json(),
        }
    }


def _granted_by(decision: Decision) -> dict[str, Any] | None:
    """What decided, when a grant or an approved plan did."""
    grant = decision.grant
    if grant is not None:
        return {
            "grant": {
                "id": grant.id,
                "kind": grant.kind,
                "granted_by": {"team": grant.granted_by.team, "user": grant.granted_by.id},
                "scope": grant.pattern.to_json(),
            }
        }
    if decision.plan is not None:
        return {"plan": {"id": decision.plan}}
    return None


def witness(
    to: Witness | None,
    proposal: Proposal,
    decision: Decision,
    by: Mapping[str, Any] | None = None,
) -> Decision:
    """``decision``, made at once on ``proposal``, told to ``to`` (``by``: what decided,
    when the rules did; a grant or plan is read from the decision itself), naming the
    receipt ``to`` writes for it."""
    said = _granted_by(decision) or by
    if to is None or said is None:
        return decision
    use = proposal.subject
    receipt = to.decided_at_once(
        owner=proposal.owner,
        agent=proposal.request.agent.id,
        tool=use.tool,
        call=use.digest,
        decision=decision.behavior,
        by=said,
        at=utcnow(),
    )
    return decision if receipt is None else replace(decision, receipt=receipt)
