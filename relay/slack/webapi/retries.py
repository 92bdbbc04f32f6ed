"""The Web API client's retries: 429s, connection errors and 5xx, each retried a few times."""

from __future__ import annotations

import asyncio

from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

__all__ = ["default_retry_handlers"]


class _RateLimitRetry(AsyncRateLimitErrorRetryHandler):
    """Retries 429s like slack-sdk's handler, except that a post waits exactly ``Retry-After``.

    slack-sdk adds up to a second of jitter to spread concurrent retries apart; posts are
    already queued one at a time per channel (``SlackMessages.post``), where the jitter would
    only stretch a burst of asks to one channel to ~1.5 s per message instead of Slack's 1.
    """

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        """Sleep ``Retry-After`` for a post, else as slack-sdk does; then retry."""
        if response is None or not request.url.endswith("/chat.postMessage"):
            await super().prepare_for_next_attempt_async(
                state=state, request=request, response=response, error=error
            )
            return
        values = [v for k, v in response.headers.items() if k.lower() == "retry-after"]
        wait = values[0][0] if values and values[0] else "1"
        state.next_attempt_requested = True
        await asyncio.sleep(float(wait) if wait.isdigit() else 1.0)
        state.increment_current_attempt()


def default_retry_handlers(client: AsyncWebClient) -> None:
    """Make sure 429s, connection errors and 5xx are retried, keeping the user's own handlers."""
    kinds = {type(h) for h in client.retry_handlers}
    if AsyncConnectionErrorRetryHandler not in kinds:
        client.retry_handlers.append(AsyncConnectionErrorRetryHandler(max_retry_count=2))
    if not any(isinstance(h, AsyncRateLimitErrorRetryHandler) for h in client.retry_handlers):
        client.retry_handlers.append(_RateLimitRetry(max_retry_count=5))
    if AsyncServerErrorRetryHandler not in kinds:
        client.retry_handlers.append(AsyncServerErrorRetryHandler(max_retry_count=2))
