"""The rules file's team decisions for an ask: reminders, escalation, quorum and veto. Pure.

``read_team`` reads them from the top level or one ``[[rules]]`` table; ``TeamRules.over``
lets a rule's value win over the top level's, key by key (``escalate_to`` is one key: a rule
naming it replaces the whole list). ``check_team`` refuses a combination that cannot work,
naming the key, e.g. ``escalate_to`` with no ``escalate_after`` at either level.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol

from relay.seam.limits import LONGEST_TIMEOUT, MAX_APPROVALS, MAX_REMINDERS

__all__ = ["MAX_REMINDERS", "TEAM_KEYS", "TeamRules", "check_team", "escalation", "read_team"]

TEAM_KEYS = frozenset(
    {
        "remind_after",
        "reminders",
        "escalate_after",
        "escalate_to",
        "escalate_channel",
        "approvals",
        "deny_vetoes",
    }
)
_ID = re.compile(r"^[A-Z][A-Z0-9]+$")
Error = Callable[[str, str], Exception]


@dataclass(frozen=True, slots=True)
class TeamRules:
    """Team decisions as one level of the rules file sets them (``None``: not set here).

    ``remind_after`` seconds between reminders, at most ``reminders``; ``escalate_after``
    seconds, then ``escalate_to`` (user ``U…``/``W…`` and user group ``S…`` ids) may answer
    too and are told in ``escalate_channel``; ``approvals`` distinct people must allow, and
    ``deny_vetoes`` lets one person's *Deny* decide (default: yes when ``approvals`` > 1).
    """

    remind_after: float | None = None
    reminders: int | None = None
    escalate_after: float | None = None
    escalate_to: tuple[str, ...] | None = None
    escalate_channel: str | None = None
    approvals: int | None = None
    deny_vetoes: bool | None = None

    def over(self, base: TeamRules) -> TeamRules:
        """These decisions, with ``base``'s wherever these set none."""
        return TeamRules(
            **{
                f.name: getattr(self, f.name)
                if getattr(self, f.name) is not None
                else getattr(base, f.name)
                for f in fields(self)
            }
        )

    @property
    def escalate_users(self) -> tuple[str, ...] | None:
        """The user ids of ``escalate_to`` (``None`` when it names none)."""
        users = tuple(i for i in self.escalate_to or () if not i.startswith("S"))
        return users or None

    @property
    def escalate_groups(self) -> tuple[str, ...] | None:
        """The user group ids of ``escalate_to`` (``None`` when it names none)."""
        groups = tuple(i for i in self.escalate_to or () if i.startswith("S"))
        return groups or None

    @property
    def veto(self) -> bool | None:
        """Whether *Deny* decides with one vote, when several approvals are needed."""
        if self.deny_vetoes is not None:
            return self.deny_vetoes
        return True if self.approvals is not None and self.approvals > 1 else None


def read_team(data: Mapping[str, Any], where: str, error: Error) -> TeamRules:
    """The team keys of one level (``where``: ``""`` or ``"rules[2]."``), each checked."""
    channel = data.get("escalate_channel")
    if channel is not None and (not isinstance(channel, str) or not _ID.match(channel)):
        raise error(
            f"{where}escalate_channel", "must be a channel id like C0123ABCD (or a user id, a DM)"
        )
    vetoes = data.get("deny_vetoes")
    if vetoes is not None and not isinstance(vetoes, bool):
        raise error(f"{where}deny_vetoes", "must be true or false")
    return TeamRules(
        remind_after=_seconds(data, "remind_after", where, error),
        reminders=_whole(data, "reminders", where, error, MAX_REMINDERS, "reminders"),
        escalate_after=_seconds(data, "escalate_after", where, error),
        escalate_to=_escalate_to(data, where, error),
        escalate_channel=channel,
        approvals=_whole(
            data, "approvals", where, error, MAX_APPROVALS, "distinct people who must approve"
        ),
        deny_vetoes=vetoes,
    )


def check_team(
    mine: TeamRules, top: TeamRules, where: str, error: Error, *, timeout: float
) -> None:
    """Refuse what ``mine`` over ``top`` cannot do within ``timeout`` (the ask's); the error
    names the key where it is set."""
    team = mine.over(top)

    def at(*keys: str) -> str:
        key = next((k for k in keys if getattr(mine, k) is not None), None)
        return f"{where}{key}" if key is not None else keys[0]

    if team.reminders is not None and team.remind_after is None:
        raise error(at("reminders"), "needs remind_after: say how many seconds apart")
    named = team.escalate_to is not None or team.escalate_channel is not None
    if team.escalate_after is None and named:
        raise error(
            at("escalate_to", "escalate_channel"),
            "needs escalate_after: say after how many seconds to escalate",
        )
    if team.escalate_after is not None and not named:
        raise error(
            at("escalate_after"),
            "needs someone to escalate to: set escalate_to (U…/S… ids) or escalate_channel",
        )
    for key in ("remind_after", "escalate_after"):
        value = getattr(team, key)
        if value is not None and value >= timeout:
            # Named where it is set here; a rule's own shorter timeout otherwise.
            name = at(key) if getattr(mine, key) is not None or not where else f"{where}timeout"
            raise error(
                name,
                f"leaves no time: {key} is {value:g} s, not before the ask's timeout of"
                f" {timeout:g} s, so it would never happen (shorten it, or lengthen the timeout)",
            )


def _seconds(data: Mapping[str, Any], key: str, where: str, error: Error) -> float | None:
    if key not in data:
        return None
    value = data[key]
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= LONGEST_TIMEOUT
    ):
        raise error(f"{where}{key}", "must be a positive number of seconds (at most a year)")
    return float(value)


def _whole(
    data: Mapping[str, Any], key: str, where: str, error: Error, most: int, what: str
) -> int | None:
    if key not in data:
        return None
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise error(f"{where}{key}", f"must be a whole number from 1 to {most} ({what})")
    return value


def _escalate_to(data: Mapping[str, Any], where: str, error: Error) -> tuple[str, ...] | None:
    if "escalate_to" not in data:
        return None
    value = data["escalate_to"]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise error(f"{where}escalate_to", "must be a Slack id or a non-empty list of them")
    bad = [v for v in value if not _ID.match(v) or v[0] not in "UWS"]
    if bad:
        raise error(
            f"{where}escalate_to",
            f"must hold user (U…/W…) or user group (S…) ids like U0123ABCD: {bad[0]!r}",
        )
    return tuple(value)


class _Escalating(Protocol):
    @property
    def escalate_after(self) -> float | None: ...
    @property
    def escalate_users(self) -> tuple[str, ...] | None: ...
    @property
    def escalate_groups(self) -> tuple[str, ...] | None: ...
    @property
    def escalate_channel(self) -> str | None: ...


def escalation(source: _Escalating) -> dict[str, Any]:
    """``source``'s escalation (the rules' team, or a request) as keyword arguments, taken
    as one whole: nothing when it sets no ``escalate_after``, so that nothing of another's
    escalation mixes in with it."""
    if source.escalate_after is None:
        return {}
    return {
        "escalate_after": source.escalate_after,
        "escalate_users": source.escalate_users,
        "escalate_groups": source.escalate_groups,
        "escalate_channel": source.escalate_channel,
    }
