"""``InstallationLookup``: which installation the bot token belongs to, asked once per process.

At start (``prefetch``) the bot token is checked with ``auth.test``: a token Slack refuses
(``invalid_auth``, ``token_revoked``, ``account_inactive`` …) can never post a question, so
``refused`` reports it for ``relay serve`` to stop with one ``BAD_CONFIG`` line, as it does
for a refused Socket Mode app token; while Slack is unreachable the check is retried, with
backoff, one log line an attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from relay.errors import RelayConfigError
from relay.seam.tasks import stop_task
from relay.slack.intake.installation import Installation
from relay.slack.webapi.background import Background
from relay.slack.webapi.failures import SLACK_FAILURES

__all__ = ["TOKEN_REFUSALS", "InstallationLookup"]

_log = logging.getLogger("relay.slack")

_HOW_TO_FIX = (
    "copy the Bot User OAuth Token (xoxb-…) from your app's OAuth & Permissions page (install"
    " the app first) and set it as SLACK_BOT_TOKEN"
)
TOKEN_REFUSALS: dict[str, str] = {
    "invalid_auth": f"the token is wrong or was revoked: {_HOW_TO_FIX}",
    "not_authed": f"no token reached Slack: {_HOW_TO_FIX}",
    "invalid_token": f"the token is malformed: {_HOW_TO_FIX}",
    "token_revoked": f"the token was revoked (the app was uninstalled?): {_HOW_TO_FIX}",
    "token_expired": f"the token expired: {_HOW_TO_FIX}",
    "account_inactive": "the app or its workspace was deleted: reinstall the app",
    "not_allowed_token_type": f"this is not a bot (xoxb-) token: {_HOW_TO_FIX}",
    "ekm_access_denied": "the workspace's admins suspended the app (EKM): ask a Slack admin",
}
"""``auth.test`` errors that no retry fixes, with what to do (Slack's authentication errors)."""

_FIRST_DELAY = 0.5
_MAX_DELAY = 30.0


class InstallationLookup:
    """``auth.test``'s answer for the bot token, fetched on first use and kept."""

    def __init__(self, client: AsyncWebClient, *, background: Background) -> None:
        self._client = client
        self._background = background
        self._installation: Installation | None = None
        self._lock = asyncio.Lock()
        self._checking: asyncio.Task[None] | None = None
        self._attempted = asyncio.Event()
        self._refusal: RelayConfigError | None = None
        self._refused = asyncio.Event()

    def prefetch(self) -> None:
        """Look it up now, in the background, so that the first click does not wait for
        ``auth.test``; retried while Slack is unreachable, stopped by a refused token."""
        self._background.lend_session()
        if self._checking is None:
            self._checking = asyncio.get_running_loop().create_task(self._prefetch())

    async def _prefetch(self) -> None:
        delay = _FIRST_DELAY
        while True:
            try:
                await self.get()
                return
            except SlackApiError as exc:
                error = str(exc.response.get("error") or "")
                if error in TOKEN_REFUSALS:
                    self._refusal = RelayConfigError(
                        f"Slack refused the bot token (SLACK_BOT_TOKEN): {error};"
                        f" {TOKEN_REFUSALS[error]}",
                        setting="SLACK_BOT_TOKEN",
                    )
                    self._refused.set()
                    return
                _log.warning("auth.test failed at start (retry in %.1f s): %s", delay, error)
            except SLACK_FAILURES as exc:
                why = str(exc) or type(exc).__name__
                _log.warning("auth.test failed at start (retry in %.1f s): %s", delay, why)
            finally:
                self._attempted.set()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)

    async def first_check(self, *, within: float) -> RelayConfigError | None:
        """Wait up to ``within`` seconds for the first ``auth.test`` of ``prefetch``; the
        refusal if Slack refused the token (``None``: accepted, unreachable or slow)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await self._attempted.wait()
        return self._refusal

    async def refused(self) -> RelayConfigError:
        """Wait until Slack refuses the bot token at start (it may never); the error."""
        await self._refused.wait()
        assert self._refusal is not None  # (set before the event)
        return self._refusal

    async def close(self) -> None:
        """Stop retrying the start's check."""
        if self._checking is not None and not self._checking.done():
            await stop_task(self._checking)

    async def get(self) -> Installation:
        """The installation (workspace, app, Grid organisation), from ``auth.test`` once."""
        if self._installation is None:
            async with self._lock:
                if self._installation is None:
                    response = await self._client.auth_test()
                    self._installation = Installation.from_auth_test(response.data)  # type: ignore[arg-type]
        return self._installation
