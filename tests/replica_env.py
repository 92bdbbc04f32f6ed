"""``relay serve`` replicas on one Redis, and clicks posted to one replica as Slack signs them
(FakeSlack's own clicks go to its one ``interactivity_url``)."""

from __future__ import annotations

import base64
import hashlib
import json
import time
import urllib.parse
from typing import Any

import aiohttp
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


async def post_click(relay: Relay, payload: dict[str, Any]) -> tuple[int, str]:
    """POST a click to ``relay``, signed as Slack signs it: the HTTP status, and the digest of
    the signed request (what the click's receipt names)."""
    body = urllib.parse.urlencode({"payload": json.dumps(payload)})
    stamp = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)
    assert signature is not None  # slack_sdk gives None for a missing timestamp or body only
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature,
    }
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{relay.url}/slack/events", data=body, headers=headers) as response,
    ):
        status = response.status
    signed = hashlib.sha256(f"v0:{stamp}:{body}".encode()).digest()
    return status, base64.urlsafe_b64encode(signed).rstrip(b"=").decode()
