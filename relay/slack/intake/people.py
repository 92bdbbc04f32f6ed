"""Who may answer: user allowlists, user groups (cached briefly), and self-approval.

A click must be acknowledged within Slack's 3 seconds, and ``usergroups.users.list`` can
take longer (a slow Slack, a 429's Retry-After): ``needs_slack`` says, from the cache alone,
whether deciding a click would wait on Slack, so the click is checked after its ack
instead; ``warm`` looks the groups of a new ask up in advance, so its first clicks need not.
"""

from __future__ import annotations

import asyncio
import time

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from relay.asks.target import ids
from relay.slack.rendering import notices
from relay.store.record import Target

__all__ = ["Gatekeeper", "ids"]


class Gatekeeper:
    """Decides whether a Slack user may answer an ask's question.

    An ask's own allowlist (``Target``) decides first; ``policy_users``/``policy_groups``,
    when set, are the operator's ceiling on top: nobody outside them answers any ask,
    whatever the ask allows.
    """

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        group_ttl: float = 60.0,
        policy_users: frozenset[str] | None = None,
        policy_groups: frozenset[str] | None = None,
    ) -> None:
        self._client = client
        self._ttl = group_ttl
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.policy_users = policy_users
        self.policy_groups = policy_groups

    @property
    def has_policy(self) -> bool:
        """Whether the operator limits who may answer at all."""
        return self.policy_users is not None or self.policy_groups is not None

    def needs_slack(self, target: Target, user: str) -> bool:
        """Whether deciding ``refusal(target, user)`` would call Slack (a group it depends
        on is not in the cache, or no longer fresh)."""
        if (
            target.prevent_self_approval
            and target.requester is not None
            and user == target.requester
        ):
            return False
        if target.restricted and self._unknown(target.allowed_users, target.allowed_groups, user):
            return True
        return self.has_policy and self._unknown(self.policy_users, self.policy_groups, user)

    def _unknown(
        self, users: frozenset[str] | None, groups: frozenset[str] | None, user: str
    ) -> bool:
        if (users is not None and user in users) or not groups:
            return False
        now = time.monotonic()
        fresh = [self._groups.get(g) for g in groups]
        if any(c is not None and now - c[0] < self._ttl and user in c[1] for c in fresh):
            return False  # a member of a group known: allowed whatever the others say
        return any(c is None or now - c[0] >= self._ttl for c in fresh)

    def unknown_groups(self, target: Target) -> list[str]:
        """The groups ``target`` (its escalation too) and the policy depend on that the
        cache lacks (or holds stale): for ``warm`` before anyone clicks."""
        groups = set(self.policy_groups or ())
        if target.restricted:  # (an ask anyone may answer stays so when escalated)
            groups |= set(target.allowed_groups or ()) | set(target.escalate_groups or ())
        now = time.monotonic()
        return sorted(
            g for g in groups if (c := self._groups.get(g)) is None or now - c[0] >= self._ttl
        )

    async def warm(self, groups: list[str]) -> None:
        """Look ``groups`` up now; a failure is left for a click to meet (and retry)."""
        await asyncio.gather(*(self.members(g) for g in groups), return_exceptions=True)

    def forget(self) -> None:
        """Drop every cached membership: the next click that needs one looks it up."""
        self._groups.clear()

    async def refusal(self, target: Target, user: str) -> str | None:
        """``None`` if ``user`` may answer, else the private notice saying why not."""
        if (
            target.prevent_self_approval
            and target.requester is not None
            and user == target.requester
        ):
            return notices.own_ask()
        if target.restricted:
            refused = await self._outside(target.allowed_users, target.allowed_groups, user)
            if refused is not None:
                return refused
        if self.has_policy:
            return await self._outside(self.policy_users, self.policy_groups, user)
        return None

    async def _outside(
        self, users: frozenset[str] | None, groups: frozenset[str] | None, user: str
    ) -> str | None:
        """``None`` if ``user`` is one of ``users`` or a member of one of ``groups``."""
        if users is not None and user in users:
            return None
        if not groups:
            return notices.not_allowed()
        # All groups at once: a click is acknowledged within 3 s, and one Slack call after
        # another per group would not fit (each is cached a minute, see ``members``).
        found = await asyncio.gather(
            *(self.members(g) for g in sorted(groups)), return_exceptions=True
        )
        failed = False
        for members in found:
            if isinstance(
                members, (SlackApiError, SlackClientError, aiohttp.ClientError, TimeoutError)
            ):
                failed = True
            elif isinstance(members, BaseException):
                raise members
            elif user in members:
                return None
        # Fail closed: when membership cannot be checked, nobody is let in by it.
        return notices.cannot_check_groups() if failed else notices.not_allowed()

    async def members(self, group: str) -> frozenset[str]:
        """The members of user group ``group`` (``usergroups.users.list``, cached briefly)."""
        cached = self._groups.get(group)
        if cached is not None and time.monotonic() - cached[0] < self._ttl:
            return cached[1]
        lock = self._locks.setdefault(group, asyncio.Lock())
        async with lock:
            cached = self._groups.get(group)
            if cached is not None and time.monotonic() - cached[0] < self._ttl:
                return cached[1]
            response = await self._client.usergroups_users_list(usergroup=group)
            members = frozenset(str(u) for u in response.get("users") or ())
            self._groups[group] = (time.monotonic(), members)
            return members
