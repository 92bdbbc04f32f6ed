"""``InstallationLookup``: which installation the bot token belongs to, asked once per process."""

from __future__ import annotations

import asyncio
import logging

from slack_sdk.web.async_client import AsyncWebClient

from relay.slack.background import Background
from relay.slack.failures import SLACK_FAILURES
from relay.slack.installation import Installation

__all__ = ["InstallationLookup"]

_log = logging.getLogger("relay.slack")


class InstallationLookup:
    """``auth.test``'s answer for the bot token, fetched on first use and kept."""

    def __init__(self, client: AsyncWebClient, *, background: Background) -> None:
        self._client = client
        self._background = background
        self._installation: Installation | None = None
        self._lock = asyncio.Lock()

    def prefetch(self) -> None:
        """Look it up now, in the background, so that the first click does not wait for
        ``auth.test``; a failure is retried by the first click that needs it."""
        self._background.lend_session()
        self._background.spawn(self._prefetch())

    async def _prefetch(self) -> None:
        try:
            await self.get()
        except SLACK_FAILURES as exc:
            _log.warning("auth.test failed at start (retried on the first click): %s", exc)

    async def get(self) -> Installation:
        """The installation (workspace, app, Grid organisation), from ``auth.test`` once."""
        if self._installation is None:
            async with self._lock:
                if self._installation is None:
                    response = await self._client.auth_test()
                    self._installation = Installation.from_auth_test(response.data)  # type: ignore[arg-type]
        return self._installation
