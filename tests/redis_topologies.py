"""Redis as operators run it, made of real ``redis-server`` processes for tests.

- ``make_certificates``: a CA, a server certificate for 127.0.0.1/localhost and a client
  certificate, generated here with ``cryptography`` (nothing shipped, nothing expires later).
- ``TLSRedis``: a ``redis-server`` speaking TLS only, that requires a client certificate.
- ``RedisClusterServers``: three masters made one cluster by ``redis-cli --cluster create``.
- ``SentinelServers``: a master and two Sentinels watching it.

Each ``start()`` returns once the whole topology answers (the cluster: once every node reports
``cluster_state:ok``, polled with a deadline; the Sentinels: once they log the monitor).
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID
from redis_server import RedisServer, free_port, redis_binary

from relay.store.redis_connect import RedisTLS
from tests.certs_env import make_ca, name_of

__all__ = [
    "Certificates",
    "RedisClusterServers",
    "SentinelServers",
    "TLSRedis",
    "make_certificates",
]

_CLUSTER_TIMEOUT = 20.0


@dataclass(frozen=True)
class Certificates:
    """PEM files: the CA, the server's pair and a client's pair."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    def client(self) -> RedisTLS:
        """What the relay is given: trust this CA, present the client certificate."""
        return RedisTLS(
            ca_file=str(self.ca), cert_file=str(self.client_cert), key_file=str(self.client_key)
        )


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def make_certificates(directory: Path) -> Certificates:
    """A fresh CA and the two certificates it signs, written under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca, ca_key = make_ca("relay test CA")

    def issue(
        common: str, usage: x509.ObjectIdentifier
    ) -> tuple[bytes, ec.EllipticCurvePrivateKey]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(name_of(common))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            # A server is a client too: cluster nodes and replicas connect to one another.
            .add_extension(
                x509.ExtendedKeyUsage(
                    [usage, ExtendedKeyUsageOID.CLIENT_AUTH]
                    if usage == ExtendedKeyUsageOID.SERVER_AUTH
                    else [usage]
                ),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                critical=False,
            )
        )
        if usage == ExtendedKeyUsageOID.SERVER_AUTH:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        cert = builder.sign(ca_key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), key

    files = Certificates(
        ca=directory / "ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
    )
    files.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    server_pem, server_key = issue("127.0.0.1", ExtendedKeyUsageOID.SERVER_AUTH)
    files.server_cert.write_bytes(server_pem)
    _write_key(server_key, files.server_key)
    client_pem, client_key = issue("relay", ExtendedKeyUsageOID.CLIENT_AUTH)
    files.client_cert.write_bytes(client_pem)
    _write_key(client_key, files.client_key)
    return files


class TLSRedis(RedisServer):
    """A ``redis-server`` on TLS alone, trusting ``certificates.ca`` for client certificates
    (``tls-auth-clients yes``: a client without one is refused)."""

    def __init__(self, *, directory: Path, certificates: Certificates):
        self.certificates = certificates
        super().__init__(directory=directory, tls=True, args=_tls_args(certificates))

    @property
    def url(self) -> str:
        """The ``rediss://`` URL of database 0."""
        return f"rediss://127.0.0.1:{self.port}/0"


def _command(port: int, *words: str) -> str:
    """Send one command over plain RESP and return the reply's text (a bulk or simple string)."""
    parts = [f"*{len(words)}\r\n".encode()]
    for word in words:
        data = word.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"".join(parts))
        reply = b""
        while True:
            chunk = sock.recv(65536)
            reply += chunk
            if not chunk or _complete(reply):
                break
    return reply.decode(errors="replace")


def _complete(reply: bytes) -> bool:
    if reply[:1] in (b"+", b"-", b":"):
        return reply.endswith(b"\r\n")
    if reply[:1] == b"$":
        head, _, body = reply.partition(b"\r\n")
        return len(body) >= int(head[1:]) + 2
    return False


def _tls_args(certificates: Certificates) -> list[str]:
    return [
        "--tls-cert-file",
        str(certificates.server_cert),
        "--tls-key-file",
        str(certificates.server_key),
        "--tls-ca-cert-file",
        str(certificates.ca),
        "--tls-auth-clients",
        "yes",
    ]


class RedisClusterServers:
    """Three masters (no replicas) joined into one cluster, each on a free port; with
    ``certificates``, on TLS alone (clients, and the nodes' own bus), requiring client
    certificates."""

    def __init__(
        self, *, directory: Path, masters: int = 3, certificates: Certificates | None = None
    ):
        self.certificates = certificates
        tls = [] if certificates is None else [*_tls_args(certificates), "--tls-cluster", "yes"]
        self.nodes = [
            RedisServer(
                directory=directory / f"node{i}",
                tls=certificates is not None,
                args=[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-port",
                    str(free_port()),  # the bus; not port + 10000, which may be taken
                    "--cluster-node-timeout",
                    "5000",
                    *tls,
                ],
            )
            for i in range(masters)
        ]

    @property
    def url(self) -> str:
        """The ``redis+cluster://`` URL naming every node as a seed (``rediss+`` with TLS)."""
        scheme = "redis" if self.certificates is None else "rediss"
        return f"{scheme}+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def _cli_tls(self) -> list[str]:
        files = self.certificates
        if files is None:
            return []
        return [
            "--tls",
            "--cacert",
            str(files.ca),
            "--cert",
            str(files.client_cert),
            "--key",
            str(files.client_key),
        ]

    def _ok(self, node: RedisServer) -> bool:
        if self.certificates is None:
            return "cluster_state:ok" in _command(node.port, "CLUSTER", "INFO")
        tls = self.certificates.client()
        with redis.Redis(
            port=node.port,
            ssl=True,
            ssl_ca_certs=tls.ca_file,
            ssl_certfile=tls.cert_file,
            ssl_keyfile=tls.key_file,
        ) as client:
            return "cluster_state:ok" in str(client.execute_command("CLUSTER", "INFO"))

    def start(self) -> None:
        """Start the nodes, assign the slots, and return once every node says the cluster is ok."""
        for node in self.nodes:
            node.start()
        cli = Path(redis_binary()).with_name("redis-cli")
        created = subprocess.run(  # noqa: S603 - a fixed binary and arguments we build
            [
                str(cli),
                *self._cli_tls(),
                "--cluster",
                "create",
                *(f"127.0.0.1:{n.port}" for n in self.nodes),
                "--cluster-replicas",
                "0",
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=_CLUSTER_TIMEOUT,
            check=False,
        )
        if created.returncode != 0:
            pytest.fail(
                f"redis-cli --cluster create failed:\n{created.stdout}\n{created.stderr}",
                pytrace=False,
            )
        deadline = time.monotonic() + _CLUSTER_TIMEOUT
        waiting = list(self.nodes)
        while waiting:
            waiting = [n for n in waiting if not self._ok(n)]
            if waiting and time.monotonic() > deadline:
                pytest.fail(
                    f"the cluster was not ok within {_CLUSTER_TIMEOUT:.0f} s", pytrace=False
                )
            if waiting:
                time.sleep(0.05)  # polling a condition with a deadline: the nodes gossip

    def stop(self) -> None:
        """Stop every node."""
        for node in self.nodes:
            node.stop()


class SentinelServers:
    """A master and two Sentinels that watch it under the name ``mymaster`` (quorum 1), and
    with ``replica`` a replica of the master, which a failover promotes. With ``certificates``
    the master and the Sentinels speak TLS alone (no replica then)."""

    service = "mymaster"

    def __init__(
        self,
        *,
        directory: Path,
        sentinels: int = 2,
        replica: bool = False,
        certificates: Certificates | None = None,
    ):
        assert not (replica and certificates), "a TLS replica is not needed by any test yet"
        self.certificates = certificates
        tls = certificates is not None
        args = [] if certificates is None else _tls_args(certificates)
        self.master = RedisServer(directory=directory / "master", tls=tls, args=args)
        self.replica = RedisServer(directory=directory / "replica") if replica else None
        # With a replica, a master that stops answering is failed over after one second.
        self._down_after = 1000 if replica else 5000
        self.sentinels = [
            RedisServer(
                directory=directory / f"sentinel{i}",
                config="",  # written at start, when the master's port is known
                args=["--sentinel", *args, *(["--tls-replication", "yes"] if tls else [])],
                ready="+monitor master",
                tls=tls,
            )
            for i in range(sentinels)
        ]

    @property
    def url(self) -> str:
        """The ``redis+sentinel://`` URL naming both Sentinels and the master's name."""
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        scheme = "redis" if self.certificates is None else "rediss"
        return f"{scheme}+sentinel://{hosts}/{self.service}/0"

    def start(self) -> None:
        """Start the master, then the Sentinels, each returning once it monitors the master."""
        self.master.start()
        if self.replica is not None:
            self.replica.config = f"replicaof 127.0.0.1 {self.master.port}\n"
            self.replica.start()
            _until(
                lambda: (
                    "master_link_status:up" in _command(self.replica.port, "INFO", "replication")
                ),  # type: ignore[union-attr]
                "the replica to sync with the master",
            )
        for sentinel in self.sentinels:
            sentinel.config = (
                f"sentinel monitor {self.service} 127.0.0.1 {self.master.port} 1\n"
                f"sentinel down-after-milliseconds {self.service} {self._down_after}\n"
                # A vote that split is held again after twice this, not after 6 minutes.
                f"sentinel failover-timeout {self.service} 2000\n"
            )
            sentinel.start()
        others = len(self.sentinels) - 1
        if self.replica is not None:
            for sentinel in self.sentinels:
                with redis.Redis(port=sentinel.port) as client:
                    _until(
                        lambda c=client: _promotable(c.sentinel_slaves(self.service)),  # type: ignore[misc]
                        "the Sentinels to find the replica in sync",
                    )
                    # They must know each other to elect one leader for the failover.
                    _until(
                        lambda c=client: (
                            c.sentinel_master(self.service)["num-other-sentinels"]  # type: ignore[misc]
                            == others
                        ),
                        "the Sentinels to find each other",
                    )

    def master_port(self) -> int:
        """The port of the master as the first Sentinel sees it now."""
        with redis.Redis(port=self.sentinels[0].port) as client:
            _host, port = client.sentinel_get_master_addr_by_name(self.service)
            return int(port)

    def fail_over(self) -> None:
        """Kill the master, and return once the Sentinels name the replica the master."""
        assert self.replica is not None
        self.master.stop()
        for sentinel in self.sentinels:
            with redis.Redis(port=sentinel.port) as client:
                _until(
                    lambda c=client: _promoted(c.sentinel_master(self.service), self.replica),  # type: ignore[misc]
                    "the failover",
                )

    def stop(self) -> None:
        """Stop the Sentinels, the replica and the master."""
        for sentinel in self.sentinels:
            sentinel.stop()
        if self.replica is not None:
            self.replica.stop()
        self.master.stop()


def _promoted(state: dict[str, object], replica: RedisServer | None) -> bool:
    """Whether a Sentinel names ``replica`` the master and has finished the failover (a
    client asking during one is told there is no master)."""
    return (
        replica is not None
        and state["port"] == replica.port
        and not (state["is_sdown"] or state["is_odown"])
        and "failover_in_progress" not in str(state["flags"])
    )


def _promotable(replicas: list[dict[str, object]]) -> bool:
    """Whether a Sentinel has heard from the replica and sees it linked to the master."""
    return any(
        r.get("is_slave")
        and not r.get("is_disconnected")
        and not r.get("is_sdown")
        and r.get("master-link-status") == "ok"
        for r in replicas
    )


def _until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``condition`` (the servers change on their own) until true, or fail the test."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what} after {timeout:.0f} s", pytrace=False)
        time.sleep(0.05)
