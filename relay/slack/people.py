"""Who may answer: user allowlists, user groups (cached briefly), and self-approval."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from relay.errors import RelayConfigError
from relay.slack import notices
from relay.store.record import Target

__all__ = ["Gatekeeper", "ids"]


def ids(value: Collection[str] | None, setting: str) -> frozenset[str] | None:
    """A set of Slack ids from a collection (a lone string is a mistake, not a set of letters)."""
    if value is None:
        return None
    if isinstance(value, str):
        raise RelayConfigError(
            f"{setting} must be a collection of ids, not one string", setting=setting
        )
    return frozenset(value)


class Gatekeeper:
    """Decides whether a Slack user may answer an ask's question."""

    def __init__(self, client: AsyncWebClient, *, group_ttl: float = 60.0) -> None:
        self._client = client
        self._ttl = group_ttl
        self._groups: dict[str, tuple[float, frozenset[str]]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def refusal(self, target: Target, user: str) -> str | None:
        """``None`` if ``user`` may answer, else the private notice saying why not."""
        if (
            target.prevent_self_approval
            and target.requester is not None
            and user == target.requester
        ):
            return notices.own_ask()
        if not target.restricted:
            return None
        if target.allowed_users is not None and user in target.allowed_users:
            return None
        for group in sorted(target.allowed_groups or ()):
            try:
                members = await self.members(group)
            except (SlackApiError, SlackClientError, aiohttp.ClientError, TimeoutError):
                # Fail closed: when membership cannot be checked, nobody is let in by it.
                return notices.cannot_check_groups()
            if user in members:
                return None
        return notices.not_allowed()

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
