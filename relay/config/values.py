"""Reading each setting's value from the text of its environment variable: numbers, times,
ids, URLs, Redis and its TLS files, tokens, webhooks. Each reader raises ``RelayConfigError``
naming the variable and saying what it takes."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from relay.config.tuning import DEFAULT_GC_THRESHOLD, MAX_GC_THRESHOLD
from relay.errors import RelayConfigError
from relay.store.redis_url import parse_redis_url

__all__ = [
    "DEFAULT_BATCH_WINDOW",
    "read_api_tokens",
    "read_batch_window",
    "read_gc_threshold",
    "read_ids",
    "read_log_level",
    "read_max_connections",
    "read_max_timeout",
    "read_maybe_seconds",
    "read_number",
    "read_operator_tokens",
    "read_port",
    "read_redis_settings",
    "read_seconds",
    "read_timeout",
    "read_url",
    "read_whole",
]

_LOG_LEVELS = ("debug", "info", "warning", "error")


def read_number(raw: str | None, name: str, default: float, *, whole: bool = False) -> float:
    if raw is None:
        return default
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        kind = "a whole number" if whole else "a number"
        raise RelayConfigError(f"{name} must be {kind} (got {raw!r})", setting=name) from None
    if not math.isfinite(value) or value <= 0:
        raise RelayConfigError(f"{name} must be greater than 0 (got {raw!r})", setting=name)
    return value


DEFAULT_BATCH_WINDOW = 0.25
"""Seconds ``relay serve`` holds a tool approval for others of its session to join it."""


def read_batch_window(raw: str | None) -> float:
    """``RELAY_BATCH_WINDOW``: 0 to 10 seconds (default 0.25; 0 turns batches off)."""
    if raw is None:
        return DEFAULT_BATCH_WINDOW
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 <= value <= 10:
        raise RelayConfigError(
            f"RELAY_BATCH_WINDOW must be a number of seconds from 0 to 10 (got {raw!r}); 0"
            " posts each tool approval alone",
            setting="RELAY_BATCH_WINDOW",
        )
    return value


def read_seconds(raw: str | None, name: str, default: float) -> float:
    return read_number(raw, name, default)


def read_maybe_seconds(raw: str | None, name: str) -> float | None:
    return None if raw is None else read_number(raw, name, 0.0)


# Past this, counts and sizes are mistakes (and int(1e400) is no count at all).
_MOST = 2**53


def read_whole(raw: str | None, name: str, default: int) -> int:
    value = int(read_number(raw, name, default, whole=True))
    if value > _MOST:
        raise RelayConfigError(f"{name} must be at most {_MOST} (got {raw!r})", setting=name)
    return value


def read_redis_connections(raw: str | None) -> int:
    value = read_whole(raw, "RELAY_REDIS_MAX_CONNECTIONS", 64)
    if value < 2:  # one of them listens for pub/sub for good
        raise RelayConfigError(
            f"RELAY_REDIS_MAX_CONNECTIONS must be at least 2 (got {raw!r})",
            setting="RELAY_REDIS_MAX_CONNECTIONS",
        )
    return value


def read_max_connections(raw: str | None) -> int | None:
    if raw is None or raw.lower() == "auto":
        return None
    value = read_whole(raw, "RELAY_MAX_CONNECTIONS", 0)
    if value < 16:
        raise RelayConfigError(
            f"RELAY_MAX_CONNECTIONS must be at least 16 (got {raw!r})",
            setting="RELAY_MAX_CONNECTIONS",
        )
    return value


# As the provider's ceiling (relay.slack.provider.LONGEST_TIMEOUT): a year.
_LONGEST_TIMEOUT = 366 * 24 * 3600.0


def read_max_timeout(raw: str | None, timeout: float | None) -> float | None:
    if raw is None or raw.lower() in ("none", "off", "never"):
        return None
    ceiling = read_number(raw, "RELAY_MAX_TIMEOUT", 0.0)
    if ceiling > _LONGEST_TIMEOUT:
        raise RelayConfigError(
            f"RELAY_MAX_TIMEOUT must be at most {_LONGEST_TIMEOUT:g} s, a year (got {raw!r});"
            " 'none' sets no ceiling",
            setting="RELAY_MAX_TIMEOUT",
        )
    if timeout is None or timeout > ceiling:
        shown = "none" if timeout is None else f"{timeout:g}"
        raise RelayConfigError(
            f"RELAY_TIMEOUT ({shown}) is longer than RELAY_MAX_TIMEOUT ({ceiling:g}): set"
            " RELAY_TIMEOUT to at most the ceiling",
            setting="RELAY_TIMEOUT",
        )
    return ceiling


def read_timeout(raw: str | None) -> float | None:
    if raw is not None and raw.lower() in ("none", "off", "never"):
        return None
    timeout = read_number(raw, "RELAY_TIMEOUT", 900.0)
    if timeout > _LONGEST_TIMEOUT:
        raise RelayConfigError(
            f"RELAY_TIMEOUT must be at most {_LONGEST_TIMEOUT:g} s, a year (got {raw!r});"
            " 'none' waits forever",
            setting="RELAY_TIMEOUT",
        )
    return timeout


def read_port(raw: str | None) -> int:
    port = int(read_number(raw, "PORT", 3000, whole=True))
    if port > 65535:
        raise RelayConfigError(f"PORT must be between 1 and 65535 (got {raw!r})", setting="PORT")
    return port


def read_ids(raw: str | None, name: str, what: str, example: str) -> frozenset[str] | None:
    if raw is None:
        return None
    ids = frozenset(part.strip() for part in raw.split(",") if part.strip())
    bad = sorted(i for i in ids if not i[:1].isupper() or not i.isalnum())
    if bad:
        raise RelayConfigError(
            f"{name} must be comma-separated Slack {what} ids like {example}"
            f" (not names); these are not: {', '.join(bad)}",
            setting=name,
        )
    return ids


def read_url(raw: str | None, name: str) -> str | None:
    if raw is None:
        return None
    if not raw.startswith(("http://", "https://")):
        raise RelayConfigError(f"{name} must be an http(s) URL (got {raw!r})", setting=name)
    return raw if raw.endswith("/") else raw + "/"


def read_redis(raw: str | None) -> str | None:
    if raw is None:
        return None
    try:
        parse_redis_url(raw)
    except ValueError as exc:
        raise RelayConfigError(f"REDIS_URL {exc}", setting="REDIS_URL") from None
    return raw


def read_redis_tls_files(url: str | None, files: dict[str, str | None]) -> dict[str, str | None]:
    given = [name for name, path in files.items() if path is not None]
    if not given:
        return files
    if url is None or not parse_redis_url(url).tls:
        raise RelayConfigError(
            f"{given[0]} is set but REDIS_URL is not a TLS URL: use rediss://,"
            " rediss+sentinel:// or rediss+cluster://, or unset it",
            setting=given[0],
        )
    if files["RELAY_REDIS_KEY_FILE"] is not None and files["RELAY_REDIS_CERT_FILE"] is None:
        raise RelayConfigError(
            "RELAY_REDIS_KEY_FILE is set without RELAY_REDIS_CERT_FILE: set the client"
            " certificate the key belongs to",
            setting="RELAY_REDIS_CERT_FILE",
        )
    for name in given:
        path = files[name] or ""
        try:
            Path(path).read_bytes()
        except OSError as exc:
            raise RelayConfigError(
                f"{name} cannot be read ({exc.strerror}): {path}", setting=name
            ) from None
    return files


def read_gc_threshold(raw: str | None) -> int | None:
    if raw is not None and raw.lower() == "python":
        return None
    threshold = int(read_number(raw, "RELAY_GC_THRESHOLD", DEFAULT_GC_THRESHOLD, whole=True))
    if threshold > MAX_GC_THRESHOLD:
        raise RelayConfigError(
            f"RELAY_GC_THRESHOLD must be at most {MAX_GC_THRESHOLD} (got {raw!r})",
            setting="RELAY_GC_THRESHOLD",
        )
    return threshold


def read_log_level(raw: str | None) -> str:
    level = (raw or "info").lower()
    if level not in _LOG_LEVELS:
        raise RelayConfigError(
            f"RELAY_LOG_LEVEL must be one of {', '.join(_LOG_LEVELS)} (got {raw!r})",
            setting="RELAY_LOG_LEVEL",
        )
    return level


def read_api_tokens(raw: str | None, path: str | None) -> tuple[str, ...]:
    if raw is not None and path is not None:
        raise RelayConfigError(
            "set RELAY_API_TOKENS or RELAY_API_TOKENS_FILE, not both", setting="RELAY_API_TOKENS"
        )
    if path is not None:
        try:
            raw = ",".join(Path(path).read_text().splitlines())
        except OSError as exc:
            raise RelayConfigError(
                f"RELAY_API_TOKENS_FILE cannot be read ({exc.strerror}): {path}",
                setting="RELAY_API_TOKENS_FILE",
            ) from None
    tokens = tuple(t.strip() for t in (raw or "").split(",") if t.strip())
    if not tokens:
        raise RelayConfigError(
            "RELAY_API_TOKENS is not set: the /v1 API needs at least one bearer token; make one"
            ' with: python3 -c "import secrets; print(secrets.token_urlsafe(32))"',
            setting="RELAY_API_TOKENS",
        )
    short = [i for i, t in enumerate(tokens) if len(t) < 16]
    if short:
        raise RelayConfigError(
            "RELAY_API_TOKENS must be at least 16 characters each (a guessable token lets"
            " anyone ask and read answers); make one with: python3 -c"
            ' "import secrets; print(secrets.token_urlsafe(32))"',
            setting="RELAY_API_TOKENS",
        )
    return tokens


def read_operator_tokens(raw: str | None, api_tokens: tuple[str, ...]) -> tuple[str, ...]:
    """``RELAY_OPERATOR_TOKENS``: bearer tokens that read every token's receipts, and that
    only; none is also an agent's token (an agent holding one would read everyone's)."""
    tokens = tuple(t.strip() for t in (raw or "").split(",") if t.strip())
    if any(len(t) < 16 for t in tokens):
        raise RelayConfigError(
            "RELAY_OPERATOR_TOKENS must be at least 16 characters each; make one with:"
            ' python3 -c "import secrets; print(secrets.token_urlsafe(32))"',
            setting="RELAY_OPERATOR_TOKENS",
        )
    if set(tokens) & set(api_tokens):
        raise RelayConfigError(
            "RELAY_OPERATOR_TOKENS holds a token that RELAY_API_TOKENS lists too: an operator"
            " token reads every agent's receipts, so no agent may hold it; give the operator"
            " a token of its own",
            setting="RELAY_OPERATOR_TOKENS",
        )
    return tokens


def read_redis_settings(get: Callable[[str], str | None]) -> dict[str, Any]:
    """The Redis fields of ``Settings``: the URL, its TLS files (only with ``rediss://``)
    and the pool's size."""
    url = read_redis(get("REDIS_URL"))
    files = read_redis_tls_files(
        url,
        {
            "RELAY_REDIS_CA_FILE": get("RELAY_REDIS_CA_FILE"),
            "RELAY_REDIS_CERT_FILE": get("RELAY_REDIS_CERT_FILE"),
            "RELAY_REDIS_KEY_FILE": get("RELAY_REDIS_KEY_FILE"),
        },
    )
    return {
        "redis_url": url,
        "redis_ca_file": files["RELAY_REDIS_CA_FILE"],
        "redis_cert_file": files["RELAY_REDIS_CERT_FILE"],
        "redis_key_file": files["RELAY_REDIS_KEY_FILE"],
        "redis_max_connections": read_redis_connections(get("RELAY_REDIS_MAX_CONNECTIONS")),
    }
