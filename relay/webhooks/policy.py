"""Where the relay may send a webhook: no SSRF into the network it runs in.

A callback URL must be ``http(s)``, name a host on the operator's allowlist
(``RELAY_WEBHOOK_ALLOWED_HOSTS``: exact names, or ``*.example.com`` for subdomains), and at
delivery time every address the host resolves to must be public, unless it lies in one of the
networks the operator allowed (``RELAY_WEBHOOK_ALLOWED_NETWORKS``: loopback, link-local,
private and other non-global ranges are refused otherwise). The connection goes to the
addresses that were checked (``CheckedResolver``), so a DNS answer that changes between the
check and the connect cannot redirect it; redirects are never followed.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

__all__ = [
    "MAX_URL_LENGTH",
    "CallbackRefused",
    "CheckedResolver",
    "HostPolicy",
    "IPNetwork",
    "parse_networks",
]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_URL_LENGTH = 2048


class CallbackRefused(Exception):
    """A callback URL, or an address it resolves to, that the policy does not allow."""


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """The operator's allowlist of hosts, and of networks that may be non-public."""

    hosts: frozenset[str]
    networks: tuple[IPNetwork, ...] = ()

    def check_url(self, url: str) -> str:
        """``url``'s host if the URL may be called at all, else ``CallbackRefused`` saying why."""
        if len(url) > MAX_URL_LENGTH:
            raise CallbackRefused(f"callback_url is longer than {MAX_URL_LENGTH} characters")
        try:
            parts = urlsplit(url)
            _ = parts.port  # raises for a port that is not a number from 0 to 65535
        except ValueError as exc:
            raise CallbackRefused(f"callback_url is not a URL ({exc})") from None
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise CallbackRefused("callback_url must be an http(s) URL with a host")
        if parts.username is not None or parts.password is not None:
            raise CallbackRefused("callback_url must not carry a user name or password")
        host = parts.hostname.rstrip(".").lower()
        if not self.host_allowed(host):
            raise CallbackRefused(
                f"callback_url's host {host} is not on the relay's allowlist; the operator adds"
                " it to RELAY_WEBHOOK_ALLOWED_HOSTS"
            )
        literal = _literal(host)
        if literal is not None:
            self.check_address(literal, host)
        return host

    def host_allowed(self, host: str) -> bool:
        """Whether ``host`` (lower case) is on the allowlist."""
        for allowed in self.hosts:
            if allowed.startswith("*.") and host.endswith(allowed[1:]) and host != allowed[2:]:
                return True
            if host == allowed:
                return True
        return False

    def check_address(self, address: IPAddress, host: str) -> None:
        """``CallbackRefused`` unless ``address`` is public or in an allowed network."""
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if any(address in network for network in self.networks):
            return
        if not address.is_global or address.is_multicast:
            raise CallbackRefused(
                f"{host} resolves to {address}, which is not a public address (loopback,"
                " private, link-local or reserved); the operator may allow its network with"
                " RELAY_WEBHOOK_ALLOWED_NETWORKS"
            )


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


class CheckedResolver(AbstractResolver):
    """Resolves as the system does, then keeps only the addresses ``policy`` allows (none:
    the connection fails with ``CallbackRefused`` as its cause)."""

    def __init__(self, policy: HostPolicy, inner: AbstractResolver | None = None) -> None:
        self._policy = policy
        self._inner = inner or ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The resolved addresses the policy allows; ``CallbackRefused`` if none."""
        results = await self._inner.resolve(host, port, family)
        kept: list[ResolveResult] = []
        refusal: CallbackRefused | None = None
        for result in results:
            try:
                self._policy.check_address(ipaddress.ip_address(result["host"]), host)
            except CallbackRefused as exc:
                refusal = exc
                continue
            kept.append(result)
        if not kept:
            raise refusal or CallbackRefused(f"{host} resolves to no address")
        return kept

    async def close(self) -> None:
        """Close the system resolver."""
        await self._inner.close()


def parse_networks(values: Iterable[str]) -> tuple[IPNetwork, ...]:
    """CIDR networks (``10.0.0.0/8``, ``127.0.0.1``); ``ValueError`` names a bad one."""
    return tuple(ipaddress.ip_network(v.strip(), strict=False) for v in values if v.strip())
