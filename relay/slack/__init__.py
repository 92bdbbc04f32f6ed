"""The Slack provider: questions as Block Kit messages, answered by clicks (``SlackProvider``)."""

from relay.slack.provider import SlackProvider, SlackTarget
from relay.slack.settings import SlackSettings

__all__ = ["SlackProvider", "SlackSettings", "SlackTarget"]
