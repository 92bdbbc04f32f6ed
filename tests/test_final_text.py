"""A question's final message says what happened in its fallback ``text`` too (what Slack's
notifications and screen readers read), not only in its blocks: a denial reads "denied",
never "answered". Through a real ``relay serve``: the ``text`` of its last ``chat.update``."""

from __future__ import annotations

from relay.testing import FakeMessage, FakeSlack
from tests.server_env import SECRET, relay_server
from tests.test_approvals_api import decided
from tests.test_edit_then_approve import STAGING, body, people

ASK = {"questions": [{"id": "go", "question": "Ship?", "options": [{"label": "Ship"}]}]}


async def final_text(slack: FakeSlack, message: FakeMessage) -> str:
    """The ``text`` of the update that left ``message`` with nothing left to click."""

    def final() -> bool:
        updates = [c for c in slack.calls_to("chat.update") if c.args.get("ts") == message.ts]
        blocks = updates[-1].args.get("blocks") if updates else None
        return bool(blocks) and "'actions'" not in str(blocks) and "'input'" not in str(blocks)

    await slack.wait_until(final, timeout=15)
    return [c for c in slack.calls_to("chat.update") if c.args["ts"] == message.ts][-1].args["text"]


async def test_the_final_text_says_denied_allowed_edited_answered_withdrawn_or_timed_out() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        people(slack)
        tool = "Bash: permission request: Claude Code wants to run a shell command. Allow it?"
        for count, (act, said) in enumerate(
            (("Deny", "denied"), ("Allow once", "allowed"), ("Edit…", "edited, then allowed")),
            1,
        ):
            _, created = await relay.request("POST", "/v1/approvals", json=body())
            message = await slack.wait_for_message(count=count, timeout=15)
            await slack.click(message, act, user="U0BOB")
            if act == "Edit…":
                modal = await slack.wait_for_modal(user="U0BOB", timeout=10)
                modal.fill("command", STAGING)
                assert (await slack.submit_view(modal)).outcome == "closed"
            await decided(relay, created["id"])
            text = await final_text(slack, message)
            assert text == f"{tool} — {said}"
        _, created = await relay.request("POST", "/v1/asks", json=ASK)
        message = await slack.wait_for_message(count=4)
        await slack.click(message, "Ship", user="U0ALICE")
        assert await final_text(slack, message) == "Ship? — answered"
        _, created = await relay.request("POST", "/v1/asks", json=ASK)
        status, _ = await relay.request("DELETE", f"/v1/asks/{created['id']}")
        assert status == 200
        assert await final_text(slack, await slack.wait_for_message(count=5)) == "Ship? — withdrawn"
        timed = {**ASK, "slack": {"timeout_s": 0.5}}
        _, created = await relay.request("POST", "/v1/asks", json=timed)
        message = await slack.wait_for_message(count=6)
        assert await final_text(slack, message) == "Ship? — timed out"
