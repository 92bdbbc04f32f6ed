"""What a ``REDIS_URL`` names: one Redis, a Sentinel-watched master, or a Redis Cluster (pure).

The schemes, each with ``s`` for TLS (``rediss``, ``rediss+sentinel``, ``rediss+cluster``):

- ``redis://[user:password@]host:6379/0`` (or ``unix:///path/redis.sock``): one Redis, as
  redis-py reads it.
- ``redis+sentinel://[user:password@]host:26379,host2:26379/mymaster/0``: the master that the
  Sentinels at those addresses call ``mymaster``, database 0 (default). The credentials are the
  master's; the Sentinels are asked without any.
- ``redis+cluster://[user:password@]host:6379,host2:6379``: a Redis Cluster, found from any of
  those nodes (one is enough; more survive one being down at start-up).

Parsing imports nothing of redis-py, so ``relay serve`` checks the setting before start-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlsplit

__all__ = ["RedisAddress", "parse_redis_url"]

Mode = Literal["single", "sentinel", "cluster"]

_SCHEMES: dict[str, tuple[Mode, bool]] = {
    "redis": ("single", False),
    "rediss": ("single", True),
    "unix": ("single", False),
    "redis+sentinel": ("sentinel", False),
    "rediss+sentinel": ("sentinel", True),
    "redis+cluster": ("cluster", False),
    "rediss+cluster": ("cluster", True),
}
_DEFAULT_PORT = {"sentinel": 26379, "cluster": 6379}


@dataclass(frozen=True, slots=True, kw_only=True)
class RedisAddress:
    """Where the relay's Redis is: ``mode``, whether over TLS, and the parts of the URL."""

    mode: Mode
    tls: bool
    url: str
    """The URL as given (for ``single``, redis-py reads it as it stands)."""
    hosts: tuple[tuple[str, int], ...] = ()
    """Sentinels (``sentinel``) or seed nodes (``cluster``)."""
    service: str | None = None
    """The master's name that the Sentinels know (``sentinel`` only)."""
    db: int = 0
    username: str | None = None
    password: str | None = None

    def __repr__(self) -> str:
        # A password in a URL must not reach a log line through a repr.
        hosts = ",".join(f"{h}:{p}" for h, p in self.hosts)
        return f"RedisAddress(mode={self.mode!r}, tls={self.tls}, hosts={hosts!r})"


def parse_redis_url(url: str) -> RedisAddress:
    """Read ``url``; ``ValueError`` with a sentence saying what is wrong and what it should be."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in _SCHEMES:
        raise ValueError(
            "must look like redis://host:6379/0 (rediss:// for TLS),"
            " redis+sentinel://host:26379,host2:26379/mymaster/0 or"
            " redis+cluster://host:6379,host2:6379"
        )
    mode, tls = _SCHEMES[scheme.lower()]
    if mode == "single":
        return RedisAddress(mode=mode, tls=tls, url=url)
    credentials, at, location = rest.rpartition("@")
    if not at:
        credentials = ""
    netloc, _, path = location.partition("/")
    path, _, _query = path.partition("?")
    hosts = tuple(_host(part, _DEFAULT_PORT[mode]) for part in netloc.split(","))
    username, password = _credentials(credentials)
    parts = [unquote(p) for p in path.split("/") if p]
    service: str | None = None
    db = 0
    if mode == "sentinel":
        if not parts:
            raise ValueError(
                "needs the master's name after the Sentinels, as in"
                " redis+sentinel://host:26379,host2:26379/mymaster/0"
            )
        service, parts = parts[0], parts[1:]
    if parts:
        if mode == "cluster" or len(parts) > 1 or not parts[0].isdigit():
            where = "a Redis Cluster has database 0 only" if mode == "cluster" else "after it"
            raise ValueError(f"has a path it cannot read ({path!r}): {where}")
        db = int(parts[0])
    return RedisAddress(
        mode=mode,
        tls=tls,
        url=url,
        hosts=hosts,
        service=service,
        db=db,
        username=username,
        password=password,
    )


def _host(part: str, default_port: int) -> tuple[str, int]:
    part = part.strip()
    split = urlsplit(f"//{part}")
    try:
        host, port = split.hostname, split.port
    except ValueError:
        host, port = None, None
    if not host or (":" in part.rsplit("]", 1)[-1] and port is None):
        raise ValueError(f"has an address it cannot read ({part!r}): write host:port")
    return host, port or default_port


def _credentials(raw: str) -> tuple[str | None, str | None]:
    if not raw:
        return None, None
    user, colon, password = raw.partition(":")
    if not colon:
        return None, unquote(user)  # redis://secret@host: a password alone, as redis-py reads it
    return unquote(user) or None, unquote(password)
