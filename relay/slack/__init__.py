"""The Slack provider: questions as Block Kit messages, answered by clicks (``SlackProvider``).

The parts, by concern: ``intake`` (clicks in), ``rendering`` (Block Kit, pure), ``webapi``
(calls out), ``socket_mode``, ``editing`` (the "Edit…" form). The public names load on first
use (PEP 562), so ``relay manifest`` (``relay.slack.manifest``) does not pay for Bolt.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay.slack.provider import SlackProvider, SlackTarget
    from relay.slack.settings import SlackSettings

_HOME = {"SlackProvider": "provider", "SlackTarget": "provider", "SlackSettings": "settings"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'relay.slack' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"relay.slack.{home}"), name)
    globals()[name] = value
    return value


__all__ = ["SlackProvider", "SlackSettings", "SlackTarget"]
