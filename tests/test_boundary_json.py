"""The doors refuse what relay cannot canonicalise (issue 51): a lone surrogate (key or value),
``NaN``/``Infinity``, an integer no double holds (9007199254740993, 2**60), a number past a
double's range (1e400), nesting past ``MAX_DEPTH``. ``/v1/asks`` and ``/v1/approvals`` answer
400 with each case's stable code through a real ``relay serve`` and post nothing; ``/mcp``'s
two tools answer their error result (a lone surrogate, which the SDK cannot parse, a JSON-RPC
error carrying the code); and whatever ``safejson.unfit`` lets in, JCS canonicalises (so it
can always be receipted)."""

from __future__ import annotations

import json
import math
from typing import Any

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from relay.receipts.jcs import canonical
from relay.seam.safejson import MAX_DEPTH, SAFE_INTEGER, exact_integer, loads, unfit
from relay.testing import FakeSlack
from tests.server_env import SECRET, TOKEN, Relay, relay_server
from tests.strategies import any_text

QUESTION = {"id": "go", "question": "Ship it?", "options": [{"label": "yes"}, {"label": "no"}]}


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


# Each case: JSON text of a value relay must refuse (placed inside a body by each test).
REFUSED = {
    "escaped lone surrogate": '"\\ud800"',
    "lone low surrogate": '"a\\udfffb"',
    "surrogate in a key": '{"\\udc00": 1}',
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "1e400": "1e400",
    "2**53 + 1": str(2**53 + 1),
    "2**60": str(2**60),
    "-(2**53) - 1": str(-(2**53) - 1),
    "too deep": deep(MAX_DEPTH),
}
# The stable code each case is refused with.
CODES = {
    "escaped lone surrogate": "JSON_LONE_SURROGATE",
    "lone low surrogate": "JSON_LONE_SURROGATE",
    "surrogate in a key": "JSON_LONE_SURROGATE",
    "NaN": "JSON_NOT_FINITE",
    "Infinity": "JSON_NOT_FINITE",
    "-Infinity": "JSON_NOT_FINITE",
    "1e400": "JSON_NOT_FINITE",
    "2**53 + 1": "JSON_INEXACT_NUMBER",
    "2**60": "JSON_INEXACT_NUMBER",
    "-(2**53) - 1": "JSON_INEXACT_NUMBER",
    "too deep": "JSON_TOO_DEEP",
}
# Values at the edge that enter, and are receipted.
ACCEPTED = {
    "2**53": str(2**53),
    "10**18": str(10**18),
    "2**60 as a double writes it": "1152921504606847000",
    "a surrogate pair": '"\\ud83d\\ude00"',
    "1e308": "1e308",
    "as deep as allowed": deep(MAX_DEPTH - 3),
}


# ---- the one checker, and JCS on what it lets in -----------------------------------------


@pytest.mark.parametrize(("text", "said"), [
    ('["\\ud800"]', "lone surrogate"),
    ('{"\\ud800x": 1}', "lone surrogate"),
    (f"[{2**53 + 1}]", "integer 9007199254740993"),
    (f"[{2**60}]", "does not hold exactly"),
    (deep(MAX_DEPTH + 1), f"deeper than {MAX_DEPTH} levels"),
])  # fmt: skip
def test_unfit_says_what_is_wrong(text: str, said: str) -> None:
    problem = unfit(json.loads(text))
    assert problem is not None
    assert said in problem


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, b"x", {1: "x"}, {"a": {2}}])
def test_unfit_refuses_what_is_no_json(value: object) -> None:
    assert unfit([value]) is not None


def test_exact_integers_are_those_a_double_writes_with_these_digits() -> None:
    assert [exact_integer(n) for n in (SAFE_INTEGER, -SAFE_INTEGER, SAFE_INTEGER + 1)] == [
        True,
        True,
        False,
    ]
    assert [exact_integer(n) for n in (10**18, 1152921504606847000, 2**60, 10**400)] == [
        True,
        True,
        False,
        False,
    ]


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.sampled_from([10**18, -(10**20), 1152921504606847000, 2**53, 2**53 + 1, 10**21]),
        st.floats(),  # NaN and infinities too
        any_text,  # lone surrogates too
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(any_text, children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_what_enters_can_always_be_receipted(value: Any) -> None:
    if unfit(value) is not None:
        return
    signed = canonical(value)  # never raises on what enters
    # And it reads back as the same JCS bytes (what `relay verify` recomputes).
    assert canonical(json.loads(signed)) == signed


@pytest.mark.parametrize("name", ACCEPTED)
def test_the_edge_values_that_enter_are_canonicalised(name: str) -> None:
    value = loads(f'{{"x": {ACCEPTED[name]}}}')
    assert unfit(value) is None
    assert canonical(json.loads(canonical(value))) == canonical(value)


# ---- /v1: asks and approvals ---------------------------------------------------------------


def question_with(inner: str) -> str:
    """``QUESTION`` whose ``detail`` is ``inner`` (raw JSON text, refused before it is read
    as a question: a string there is taken)."""
    return json.dumps(QUESTION)[:-1] + ', "detail": ' + inner + "}"


def ask_body(inner: str) -> bytes:
    return ('{"questions": [' + question_with(inner) + "]}").encode("utf-8", "surrogatepass")


def approval_body(inner: str) -> bytes:
    text = '{"tool": "Bash", "agent": {"id": "a"}, "input": {"command": "ls", "n": ' + inner + "}}"
    return text.encode("utf-8", "surrogatepass")


async def post_raw(relay: Relay, path: str, body: bytes) -> tuple[int, Any]:
    headers = {**relay.headers(), "Content-Type": "application/json"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(relay.url + path, data=body, headers=headers) as response,
    ):
        return response.status, await response.json(content_type=None)


async def test_v1_refuses_each_case_and_stores_and_posts_nothing() -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        doors = {"/v1/asks": ask_body, "/v1/approvals": approval_body}
        for path, body_of in doors.items():
            for name, inner in REFUSED.items():
                status, body = await post_raw(relay, path, body_of(inner))
                assert status == 400, (path, name, body)
                assert body["error"]["code"] == CODES[name], (path, name, body)
                # (the body reader's refusal, before any question or approval is read)
                assert body["error"]["message"].startswith("the body "), body
        # UTF-8 bytes of a surrogate (no valid UTF-8 holds them): refused as well.
        status, body = await post_raw(
            relay, "/v1/asks", ask_body('"x"').replace(b'"x"}]', b'"\xed\xa0\x80"}]')
        )
        assert (status, body["error"]["code"]) == (400, "JSON_LONE_SURROGATE"), body
        status, listed = await relay.request("GET", "/v1/asks")
        assert (status, listed["asks"]) == (200, [])
        assert slack.messages == []

        # The edge values that enter are taken, as before.
        status, made = await post_raw(relay, "/v1/asks", ask_body(ACCEPTED["a surrogate pair"]))
        assert status == 201, made
        for name, inner in ACCEPTED.items():
            status, made = await post_raw(relay, "/v1/approvals", approval_body(inner))
            assert status == 201, (name, made)


async def test_v1_the_edge_values_enter_and_are_receipted(tmp_path: Any) -> None:
    from tests.test_receipts_serve import key_file

    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RECEIPT_KEY_FILE=key_file(tmp_path)) as relay,
    ):
        edge = '{"big": 1152921504606847000, "pair": "\\ud83d\\ude00", "top": 9007199254740992}'
        status, made = await post_raw(relay, "/v1/approvals", approval_body(edge))
        assert status == 201, made
        status, _ = await relay.request("DELETE", f"/v1/approvals/{made['id']}")
        assert status == 200
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                f"{relay.url}/v1/approvals/{made['id']}/receipt", headers=relay.headers()
            ) as response,
        ):
            assert response.status == 200, await response.text()


# ---- /mcp: the tools' error results --------------------------------------------------------

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
VERSION = "2025-11-25"


async def mcp_session(http: aiohttp.ClientSession, relay: Relay) -> dict[str, str]:
    """Open a session; the headers that carry it."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
    headers = {**ACCEPT, "Authorization": f"Bearer {TOKEN}"}
    async with http.post(f"{relay.url}/mcp", json=init, headers=headers) as response:
        assert response.status == 200, await response.text()
        session = response.headers["mcp-session-id"]
        await response.read()
    headers = {**headers, "mcp-session-id": session, "mcp-protocol-version": VERSION}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    async with http.post(f"{relay.url}/mcp", json=note, headers=headers) as response:
        assert response.status == 202, await response.text()
    return headers


async def call_raw(
    http: aiohttp.ClientSession, relay: Relay, headers: dict[str, str], name: str, args: str
) -> dict[str, Any]:
    """``tools/call`` with ``args`` as raw JSON text: the JSON-RPC answer."""
    text = (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "'
        + name
        + '", "arguments": '
        + args
        + "}}"
    )
    body = text.encode("utf-8", "surrogatepass")
    async with http.post(f"{relay.url}/mcp", data=body, headers=headers) as response:
        raw = await response.text()
    for line in raw.splitlines():
        data = line.removeprefix("data:").strip()
        if data.startswith("{") and ('"result"' in data or '"error"' in data):
            return json.loads(data)  # type: ignore[no-any-return]
    raise AssertionError(raw)


# The MCP SDK's own JSON-RPC parser cannot read these: the door refuses them before it, with
# a JSON-RPC error (-32602) carrying the code; no tool result to give, and nothing asked.
SDK_REFUSES = {"escaped lone surrogate", "lone low surrogate", "surrogate in a key"}


@pytest.mark.parametrize("name", sorted(REFUSED))
async def test_mcp_tools_answer_an_error_result_for_each_case(name: str) -> None:
    inner = REFUSED[name]
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack) as relay,
        aiohttp.ClientSession() as http,
    ):
        headers = await mcp_session(http, relay)
        asked = await call_raw(
            http,
            relay,
            headers,
            "ask_user_question",
            '{"questions": [' + question_with(inner) + "]}",
        )
        approved = await call_raw(
            http,
            relay,
            headers,
            "approve_tool_use",
            '{"tool_name": "Bash", "input": {"command": "ls", "n": ' + inner + "}}",
        )
        assert slack.messages == []
    if name in SDK_REFUSES:
        for answer in (asked, approved):
            assert answer["id"] == 7, answer
            assert answer["error"]["code"] == -32602, answer
            assert answer["error"]["data"] == {"code": CODES[name]}, answer
            assert answer["error"]["message"].startswith("the message holds a lone surrogate")
        return
    result = asked["result"]
    assert result.get("isError") is True, asked
    assert result["content"][0]["text"].startswith("Error: the arguments "), asked
    assert result["content"][0]["text"].endswith(f"({CODES[name]})"), asked
    decision = json.loads(approved["result"]["content"][0]["text"])
    assert decision["behavior"] == "deny", decision
    assert decision["message"].startswith(
        f"relay could not read the permission request: {CODES[name]}: the arguments"
    ), decision


async def test_mcp_stdio_answers_a_lone_surrogate_with_its_code() -> None:
    """``relay mcp`` on stdio, driven line by line: the SDK would drop a message it cannot
    parse unanswered; the door answers that request's id with the code, and goes on."""
    import asyncio
    import os
    import sys

    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        env = {**os.environ, "RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "relay.cli",
            "mcp",
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert process.stdin is not None
        assert process.stdout is not None

        async def send(line: str) -> None:
            assert process.stdin is not None
            process.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
            await process.stdin.drain()

        async def answer(ident: int) -> dict[str, Any]:
            assert process.stdout is not None
            while True:
                line = await asyncio.wait_for(process.stdout.readline(), 60)
                assert line, "relay mcp closed its stdout"
                message = json.loads(line)
                if message.get("id") == ident:
                    return message  # type: ignore[no-any-return]

        try:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "probe", "version": "1"},
                },
            }
            await send(json.dumps(init))
            assert "result" in await answer(1)
            await send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
            args = '{"questions": [' + question_with(REFUSED["escaped lone surrogate"]) + "]}"
            await send(
                '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": '
                '{"name": "ask_user_question", "arguments": ' + args + "}}"
            )
            refused = await answer(2)
            assert refused["error"]["code"] == -32602, refused
            assert refused["error"]["data"] == {"code": "JSON_LONE_SURROGATE"}, refused
            # The session goes on: the next request is answered as usual.
            await send('{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}')
            assert "result" in await answer(3)
            assert slack.messages == []
        finally:
            process.stdin.close()
            await asyncio.wait_for(process.wait(), 30)
