"""The report's figures, computed from verified receipt payloads alone (pure: no I/O, no clock).

A receipt (``relay.receipts.payload``) is one ended ask put to people. The tool approvals
among them (one question offering *Allow once* … *Deny*) are counted; other asks are only
tallied. Each approval ends one way (``Ending``): allowed, denied, edited (a reviewer changed
the call and allowed that), timed out (nobody decided in time, or the default answer was
taken), or withdrawn/failed. Time to decide runs from the ask's creation to the deciding
answer; who decided is every person whose vote (or answer) the receipt names.

Calls the relay's rules, a live grant or an approved plan decide at once are put to nobody;
each has a receipt of its own (``relay.receipts.at_once``), counted apart from the
approvals: ``Figures.at_once`` says what decided them (each rule, grant and plan) and how
many it allowed and denied. ``Figures.without_person`` counts the approvals that ended with
nobody's answer (timeouts and defaults).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from typing import Any

from relay.gate.approval import ALLOW_ONCE, DENY
from relay.receipts.at_once import is_at_once
from relay.receipts.payload import ERROR_CODE

__all__ = ["ENDINGS", "DeciderTally", "Ending", "Figures", "RepeatedCall", "RuleFor", "figures"]

RuleFor = Callable[["RepeatedCall"], "str | None"]
"""The seam for a suggested rule: given a repeated call, the rule to show beside it (in the
rules file's own form), or ``None``. ``relay rules suggest`` plugs in here."""


class Ending(StrEnum):
    """How one approval ended, as its receipt says."""

    ALLOWED = "allowed"
    DENIED = "denied"
    EDITED = "edited"
    TIMED_OUT = "timed out"
    WITHDRAWN = "withdrawn"
    FAILED = "failed"


ENDINGS = tuple(Ending)
"""Every ending, in the order the report shows them."""


@dataclass(frozen=True, slots=True)
class DeciderTally:
    """Who decided: a Slack user, how many approvals they took part in, and how."""

    user: str
    allowed: int = 0
    denied: int = 0
    edited: int = 0

    @property
    def total(self) -> int:
        """Approvals this person decided (or voted on)."""
        return self.allowed + self.denied + self.edited


@dataclass(frozen=True, slots=True)
class AtOnceTally:
    """What decided calls at once, without a person (``kind``: ``rule``, ``grant``,
    ``plan`` or ``client``; ``name``: which one, in words), and how many it allowed and
    denied."""

    kind: str
    name: str
    allowed: int = 0
    denied: int = 0

    @property
    def total(self) -> int:
        """Calls it decided."""
        return self.allowed + self.denied


@dataclass(frozen=True, slots=True)
class RepeatedCall:
    """The same call shown to people again and again: its agent, the digest of what was
    shown (``shown_sha256``), a label when one is known (its canonical form), the count and
    how those ended, and a suggested rule when one is plugged in."""

    agent: str
    shown: str
    count: int
    endings: Mapping[str, int]
    label: str | None = None
    rule: str | None = None
    asks: tuple[str, ...] = ()

    @property
    def always_allowed(self) -> bool:
        """Whether people allowed it every time it was shown (a candidate for a rule)."""
        return self.endings.get(Ending.ALLOWED, 0) == self.count


@dataclass(frozen=True, slots=True)
class Figures:
    """Everything the report shows, as numbers."""

    approvals: int
    endings: Mapping[str, int]
    days: tuple[tuple[date, Mapping[str, int]], ...]
    decide_p50: float | None
    decide_p90: float | None
    decided: int
    spread: tuple[tuple[str, int], ...]
    people: tuple[DeciderTally, ...]
    without_person: int
    repeated: tuple[RepeatedCall, ...]
    other_asks: int = 0
    error_receipts: int = 0
    first: date | None = None
    last: date | None = None
    notes: tuple[str, ...] = field(default=())
    at_once: tuple[AtOnceTally, ...] = field(default=())

    @property
    def at_once_allowed(self) -> int:
        """Calls the rules, a grant or a plan allowed at once, without a person."""
        return sum(t.allowed for t in self.at_once)

    @property
    def at_once_denied(self) -> int:
        """Calls the rules denied at once, without a person."""
        return sum(t.denied for t in self.at_once)


def percentile(values: list[float], share: float) -> float | None:
    """The nearest-rank percentile of ``values`` (``share`` in 0..1); ``None`` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def _time(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _is_approval(payload: Mapping[str, Any]) -> bool:
    options = payload.get("options")
    return (
        isinstance(options, list)
        and len(options) == 1
        and isinstance(options[0], list)
        and ALLOW_ONCE in options[0]
        and DENY in options[0]
    )


def _ending(payload: Mapping[str, Any], decision: Mapping[str, Any]) -> Ending:
    outcome = payload.get("outcome") or {}
    status = outcome.get("status")
    if status == "timed_out" or outcome.get("defaulted"):
        return Ending.TIMED_OUT
    if status == "aborted":
        return Ending.WITHDRAWN
    if status != "answered":
        return Ending.FAILED
    if payload.get("edited_sha256"):
        return Ending.EDITED
    selected = decision.get("selected") or []
    if DENY in selected or not any(str(s).startswith("Allow") for s in selected):
        # A typed reason instead of a button denies with it (the approval's own rule).
        return Ending.DENIED
    return Ending.ALLOWED


def _deciders(decision: Mapping[str, Any]) -> list[str]:
    votes = decision.get("votes")
    if isinstance(votes, list) and votes:
        users = [v.get("user") for v in votes if isinstance(v, dict)]
    else:
        by = decision.get("by")
        users = [by.get("user")] if isinstance(by, dict) else []
    seen: list[str] = []
    for user in users:
        if isinstance(user, str) and user not in seen:
            seen.append(user)
    return seen


@dataclass
class _Tally:
    endings: Counter[str] = field(default_factory=Counter)
    days: dict[date, Counter[str]] = field(default_factory=dict)
    waits: list[float] = field(default_factory=list)
    people: dict[str, Counter[str]] = field(default_factory=dict)
    calls: dict[tuple[str, str], tuple[Counter[str], list[str]]] = field(default_factory=dict)
    at_once: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)
    approvals: int = 0
    other: int = 0
    errors: int = 0

    def add(self, payload: Mapping[str, Any]) -> None:
        if is_at_once(payload):
            verb = "denied" if payload.get("decision") == "deny" else "allowed"
            self.at_once.setdefault(_decided_by(payload.get("by")), Counter())[verb] += 1
            return
        outcome = payload.get("outcome") or {}
        if isinstance(outcome.get("error"), dict) and outcome["error"].get("code") == ERROR_CODE:
            self.errors += 1
            return
        if not _is_approval(payload):
            self.other += 1
            return
        self.approvals += 1
        decisions = outcome.get("decisions") or [{}]
        decision = decisions[0] if isinstance(decisions[0], dict) else {}
        ending = _ending(payload, decision)
        self.endings[ending] += 1
        created = _time(payload.get("created"))
        if created is not None:
            self.days.setdefault(created.astimezone(UTC).date(), Counter())[ending] += 1
        if ending in (Ending.ALLOWED, Ending.DENIED, Ending.EDITED):
            at = _time(decision.get("at")) or _time(payload.get("ended"))
            if created is not None and at is not None:
                self.waits.append(max(0.0, (at - created).total_seconds()))
            for user in _deciders(decision):
                self.people.setdefault(user, Counter())[ending] += 1
        agent = payload.get("agent") or {}
        key = (str(agent.get("name") or "?"), str(payload.get("shown_sha256") or "?"))
        counts, asks = self.calls.setdefault(key, (Counter(), []))
        counts[ending] += 1
        asks.append(str(payload.get("ask") or "?"))


def figures(
    payloads: Iterable[Mapping[str, Any]],
    *,
    labels: Mapping[str, str] | None = None,
    rule_for: RuleFor | None = None,
    top: int = 10,
) -> Figures:
    """The figures of verified receipt ``payloads``; ``labels`` names a shown digest's call
    (its canonical form, where the relay still holds the ask), ``rule_for`` suggests a rule
    for a repeated call, ``top`` bounds the repeated calls listed (twice or more only)."""
    tally = _Tally()
    for payload in payloads:
        tally.add(payload)
    repeated = []
    ranked = sorted(tally.calls.items(), key=lambda kv: (-sum(kv[1][0].values()), kv[0]))
    for (agent, shown), (counts, asks) in ranked[:top]:
        count = sum(counts.values())
        if count < 2:
            break
        call = RepeatedCall(
            agent=agent,
            shown=shown,
            count=count,
            endings={str(k): v for k, v in counts.items()},
            label=(labels or {}).get(shown),
            asks=tuple(asks),
        )
        if rule_for is not None:
            call = RepeatedCall(**{**_fields(call), "rule": rule_for(call)})
        repeated.append(call)
    people = sorted(
        (
            DeciderTally(user, c[Ending.ALLOWED], c[Ending.DENIED], c[Ending.EDITED])
            for user, c in tally.people.items()
        ),
        key=lambda p: (-p.total, p.user),
    )
    days = _every_day(tally.days)
    at_once = sorted(
        (
            AtOnceTally(kind, name, c["allowed"], c["denied"])
            for (kind, name), c in tally.at_once.items()
        ),
        key=lambda t: (-t.total, t.kind, t.name),
    )
    return Figures(
        approvals=tally.approvals,
        endings={e.value: tally.endings[e] for e in ENDINGS},
        days=days,
        decide_p50=percentile(tally.waits, 0.5),
        decide_p90=percentile(tally.waits, 0.9),
        decided=len(tally.waits),
        spread=_spread(tally.waits),
        people=tuple(people),
        without_person=tally.endings[Ending.TIMED_OUT],
        repeated=tuple(repeated),
        other_asks=tally.other,
        error_receipts=tally.errors,
        first=days[0][0] if days else None,
        last=days[-1][0] if days else None,
        at_once=tuple(at_once),
    )


# Time-to-decide bands (upper bound in seconds, label): short at the start, where most are.
_BANDS = (
    (30.0, "under 30 s"),
    (60.0, "30 s to 1 min"),
    (120.0, "1 to 2 min"),
    (300.0, "2 to 5 min"),
    (900.0, "5 to 15 min"),
    (3600.0, "15 min to 1 h"),
    (math.inf, "over 1 h"),
)


def _spread(waits: list[float]) -> tuple[tuple[str, int], ...]:
    """How many were decided within each band of time (``_BANDS``)."""
    counts = [0] * len(_BANDS)
    for wait in waits:
        counts[next(i for i, (most, _) in enumerate(_BANDS) if wait < most)] += 1
    return tuple((label, n) for (_, label), n in zip(_BANDS, counts, strict=True))


def _every_day(days: Mapping[date, Counter[str]]) -> tuple[tuple[date, Mapping[str, int]], ...]:
    """Each day from the first to the last, quiet ones included (a chart shows the gap)."""
    if not days:
        return ()
    first, last = min(days), max(days)
    span = min((last - first).days, 366)  # a year at most: older days stay in the totals
    start = last - timedelta(days=span)
    return tuple(
        (
            start + timedelta(days=i),
            {str(k): v for k, v in days.get(start + timedelta(days=i), Counter()).items()},
        )
        for i in range(span + 1)
    )


def _fields(call: RepeatedCall) -> dict[str, Any]:
    return {name: getattr(call, name) for name in RepeatedCall.__slots__}


def _decided_by(by: object) -> tuple[str, str]:
    """What an at-once receipt says decided (its ``by``), as a kind and a name in words."""
    said = by if isinstance(by, Mapping) else {}
    rule, grant, plan = said.get("rule"), said.get("grant"), said.get("plan")
    if isinstance(rule, Mapping):
        where = str(rule.get("file") or "the rules")
        number = rule.get("number")
        if not isinstance(number, int):
            return "rule", f"the default ({rule.get('action')}) of {where}"
        return "rule", f"rule {number} of {where}: {rule.get('action')} {_pattern(rule)}"
    if isinstance(grant, Mapping):
        who = grant.get("granted_by")
        user = who.get("user") if isinstance(who, Mapping) else None
        return "grant", f"grant {grant.get('id')}" + (f" by {user}" if user else "")
    if isinstance(plan, Mapping):
        return "plan", f"plan {plan.get('id')}"
    return "client", "the client's rules (the relay has none for the call)"


def _pattern(rule: Mapping[str, Any]) -> str:
    """A rule's pattern in a few words: its tools, then its commands or paths."""
    pattern = rule.get("pattern")
    if not isinstance(pattern, Mapping):
        return ""
    tools = ", ".join(str(t) for t in pattern.get("tools") or ()) or "any tool"
    shown = [f"`{c}`" for c in pattern.get("commands") or ()]
    shown += [f"/{r}/" for r in pattern.get("command_regex") or ()]
    shown += [f"`{p}`" for p in pattern.get("paths") or ()]
    shown += [f"/{r}/" for r in pattern.get("path_regex") or ()]
    return f"{tools} {' '.join(shown)}".strip()
