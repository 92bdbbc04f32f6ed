"""The operator's settings for ``/mcp``: session bounds and the Origin and Host allowlists.

Read by ``Settings.from_env`` (``Settings.mcp``); ``relay.server.mcp_origins`` and
``relay.server.mcp_sessions`` apply them. Origins and hosts are kept in the normalised form the
checks compare (``origin_key``, ``host_name``), so the allowlist and a request agree on case,
default ports and brackets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from relay.config.values import read_seconds, read_whole
from relay.errors import RelayConfigError

__all__ = ["MCP_ENV_VARS", "McpSettings", "host_name", "origin_key"]

# The variables read here, with what they are for (part of ``relay.config.settings.ENV_VARS``).
MCP_ENV_VARS: dict[str, str] = {
    "RELAY_MCP_SESSIONS_PER_TOKEN": "/mcp sessions one API token may hold at once (default 20)",
    "RELAY_MCP_MAX_SESSIONS": "/mcp sessions the relay holds at once (default 1000)",
    "RELAY_MCP_SESSION_IDLE": "seconds after which an idle /mcp session is closed (default 1800)",
    "RELAY_MCP_ALLOWED_HOSTS": "host names /mcp is reached by, comma-separated, or * (default:"
    " loopback names only)",
    "RELAY_MCP_ALLOWED_ORIGINS": "web origins (scheme://host[:port]) whose pages may call /mcp"
    " (default: loopback ones only)",
}

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_key(value: str) -> str | None:
    """``scheme://host:port``, lower case with the port spelled out; ``None`` if ``value`` is
    not an http(s) origin (``null``, a path, a user name…)."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    if parts.username is not None or parts.query or parts.fragment:
        return None
    host = parts.hostname.rstrip(".")
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port or _DEFAULT_PORTS[scheme]}"


def host_name(value: str) -> str:
    """The name in a ``Host`` header (or an origin's netloc), lower case, without port or
    brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.rsplit(":", 1)[0]
    return value.rstrip(".")


@dataclass(frozen=True, slots=True, kw_only=True)
class McpSettings:
    """``RELAY_MCP_*``: what ``/mcp`` holds and whom it answers."""

    sessions_per_token: int = 20
    max_sessions: int = 1000
    session_idle: float = 1800.0
    allowed_origins: frozenset[str] | None = None  # None: loopback origins only
    allowed_hosts: frozenset[str] | None = None  # None: loopback names only

    @classmethod
    def from_env(cls, get: Callable[[str], str | None]) -> McpSettings:
        """Read the settings (``get`` returns a variable's stripped value, or ``None``)."""
        per_token = read_whole(
            get("RELAY_MCP_SESSIONS_PER_TOKEN"), "RELAY_MCP_SESSIONS_PER_TOKEN", 20
        )
        most = read_whole(get("RELAY_MCP_MAX_SESSIONS"), "RELAY_MCP_MAX_SESSIONS", 1000)
        if per_token >= most:
            raise RelayConfigError(
                f"RELAY_MCP_SESSIONS_PER_TOKEN ({per_token}) must be less than"
                f" RELAY_MCP_MAX_SESSIONS ({most}), so that one token cannot take every session",
                setting="RELAY_MCP_SESSIONS_PER_TOKEN",
            )
        return cls(
            sessions_per_token=per_token,
            max_sessions=most,
            session_idle=read_seconds(
                get("RELAY_MCP_SESSION_IDLE"), "RELAY_MCP_SESSION_IDLE", 1800.0
            ),
            allowed_origins=_origins(get("RELAY_MCP_ALLOWED_ORIGINS")),
            allowed_hosts=_hosts(get("RELAY_MCP_ALLOWED_HOSTS")),
        )


def _origins(raw: str | None) -> frozenset[str] | None:
    if raw is None:
        return None
    keys: set[str] = set()
    for value in (v.strip() for v in raw.split(",")):
        if not value:
            continue
        key = origin_key(value)
        if key is None:
            raise RelayConfigError(
                f"RELAY_MCP_ALLOWED_ORIGINS: {value!r} is not an origin; list them as"
                " scheme://host[:port], comma-separated (https://app.example.com)",
                setting="RELAY_MCP_ALLOWED_ORIGINS",
            )
        keys.add(key)
    return frozenset(keys)


def _hosts(raw: str | None) -> frozenset[str] | None:
    if raw is None:
        return None
    names: set[str] = set()
    for value in (v.strip() for v in raw.split(",")):
        if not value:
            continue
        if "/" in value:
            raise RelayConfigError(
                f"RELAY_MCP_ALLOWED_HOSTS: {value!r} is not a host name; list the names /mcp"
                " is reached by, comma-separated, without scheme or path (relay.example.com),"
                " or * for any",
                setting="RELAY_MCP_ALLOWED_HOSTS",
            )
        names.add(host_name(value))
    return frozenset(names)
