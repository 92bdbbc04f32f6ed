"""The credentials a ``SlackProvider`` is given, checked before anything is built."""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from relay.errors import RelayConfigError

__all__ = ["check_credentials"]


def check_credentials(
    client: AsyncWebClient | None, token: str | None, signing_secret: str | None
) -> None:
    """Refuse a provider given no way, or two ways, to call Slack, or an empty secret."""
    if (client is None) == (token is None):
        raise RelayConfigError(
            "pass exactly one of client= (an AsyncWebClient) or token= (the xoxb- bot token)",
            setting="token",
        )
    if token is not None and not token.strip():
        raise RelayConfigError("token is empty: pass the xoxb- bot token", setting="token")
    if signing_secret is not None and not signing_secret.strip():
        raise RelayConfigError(
            "signing_secret is empty: copy it from your app's Basic Information page"
            " (or pass None to use Socket Mode only)",
            setting="signing_secret",
        )
