"""Telling one clicker something privately, wherever they clicked from.

A click's ``response_url`` takes an ephemeral reply (``response_type: "ephemeral"``,
``replace_original: false``) that Slack shows to the clicker under the message they clicked,
in the channel or in the thread, whether or not they are a member of the channel
(api.slack.com/interactivity/handling: up to 5 replies within 30 minutes). The relay tries
it first. ``chat.postEphemeral`` is the fallback when Slack refuses that (an expired or used
URL) or it cannot be sent, but not after a timeout, when the first may still arrive: it only
reaches members of the channel (``user_not_in_channel`` otherwise,
api.slack.com/methods/chat.postEphemeral), and its ``thread_ts`` puts the notice into the
thread, so that is passed only for a click on a reply in a thread, never for a click on a
thread's parent message seen in the channel.

The relay posts only to a ``response_url`` on Slack's hooks host (or the host of the Web API
the client talks to, e.g. ``FakeSlack``): a signed payload is Slack's, but a leaked signing
secret must not turn the relay into a proxy for requests to anywhere.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError

from relay.slack.intake.parse import Click
from relay.slack.webapi.calls import LeanCalls, ResponseUrlRefused

__all__ = ["tell_privately"]

_log = logging.getLogger("relay.slack")

# Slack's response_url hosts (commercial and GovSlack).
_SLACK_HOOKS = frozenset({"hooks.slack.com", "hooks.slack-gov.com"})

_FAILURES = (ResponseUrlRefused, SlackApiError, SlackClientError, aiohttp.ClientError, TimeoutError)


def trusted_response_url(url: str | None, *, base_url: str) -> bool:
    """Whether ``url`` points at Slack's hooks host over HTTPS, or at the same origin as the
    Web API ``base_url`` (a stand-in for Slack such as ``FakeSlack``)."""
    if not url:
        return False
    try:
        target, api = urlsplit(url), urlsplit(base_url)
        target_port, api_port = target.port, api.port
    except ValueError:
        return False
    if target.scheme == "https" and target.hostname in _SLACK_HOOKS and target_port is None:
        return True
    return (target.scheme, target.hostname, target_port) == (api.scheme, api.hostname, api_port)


async def tell_privately(
    calls: LeanCalls, click: Click, text: str, *, fallback: bool = True
) -> bool:
    """Show ``text`` to ``click``'s user only; whether it was delivered. Through the click's
    ``response_url`` first, then (``fallback``) ``chat.postEphemeral``. Failures are logged."""
    reasons: list[str] = []
    if trusted_response_url(click.response_url, base_url=calls.client.base_url):
        body = {"response_type": "ephemeral", "replace_original": False, "text": text}
        try:
            await calls.respond(str(click.response_url), body)
            return True
        except TimeoutError:
            # Slack may still show it: a second notice by chat.postEphemeral could double it.
            _log.warning("telling %s privately timed out (it may still arrive)", click.user_id)
            return False
        except _FAILURES as exc:
            reasons.append(f"response_url: {exc or type(exc).__name__}")
    elif click.response_url:
        reasons.append("response_url: not a Slack URL, not used")
    if fallback and click.channel_id:
        fields = {"channel": click.channel_id, "user": click.user_id, "text": text}
        if click.thread_ts and click.thread_ts != click.message_ts:
            fields["thread_ts"] = click.thread_ts  # a reply in a thread: the notice goes there
        try:
            await calls.call("chat.postEphemeral", fields)
            return True
        except _FAILURES as exc:
            reasons.append(f"chat.postEphemeral: {exc or type(exc).__name__}")
    _log.warning(
        "could not tell %s privately (%s)", click.user_id, "; ".join(reasons) or "no route"
    )
    return False
