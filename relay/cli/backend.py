"""How ``relay mcp``, ``relay hook`` and ``relay exec`` reach the humans: a hosted relay
(``RELAY_URL`` and ``RELAY_TOKEN``; a ``relay serve --sandbox`` serves the same API) or
Slack directly (``SLACK_BOT_TOKEN`` and ``SLACK_APP_TOKEN``, over Socket Mode).

The same rules and one-line errors as ``relay ask``. Grants: through a hosted relay they
are the relay's (shared by every process using the token); asking Slack directly they live
in this process's memory only.

The clients (slack-sdk, aiohttp, the relay's own) are imported by ``open_backend``, when a
command has something to ask: a hook decided by its rules alone never loads them (see
``relay.cli``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from relay.cli.common import USAGE, CommandError

if TYPE_CHECKING:
    from relay.gate.approval import Approver
    from relay.gate.rules import Rules
    from relay.seam.service import UserInteractionService

__all__ = ["add_allowlist_flags", "add_backend_flags", "id_list", "open_backend"]


@dataclass
class Backend:
    """The seam (for questions) and the approver (for tool uses) of one process."""

    mode: Literal["relay", "slack"]
    service: UserInteractionService
    approver: Approver
    close: Callable[[], Awaitable[None]]
    channel: str | None = None
    allowed_users: tuple[str, ...] | None = None
    allowed_groups: tuple[str, ...] | None = None
    approvals: int | None = None
    signs_receipts: Callable[[], Awaitable[bool]] | None = None
    """Whether the asks' relay signs receipts (a hosted relay's answer); ``None``: never."""

    def fill(self, rules: Rules) -> Rules:
        """``rules`` with this command's channel, allowlist and (asking Slack directly)
        ``RELAY_APPROVALS_REQUIRED`` where the file sets none."""
        return rules.filled(
            channel=self.channel,
            approvers=self.allowed_users,
            approver_groups=self.allowed_groups,
            approvals=self.approvals,
        )


def add_backend_flags(parser: argparse.ArgumentParser) -> None:
    """The flags saying where to ask (each also read from the environment)."""
    where = parser.add_argument_group(
        "where to ask (a hosted relay with RELAY_URL and RELAY_TOKEN, else Slack directly"
        " with SLACK_BOT_TOKEN and SLACK_APP_TOKEN)"
    )
    where.add_argument(
        "--relay-url", metavar="URL", help="the hosted relay (default: RELAY_URL, if set)"
    )
    where.add_argument(
        "--channel", metavar="C…", help="channel id to ask in (default: RELAY_CHANNEL)"
    )
    add_allowlist_flags(where, default="anyone")


def add_allowlist_flags(group: argparse._ActionsContainer, *, default: str) -> None:
    """``--allowed-users U1,U2`` and ``--allowed-groups S1,S2``, spelled the same in every
    command (and like RELAY_ALLOWED_USERS): comma-separated, and repeatable. ``relay ask``'s
    old ``--allowed-user U…`` / ``--allowed-group S…`` still work, hidden from the help."""
    group.add_argument(
        "--allowed-users",
        action="append",
        metavar="U1,U2",
        help=f"Slack user ids who may answer, comma-separated (default: {default})",
    )
    group.add_argument(
        "--allowed-groups",
        action="append",
        metavar="S1,S2",
        help="Slack user group ids whose members may answer, comma-separated (default: none)",
    )
    # Deprecated spellings (relay ask's, one id each): kept so existing scripts still run.
    group.add_argument(
        "--allowed-user", action="append", dest="allowed_users", help=argparse.SUPPRESS
    )
    group.add_argument(
        "--allowed-group", action="append", dest="allowed_groups", help=argparse.SUPPRESS
    )


def id_list(raw: list[str] | str | None, flag: str) -> tuple[str, ...] | None:
    """The Slack ids given to ``flag`` (comma-separated, the flag maybe repeated), or a
    ``USAGE`` error naming the first that is not an id."""
    if raw is None:
        return None
    given = [raw] if isinstance(raw, str) else raw
    ids = tuple(part.strip() for value in given for part in value.split(",") if part.strip())
    bad = [i for i in ids if not i[:1].isupper() or not i.isalnum()]
    if bad:
        raise CommandError(USAGE, f"{flag} takes Slack ids like U0123ABCD, not {bad[0]!r}")
    return ids


async def open_backend(
    args: argparse.Namespace, *, timeout: float | None, rules: Rules | None = None
) -> Backend:
    """Connect as configured by ``args`` and the environment; ``CommandError`` if unset.
    ``rules``: the command's rules file, which a process asking Slack itself decides by
    (its Decider and its Edit form), as a hosted relay decides by its operator's."""
    env = os.environ
    url = args.relay_url or env.get("RELAY_URL")
    users = id_list(args.allowed_users, "--allowed-users")
    groups = id_list(args.allowed_groups, "--allowed-groups")
    channel = args.channel or env.get("RELAY_CHANNEL") or None
    if url:
        token = env.get("RELAY_TOKEN", "")
        if not token:
            raise CommandError(USAGE, "set RELAY_TOKEN to one of the relay's API tokens")
        return await _relay_backend(url, token, channel, users, groups, timeout)
    bot, app = env.get("SLACK_BOT_TOKEN"), env.get("SLACK_APP_TOKEN")
    if not bot or not app:
        raise CommandError(
            USAGE,
            "say how to reach Slack: RELAY_URL (or --relay-url) with RELAY_TOKEN, or"
            " SLACK_BOT_TOKEN and SLACK_APP_TOKEN to ask directly over Socket Mode",
        )
    if not channel:
        raise CommandError(USAGE, "say where to ask: --channel C… (or RELAY_CHANNEL)")
    return await _slack_backend(bot, app, channel, users, groups, timeout, rules)


async def _relay_backend(
    url: str,
    token: str,
    channel: str | None,
    users: tuple[str, ...] | None,
    groups: tuple[str, ...] | None,
    timeout: float | None,
) -> Backend:
    from relay.client import RelayProvider
    from relay.gate.remote import RemoteApprover
    from relay.seam.service import UserInteractionService

    provider = RelayProvider(
        url, token, channel=channel, allowed_users=users, allowed_groups=groups, timeout=timeout
    )
    service = UserInteractionService()
    service.register_provider(provider)
    remote = RemoteApprover(url, token)

    async def close_relay() -> None:
        await provider.aclose()
        await remote.aclose()

    return Backend(
        "relay",
        service,
        remote,
        close_relay,
        channel,
        users,
        groups,
        signs_receipts=provider.signs_receipts,
    )


async def _slack_backend(
    bot: str,
    app: str,
    channel: str,
    users: tuple[str, ...] | None,
    groups: tuple[str, ...] | None,
    timeout: float | None,
    rules: Rules | None,
) -> Backend:
    from slack_sdk.web.async_client import AsyncWebClient

    from relay.asks.events import Events
    from relay.asks.lifecycle import AskLifecycle
    from relay.config.settings import TeamDefaults
    from relay.gate.decider import Decider
    from relay.gate.local import slack_approver
    from relay.gate.rulings import Rulings
    from relay.grants import MemoryGrants
    from relay.seam.service import UserInteractionService
    from relay.slack import SlackProvider, SlackSettings
    from relay.store import MemoryStore

    env = os.environ
    team = TeamDefaults.from_env(env)
    if rules is not None:
        rules = rules.filled(
            channel=channel,
            approvers=users,
            approver_groups=groups,
            approvals=team.approvals_required,
        )
    rulings = Rulings(rules=lambda _: rules, source=rules.source if rules else "the rules")
    # Asking Slack directly, this process is the relay: its grants and plans live (only) here,
    # and a plan's message reaches them (Stop the plan, the narrowed scope).
    grants = MemoryGrants()
    settings = SlackSettings(
        client=AsyncWebClient(
            token=bot, base_url=env.get("SLACK_API_URL") or AsyncWebClient.BASE_URL
        ),
        channel=channel,
        timeout=timeout if timeout is not None else 900.0,
        allowed_users=users,
        allowed_groups=groups,
        edit_review=rulings.edit_terms,
        plans=Decider(rulings=rulings, grants=grants),
        **team.provider_kwargs(),
    )
    # This process is the composition root: its asks live in its memory, shown in Slack.
    lifecycle = AskLifecycle(store=MemoryStore(), events=Events())
    slack = SlackProvider(settings, lifecycle=lifecycle)
    try:
        await slack.connect_socket_mode(app)
    except BaseException:
        await slack.aclose()
        raise
    service = UserInteractionService()
    service.register_provider(slack)
    approver = slack_approver(slack, grants, owner="local", rules=rules)
    # Its approvals are built knowing the quorum (then no grants), as a hosted relay's are.
    return Backend(
        "slack", service, approver, slack.aclose, channel, users, groups, team.approvals_required
    )
