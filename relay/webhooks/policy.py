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

from relay.errors import RelayException

__all__ = ["CallbackRefused", "CheckedResolver", "HostPolicy", "parse_networks"]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_URL_LENGTH = 2048


class CallbackRefused(RelayException):
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
        """``CallbackRefused`` unless ``address`` is public or in an allowed network.

        An IPv6 address that embeds an IPv4 address and routes to it (IPv4-mapped and
        -compatible, NAT64, 6to4) is judged by that IPv4 address; Teredo, local-use NAT64
        and site-local addresses are never public."""
        if self._allowed(address):
            return
        if isinstance(address, ipaddress.IPv6Address) and (embedded := _embedded_ipv4(address)):
            if not self._allowed(embedded) and not _public(embedded):
                raise _not_public(host, address)
            if _translates(address):
                return  # it reaches the public IPv4 address it embeds
        if not _public(address):
            raise _not_public(host, address)

    def _allowed(self, address: IPAddress) -> bool:
        return any(address in network for network in self.networks)


# IPv6 prefixes whose addresses are routed to the IPv4 address in their low bits.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215: local use only
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated IPv4-compatible (::a.b.c.d)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]  # the client, where the tunnel ends
    if address in _NAT64 or address in _COMPATIBLE:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _translates(address: ipaddress.IPv6Address) -> bool:
    # Teredo is not here: its addresses are judged as IPv6 too (never public).
    return (
        address.ipv4_mapped is not None
        or address.sixtofour is not None
        or address in _NAT64
        or address in _COMPATIBLE
    )


def _public(address: IPAddress) -> bool:
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        # Python counts these as global; they are not reachable public destinations.
        return not (address.is_site_local or address in _NAT64_LOCAL or address in _COMPATIBLE)
    return True


def _not_public(host: str, address: IPAddress) -> CallbackRefused:
    return CallbackRefused(
        f"{host} resolves to {address}, which is not a public address (loopback,"
        " private, link-local or reserved, or an IPv6 form of one); the operator may allow"
        " its network with RELAY_WEBHOOK_ALLOWED_NETWORKS"
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
