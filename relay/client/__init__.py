"""Asking a hosted relay over HTTP: ``RelayProvider`` (a seam provider) and
``verify_webhook`` (checks the signature of the relay's outcome webhooks).

Both load on first use (PEP 562): importing the package costs nothing until one is used.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay.client.provider import RelayProvider, verify_webhook


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'relay.client.provider' has no attribute {name!r}")
    from relay.client import provider

    value = getattr(provider, name)
    globals()[name] = value
    return value


__all__ = ["RelayProvider", "verify_webhook"]
