"""``ServedChannel``: what ``relay serve`` needs of the channel it serves, beyond asking.

The server knows no channel by name: the composition root (``relay serve``, the sandbox)
builds one (``relay.slack.serving.slack_channel``) and hands it over. Besides the doors'
``AskChannel`` (start, wait, abort, stop), the server mounts the channel's HTTP routes,
opens it once listening, asks it whether it is ready, and stops when its credentials are
refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from aiohttp import web

from relay.asks.channel import AskChannel, ChannelCheck
from relay.errors import RelayConfigError

if TYPE_CHECKING:
    from relay.asks.edit_review import EditReview
    from relay.asks.lifecycle import AskLifecycle
    from relay.asks.plan_door import PlanDoor
    from relay.config.settings import Settings

__all__ = ["ChannelFactory", "ServedChannel"]


class ServedChannel(AskChannel, Protocol):
    """An ``AskChannel`` ``relay serve`` can mount, open, probe and watch."""

    @property
    def name(self) -> str:
        """The key ``/readyz`` reports the channel's own check under (``slack``)."""
        ...

    def routes(self, *, read_timeout: float) -> list[web.RouteDef]:
        """The HTTP routes people's answers arrive on (none when they come another way)."""
        ...

    async def open(self, *, within: float) -> None:
        """Start timing asks out and receiving answers; wait up to ``within`` seconds for
        the credentials' first check and raise ``RelayConfigError`` if they are refused."""
        ...

    async def refused(self) -> RelayConfigError:
        """Wait until the channel's credentials are refused for good (it may never)."""
        ...

    async def check(self) -> ChannelCheck | None:
        """Check the credentials now (``None``: they work)."""
        ...

    def problems(self) -> dict[str, str]:
        """What keeps answers from arriving now (a dropped connection), by part."""
        ...


ChannelFactory = Callable[
    ["Settings", "AskLifecycle", "EditReview | None", "PlanDoor | None"], ServedChannel
]
"""Builds the served channel from the settings, over the lifecycle the server built, with
the operator's terms for an edit (``Rulings.edit_terms``) and the Decider's plan decisions
a plan's message reaches (``PlanDoor``)."""
