"""Who and where the sandbox's stand-in workspace has: a few people, a user group, channels.

One of the people is not allowed to answer, so that a visitor can see a refused click.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CHANNELS", "DEFAULT_CHANNEL", "GROUPS", "PEOPLE", "Person"]


@dataclass(frozen=True, slots=True)
class Person:
    """A simulated member of the workspace."""

    id: str
    name: str
    real_name: str
    title: str
    allowed: bool = True
    """Whether the sandbox's default allowlist (``RELAY_ALLOWED_USERS``) lets them answer."""


PEOPLE: tuple[Person, ...] = (
    Person("U0SBALICE", "alice", "Alice Moreau", "Tech lead"),
    Person("U0SBBOB", "bob", "Bob Okafor", "Release manager"),
    Person("U0SBCAROL", "carol", "Carol Lindqvist", "SRE on call"),
    Person("U0SBDAVE", "dave", "Dave Ito", "Guest (not allowed to answer)", allowed=False),
)

DEFAULT_CHANNEL = "C0SBAPPROVALS"
"""Where asks go unless they name a channel (the sandbox's ``RELAY_CHANNEL``)."""

CHANNELS: dict[str, str] = {DEFAULT_CHANNEL: "approvals", "C0SBDEPLOYS": "deploys"}
"""Channel id -> name, for the page's sidebar and ``<#C…>`` mentions."""

GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "S0SBONCALL": ("oncall", ("U0SBBOB", "U0SBCAROL")),
}
"""User group id -> (handle, members)."""
