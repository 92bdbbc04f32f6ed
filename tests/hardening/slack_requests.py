"""Raw requests to ``/slack/events`` for the hardening tests: built, signed, tampered, sent.

``FakeSlack.post_interaction`` sends what Slack would send. These helpers work one level
below it, on bytes, so that a test can send what Slack never would (any header, bytes that
are not UTF-8) and compare the relay's state before and after.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import io
import json
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from relay.store import AskStatus
from tests.slack_env import SECRET, Env, ask_id_of

FORM = "application/x-www-form-urlencoded"
# Every status the endpoint may answer a request it will not act on with; never a 5xx.
REFUSALS = frozenset({200, 400, 401, 404, 413})


def form_body(payload: object) -> bytes:
    """The body Slack posts for an interaction: ``payload=<json>``, form-encoded."""
    return urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()


def signature(body: bytes, timestamp: str, *, secret: str = SECRET) -> str:
    """Slack's ``v0=`` signature of ``body`` sent at ``timestamp`` (over the raw bytes)."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed_headers(
    body: bytes, *, timestamp: str | None = None, content_type: str = FORM
) -> dict[str, str]:
    """The headers Slack sends with ``body``, signed now (or at ``timestamp``)."""
    stamp = timestamp if timestamp is not None else str(int(time.time()))
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature(body, stamp),
    }


@dataclass(frozen=True)
class Reply:
    """What the endpoint answered."""

    status: int
    text: str


async def send(
    session: aiohttp.ClientSession, url: str, body: bytes, headers: Mapping[str, str]
) -> Reply:
    """POST ``body`` with exactly ``headers`` (no signing, no encoding of our own)."""
    async with session.post(
        url,
        data=io.BytesIO(body),  # aiohttp warns about large bytes bodies, not about streams
        headers=dict(headers),
        skip_auto_headers=("Content-Type",),
        timeout=aiohttp.ClientTimeout(total=10),
    ) as response:
        return Reply(response.status, await response.text(errors="replace"))


@dataclass(frozen=True)
class AskState:
    """An ask as the relay holds it, down to who answered which question."""

    status: AskStatus
    responders: tuple[str | None, ...]


@dataclass(frozen=True)
class State:
    """Everything a forged or malformed request must leave as it was."""

    asks: tuple[AskState, ...]
    versions: tuple[int, ...]  # how many versions each Slack message has had
    updates: int
    posts: int
    waiting: tuple[bool, ...]  # whether each agent's ask() is still waiting


async def state_of(env: Env) -> State:
    """The relay's state once every notice and update in flight has been sent."""
    await env.provider.drain()
    asks: list[AskState] = []
    for ask_id in dict.fromkeys(ask_id_of(m) for m in env.slack.messages):
        record = await env.provider.store.get(ask_id=ask_id)
        assert record is not None
        responders = tuple(
            r.answered_by.id if r is not None and r.answered_by is not None else None
            for r in record.responses
        )
        asks.append(AskState(record.status, responders))
    return State(
        asks=tuple(asks),
        versions=tuple(len(m.versions) for m in env.slack.messages),
        updates=len(env.slack.calls_to("chat.update")),
        posts=len(env.slack.calls_to("chat.postMessage")),
        waiting=tuple(not task.done() for task in env.tasks),
    )


def task_count() -> int:
    """How many asyncio tasks exist besides the current one."""
    return len(asyncio.all_tasks()) - 1


def with_action(payload: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of ``payload`` whose one action has ``changes`` applied."""
    action = {**payload["actions"][0], **changes}
    return {**payload, "actions": [action]}
