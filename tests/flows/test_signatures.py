"""Flow: forged, unsigned and stale requests are refused with 401 and change nothing."""

from __future__ import annotations

import json
import time
import urllib.parse

import pytest
from slack_sdk.signature import SignatureVerifier

from tests.slack_env import SECRET, first_button, question, result, slack_env


@pytest.mark.parametrize("tamper", ["forged", "missing", "stale", "future", "modified_body"])
async def test_a_request_slack_did_not_sign_now_is_refused(tamper: str) -> None:
    async with slack_env() as env:
        task = env.ask(question())
        message = await env.message()
        payload = env.slack.build_block_actions(message, first_button(message), user="U0ALICE")
        now = str(int(time.time()))
        if tamper == "forged":
            reply = await env.slack.post_interaction(payload, signature="v0=" + "0" * 64)
        elif tamper == "missing":
            reply = await env.slack.post_interaction(
                payload, headers={"X-Slack-Signature": "", "X-Slack-Request-Timestamp": ""}
            )
        elif tamper in ("stale", "future"):
            shift = -6 * 60 if tamper == "stale" else 6 * 60
            reply = await env.slack.post_interaction(payload, timestamp=str(int(now) + shift))
        else:
            signed = urllib.parse.urlencode({"payload": json.dumps(payload)})
            signature = SignatureVerifier(SECRET).generate_signature(timestamp=now, body=signed)
            evil = signed.replace("U0ALICE", "U0EVE")
            reply = await env.slack.post_interaction(
                payload, body=evil, timestamp=now, signature=signature
            )
        assert reply.status == 401
        assert not task.done()
        assert not env.slack.ephemerals
        # The genuine click still works afterwards: nothing changed.
        await env.slack.click(message, "prod", user="U0ALICE")
        answer = await result(task)
        assert answer.answers[0].answered_by is not None
        assert answer.answers[0].answered_by.id == "U0ALICE"
