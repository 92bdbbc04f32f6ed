"""Flow: a rules file's team decisions (quorum, deny veto, escalation) on approve_tool_use.

``relay mcp --rules FILE`` runs as an MCP client starts it, asking through a hosted relay
(``relay serve``, over HTTP) or Slack directly (Socket Mode); people answer in FakeSlack.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from relay.testing import FakeMessage, FakeSlack
from tests.gate_env import write_rules
from tests.mcp_env import http_client, result_json, stdio_client
from tests.server_env import BOT_TOKEN, CHANNEL, SECRET, TOKEN, relay_server
from tests.slack_env import WORKSPACE_CHANNELS
from tests.test_approvals_api import NPM, decided

ESCALATION = ":rotating_light: Escalated"
TEAM_RULES = """
timeout = 30
approvers = ["U0ALICE", "U0BOB", "U0CAROL"]

[[rules]]
action = "ask"
tools = ["Bash"]
commands = ["deploy*"]
approvals = 2

[[rules]]
action = "ask"
tools = ["Bash"]
commands = ["migrate*"]
approvers = ["U0ALICE"]
escalate_after = 0.5
escalate_to = ["U0LEAD", "S0DBAS"]
escalate_channel = "C0ONCALL"
"""
PATHS = ["hosted", "direct"]


@asynccontextmanager
async def reaching_slack(how: str) -> AsyncIterator[tuple[FakeSlack, dict[str, str]]]:
    """FakeSlack and ``relay mcp``'s environment: through ``relay serve``, or Slack itself."""
    if how == "hosted":
        # A client's rules may escalate only to a channel and group the operator lists; the
        # group is then the ceiling of who answers, so everyone here is in it.
        async with (
            FakeSlack(signing_secret=SECRET) as slack,
            relay_server(
                slack, RELAY_ALLOWED_CHANNELS="C0ONCALL", RELAY_ALLOWED_GROUPS="S0DBAS"
            ) as relay,
        ):
            slack.usergroups = {"S0DBAS": ["U0ALICE", "U0BOB", "U0CAROL", "U0LEAD"]}
            yield slack, {"RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN}
        return
    async with FakeSlack(
        signing_secret="unused",
        bot_token=BOT_TOKEN,
        app_token="xapp-1-team",
        channels={c: c.lower() for c in (CHANNEL, *WORKSPACE_CHANNELS)},
    ) as slack:
        yield (
            slack,
            {
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": "xapp-1-team",
                "SLACK_API_URL": slack.base_url,
                "RELAY_CHANNEL": CHANNEL,
            },
        )


def shown(message: FakeMessage) -> str:
    return json.dumps(message.blocks)


@pytest.mark.parametrize("how", PATHS)
async def test_a_rule_needing_two_approvals_needs_two_different_people(
    how: str, tmp_path: Path
) -> None:
    rules = write_rules(tmp_path, TEAM_RULES)
    async with reaching_slack(how) as (slack, env), stdio_client(env, "--rules", rules) as client:
        if how == "direct":
            await slack.wait_for_socket(timeout=15)
        deploy = {"tool_name": "Bash", "input": {"command": "deploy prod"}}
        call = asyncio.create_task(client.call_tool("approve_tool_use", deploy))
        message = await slack.wait_for_message(timeout=15)
        assert "Needs 2 votes" in shown(message)
        assert "Allow for this session" not in shown(message)  # no grants under a quorum
        assert "Allow for 30 minutes" not in shown(message)
        await slack.click(message, "Allow once", user="U0ALICE")
        counted = await slack.wait_for_ephemeral(user="U0ALICE", timeout=10)
        assert "Your vote for *Allow once* is counted (1 so far; 2 decide)" in counted.args["text"]
        await slack.click(message, "Allow once", user="U0ALICE")  # the same person again
        again = await slack.wait_for_ephemeral(user="U0ALICE", count=2, timeout=10)
        assert "You already voted *Allow once*" in again.args["text"]
        assert not call.done()
        await slack.click(message, "Allow once", user="U0BOB")
        assert result_json(await asyncio.wait_for(call, 15))["behavior"] == "allow"
        await slack.wait_until(lambda: "Votes: <@U0ALICE> *Allow once*" in shown(message))

        # One person's Deny decides at once (deny_vetoes defaults to true with a quorum).
        call = asyncio.create_task(client.call_tool("approve_tool_use", deploy))
        second = await slack.wait_for_message(count=2, timeout=15)
        await slack.click(second, "Deny", user="U0CAROL")
        denied = result_json(await asyncio.wait_for(call, 15))
        assert denied["behavior"] == "deny"
        assert "denied this in Slack" in denied["message"]


@pytest.mark.parametrize("how", PATHS)
async def test_a_rule_with_escalate_after_escalates_to_its_people(how: str, tmp_path: Path) -> None:
    rules = write_rules(tmp_path, TEAM_RULES)
    async with reaching_slack(how) as (slack, env), stdio_client(env, "--rules", rules) as client:
        if how == "direct":
            await slack.wait_for_socket(timeout=15)
        migrate = {"tool_name": "Bash", "input": {"command": "migrate up"}}
        call = asyncio.create_task(client.call_tool("approve_tool_use", migrate))
        message = await slack.wait_for_message(timeout=15)
        posted = await slack.wait_for_message(
            count=1, where=lambda m: m.text.startswith(ESCALATION), timeout=15
        )
        assert posted.channel == "C0ONCALL"
        assert "<@U0LEAD>" in posted.text
        assert "<!subteam^S0DBAS>" in posted.text
        await slack.wait_until(lambda: "Escalated to <@U0LEAD>" in shown(message), timeout=10)
        # U0LEAD is no approver of the rule, but may answer now that it is escalated.
        await slack.click(message, "Allow once", user="U0LEAD")
        assert result_json(await asyncio.wait_for(call, 15))["behavior"] == "allow"


async def test_the_relays_quorum_is_a_floor_and_a_bad_quorum_is_a_400() -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_APPROVALS_REQUIRED="3") as relay,
    ):
        lower = {**NPM, "approvals_required": 1}
        status, created = await relay.request("POST", "/v1/approvals", json=lower)
        assert status == 201, created
        message = await slack.wait_for_message(timeout=15)
        assert "Needs 3 votes" in shown(message)
        assert "Allow for this session" not in shown(message)
        await slack.click(message, "Deny", user="U0ALICE")  # one deny still decides
        body = await decided(relay, created["id"])
        assert body["decision"]["behavior"] == "deny"

        # A body setting none gets the relay's quorum the same way: no grants, one Deny decides.
        status, created = await relay.request("POST", "/v1/approvals", json=NPM)
        assert status == 201, created
        unset = await slack.wait_for_message(count=2, timeout=15)
        assert "Needs 3 votes" in shown(unset)
        assert "Allow for 30 minutes" not in shown(unset)

        # And so does approve_tool_use on the relay's own /mcp.
        async with http_client(relay) as client:
            args = {"tool_name": "Bash", "input": {"command": "make deploy"}}
            call = asyncio.create_task(client.call_tool("approve_tool_use", args))
            tool = await slack.wait_for_message(count=3, timeout=15)
            assert "Needs 3 votes" in shown(tool)
            assert "Allow for this session" not in shown(tool)
            await slack.click(tool, "Deny", user="U0ALICE")
            assert result_json(await asyncio.wait_for(call, 15))["behavior"] == "deny"

        for bad, says in [
            ({"approvals_required": 0}, "approvals_required must be a whole number from 1 to 25"),
            ({"deny_vetoes": "no"}, "deny_vetoes must be true or false"),
        ]:
            status, refused = await relay.request("POST", "/v1/approvals", json={**NPM, **bad})
            assert (status, refused["error"]["code"]) == (400, "BAD_REQUEST")
            assert says in refused["error"]["message"]
