"""``relay serve`` replicas on one Redis, and clicks posted to one replica as Slack signs them
(FakeSlack's own clicks go to its one ``interactivity_url``)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import signal
import time
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
from redis_server import RedisServer
from slack_sdk.signature import SignatureVerifier

from relay.testing import FakeSlack
from tests.server_env import SECRET, Relay, free_port, relay_env, start_relay

ASK = {
    "questions": [
        {"id": "go", "question": "Ship it?", "options": [{"label": "yes"}, {"label": "no"}]}
    ]
}


async def start_replicas(slack: FakeSlack, redis_url: str, **extra: str) -> tuple[Relay, Relay]:
    """Two ``relay serve`` replicas on ``redis_url``, each on a free port, ``extra`` added to
    their environment."""
    env = {"REDIS_URL": redis_url, **extra}
    a = await start_relay(relay_env(slack, free_port(), **env))
    b = await start_relay(relay_env(slack, free_port(), **env))
    return a, b


@dataclass
class Cluster:
    """FakeSlack with alice and bob, and replicas A and B on one Redis; every click lands on B."""

    slack: FakeSlack
    redis: RedisServer
    a: Relay
    b: Relay

    async def restart(self, name: str, sig: int = signal.SIGKILL) -> Relay:
        """Stop replica ``name`` (SIGKILL: a crash) and start it again on the same port."""
        old: Relay = getattr(self, name)
        await old.stop(sig)
        new = await start_relay(old.env)
        setattr(self, name, new)
        return new


@contextlib.asynccontextmanager
async def running_cluster(redis: RedisServer, **extra: str) -> AsyncIterator[Cluster]:
    """A ``Cluster`` on ``redis``, ``extra`` added to the replicas' environment; the replicas
    still running at the end are stopped."""
    async with FakeSlack(signing_secret=SECRET) as slack:
        for user in ("U0ALICE", "U0BOB"):
            slack.add_user(user, name=user[2:].lower())
        a, b = await start_replicas(slack, redis.url, **extra)
        slack.interactivity_url = f"{b.url}/slack/events"
        cluster = Cluster(slack, redis, a, b)
        try:
            yield cluster
        finally:
            for relay in (cluster.a, cluster.b):
                if relay.process.returncode is None:
                    await relay.stop()


async def post_click(
    relay: Relay, payload: dict[str, Any], session: aiohttp.ClientSession | None = None
) -> tuple[int, str]:
    """POST a click to ``relay``, signed as Slack signs it, through ``session`` (a new one if
    none is given): the HTTP status, and the digest of the signed request (what the click's
    receipt names)."""
    body = urllib.parse.urlencode({"payload": json.dumps(payload)})
    stamp = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)
    assert signature is not None  # slack_sdk gives None for a missing timestamp or body only
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature,
    }
    signed = hashlib.sha256(f"v0:{stamp}:{body}".encode()).digest()
    digest = base64.urlsafe_b64encode(signed).rstrip(b"=").decode()
    async with contextlib.AsyncExitStack() as stack:
        if session is None:
            session = await stack.enter_async_context(aiohttp.ClientSession())
        async with session.post(f"{relay.url}/slack/events", data=body, headers=headers) as r:
            status = r.status
    return status, digest
