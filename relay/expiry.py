"""``Expiry`` moved to ``relay.asks.expiry``, with the rest of the ask's lifecycle."""

from relay.asks.expiry import Expiry

__all__ = ["Expiry"]
