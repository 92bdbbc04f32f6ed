"""Origin and Host checks for ``/mcp`` (DNS rebinding and cross-site requests).

The MCP specification says a Streamable HTTP server MUST validate ``Origin`` and answer an
invalid one with 403. A web page can make a browser send requests to the relay (and, after
rebinding its own name to the relay's address, read the answers), so ``/mcp`` answers only:

- an ``Origin`` on ``RELAY_MCP_ALLOWED_ORIGINS`` (``scheme://host[:port]``, exact) or a
  loopback one (``http://localhost:…``, ``http://127.0.0.1:…``, ``http://[::1]:…``); a
  request with no ``Origin`` is not a browser's cross-site request;
- a ``Host`` whose name is on ``RELAY_MCP_ALLOWED_HOSTS`` (names, any port; ``*`` for any),
  or a loopback name when that setting is unset: a rebound name arrives as the attacker's.

Both are checked before the token, so that a page learns nothing from the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

from relay.config.mcp import host_name, origin_key
from relay.errors import ErrorCode
from relay.server.errors import error_response

__all__ = ["LOOPBACK_NAMES", "OriginPolicy"]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """Which ``Origin`` and ``Host`` values ``/mcp`` answers (besides loopback ones; ``hosts``
    ``None``: loopback names only)."""

    origins: frozenset[str] | None = None
    hosts: frozenset[str] | None = None

    def origin_allowed(self, origin: str) -> bool:
        """Whether a request carrying ``Origin: origin`` may be answered."""
        key = origin_key(origin)
        if key is None:
            return False  # "null" (sandboxed frames, files) and anything malformed
        if self.origins is not None and key in self.origins:
            return True
        return host_name(urlsplit(key).netloc) in LOOPBACK_NAMES

    def host_allowed(self, host: str) -> bool:
        """Whether a request for ``Host: host`` may be answered."""
        allowed = LOOPBACK_NAMES if self.hosts is None else self.hosts
        return "*" in allowed or host_name(host) in allowed

    def refusal(self, headers: Mapping[str, str]) -> web.Response | None:
        """The error response for a request these checks refuse; ``None`` to go on."""
        origin = headers.get("Origin")
        if origin is not None and not self.origin_allowed(origin):
            return error_response(
                ErrorCode.ORIGIN_NOT_ALLOWED,
                "this Origin may not use /mcp; the operator lists the web origins that may"
                " in RELAY_MCP_ALLOWED_ORIGINS (scheme://host[:port])",
                status=403,
            )
        host = headers.get("Host")
        if host is not None and not self.host_allowed(host):
            return error_response(
                ErrorCode.HOST_NOT_ALLOWED,
                "/mcp is not served under this host name; the operator lists the names it"
                " is reached by in RELAY_MCP_ALLOWED_HOSTS (loopback names only when unset)",
                status=421,
            )
        return None
