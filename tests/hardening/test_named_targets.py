"""Hardening: an agent's token names only the channels and user groups the operator lists.

The ``slack`` section of ``POST /v1/asks`` and ``/v1/approvals`` is written by the agent.
Without a ceiling it could make the bot post in any channel it is in, or @-mention any user
group (``allowed_groups``, ``escalate_groups``). ``RELAY_ALLOWED_CHANNELS`` (with the default
``RELAY_CHANNEL``) and ``RELAY_ALLOWED_GROUPS`` are that ceiling; unset, nothing may be named.
"""

from __future__ import annotations

from typing import Any

from relay.testing import FakeSlack
from tests.server_env import CHANNEL, SECRET, relay_server

QUESTION = [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]


def _ask(**slack: Any) -> dict[str, Any]:
    return {"questions": QUESTION, "slack": slack}


async def test_with_no_lists_a_client_may_name_only_the_default_channel() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        for section, field, setting in (
            ({"channel": "C0ELSEWHERE"}, "channel", "RELAY_ALLOWED_CHANNELS"),
            ({"allowed_groups": ["S0EVERYONE"]}, "allowed_groups", "RELAY_ALLOWED_GROUPS"),
            (
                {"escalate_after_s": 60, "escalate_groups": ["S0EVERYONE"]},
                "escalate_groups",
                "RELAY_ALLOWED_GROUPS",
            ),
            (
                {"escalate_after_s": 60, "escalate_users": ["U0BOB"], "escalate_channel": "C0X"},
                "escalate_channel",
                "RELAY_ALLOWED_CHANNELS",
            ),
        ):
            status, body = await relay.request("POST", "/v1/asks", json=_ask(**section))
            assert status == 400, (section, body)
            assert body["error"]["code"] == "BAD_REQUEST"
            assert f"slack.{field}" in body["error"]["message"]
            assert setting in body["error"]["message"]
        approval = {
            "tool": "Bash",
            "input": {"command": "ls"},
            "agent": {"id": "agent-1"},
            "slack": {"channel": "C0ELSEWHERE"},
        }
        status, body = await relay.request("POST", "/v1/approvals", json=approval)
        assert status == 400, body
        assert "RELAY_ALLOWED_CHANNELS" in body["error"]["message"]
        assert slack.messages == []  # nothing was posted anywhere
        status, body = await relay.request("POST", "/v1/asks", json=_ask(channel=CHANNEL))
        assert status == 201, body


async def test_what_the_operator_lists_may_be_named() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(
            slack, RELAY_ALLOWED_CHANNELS="C0OPS,C0ESC", RELAY_ALLOWED_GROUPS="S0TEAM"
        ) as relay,
    ):
        status, body = await relay.request(
            "POST",
            "/v1/asks",
            json=_ask(
                channel="C0OPS",
                allowed_groups=["S0TEAM"],
                escalate_after_s=60,
                escalate_groups=["S0TEAM"],
                escalate_channel="C0ESC",
            ),
        )
        assert status == 201, body
        message = await slack.wait_for_message(timeout=15)
        assert message.channel == "C0OPS"
        status, body = await relay.request(
            "POST", "/v1/asks", json=_ask(allowed_groups=["S0TEAM", "S0OTHER"])
        )
        assert status == 400, body
        assert "S0OTHER" in body["error"]["message"]
