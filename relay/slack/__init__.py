"""The Slack provider: questions as Block Kit messages, answered by clicks (``SlackProvider``)."""

from relay.slack.provider import SlackProvider, SlackTarget

__all__ = ["SlackProvider", "SlackTarget"]
