"""Input the relay did not write: hostile JSON everywhere it is decoded, and requests whose
answers would be ambiguous (issue 11, "Reading requests")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from relay import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    UserInteractionError,
    UserInteractionService,
)
from relay.cli import main
from relay.client import RelayProvider
from relay.seam.questions import MAX_QUESTIONS, validate_request
from relay.seam.safejson import MAX_DEPTH, JSONTooComplex, UnreadableJSON, loads
from relay.slack.webapi.calls import LeanCalls
from relay.testing import FakeSlack
from tests.served import served

DEEP = "[" * 100_000 + "]" * 100_000
HUGE_INT = '{"questions": [], "n": ' + "9" * 400 + "}"


# ---- the decoder ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (DEEP, JSONTooComplex),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), JSONTooComplex),
        (HUGE_INT, JSONTooComplex),
        ('{"timeout_s": 1e400}', JSONTooComplex),
        ("[NaN]", UnreadableJSON),
        ('{"a": Infinity}', UnreadableJSON),
        ('{"a": 1,}', UnreadableJSON),
        (b"\xff\xfe", UnreadableJSON),
    ],
)
def test_hostile_json_is_a_value_error_naming_the_problem(text: str | bytes, kind: type) -> None:
    with pytest.raises(kind) as caught:
        loads(text)
    assert isinstance(caught.value, ValueError)
    assert str(caught.value)


def test_ordinary_json_decodes_as_json_loads_does() -> None:
    text = json.dumps({"a": [1, -2, 3.5, "x", None, True, {"b": [[[]]]}], "n": 10**29})
    assert loads(text) == json.loads(text) == loads(text.encode())
    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads(nested) == json.loads(nested)


@pytest.mark.parametrize(
    "data",
    [
        '{"a": [1, 2.5, "\u00e9"]}',
        '\ufeff{"a": 1}',  # a str with a byte-order mark: refused
        '{"a": 1}'.encode("utf-8-sig"),  # bytes with one: read
        '{"a": "\u00e9"}'.encode("utf-16"),
        '{"a": "\u00e9"}'.encode("utf-32-le"),
        bytearray(b'{"a": [true, null]}'),
        b'"\\ud800"',  # an escaped lone surrogate: read
        b'{"a": "\xed\xa0\x80"}',  # an encoded one: read too (json.loads passes it)
        b'{"a": 1',
    ],
)
def test_the_decoder_reads_what_json_loads_reads_and_refuses_the_rest(
    data: str | bytes | bytearray,
) -> None:
    # loads keeps one decoder (json.loads given hooks builds one a call): same text read.
    try:
        expected: object = json.loads(data)
        refusal = None
    except ValueError as exc:
        refusal = str(exc)
    if refusal is None:
        assert loads(data) == expected
    else:
        with pytest.raises(UnreadableJSON) as caught:
            loads(data)
        assert str(caught.value).split(" at line")[0] in refusal
    with pytest.raises(TypeError, match="not int"):
        loads(7)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        '{"type": "block_actions", "user": {"id": "U1", "name": "Ada \u00e9"}}',
        '{"state": {"values": {"b": {"a": {"value": "half \\ud83d"}}}}}',  # (orjson refuses)
        '{"n": NaN, "big": 123456789012345678901234567890}',  # (orjson: refused, a float)
        "[" * 900 + "]" * 900,
    ],
)
def test_a_clicks_payload_reads_as_json_loads_reads_it(text: str) -> None:
    # Clicks are read by orjson for speed, by json where orjson refuses: the same values.
    from relay.slack.intake.app import _payload_of

    value = _payload_of(text)
    assert json.dumps(value) == json.dumps(json.loads(text))  # (NaN == NaN fails)
    assert type(value) is type(json.loads(text))


# ---- the request rules ----------------------------------------------------------------------


def _question(qid: str, *labels: str) -> AskUserQuestionItem:
    return AskUserQuestionItem(
        id=qid, question="Deploy?", options=tuple(AskUserQuestionOption(label) for label in labels)
    )


@pytest.mark.parametrize(
    ("questions", "fragment"),
    [
        ((_question("ok", "yes"), _question("ok", "no")), 'questions[1].id "ok"'),
        ((_question("env", "Deploy", "Deploy"),), 'questions[0].options[1].label "Deploy"'),
        (tuple(_question(f"q{i}", "yes") for i in range(MAX_QUESTIONS + 1)), "at most 25"),
    ],
)
async def test_ambiguous_or_flooding_requests_are_bad_requests_before_any_provider(
    questions: tuple[AskUserQuestionItem, ...], fragment: str
) -> None:
    request = AskUserQuestionRequest(questions)
    with pytest.raises(UserInteractionError) as caught:
        validate_request(request)
    assert caught.value.code == "BAD_REQUEST"
    assert fragment in str(caught.value)
    # The service checks before the provider: nothing is ever asked.
    service = UserInteractionService()
    with pytest.raises(UserInteractionError) as again:
        await service.ask(request)
    assert again.value.code == "BAD_REQUEST"


def test_the_seams_own_checks_keep_their_order() -> None:
    # No questions is still EMPTY_QUESTIONS, an intent naming no option still BAD_INTENT,
    # even on a request that also breaks a new rule.
    from relay import AskUserQuestionIntent

    with pytest.raises(UserInteractionError) as empty:
        validate_request(AskUserQuestionRequest(()))
    assert empty.value.code == "EMPTY_QUESTIONS"
    bad_intent = AskUserQuestionItem(
        id="p",
        question="Plan?",
        detail="# Plan\nx",
        options=(AskUserQuestionOption("Approve"), AskUserQuestionOption("Approve")),
        intent=AskUserQuestionIntent(approve="Nope"),
    )
    with pytest.raises(UserInteractionError) as intent:
        validate_request(AskUserQuestionRequest((bad_intent, bad_intent)))
    assert intent.value.code == "BAD_INTENT"
    assert MAX_QUESTIONS == 25


# ---- the CLI --------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [DEEP, HUGE_INT])
@pytest.mark.parametrize("command", [("preview",), ("ask", "--relay-url", "http://127.0.0.1:9")])
def test_the_cli_refuses_hostile_request_files_in_one_line_with_exit_2(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    command: tuple[str, ...],
) -> None:
    monkeypatch.setenv("RELAY_TOKEN", "t" * 20)
    path = tmp_path / "request.json"
    path.write_text(text)
    flag = ("--file",) if command[0] == "ask" else ()
    code = main([*command, *flag, str(path)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith(f"relay: error: BAD_REQUEST: {path} is not valid JSON: ")
    assert err.count("\n") == 1, err


def test_the_cli_refuses_duplicate_ids(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    question = {"id": "ok", "question": "Go?"}
    path.write_text(json.dumps({"questions": [question, question]}))
    assert main(["preview", str(path)]) == 2
    assert "BAD_REQUEST" in capsys.readouterr().err


# ---- replies from a server that is not what it should be -----------------------------------


@asynccontextmanager
async def replying(body: Callable[[], bytes], *, status: int = 200) -> AsyncIterator[str]:
    """A server answering every request with ``body()`` as JSON; its base URL."""

    async def answer(_: web.Request) -> web.Response:
        return web.Response(body=body(), status=status, content_type="application/json")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    async with served(app) as url:
        yield url


@pytest.mark.parametrize(
    "reply", [DEEP, '{"id": "a", "status": "pending", "n": ' + "9" * 400 + "}"]
)
async def test_a_hostile_relay_reply_is_a_provider_failure_not_a_crash(reply: str) -> None:
    async with replying(reply.encode) as url:
        provider = RelayProvider(url, "t" * 20)
        try:
            with pytest.raises(UserInteractionError) as caught:
                await asyncio.wait_for(
                    provider.ask(AskUserQuestionRequest((_question("ok", "yes"),))), 10
                )
        finally:
            await provider.aclose()
    assert caught.value.code == "PROVIDER_FAILED"
    assert "could not be read" in str(caught.value)


@pytest.mark.parametrize(
    "reply", [DEEP, '{"ok": NaN}', '{"ok": true, "n": 1e400}', '{"ok": true, "e": "\\udc00"}']
)
async def test_a_hostile_web_api_reply_is_a_refusal_not_a_recursion_error(reply: str) -> None:
    # orjson reads replies, safejson what it refuses: deep, NaN, infinite; a lone surrogate
    # is read (json reads it), so that reply is a success.
    async with replying(reply.encode) as url, aiohttp.ClientSession() as session:
        client = AsyncWebClient(token="xoxb-test", base_url=f"{url}/api/")
        client.session = session
        call = LeanCalls(client).call("chat.update", {"channel": "C1", "ts": "1.2"})
        if "udc00" in reply:
            assert (await call)["e"] == "\udc00"
            return
        with pytest.raises(SlackApiError):
            await call


@pytest.mark.parametrize(
    "body",
    [
        DEEP.encode(),
        b'{"channel": "C1", "text": "hi", "ts": ' + b"9" * 5000 + b"}",
        b'{"channel": "C1", "text": "hi", "blocks": "' + ("[" * 100_000).encode() + b'"}',
    ],
)
async def test_fake_slack_answers_hostile_requests_as_slack_would(body: bytes) -> None:
    headers = {"Content-Type": "application/json", "Authorization": "Bearer xoxb-1"}
    async with (
        FakeSlack() as slack,
        aiohttp.ClientSession() as session,
        session.post(f"{slack.base_url}chat.postMessage", data=body, headers=headers) as response,
    ):
        assert response.status == 200
        reply: dict[str, Any] = await response.json()
    assert reply["ok"] is False
