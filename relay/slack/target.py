"""``SlackTarget``: where one ask goes and who may answer it, and how its gaps are filled.

A ``SlackTarget``'s unset fields inherit the provider's defaults (``TargetDefaults``); the
resolved ``Target`` is what the store records, with every default applied and checked.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from enum import Enum

from relay.asks.rules import capped, check_timeout
from relay.errors import RelayConfigError, bad_request
from relay.questions import AskUserQuestionRequest
from relay.slack.people import ids
from relay.store.record import Target

__all__ = ["MAX_REMINDERS", "UNSET", "Route", "SlackTarget", "TargetDefaults", "check_reminders"]

# The most reminders one ask may send (more is nagging, not reminding).
MAX_REMINDERS = 10


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


@dataclass(frozen=True, slots=True)
class SlackTarget:
    """Where one ask goes and who may answer it; unset fields inherit the provider's defaults.

    ``remind_after`` (seconds) and ``reminders`` (how many, 1–10): reminders in the
    message's thread, mentioning who may answer, until the ask ends.
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


Route = Callable[[AskUserQuestionRequest], "SlackTarget | Awaitable[SlackTarget]"]


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

    async def resolve(self, request: AskUserQuestionRequest, target: SlackTarget | None) -> Target:
        """The ``Target`` for ``request``: ``target``, else the route's, else the default
        channel, with every unset field inherited; ``BAD_REQUEST`` for what may not be."""
        if target is None:
            target = SlackTarget(channel=self.channel or "")
            if self.route is not None:
                routed = self.route(request)
                target = await routed if inspect.isawaitable(routed) else routed
                if not isinstance(target, SlackTarget):
                    raise RelayConfigError("route must return a SlackTarget", setting="route")
        channel = target.channel or self.channel
        if not channel:
            raise bad_request(
                "there is no channel to ask in: name one (slack.channel in the API) or set"
                " a default channel (channel= / RELAY_CHANNEL)"
            )
        given = self.allowed_users if target.allowed_users is UNSET else target.allowed_users
        users = ids(given, "allowed_users")
        groups = self.allowed_groups if target.allowed_groups is UNSET else target.allowed_groups
        prevent = target.prevent_self_approval
        timeout = self.timeout if target.timeout is UNSET else target.timeout
        self._check_policy(users)
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
        )

    def _check_policy(self, users: frozenset[str] | None) -> None:
        """Refuse an ask naming answerers the operator's policy would never let in."""
        if self.policy_groups is not None or self.policy_users is None or users is None:
            return  # group members are only known at click time: checked then
        outside = sorted(users - self.policy_users)
        if outside:
            raise bad_request(
                f"allowed_users names {', '.join(outside)}, who may not answer on this relay"
                " (the operator's allowlist, RELAY_ALLOWED_USERS): leave them out"
            )
