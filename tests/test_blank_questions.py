"""A blank question (``""`` or only whitespace) is refused on every path, before anything is
posted: the API, ``relay ask`` (``--file`` and ``-q``), MCP and the seam itself.

Nobody can answer a blank question, so accepting one would leave an empty message in Slack
and the agent waiting for its whole timeout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from relay import UserInteractionService
from relay.errors import ErrorCode, UserInteractionError
from relay.seam.questions import AskUserQuestionItem, AskUserQuestionRequest
from relay.testing import FakeSlack
from tests.mcp_env import http_client, result_text
from tests.server_env import SECRET, TOKEN, relay_server

BLANKS = ["", "   ", "\n\t "]


def _ask(question: str) -> dict[str, object]:
    return {"questions": [{"id": "go", "question": question, "options": [{"label": "yes"}]}]}


@pytest.mark.parametrize("blank", BLANKS)
async def test_the_seam_refuses_a_blank_question(blank: str) -> None:
    service = UserInteractionService()  # no provider: the check comes first
    request = AskUserQuestionRequest((AskUserQuestionItem(id="go", question=blank),))
    with pytest.raises(UserInteractionError) as refused:
        await service.ask(request)
    assert refused.value.code == ErrorCode.BAD_REQUEST
    assert "questions[0].question is blank" in str(refused.value)


async def test_the_api_the_cli_and_mcp_refuse_a_blank_question(tmp_path: Path) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        for blank in BLANKS:
            status, body = await relay.request("POST", "/v1/asks", json=_ask(blank))
            assert status == 400, body
            assert body["error"]["code"] == "BAD_REQUEST"
            assert "questions[0].question is blank" in body["error"]["message"]

        request = tmp_path / "ask.json"
        request.write_text(json.dumps(_ask("  ")))
        env = {**relay.env, "RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN}
        for args in (("--file", str(request)), ("-q", " \t", "-o", "yes")):
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                *("-m", "relay.cli", "ask", *args),
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(process.communicate(), 30)
            assert process.returncode == 2, err.decode()
            assert "question is blank" in err.decode()
            assert out == b""

        async with http_client(relay) as client:
            result = await asyncio.wait_for(client.call_tool("ask_user_question", _ask("")), 15)
            assert result.is_error
            assert "question is blank" in result_text(result)

        assert slack.messages == []  # nothing was ever posted
