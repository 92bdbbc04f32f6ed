"""Replay: what a rules file would have decided on every receipted call. Pure.

Each readable call of the log is put to the Decider's own rules step (``Rulings.judge``, as
a door with no rules of its own proposes it: the operator's rules decide) under the policy
being tried. A call the rules would allow without a person is checked against what people
did: allowed is the point of the rule; denied or edited is a rule that would have let
through what a person stopped, and the replay names it and the rule that allowed it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from relay.gate.approval import ApprovalRequest, Decision
from relay.gate.decider import Proposal
from relay.gate.policy import Policy
from relay.gate.rules import Rule
from relay.gate.rulings import Rulings
from relay.learn.log import DecisionLog, ReceiptedCall
from relay.seam.questions import AgentRef

__all__ = ["Replay", "Wrong", "replay"]

_LOCAL = "local"


@dataclass(frozen=True, slots=True)
class Wrong:
    """A call people denied or edited that ``rule`` (of ``owner``'s rules) would allow."""

    call: ReceiptedCall
    rule: Rule | None
    owner: str | None


@dataclass(slots=True)
class Replay:
    """What a policy would have decided on a log: per rule (by owner and index), the calls
    it would allow that people allowed, denied or edited, and left undecided."""

    calls: int = 0
    unreadable: int = 0
    allowed: dict[tuple[str | None, int], list[ReceiptedCall]] = field(
        default_factory=lambda: defaultdict(list)
    )
    undecided: dict[tuple[str | None, int], list[ReceiptedCall]] = field(
        default_factory=lambda: defaultdict(list)
    )
    wrong: list[Wrong] = field(default_factory=list)
    denied_allowed: int = 0
    """Calls people allowed that the rules would deny outright."""

    @property
    def allowed_total(self) -> int:
        """Calls people allowed that the rules would allow without a person."""
        return sum(len(v) for v in self.allowed.values())


def replay(policy: Policy, log: DecisionLog) -> Replay:
    """Every readable call of ``log`` decided by ``policy``'s rules, as the Decider would."""
    rulings = Rulings(rules=policy.for_owner)
    out = Replay(calls=len(log.calls), unreadable=len(log.unreadable))
    # The same call (token, agent, tool, input) is decided alike every time:
    # judged once (a log repeats a few hundred calls thousands of times).
    judged: dict[tuple[str, ...], tuple[str, Rule | None]] = {}
    for call in log.readable:
        owner = call.owner or _LOCAL
        key = (owner, call.agent or "", call.tool or "", _text(call.input))
        if key not in judged:
            judged[key] = _judge(rulings, policy, _proposal(call, owner))
        verdict, rule = judged[key]
        if verdict == "ask":
            continue  # put to people: nothing changes for this call
        if verdict == "deny":
            if call.kind == "allowed":
                out.denied_allowed += 1
            continue
        place = (call.owner, rule.index if rule is not None else -1)
        if call.kind == "allowed":
            out.allowed[place].append(call)
        elif call.kind == "undecided":
            out.undecided[place].append(call)
        else:
            out.wrong.append(Wrong(call=call, rule=rule, owner=call.owner))
    return out


def _judge(rulings: Rulings, policy: Policy, proposal: Proposal) -> tuple[str, Rule | None]:
    """The Decider's rules step on ``proposal``: allow, deny or ask, and the rule that allowed."""
    judged = rulings.judge(proposal)
    if not isinstance(judged, Decision):
        return "ask", None
    if not judged.allowed:
        return "deny", None
    # Which rule allowed it: the same evaluation the judge just made, read for its rule.
    return "allow", policy.for_owner(proposal.owner).verdict(proposal.subject).rule


def _text(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _proposal(call: ReceiptedCall, owner: str) -> Proposal:
    # (readable calls only)
    assert call.tool is not None
    assert call.input is not None
    # As ``/v1/approvals`` puts it to the Decider: no working directory (a path in the input
    # is read as it stands), and no rules of the client's (``pass``): the operator's decide.
    request = ApprovalRequest(
        tool=call.tool, input=call.input, agent=AgentRef(call.agent or "unknown")
    )
    return Proposal(request, owner=owner, client="pass")
