"""The auditor's bundle from ``relay serve`` on Redis with a local TSA: checkpoints are
published with no token, ``relay audit --receipts`` exports the chain, its checkpoints and
their timestamps as one file, ``relay verify --chain --tsa-ca`` passes it whole and fails it
with its head or tail cut, and a second JOSE library (joserfc) with a second RFC 8785
implementation (rfc8785) checks it offline with none of relay's code."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import rfc8785
from joserfc import jws as jose_jws
from joserfc.errors import SecurityWarning
from joserfc.jwk import KeySet
from redis_server import RedisServer

from relay.testing import FakeSlack
from tests.server_env import SECRET, Relay, free_port, relay_env, start_relay
from tests.test_receipts_owner import OPERATOR
from tests.test_receipts_serve import key_file
from tests.tsa_env import local_tsa

ASKS = 5
QUESTION = {
    "questions": [
        {"id": "go", "question": "Ship it?", "options": [{"label": "yes"}, {"label": "no"}]}
    ]
}


def b64url_sha256(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


async def latest_checkpoint(relay: Relay, last: int, timeout: float = 60.0) -> dict[str, Any]:
    """The published checkpoint once it covers place ``last`` (made in the background)."""
    deadline = time.monotonic() + timeout
    while True:
        status, body = await relay.request("GET", "/receipts/checkpoint", token=None)
        if status == 200:
            part = body["checkpoint"].split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
            if claims["last"] >= last:
                return body  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, (status, body)
        await asyncio.sleep(0.05)


async def run_cli(env: dict[str, str], *args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode() + err.decode()


def verify_offline(lines: list[dict[str, Any]], jwks: dict[str, Any]) -> None:
    """What an auditor's own tool does: each JWS with joserfc against the JWK Set, each
    payload its own RFC 8785 form, each receipt linked to the one before, and each
    checkpoint's head and base the digests of the receipts it names."""
    key_set = KeySet.import_key_set(jwks)  # type: ignore[arg-type]
    receipts = [line for line in lines if "receipt" in line]
    checkpoints = [line for line in lines if "checkpoint" in line]
    assert receipts
    assert checkpoints
    by_seq: dict[int, str] = {}
    before: tuple[int, str] | None = None
    for compact in [r["receipt"] for r in receipts] + [c["checkpoint"] for c in checkpoints]:
        with warnings.catch_warnings():
            # joserfc flags "EdDSA" as superseded by RFC 9864's "Ed25519" (one signature).
            warnings.simplefilter("ignore", SecurityWarning)
            obj = jose_jws.deserialize_compact(compact, key_set, algorithms=["EdDSA"])
        claims = json.loads(obj.payload)
        assert rfc8785.dumps(claims) == obj.payload
        assert claims["kid"] == obj.protected["kid"]
        if obj.protected["typ"] == "relay-receipt+jws":
            seq = claims["seq"]
            by_seq[seq] = compact
            if before is None:
                assert seq == 1
                assert claims["prev"] is None
            else:
                assert seq == before[0] + 1
                assert claims["prev"] == b64url_sha256(before[1].encode())
            before = (seq, compact)
        else:
            assert obj.protected["typ"] == "relay-checkpoint+jws"
            assert claims["count"] == claims["last"] - claims["first"] + 1
            assert claims["head"] == b64url_sha256(by_seq[claims["last"]].encode())
            assert claims["first"] == 1
            assert claims["base"] is None


async def test_the_bundle_verifies_whole_and_fails_cut(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        local_tsa(tmp_path / "tsa") as tsa,
    ):
        env = relay_env(
            slack,
            free_port(),
            REDIS_URL=redis_server.url,
            RELAY_RECEIPT_KEY_FILE=key_file(tmp_path),
            RELAY_OPERATOR_TOKENS=OPERATOR,
            RELAY_CHECKPOINT_INTERVAL="0.1",
            RELAY_TSA_URL=tsa.url,
        )
        relay = await start_relay(env)
        try:
            status, body = await relay.request("GET", "/receipts/checkpoint", token=None)
            assert status == 404
            assert "no checkpoint yet" in body["error"]["message"]
            for _ in range(ASKS):
                status, created = await relay.request("POST", "/v1/asks", json=QUESTION)
                assert status == 201, created
                status, _ = await relay.request("DELETE", f"/v1/asks/{created['id']}")
                assert status == 200
            latest = await latest_checkpoint(relay, ASKS)
            assert latest["timestamp"] is not None, "\n".join(relay.log)
            assert tsa.stamped >= 1
            status, page = await relay.request("GET", "/receipts/checkpoints", token=None)
            assert status == 200
            assert page["checkpoints"][-1] == latest
            status, jwks = await relay.request("GET", "/.well-known/jwks.json", token=None)
            assert status == 200
            bundle = tmp_path / "bundle.jsonl"
            cli_env = {**env, "RELAY_URL": relay.url, "RELAY_TOKEN": OPERATOR}
            code, out = await run_cli(cli_env, "audit", "--receipts", "-O", str(bundle))
            assert code == 0, out
            # The latest checkpoint and the keys straight from the relay, by URL.
            exported = bundle.read_text().splitlines()
            receipts_only = [line for line in exported if '"receipt"' in line]
            by_url = (
                "verify",
                "--keys",
                f"{relay.url}/.well-known/jwks.json",
                "--chain",
                "--checkpoint",
                f"{relay.url}/receipts/checkpoint",
            )
            for kept, code_wanted in ((receipts_only, 0), (receipts_only[:-1], 1)):
                part = tmp_path / "part.jsonl"
                part.write_text("\n".join(kept) + "\n")
                code, out = await run_cli(env, *by_url, str(part))
                assert code == code_wanted, out
            assert "tail is cut" in out
        finally:
            await relay.stop()
    lines = [json.loads(line) for line in bundle.read_text().splitlines()]
    assert [line["seq"] for line in lines if "receipt" in line] == list(range(1, ASKS + 1))
    verify_offline(lines, jwks)
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps(jwks))
    check = ("verify", "--keys", str(keys), "--chain", "--tsa-ca", str(tsa.ca))
    code, out = await run_cli(env, *check, str(bundle))
    assert code == 0, out
    assert "5 receipts and" in out
    assert "timestamps checked" in out
    # The attacks: the first receipt, the first two, the last, all but the fourth removed.
    receipts = [line for line in lines if "receipt" in line]
    checkpoints = [line for line in lines if "checkpoint" in line]
    for kept, shows in (
        (receipts[1:], "missing"),
        (receipts[2:], "missing"),
        (receipts[:-1], "tail is cut"),
        ([receipts[3]], "missing"),
    ):
        cut = tmp_path / "cut.jsonl"
        cut.write_text("".join(json.dumps(line) + "\n" for line in kept + checkpoints))
        code, out = await run_cli(env, *check, str(cut))
        assert code == 1, out
        assert shows in out


def claims_of(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # type: ignore[no-any-return]


async def test_a_chain_trimmed_by_retention_still_verifies_with_its_checkpoint(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack:
        env = relay_env(
            slack,
            free_port(),
            REDIS_URL=redis_server.url,
            RELAY_RECEIPT_KEY_FILE=key_file(tmp_path),
            RELAY_OPERATOR_TOKENS=OPERATOR,
            RELAY_CHECKPOINT_INTERVAL="0.1",
            RELAY_RETENTION="1",
            RELAY_RECEIPT_RETENTION="3s",
        )
        relay = await start_relay(env)

        async def end_asks(n: int) -> None:
            for _ in range(n):
                status, created = await relay.request("POST", "/v1/asks", json=QUESTION)
                assert status == 201, created
                status, _ = await relay.request("DELETE", f"/v1/asks/{created['id']}")
                assert status == 200

        try:
            await end_asks(3)
            kept = await latest_checkpoint(relay, 3)  # what an auditor fetched then
            assert kept["timestamp"] is None  # (no RELAY_TSA_URL: signed, not stamped)
            # Three seconds on, the three are trimmed and a checkpoint says the chain
            # starts after them.
            deadline = time.monotonic() + 60
            while (
                claims_of((latest := await latest_checkpoint(relay, 3))["checkpoint"])["first"] < 4
            ):
                assert time.monotonic() < deadline, latest
                await asyncio.sleep(0.05)
            assert claims_of(latest["checkpoint"])["base"] is not None
            await end_asks(2)
            await latest_checkpoint(relay, 5)
            bundle = tmp_path / "bundle.jsonl"
            cli_env = {**env, "RELAY_URL": relay.url, "RELAY_TOKEN": OPERATOR}
            code, out = await run_cli(cli_env, "audit", "--receipts", "-O", str(bundle))
            assert code == 0, out
            status, jwks = await relay.request("GET", "/.well-known/jwks.json", token=None)
            assert status == 200
        finally:
            await relay.stop()
    lines = [json.loads(line) for line in bundle.read_text().splitlines()]
    seqs = [line["seq"] for line in lines if "receipt" in line]
    assert seqs
    assert seqs[0] >= 4  # (the two after may be trimmed too, on a slow machine)
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps(jwks))
    auditors = tmp_path / "kept.json"
    auditors.write_text(json.dumps(kept))
    check = ("verify", "--keys", str(keys), "--chain", "--checkpoint", str(auditors))
    code, out = await run_cli(env, *check, str(bundle))
    assert code == 0, out
    # Without the bundle's checkpoints, the trimmed chain reads as cut at its head.
    receipts_only = tmp_path / "receipts.jsonl"
    receipts_only.write_text(
        "".join(json.dumps(line) + "\n" for line in lines if "receipt" in line)
    )
    code, out = await run_cli(env, "verify", "--keys", str(keys), "--chain", str(receipts_only))
    assert code == 1, out
    assert "head is cut" in out
