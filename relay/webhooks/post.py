"""One webhook attempt: the delivery POSTed, signed, to an address the policy allows."""

from __future__ import annotations

from typing import Any

import aiohttp

import relay
from relay.webhooks.policy import CallbackRefused, CheckedResolver, HostPolicy
from relay.webhooks.signing import SIGNATURE_HEADER, owner_secret, sign

__all__ = ["SignedPoster"]

_READ_LIMIT = 64 * 1024
_CONNECTIONS = 32


class SignedPoster:
    """Sends deliveries: signed anew each attempt with the owner's secret, through the
    ``CheckedResolver``, never following a redirect, ignoring ``HTTP(S)_PROXY``."""

    def __init__(
        self,
        *,
        key: str,
        policy: HostPolicy,
        timeout: float,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self._key = key
        self._policy = policy
        self._timeout = timeout
        self._session = session

    async def post(self, event_id: str, delivery: dict[str, Any]) -> tuple[bool, str] | None:
        """Send once: ``None`` when the receiver took it, else (permanent?, why not)."""
        url = str(delivery["url"])
        try:
            self._policy.check_url(url)  # the allowlist may have changed since
        except CallbackRefused as exc:
            return True, str(exc)
        body = str(delivery["body"]).encode()
        secret = owner_secret(self._key, str(delivery["owner"]))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"relay-webhooks/{relay.__version__}",
            "X-Relay-Event-Id": event_id,
            "X-Relay-Event-Type": str(delivery["type"]),
            SIGNATURE_HEADER: sign(body, secret),
        }
        session = self._client()
        try:
            async with session.post(
                url,
                data=body,
                headers=headers,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            ) as response:
                await response.content.read(_READ_LIMIT)
                if 200 <= response.status < 300:
                    return None
                if 300 <= response.status < 400:
                    return False, f"HTTP {response.status}: redirects are not followed"
                return False, f"HTTP {response.status}"
        except CallbackRefused as exc:
            return True, str(exc)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            if isinstance(exc.__cause__, CallbackRefused):
                return True, str(exc.__cause__)
            return False, f"{type(exc).__name__}: {exc}"

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                resolver=CheckedResolver(self._policy), limit=_CONNECTIONS
            )
            # trust_env=False: no HTTP(S)_PROXY, whose host the policy never checked.
            self._session = aiohttp.ClientSession(connector=connector, trust_env=False)
        return self._session

    async def aclose(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
