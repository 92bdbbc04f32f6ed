"""Grants: "allow this again without asking", kept by the relay, never by the agent."""

from relay.grants.base import GrantStore
from relay.grants.memory import MemoryGrants
from relay.grants.record import SESSION_HOURS, Grant, GrantKind, Offer

__all__ = ["SESSION_HOURS", "Grant", "GrantKind", "GrantStore", "MemoryGrants", "Offer"]
