"""Issue 40 with a quorum: an edit of a tool call is a new version that is voted on afresh.

Through a real ``relay serve`` (memory store, and Redis for the store's script) and
FakeSlack's modals: votes cast on the original do not count for the edit, the message says
which version is being voted and shows its diff, a click on the message as it was before
the edit is refused privately, two editors racing leave one version, and the vote that
completes the quorum allows exactly the edited input shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from redis_server import RedisServer

from relay.testing import FakeMessage, FakeSlack
from tests.server_env import SECRET, Relay, relay_server
from tests.test_approvals_api import decided
from tests.test_edit_then_approve import STAGING, body, people

QUORUM = {**body(), "approvals_required": 2}


@pytest.fixture(params=["memory", "redis"])
def store_env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The relay's environment for each store: votes and versions are the store's to keep."""
    if request.param == "memory":
        yield {}
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        yield {"REDIS_URL": server.url}


async def edit_to(slack: FakeSlack, message: FakeMessage, user: str, command: str) -> Any:
    """``user`` edits the call's command in its form and submits it."""
    await slack.click(message, "Edit…", user=user)
    modal = await slack.wait_for_modal(user=user, timeout=10)
    modal.fill("command", command)
    return await slack.submit_view(modal)


async def status_of(relay: Relay, approval_id: str) -> str:
    _code, record = await relay.request("GET", f"/v1/approvals/{approval_id}")
    return str(record["status"])


async def test_an_edit_resets_the_quorum_and_the_last_vote_allows_the_version_shown(
    store_env: dict[str, str],
) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, **store_env) as relay,
    ):
        people(slack)
        status, created = await relay.request("POST", "/v1/approvals", json=QUORUM)
        assert status == 201, created
        message = await slack.wait_for_message(timeout=15)
        assert "Edit…" in str(message.blocks)  # offered with a quorum too
        await slack.click(message, "Allow once", user="U0ALICE")  # a vote on version 1
        await slack.wait_until(lambda: "voted:" in str(message.blocks), timeout=10)
        before = len(message.versions) - 1  # the message as it stood before the edit

        # Bob edits: version 2, with his vote; Alice's vote was for version 1 and no longer
        # counts, so one vote is not the quorum.
        result = await edit_to(slack, message, "U0BOB", STAGING)
        assert result.outcome == "closed", result
        await slack.wait_until(lambda: "Voting on version 2" in str(message.blocks), timeout=10)
        shown = str(message.blocks)
        assert '-  "command": "terraform apply -target=module.prod",' in shown
        assert '+  "command": "terraform apply -target=module.staging",' in shown
        assert "1 on earlier versions no longer count" in shown
        assert await status_of(relay, created["id"]) == "pending"

        # Eve clicks the message as she still sees it (version 1): not counted, told why.
        await slack.click(message, "Allow once", user="U0EVE", version=before)
        notice = await slack.wait_for_ephemeral(user="U0EVE", timeout=10)
        assert "now version 2" in str(notice.args)
        assert await status_of(relay, created["id"]) == "pending"

        # Alice votes again, on version 2 as shown: the quorum, and exactly the edited call.
        await slack.click(message, "Allow once", user="U0ALICE")
        decision = (await decided(relay, created["id"]))["decision"]
        assert decision["behavior"] == "allow"
        assert decision["updated_input"] == {"command": STAGING, "description": "apply"}
        assert decision["edited_by"] == "U0BOB"
        assert decision["message"].startswith("bob and alice allowed this")
        await slack.wait_until(lambda: "Edited by" in str(message.blocks), timeout=10)
        final = str(message.blocks)
        assert "(version 2)" in final
        assert "Allow once* (v1)" in final  # every vote, with the version it was cast on
        assert "Allow once* (v2)" in final


async def test_a_deny_on_the_edited_version_still_decides_at_once() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        _status, created = await relay.request("POST", "/v1/approvals", json=QUORUM)
        message = await slack.wait_for_message(timeout=15)
        assert (await edit_to(slack, message, "U0BOB", STAGING)).outcome == "closed"
        await slack.wait_until(lambda: "Voting on version 2" in str(message.blocks), timeout=10)
        await slack.click(message, "Deny", user="U0EVE")
        decision = (await decided(relay, created["id"]))["decision"]
        assert decision["behavior"] == "deny"
        assert "updated_input" not in decision


async def test_two_editors_racing_leave_one_version_and_the_other_is_told() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        _status, created = await relay.request("POST", "/v1/approvals", json=QUORUM)
        message = await slack.wait_for_message(timeout=15)
        # Both open the form on version 1; Alice submits first.
        await slack.click(message, "Edit…", user="U0ALICE")
        alices = await slack.wait_for_modal(user="U0ALICE", timeout=10)
        await slack.click(message, "Edit…", user="U0BOB")
        bobs = await slack.wait_for_modal(user="U0BOB", timeout=10)
        alices.fill("command", STAGING)
        assert (await slack.submit_view(alices)).outcome == "closed"
        bobs.fill("command", "terraform apply -target=module.dev")
        result = await slack.submit_view(bobs)
        assert result.outcome == "errors", result
        assert "now version 2" in next(iter(result.errors.values()))
        assert bobs.is_open  # his form stays, nothing recorded from it
        await slack.wait_until(lambda: "Voting on version 2" in str(message.blocks), timeout=10)
        assert "module.dev" not in str(message.blocks)
        # Bob's form on version 2 shows Alice's edit; leaving it as it is votes for it.
        await slack.close_view(bobs)
        await slack.click(message, "Edit…", user="U0BOB")
        again = await slack.wait_for_modal(user="U0BOB", timeout=10)
        assert again.value("command")["value"] == STAGING
        assert (await slack.submit_view(again)).outcome == "closed"
        decision = (await decided(relay, created["id"]))["decision"]
        assert decision["updated_input"]["command"] == STAGING
        assert decision["edited_by"] == "U0ALICE"
        assert decision["message"].startswith("alice and bob allowed this")


async def test_a_version_no_field_of_which_slack_can_edit_offers_no_edit() -> None:
    # Issue 52.4 with votes: Edit… is judged on the call as it stands. Bob's version holds a
    # carriage return, which a Slack text field may not give back as sent: the message stops
    # offering Edit… and says why, and a click on Edit… of the message as it stood before
    # is told why privately; no form opens.
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        _status, created = await relay.request("POST", "/v1/approvals", json=QUORUM)
        message = await slack.wait_for_message(timeout=15)
        before = len(message.versions) - 1
        assert (await edit_to(slack, message, "U0BOB", "ls\r\n")).outcome == "closed"
        await slack.wait_until(lambda: "Voting on version 2" in str(message.blocks), timeout=10)
        assert "Edit…" not in slack.buttons_seen(message)
        assert "Edit… is not offered: `command` holds a control character" in str(message.blocks)
        await slack.click(message, "Edit…", user="U0ALICE", version=before)
        notice = await slack.wait_for_ephemeral(user="U0ALICE", timeout=10)
        assert "This call cannot be edited in Slack: `command` holds" in str(notice.args)
        assert [m.user for m in slack.modals] == ["U0BOB"]
        assert await status_of(relay, created["id"]) == "pending"
