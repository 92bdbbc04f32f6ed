"""Batches on a running ``relay serve``: approvals one agent session asks for at once share
one Slack message, and every call in it is still decided, granted and receipted on its own.

*Allow all shown* is one click per covered call by the same person, through the path each
call's own button takes: a call whose rules name other approvers is never covered, and says
so; a batch too large for one message pages within it.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest

from relay.asks.batches import batch_of
from relay.receipts.keys import write_signing_key
from relay.testing import FakeSlack
from relay.testing.records import FakeMessage
from tests.server_env import SECRET, Relay, relay_server

RULES = """
approvers = ["U0ALICE", "U0BOB"]
default = "ask"

[[rules]]
action = "ask"
tools = ["Bash"]
commands = ["terraform *"]
approvers = ["U0BOSS"]
"""


def call(command: str, session: str = "s1") -> dict[str, Any]:
    return {
        "tool": "Bash",
        "input": {"command": command},
        "agent": {"id": f"claude-code:{session}", "name": "Claude Code"},
    }


def text_of(message: FakeMessage) -> str:
    return json.dumps(message.blocks, ensure_ascii=False)


def payload_of(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # type: ignore[no-any-return]


async def post_all(relay: Relay, bodies: list[dict[str, Any]]) -> list[str]:
    """POST the approvals at once (parallel tool calls); their ids, in the order given."""
    answers = await asyncio.gather(
        *(relay.request("POST", "/v1/approvals", json=body) for body in bodies)
    )
    for status, body in answers:
        assert status == 201, body
    return [body["id"] for _, body in answers]


async def state(relay: Relay, approval_id: str, wait: int = 0) -> dict[str, Any]:
    status, body = await relay.request("GET", f"/v1/approvals/{approval_id}?wait={wait}")
    assert status == 200, body
    return body


async def decided(relay: Relay, approval_id: str) -> dict[str, Any]:
    for _ in range(10):
        body = await state(relay, approval_id, wait=5)
        if body["status"] == "decided":
            return body
    raise AssertionError(f"approval {approval_id} was never decided")


def key_file(directory: Path) -> str:
    path = directory / "receipt-key.pem"
    write_signing_key(path)
    return str(path)


@pytest.fixture
def rules(tmp_path: Path) -> str:
    path = tmp_path / "rules.toml"
    path.write_text(RULES)
    return str(path)


def server(slack: FakeSlack, rules: str, **extra: str) -> Any:
    for user in ("U0ALICE", "U0BOB", "U0BOSS"):
        slack.add_user(user, name=user[2:].lower())
    # A wide window: three requests sent together must not miss it on a busy machine.
    return relay_server(slack, RELAY_RULES_FILE=rules, RELAY_BATCH_WINDOW="2", **extra)


async def test_allow_all_allows_exactly_the_covered_calls_each_with_its_receipt(
    rules: str, tmp_path: Path
) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        server(slack, rules, RELAY_RECEIPT_KEY_FILE=key_file(tmp_path)) as relay,
    ):
        commands = ["npm test", "npm run lint", "terraform apply"]
        ids = await post_all(relay, [call(c) for c in commands])
        message = await slack.wait_for_message(timeout=15)
        assert len(slack.messages) == 1  # one message for the three
        refs = [batch_of(i) for i in ids]
        assert all(r is not None for r in refs)
        assert len({r.batch for r in refs if r is not None}) == 1
        shown = text_of(message)
        for command in commands:
            assert command in shown
        # The call the rules give to other approvers says so, and keeps its own buttons.
        assert "needs approval by <@U0BOSS>" in shown
        assert "Allow all shown (2)" in shown
        terraform = ids[2]
        assert f"relay:{terraform}:0:act" in shown

        await slack.click(message, "Allow all shown (2)", user="U0ALICE")
        for approval_id in ids[:2]:
            decision = (await decided(relay, approval_id))["decision"]
            assert decision["behavior"] == "allow"
            assert decision["by"]["id"] == "U0ALICE"
        assert (await state(relay, terraform))["status"] == "pending"
        await slack.wait_until(lambda: text_of(message).count("Allowed by") == 2, timeout=15)
        assert "needs approval by <@U0BOSS>" in text_of(message)

        # Alice may not answer the call the rules give to the boss, on its own button either.
        await slack.click(
            message, "Allow once", user="U0ALICE", block_id=f"relay:{terraform}:0:act"
        )
        await slack.click(message, "Allow once", user="U0BOSS", block_id=f"relay:{terraform}:0:act")
        decision = (await decided(relay, terraform))["decision"]
        assert (decision["behavior"], decision["by"]["id"]) == ("allow", "U0BOSS")
        await slack.wait_until(lambda: "none waiting" in text_of(message), timeout=15)

        # Each call has its own receipt; the batch ties them together.
        batches = []
        for number, approval_id in enumerate(ids, start=1):
            status, body = await relay.request("GET", f"/v1/approvals/{approval_id}/receipt")
            assert status == 200, body
            receipt = payload_of(body)
            assert receipt["ask"] == approval_id
            batches.append(receipt["batch"])
            assert receipt["batch"]["call"] == refs[number - 1].call  # type: ignore[union-attr]
            assert receipt["batch"]["of"] == 3
            by = receipt["outcome"]["decisions"][0]["by"]["user"]
            assert by == ("U0BOSS" if approval_id == terraform else "U0ALICE")
        assert len({b["id"] for b in batches}) == 1


async def test_deny_all_denies_the_covered_calls(rules: str) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, server(slack, rules) as relay:
        ids = await post_all(relay, [call("npm test"), call("npm run build")])
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Deny all shown (2)", user="U0BOB")
        for approval_id in ids:
            decision = (await decided(relay, approval_id))["decision"]
            assert decision["behavior"] == "deny"
            assert decision["by"]["id"] == "U0BOB"
        await slack.wait_until(lambda: "none waiting" in text_of(message), timeout=15)
        assert len(slack.messages) == 1


async def test_someone_who_may_not_answer_allows_nothing_with_allow_all(rules: str) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, server(slack, rules) as relay:
        slack.add_user("U0EVE", name="eve")
        ids = await post_all(relay, [call("npm test"), call("npm run build")])
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Allow all shown (2)", user="U0EVE")
        await slack.wait_for_ephemeral(user="U0EVE", timeout=15)
        for approval_id in ids:
            assert (await state(relay, approval_id))["status"] == "pending"


async def test_review_each_shows_each_calls_own_buttons(rules: str) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, server(slack, rules) as relay:
        ids = await post_all(relay, [call("npm test"), call("npm run build"), call("ls -la")])
        message = await slack.wait_for_message(timeout=15)
        assert f"relay:{ids[0]}:0:act" not in text_of(message)  # the list: batch buttons only
        await slack.click(message, "Review each", user="U0ALICE")
        await slack.wait_until(lambda: f"relay:{ids[0]}:0:act" in text_of(message), timeout=15)
        await slack.click(message, "Deny", user="U0ALICE", block_id=f"relay:{ids[1]}:0:act")
        await slack.click(message, "Allow once", user="U0BOB", block_id=f"relay:{ids[0]}:0:act")
        first = (await decided(relay, ids[0]))["decision"]
        second = (await decided(relay, ids[1]))["decision"]
        assert (first["behavior"], first["by"]["id"]) == ("allow", "U0BOB")
        assert (second["behavior"], second["by"]["id"]) == ("deny", "U0ALICE")
        assert (await state(relay, ids[2]))["status"] == "pending"
        await slack.wait_until(lambda: "1 waiting" in text_of(message), timeout=15)
        assert f"relay:{ids[2]}:0:act" in text_of(message)  # still under review


async def test_a_lone_call_gets_its_own_message(rules: str) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, server(slack, rules) as relay:
        (approval_id,) = await post_all(relay, [call("npm test")])
        assert batch_of(approval_id) is None
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Allow once", user="U0ALICE")
        assert (await decided(relay, approval_id))["decision"]["behavior"] == "allow"


async def test_sessions_do_not_share_a_batch(rules: str) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, server(slack, rules) as relay:
        ids = await post_all(relay, [call("npm test", "s1"), call("npm test", "s2")])
        assert all(batch_of(i) is None for i in ids)
        await slack.wait_for_message(count=2, timeout=15)


async def test_a_batch_too_large_for_one_message_pages_within_it(rules: str) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, server(slack, rules) as relay:
        # Inputs near the longest a batch takes: a few calls fill one message.
        bodies = [call(f"echo {n:02d} " + "x" * 900) for n in range(12)]
        ids = await post_all(relay, bodies)
        assert len({batch_of(i).batch for i in ids}) == 1  # type: ignore[union-attr]
        message = await slack.wait_for_message(timeout=30)
        assert len(slack.messages) == 1
        first_page = text_of(message)
        assert "Next ▶" in first_page
        on_first = [i for i in ids if f"echo {batch_of(i).call - 1:02d} " in first_page]  # type: ignore[union-attr]
        assert 0 < len(on_first) < len(ids)
        label = f"Allow all shown ({len(on_first)})"
        await slack.click(message, label, user="U0ALICE")
        by_number = sorted(ids, key=lambda i: batch_of(i).call)  # type: ignore[union-attr]
        shown_first = by_number[: len(on_first)]
        for approval_id in shown_first:
            assert (await decided(relay, approval_id))["decision"]["behavior"] == "allow"
        for approval_id in by_number[len(on_first) :]:
            assert (await state(relay, approval_id))["status"] == "pending"
        await slack.click(message, "Next ▶", user="U0ALICE")
        await slack.wait_until(lambda: "Page 2 of" in text_of(message), timeout=15)
        assert "◀ Previous" in text_of(message)


async def test_review_each_offers_edit_on_each_call(rules: str) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, server(slack, rules) as relay:
        bodies = [{**call(c), "editable": True} for c in ("npm test", "npm run build")]
        ids = await post_all(relay, bodies)
        message = await slack.wait_for_message(timeout=15)
        assert "Edit…" not in text_of(message)
        await slack.click(message, "Review each", user="U0ALICE")
        own = f"relay:{ids[1]}:0:act"
        await slack.wait_until(lambda: own in text_of(message), timeout=15)
        await slack.click(message, "Edit…", user="U0ALICE", block_id=own)
        modal = await slack.wait_for_modal(user="U0ALICE", timeout=10)
        modal.fill("command", "npm run build -- --dry-run")
        assert (await slack.submit_view(modal)).outcome == "closed"
        decision = (await decided(relay, ids[1]))["decision"]
        assert decision["behavior"] == "allow"
        assert decision["updated_input"] == {"command": "npm run build -- --dry-run"}
        assert (await state(relay, ids[0]))["status"] == "pending"
        await slack.wait_until(lambda: "Edited by" in text_of(message), timeout=15)
        assert "npm test" in text_of(message)  # the other call is still shown, still waiting


async def test_a_withdrawn_or_timed_out_call_shows_so_in_the_batch(rules: str) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        server(slack, rules, RELAY_TIMEOUT="5") as relay,
    ):
        ids = await post_all(relay, [call("npm test"), call("npm run build")])
        message = await slack.wait_for_message(timeout=15)
        status, body = await relay.request("DELETE", f"/v1/approvals/{ids[0]}")
        assert (status, body["decision"]["outcome"]) == (200, "aborted")
        await slack.wait_until(lambda: "Withdrawn" in text_of(message), timeout=15)
        assert "Allow all shown (1)" in text_of(message)
        decision = (await decided(relay, ids[1]))["decision"]
        assert (decision["behavior"], decision["outcome"]) == ("deny", "timed_out")
        await slack.wait_until(lambda: "none waiting" in text_of(message), timeout=15)
        assert "Timed out" in text_of(message)


ESCALATING = """
default = "ask"

[[rules]]
action = "ask"
tools = ["Bash"]
commands = ["npm *"]
approvers = ["U0ALICE"]
escalate_after = 1
escalate_to = ["U0LEAD"]
"""


async def test_a_batch_escalates_once_and_the_escalated_may_allow_all(tmp_path: Path) -> None:
    rules = tmp_path / "escalating.toml"
    rules.write_text(ESCALATING)
    async with FakeSlack(signing_secret=SECRET) as slack, server(slack, str(rules)) as relay:
        slack.add_user("U0LEAD", name="lead")
        ids = await post_all(relay, [call("npm test"), call("npm run build")])
        message = await slack.wait_for_message(timeout=15)
        await slack.wait_until(
            lambda: text_of(message).count("Escalated to <@U0LEAD>") == 2, timeout=30
        )
        posts = [m for m in slack.messages if m.text.startswith(":rotating_light: Escalated")]
        assert len(posts) == 1  # one escalation for the message, in its thread
        assert posts[0].thread_ts == message.ts
        # Escalated, the lead may answer each call: Allow all shown is theirs too.
        await slack.click(message, "Allow all shown (2)", user="U0LEAD")
        for approval_id in ids:
            decision = (await decided(relay, approval_id))["decision"]
            assert (decision["behavior"], decision["by"]["id"]) == ("allow", "U0LEAD")
