"""The report's *suggested rule* column, filled by ``relay rules suggest``'s learner.

The calls the report lists are learned from as ``relay rules suggest`` learns (the verified
receipts and the asks they decided, ``relay.learn``): a repeated call is shown with the
allow rule suggested for it only when that rule is offered, i.e. its replay on every
receipted call allows none that people denied or edited, and enough people allowed it
enough times. Receipts of calls decided without a person are never learned from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from relay.learn import LogMismatch, Thresholds, log_of, suggest
from relay.report.figures import RepeatedCall, RuleFor

__all__ = ["learned_rules"]


def learned_rules(
    payloads: Iterable[Mapping[str, Any]],
    asks: Iterable[Mapping[str, Any]],
    *,
    thresholds: Thresholds | None = None,
) -> RuleFor:
    """The seam ``figures`` takes (``rule_for``): for a repeated call, the rule ``relay
    rules suggest`` offers for it (one line of the rules file's TOML), learned from
    verified receipt ``payloads`` and the asks they decided (``relay audit``'s items, or
    the relay's own); ``None`` where it offers none. Asks that are not what their receipts
    say was shown teach nothing (no rule is suggested at all)."""
    try:
        found = suggest(log_of(payloads, asks), thresholds=thresholds)
    except LogMismatch:
        return _none
    by_ask = {call.ask: offered.candidate for offered in found.offered for call in offered.allowed}

    def rule_for(call: RepeatedCall) -> str | None:
        for ask in call.asks:
            candidate = by_ask.get(ask)
            if candidate is not None:
                return candidate.inline()
        return None

    return rule_for


def _none(_: RepeatedCall) -> str | None:
    return None
