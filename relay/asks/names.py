"""What a client's ``AskTarget`` may name on a relay that serves agents.

An agent holds its API token and writes the ``slack`` section of its requests. Were every
channel and user group open to it, it could make the bot post anywhere the bot is a member
and @-mention any group (``allowed_groups``, ``escalate_groups``). So on ``relay serve`` a
client may name only the channels the operator lists (``RELAY_ALLOWED_CHANNELS``, and the
default ``RELAY_CHANNEL``) and the user groups the operator lists (``RELAY_ALLOWED_GROUPS``):
none listed, none may be named. The operator's own defaults and routes are not checked.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from relay.errors import bad_request

__all__ = ["NamePolicy"]


class Named(Protocol):
    """What a target names (``AskTarget``'s fields)."""

    @property
    def channel(self) -> object: ...
    @property
    def escalate_channel(self) -> object: ...
    @property
    def allowed_groups(self) -> object: ...
    @property
    def escalate_groups(self) -> object: ...


@dataclass(frozen=True, slots=True)
class NamePolicy:
    """The channels and user groups a client's ask may name."""

    channels: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    def check(self, target: Named) -> None:
        """``BAD_REQUEST`` naming the first field of ``target`` that goes past the policy."""
        for field, channel in (
            ("channel", target.channel),
            ("escalate_channel", target.escalate_channel),
        ):
            if isinstance(channel, str) and channel and channel not in self.channels:
                raise bad_request(
                    f"slack.{field} {channel} is not a channel this relay posts to for its"
                    " clients; leave it out (the default channel is used), or the operator"
                    " adds it to RELAY_ALLOWED_CHANNELS"
                )
        for field, groups in (
            ("allowed_groups", target.allowed_groups),
            ("escalate_groups", target.escalate_groups),
        ):
            if not isinstance(groups, Collection) or isinstance(groups, str):
                continue
            outside = sorted(set(groups) - self.groups)
            if outside:
                raise bad_request(
                    f"slack.{field} names {', '.join(outside)}, which this relay does not let"
                    " its clients name; leave them out, or the operator adds them to"
                    " RELAY_ALLOWED_GROUPS"
                )
