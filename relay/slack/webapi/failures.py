"""What a Slack Web API call can fail with, and the error an agent sees for it."""

from __future__ import annotations

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError

from relay.errors import ErrorCode, UserInteractionError

__all__ = ["SLACK_FAILURES", "provider_failed"]

# What a Web API call raises: Slack's refusals, and the network's failures (timeouts, refused
# or dropped connections), which slack-sdk passes on as they are once its retries give up.
SLACK_FAILURES = (SlackApiError, SlackClientError, aiohttp.ClientError, TimeoutError)

# What to tell the operator for Slack errors that no retry will fix.
_SLACK_ADVICE: dict[str, str] = {
    "channel_not_found": "check the channel id, and that the bot can see the channel",
    "not_in_channel": "invite the bot to the channel (/invite @your-bot) and ask again",
    "is_archived": "the channel is archived: unarchive it or pick another channel",
    "invalid_auth": "the bot token is wrong or revoked: check SLACK_BOT_TOKEN",
    "not_authed": "no bot token was sent: set SLACK_BOT_TOKEN",
    "token_revoked": "the bot token was revoked: reinstall the app and use the new token",
    "account_inactive": "the bot token belongs to a deleted user or app: reinstall the app",
    "missing_scope": "the app lacks a scope: add it in the app manifest and reinstall",
    "invalid_blocks": "Slack refused the message layout: report this as a relay bug",
    "msg_too_long": "the message is too long for Slack: shorten the question",
    "msg_blocks_too_long": "Slack found the message too long in total: report this as a relay bug",
    "user_not_found": "check the user id of the DM target",
    "ratelimited": "Slack kept rate-limiting the relay: ask less often or spread channels",
}


def provider_failed(exc: Exception, *, doing: str) -> UserInteractionError:
    """A ``PROVIDER_FAILED`` error naming the Slack error and what to do about it."""
    if isinstance(exc, SlackApiError):
        error = str(exc.response.get("error") or f"HTTP {exc.response.status_code}")
        advice = _SLACK_ADVICE.get(error, "see Slack's documentation for this error")
        message = f"Slack refused {doing}: {error} ({advice})"
    else:
        message = f"could not reach Slack {doing}: {exc or type(exc).__name__}"
    return UserInteractionError(ErrorCode.PROVIDER_FAILED, message)
