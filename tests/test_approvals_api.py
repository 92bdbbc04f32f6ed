"""``/v1/approvals`` on a running ``relay serve``: decisions, grants, and who may see them.

A grant is only ever made by the relay from a reviewer's click on an approval it rendered
itself; nothing a client sends can make one, and every grant is its token's own.
"""

from __future__ import annotations

from typing import Any

import pytest

from relay.testing import FakeSlack
from tests.server_env import OTHER_TOKEN, SECRET, Relay, relay_server

NPM = {
    "tool": "Bash",
    "input": {"command": "npm test"},
    "agent": {"id": "claude-code:s1", "name": "Claude Code"},
    "context": {"Directory": "/repo"},
}


async def decided(relay: Relay, approval_id: str, token: str | None = None) -> dict[str, Any]:
    kw = {"token": token} if token else {}
    for _ in range(20):
        status, body = await relay.request("GET", f"/v1/approvals/{approval_id}?wait=5", **kw)
        assert status == 200, body
        if body["status"] == "decided":
            return body
    raise AssertionError("the approval was never decided")


async def test_a_reviewers_grant_answers_the_next_approval_at_once() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        slack.add_user("U0ALICE", name="alice")
        status, created = await relay.request("POST", "/v1/approvals", json=NPM)
        assert status == 201, created
        assert (created["status"], created["decision"]) == ("pending", None)
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Allow for 30 minutes", user="U0ALICE")
        body = await decided(relay, created["id"])
        decision = body["decision"]
        assert decision["behavior"] == "allow"
        assert decision["outcome"] == "granted"
        grant = decision["grant"]
        assert grant["granted_by"] == {"id": "U0ALICE", "name": "alice"}
        assert grant["agent"] == "claude-code:s1"
        assert grant["kind"] == "minutes"

        status, again = await relay.request("POST", "/v1/approvals", json=NPM)
        assert status == 200
        assert again["id"] is None
        assert again["decision"]["outcome"] == "allowed"
        assert again["decision"]["grant"]["id"] == grant["id"]
        assert len(slack.messages) == 1

        # Another agent of the same token, and the same agent under another token, are asked.
        other_agent = {**NPM, "agent": {"id": "claude-code:s2"}}
        status, _ = await relay.request("POST", "/v1/approvals", json=other_agent)
        assert status == 201
        status, _ = await relay.request("POST", "/v1/approvals", json=NPM, token=OTHER_TOKEN)
        assert status == 201
        # Someone else's approval reads as missing.
        status, body = await relay.request(
            "GET", f"/v1/approvals/{created['id']}", token=OTHER_TOKEN
        )
        assert (status, body["error"]["code"]) == (404, "NOT_FOUND")


async def test_no_client_can_forge_a_grant() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        # An ordinary ask dressed up as an approval, answered with a grant label...
        fake = {
            "questions": [
                {
                    "id": "approval",
                    "question": "Lunch?",
                    "options": [{"label": "Allow for this session"}, {"label": "Deny"}],
                }
            ]
        }
        status, ask = await relay.request("POST", "/v1/asks", json=fake)
        assert status == 201
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Allow for this session", user="U0ALICE")
        # ...is not an approval, so reading it as one makes no grant.
        status, body = await relay.request("GET", f"/v1/approvals/{ask['id']}?wait=5")
        assert (status, body["error"]["code"]) == (404, "NOT_FOUND")
        # No endpoint takes a grant from a client.
        status, _ = await relay.request("POST", "/v1/grants", json={"pattern": {}})
        assert status == 404
        # So the use is still asked about.
        status, created = await relay.request("POST", "/v1/approvals", json=NPM)
        assert status == 201
        assert created["decision"] is None


async def test_withdrawing_denies_and_updates_slack() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        status, created = await relay.request("POST", "/v1/approvals", json=NPM)
        assert status == 201
        message = await slack.wait_for_message(timeout=15)
        status, body = await relay.request("DELETE", f"/v1/approvals/{created['id']}")
        assert status == 200
        assert body["decision"]["behavior"] == "deny"
        assert body["decision"]["outcome"] == "aborted"
        await slack.wait_until(lambda: "Withdrawn" in str(message.blocks), timeout=10)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"input": {}, "agent": {"id": "a"}}, "tool is required"),
        ({"tool": "Bash", "agent": {"id": "a"}, "input": []}, "input must be an object"),
        ({"tool": "Bash"}, "agent is required"),
        ({**NPM, "colour": 1}, "colour is not a known field"),
        ({**NPM, "grant_minutes": 5000}, "grant_minutes must be a whole number"),
        ({**NPM, "slack": {"timeout_s": -1}}, "slack.timeout_s must be a positive number"),
        ({**NPM, "context": {"a": 1}}, "context must be an object of strings"),
    ],
)
async def test_a_bad_approval_is_a_400_and_posts_nothing(body: Any, message: str) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        status, answer = await relay.request("POST", "/v1/approvals", json=body)
        assert status == 400, answer
        assert answer["error"]["code"] == "BAD_REQUEST"
        assert message in answer["error"]["message"]
        status, _ = await relay.request("POST", "/v1/approvals", json=NPM, token=None)
        assert status == 401
        assert not slack.messages


async def test_replicas_on_one_redis_share_grants(redis_url: str) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, REDIS_URL=redis_url) as a,
        relay_server(slack, REDIS_URL=redis_url) as b,
    ):
        status, created = await a.request("POST", "/v1/approvals", json=NPM)
        assert status == 201
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Allow for this session", user="U0ALICE")  # reaches b
        # Decided, and its grant recorded, by the replica that reads it.
        body = await decided(b, created["id"])
        assert body["decision"]["outcome"] == "granted"
        status, again = await a.request("POST", "/v1/approvals", json=NPM)
        assert (status, again["decision"]["outcome"]) == (200, "allowed")
