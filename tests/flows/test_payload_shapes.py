"""Flow: every real payload shape in tests/payloads goes through the click path end to end.

Each file is a payload as Slack sends it (source in its ``_source``), with placeholders for
ids; it is filled in from a live ask and posted, signed, to the relay over HTTP (or sent as
the envelope it is over Socket Mode), and the answer or notice it must give is checked.
"""

from __future__ import annotations

import copy
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from relay import AskUserQuestionRequest
from tests.slack_env import Env, ask_id_of, result, slack_env

PAYLOADS = sorted((Path(__file__).parent.parent / "payloads").glob("*.json"))
SHAPES = {path.stem: json.loads(path.read_text()) for path in PAYLOADS}


def fill(node: Any, values: dict[str, Any]) -> Any:
    """``node`` with every placeholder replaced (a whole-string one by any JSON value)."""
    if isinstance(node, dict):  # keys too: state.values is keyed by block_id
        return {fill(key, values): fill(value, values) for key, value in node.items()}
    if isinstance(node, list):
        return [fill(item, values) for item in node]
    if isinstance(node, str):
        if node in values:
            return values[node]
        for name in sorted(values, key=len, reverse=True):  # $MESSAGE_TS before $MESSAGE
            if name in node and isinstance(values[name], str):
                node = node.replace(name, values[name])
    return node


async def deliver(env: Env, shape: dict[str, Any], values: dict[str, Any], socket: bool) -> int:
    filled = fill(shape, values)
    if socket:
        return (await env.slack.send_socket_envelope(filled)).status
    return (await env.slack.post_interaction(filled)).status


def test_every_shape_names_its_source() -> None:
    assert len(SHAPES) >= 9
    for name, shape in SHAPES.items():
        assert shape["_source"].strip(), name
        assert shape["_relay"]["expect"], name


@pytest.mark.parametrize("name", sorted(SHAPES))
async def test_a_real_payload_shape_gives_the_answer_or_notice_it_should(name: str) -> None:
    shape = copy.deepcopy(SHAPES[name])
    shape.pop("_source")
    setup = shape.pop("_relay")
    expect = setup["expect"]
    async with slack_env(
        allowed_users=setup.get("allowed_users"), slack_options=setup.get("slack")
    ) as env:
        socket = bool(setup.get("socket_mode"))
        if socket:
            await env.provider.connect_socket_mode(env.slack.app_token)
            await env.slack.wait_for_socket()
            env.slack.interactivity_url = None
        request = AskUserQuestionRequest.from_dict(setup["request"], strict=True)
        task = env.spawn(env.service.ask(request))
        message = await env.message()
        reply_ts = ""
        if setup.get("thread"):
            reply = await env.provider.client.chat_postMessage(
                channel=message.channel, thread_ts=message.ts, text="more detail"
            )
            reply_ts = str(reply["ts"])
        fresh = env.slack.build_block_actions(message, {"type": "button"}, user="U0ALICE")
        values: dict[str, Any] = {
            "$ASK_ID": ask_id_of(message),
            "$CHANNEL": message.channel,
            "$MESSAGE_TS": message.ts,
            "$MESSAGE_BLOCKS": message.blocks,
            "$REPLY_TS": reply_ts,
            "$TEAM_ID": "T0FAKE",
            "$APP_ID": "A0FAKE",
            "$BOT_USER": "U0BOT",
            "$BOT_ID": "B0BOT",
            "$ENTERPRISE_ID": (setup.get("slack") or {}).get("enterprise_id", ""),
            "$RESPONSE_URL": fresh["response_url"],
            "$TRIGGER_ID": fresh["trigger_id"],
            "$ACTION_TS": f"{time.time():.6f}",
            "$ENVELOPE_ID": str(uuid.uuid4()),
            "$VERIFICATION_TOKEN": "fake-verification-token",
        }
        assert await deliver(env, shape, values, socket) == 200

        if "selected" in expect or "custom" in expect:
            answer = (await result(task)).answers[0]
            assert list(answer.selected) == expect.get("selected", [])
            assert answer.custom == expect.get("custom")
            await env.slack.wait_until(lambda: message.updated)
        elif "notice" in expect:
            notice = await env.slack.wait_for_ephemeral()
            assert expect["notice"] in notice.args["text"]
            assert ("thread_ts" in notice.args) is expect["in_thread"]
            assert not task.done()
        else:
            assert expect == {"pending": True}
            await env.provider.drain()
            assert not task.done()
            assert not env.slack.ephemerals
            assert not message.updated
