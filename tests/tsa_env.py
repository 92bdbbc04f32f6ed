"""A local RFC 3161 timestamp authority for tests: a throwaway CA, a TSA certificate it
issued (extended key usage timeStamping, critical), and an aiohttp route that answers each
``application/timestamp-query`` with what ``openssl ts -reply`` makes of it."""

from __future__ import annotations

import asyncio
import datetime
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from tests.certs_env import make_ca as make_test_ca
from tests.certs_env import name_of
from tests.server_env import free_port

_CONFIG = """\
[ tsa ]
default_tsa = local
[ local ]
dir = {dir}
serial = $dir/serial
crypto_device = builtin
signer_cert = $dir/tsa.pem
certs = $dir/tsa.pem
signer_key = $dir/tsa.key
signer_digest = sha256
default_policy = 1.2.3.4.1
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def make_ca(directory: Path, name: str) -> tuple[Path, Path]:
    """A CA and a TSA certificate it issued, in ``directory``: (CA cert, openssl config)."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca, ca_key = make_test_ca(f"{name} CA")
    tsa_key = ec.generate_private_key(ec.SECP256R1())
    tsa = (
        x509.CertificateBuilder()
        .subject_name(name_of(f"{name} TSA"))
        .issuer_name(ca.subject)
        .public_key(tsa_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    (directory / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (directory / "tsa.pem").write_bytes(tsa.public_bytes(serialization.Encoding.PEM))
    (directory / "tsa.key").write_bytes(_pem_key(tsa_key))
    (directory / "serial").write_text("01\n")
    config = directory / "openssl.cnf"
    config.write_text(_CONFIG.format(dir=directory))
    return directory / "ca.pem", config


@dataclass
class LocalTsa:
    """A running local TSA: its URL, its CA's certificate, and how many it stamped."""

    url: str
    ca: Path
    config: Path
    stamped: int = 0


OPENSSL = shutil.which("openssl") or "openssl"


async def openssl(*args: str) -> tuple[int, str]:
    """Run ``openssl`` with ``args``: its exit code and what it wrote to stderr."""
    process = await asyncio.create_subprocess_exec(
        OPENSSL, *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, err.decode(errors="replace")


async def openssl_reply(config: Path, query: bytes) -> bytes:
    """``openssl ts -reply`` for ``query`` (DER), as the TSA of ``config``."""
    query_file = config.parent / f"q{id(query)}.tsq"
    reply_file = config.parent / f"r{id(query)}.tsr"
    query_file.write_bytes(query)
    code, err = await openssl(
        "ts",
        "-reply",
        "-config",
        str(config),
        "-queryfile",
        str(query_file),
        "-out",
        str(reply_file),
    )
    assert code == 0, err
    return reply_file.read_bytes()


@asynccontextmanager
async def local_tsa(directory: Path, name: str = "Test") -> AsyncIterator[LocalTsa]:
    """A TSA from a throwaway CA in ``directory``, answering over HTTP until the block ends."""
    ca, config = make_ca(directory, name)
    port = free_port()
    tsa = LocalTsa(url=f"http://127.0.0.1:{port}/tsa", ca=ca, config=config)

    async def handle(request: web.Request) -> web.Response:
        reply = await openssl_reply(config, await request.read())
        tsa.stamped += 1
        return web.Response(body=reply, content_type="application/timestamp-reply")

    app = web.Application()
    app.router.add_post("/tsa", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield tsa
    finally:
        await runner.cleanup()
