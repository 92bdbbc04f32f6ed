"""``AskTarget``: where one ask goes and who may answer it, and how its gaps are filled.

Channel-neutral: the edges (the API, the Decider's channel) build targets without knowing
which channel shows the ask; ``relay.slack`` re-exports ``AskTarget`` as ``SlackTarget``.
An ``AskTarget``'s unset fields inherit the channel's defaults (``TargetDefaults``); the
resolved ``Target`` is what the store records, with every default applied and checked.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from enum import Enum
from typing import Any

from relay.asks.names import NamePolicy
from relay.asks.terms import LONGEST_TIMEOUT, MAX_REMINDERS, capped, check_timeout
from relay.errors import RelayConfigError, bad_request
from relay.seam.questions import AskUserQuestionRequest
from relay.store.record import Target

__all__ = [
    "LONGEST_TIMEOUT",
    "MAX_REMINDERS",
    "UNSET",
    "AskTarget",
    "Route",
    "TargetDefaults",
    "check_reminders",
    "ids",
]


def ids(value: Collection[str] | None, setting: str) -> frozenset[str] | None:
    """A set of user or group ids from a collection (a lone string is a mistake, not a set
    of letters)."""
    if value is None:
        return None
    if isinstance(value, str):
        raise RelayConfigError(
            f"{setting} must be a collection of ids, not one string", setting=setting
        )
    return frozenset(value)


def check_reminders(value: int) -> int:
    """``value`` as a count of reminders, or ``RelayConfigError``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REMINDERS:
        raise RelayConfigError(
            f"reminders must be a whole number from 1 to {MAX_REMINDERS}", setting="reminders"
        )
    return value


class _Unset(Enum):
    UNSET = "UNSET"


UNSET = _Unset.UNSET
"""A target field left unset: it inherits the channel's default."""


@dataclass(frozen=True, slots=True)
class AskTarget:
    """Where one ask goes and who may answer it; unset fields inherit the provider's defaults,
    but ``allowed_users`` and ``allowed_groups`` are one allowlist: naming either replaces both.

    ``remind_after`` (seconds) and ``reminders`` (how many, 1–10): reminders in the
    message's thread, mentioning who may answer, until the ask ends.

    ``escalate_after`` (seconds): from then on ``escalate_users``/``escalate_groups`` may
    answer too, and are told with a mention, in ``escalate_channel`` (a channel, or a user
    id for a DM) with a link back to the question, or else in the question's thread. The
    original message says it was escalated.
    """

    channel: str
    thread_ts: str | None = None
    allowed_users: Collection[str] | _Unset | None = UNSET
    timeout: float | _Unset | None = UNSET
    allowed_groups: Collection[str] | _Unset | None = UNSET
    requester: str | None = None
    prevent_self_approval: bool | _Unset = UNSET
    remind_after: float | _Unset | None = UNSET
    reminders: int | _Unset = UNSET
    escalate_after: float | _Unset | None = UNSET
    escalate_users: Collection[str] | _Unset | None = UNSET
    escalate_groups: Collection[str] | _Unset | None = UNSET
    escalate_channel: str | _Unset | None = UNSET


Route = Callable[[AskUserQuestionRequest], "AskTarget | Awaitable[AskTarget]"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetDefaults:
    """The provider's defaults for every ask, and the operator's ceiling on them.

    ``policy_users`` (``RELAY_ALLOWED_USERS``) bounds who an ask may name; ``max_timeout``
    bounds every timeout (a longer one, or none, becomes it).
    """

    channel: str | None
    route: Route | None
    timeout: float | None
    max_timeout: float | None
    allowed_users: frozenset[str] | None
    allowed_groups: frozenset[str] | None
    prevent_self_approval: bool
    policy_users: frozenset[str] | None
    policy_groups: frozenset[str] | None
    remind_after: float | None = None
    reminders: int = 1
    escalate_after: float | None = None
    escalate_users: frozenset[str] | None = None
    escalate_groups: frozenset[str] | None = None
    escalate_channel: str | None = None
    names: NamePolicy | None = None  # what a client's own target may name (relay serve)

    async def resolve(self, request: AskUserQuestionRequest, target: AskTarget | None) -> Target:
        """The ``Target`` for ``request``: ``target``, else the route's, else the default
        channel, with every unset field inherited; ``BAD_REQUEST`` for what may not be."""
        if target is not None and self.names is not None:
            self.names.check(target)
        if target is None:
            target = AskTarget(channel=self.channel or "")
            if self.route is not None:
                routed = self.route(request)
                target = await routed if inspect.isawaitable(routed) else routed
                if not isinstance(target, AskTarget):
                    raise RelayConfigError("route must return a SlackTarget", setting="route")
        channel = target.channel or self.channel
        if not channel:
            raise bad_request(
                "there is no channel to ask in: name one (slack.channel in the API) or set"
                " a default channel (channel= / RELAY_CHANNEL)"
            )
        # Who may answer is one allowlist: a target naming either half replaces both, or
        # `allowed_users: [alice]` would still admit the default groups' members (and
        # `allowed_groups` the default users).
        given: Collection[str] | None = self.allowed_users
        groups: Collection[str] | None = self.allowed_groups
        if target.allowed_users is not UNSET or target.allowed_groups is not UNSET:
            given = None if target.allowed_users is UNSET else target.allowed_users
            groups = None if target.allowed_groups is UNSET else target.allowed_groups
        users = ids(given, "allowed_users")
        prevent = target.prevent_self_approval
        timeout = self.timeout if target.timeout is UNSET else target.timeout
        self._check_policy(users, "allowed_users")
        escalation = self._escalation(target)
        return Target(
            channel=channel,
            thread_ts=target.thread_ts,
            allowed_users=users,
            timeout=capped(check_timeout(timeout, "timeout"), self.max_timeout),
            allowed_groups=ids(groups, "allowed_groups"),
            requester=target.requester,
            prevent_self_approval=self.prevent_self_approval if prevent is UNSET else prevent,
            remind_after=check_timeout(
                self.remind_after if target.remind_after is UNSET else target.remind_after,
                "remind_after",
            ),
            reminders=check_reminders(
                self.reminders if target.reminders is UNSET else target.reminders
            ),
            **escalation,
        )

    def _escalation(self, target: AskTarget) -> dict[str, Any]:
        """The target's escalation fields, each inherited when unset, checked together."""

        def pick(name: str) -> Any:
            given = getattr(target, name)
            return getattr(self, name) if given is UNSET else given

        after = check_timeout(pick("escalate_after"), "escalate_after")
        users = ids(pick("escalate_users"), "escalate_users")
        groups = ids(pick("escalate_groups"), "escalate_groups")
        channel = pick("escalate_channel") or None
        if channel is not None and not isinstance(channel, str):
            raise bad_request("escalate_channel must be a channel id, or a user id for a DM")
        named = users is not None or groups is not None or channel is not None
        if after is None:
            if named and any(
                getattr(target, n) is not UNSET
                for n in ("escalate_users", "escalate_groups", "escalate_channel")
            ):
                raise bad_request(
                    "escalate_users, escalate_groups and escalate_channel need escalate_after:"
                    " say after how many seconds to escalate"
                )
            return {}
        if not named:
            raise bad_request(
                "escalate_after needs someone to escalate to: name escalate_users,"
                " escalate_groups or escalate_channel"
            )
        self._check_policy(users, "escalate_users")
        return {
            "escalate_after": after,
            "escalate_users": users,
            "escalate_groups": groups,
            "escalate_channel": channel,
        }

    def _check_policy(self, users: frozenset[str] | None, setting: str) -> None:
        """Refuse an ask naming answerers the operator's policy would never let in."""
        if self.policy_groups is not None or self.policy_users is None or users is None:
            return  # group members are only known at click time: checked then
        outside = sorted(users - self.policy_users)
        if outside:
            raise bad_request(
                f"{setting} names {', '.join(outside)}, who may not answer on this relay"
                " (the operator's allowlist, RELAY_ALLOWED_USERS): leave them out"
            )
