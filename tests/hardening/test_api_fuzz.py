"""The relay API fuzzed from its own OpenAPI document, its body cap, and its token boundary.

``relay serve`` runs as a subprocess with its FakeSlack on a thread of its own, so that
schemathesis' synchronous calls and this test's own loop can both talk to it over HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.config._checks import (
    NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES,
    NegativeDataRejectionConfig,
)
from schemathesis.specs.openapi.checks import (
    negative_data_rejection,
    positive_data_acceptance,
)

from relay.server.errors import status_for
from relay.server.openapi import ERROR_CODES, openapi_document
from relay.testing import FakeSlack
from tests.server_env import (
    BOT_TOKEN,
    OTHER_TOKEN,
    SECRET,
    TOKEN,
    free_port,
    relay_env,
    start_relay,
)

EXAMPLES = 100  # per API operation and generation mode
AUTH_EXAMPLES = 150
MAX_BODY = 4096
ASK = {"questions": [{"id": "go", "question": "Ship it?", "options": [{"label": "yes"}]}]}


class ThreadedRelay:
    """``relay serve`` (a subprocess) and its FakeSlack, driven from an event loop in a thread
    of their own, so that synchronous schemathesis calls cannot block the fake."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.slack: FakeSlack | None = None
        self.log: list[str] = []
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="relay-serve", daemon=True)

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(30) or self._failure is not None:
            raise RuntimeError(f"relay did not start: {self._failure!r}")

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        assert not self._thread.is_alive(), "relay serve did not shut down"
        if self._failure is not None:
            raise self._failure

    def slack_calls(self, method: str) -> int:
        """How many calls of ``method`` the fake Slack has answered (a snapshot)."""
        assert self.slack is not None
        return len([c for c in list(self.slack.calls) if c.method == method])

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:
            self._failure = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with FakeSlack(signing_secret=SECRET) as slack:
            self.slack = slack
            env = relay_env(
                slack,
                self.port,
                RELAY_MAX_WAIT="0.05",  # fuzzed ?wait= values must not stall the run
                RELAY_MAX_BODY=str(MAX_BODY),
                RELAY_RATE_LIMIT="100000",  # fuzzing sends requests as fast as it can
            )
            relay = await start_relay(env)
            self.log = relay.log
            self._ready.set()
            try:
                await self._stop.wait()
            finally:
                await relay.stop()


@pytest.fixture(scope="module")
def relay() -> Iterator[ThreadedRelay]:
    server = ThreadedRelay()
    server.start()
    try:
        yield server
    finally:
        server.stop()


# The document the relay serves at /openapi.json (the first test checks they are the same).
schema = schemathesis.openapi.from_dict(openapi_document())
# Unknown headers and query parameters are ignored, as HTTP APIs do; the body is strict.
schema.config.generation.update(max_examples=EXAMPLES, allow_extra_parameters=False)
# A fuzzed body over the cap is refused with 413 (documented): that is a rejection too.
schema.config.checks.negative_data_rejection = NegativeDataRejectionConfig(
    expected_statuses=[*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "413"]
)


def test_the_fuzzed_document_is_the_one_the_relay_serves(relay: ThreadedRelay) -> None:
    async def served() -> Any:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{relay.url}/openapi.json") as response,
        ):
            return await response.json()

    assert asyncio.run(served()) == json.loads(json.dumps(openapi_document()))


def assert_documented_error(status: int, body: Any) -> None:
    """An error is ``{"error": {"code", "message"}}`` with a documented code and its status."""
    assert isinstance(body, dict), body
    assert set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error.get("code"), str), body
    assert isinstance(error.get("message"), str), body
    assert error["message"].strip(), body
    assert error["code"] in ERROR_CODES, body
    assert status_for(error["code"]) == status, body


def surrogates(value: Any) -> bool:
    """Whether ``value`` holds a surrogate code point anywhere (keys included)."""
    if isinstance(value, str):
        return any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, dict):
        return any(surrogates(k) or surrogates(v) for k, v in value.items())
    if isinstance(value, list):
        return any(surrogates(v) for v in value)
    return False


@schema.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck))
def test_every_generated_request_is_answered_as_documented(relay: ThreadedRelay, case: Any) -> None:
    # The generated case carries the token; schemathesis' ignored_auth check also sends it
    # without one and with a made-up one, and wants the 401.
    # The schema cannot say that an intent must name one of its question's options, or that
    # a plan review needs a detail: a schema-valid body may still be a 400.
    excluded = [positive_data_acceptance]
    if surrogates(case.body):
        # Generated strings may hold a high and a low surrogate apart; sent as JSON they are
        # one character, so "too long by one" is not, and the server rightly takes the body.
        excluded.append(negative_data_rejection)
    response = case.call_and_validate(
        base_url=relay.url,
        headers={"Authorization": f"Bearer {TOKEN}"},
        excluded_checks=excluded,
    )
    assert response.status_code < 500, response.text
    if response.status_code >= 400 and case.path.startswith("/v1/"):
        assert_documented_error(response.status_code, response.json())


# ---- the body cap ---------------------------------------------------------------------------


async def raw_request(relay: ThreadedRelay, head: str, chunks: list[bytes]) -> tuple[int, bytes]:
    """Send ``head`` and ``chunks`` and read the answer, never sending anything else."""
    reader, writer = await asyncio.open_connection("127.0.0.1", relay.port)
    try:
        writer.write(head.encode())
        for chunk in chunks:
            writer.write(chunk)
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), 5)
        headers = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        length = next(
            int(line.split(b":")[1])
            for line in headers.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        body = await asyncio.wait_for(reader.readexactly(length), 5)
        return int(status_line.split()[1]), body
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def head(path: str, *, length: int | None, token: str | None = TOKEN) -> str:
    lines = [f"POST {path} HTTP/1.1", "Host: relay", "Content-Type: application/json"]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    chunked = length is None
    lines.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}")
    return "\r\n".join(lines) + "\r\n\r\n"


async def test_a_body_declared_over_the_cap_is_refused_before_it_is_sent(
    relay: ThreadedRelay,
) -> None:
    # 100 MB announced, 1 kB sent: only a relay that refuses without reading can answer.
    status, body = await raw_request(relay, head("/v1/asks", length=100_000_000), [b"{" * 1024])
    assert status == 413
    assert_documented_error(status, json.loads(body))


async def test_a_chunked_body_over_the_cap_is_refused_before_it_ends(relay: ThreadedRelay) -> None:
    posts = relay.slack_calls("chat.postMessage")
    chunk = b'{"questions": [' + b" " * (MAX_BODY + 100)
    # One chunk past the cap and no terminating chunk: reading it whole would never end.
    status, body = await raw_request(
        relay, head("/v1/asks", length=None), [f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"]
    )
    assert status == 413
    assert_documented_error(status, json.loads(body))
    assert relay.slack_calls("chat.postMessage") == posts


async def test_a_large_body_without_a_token_is_refused_before_it_is_read(
    relay: ThreadedRelay,
) -> None:
    status, body = await raw_request(
        relay, head("/v1/asks", length=100_000_000, token=None), [b"x" * 1024]
    )
    assert status == 401
    assert_documented_error(status, json.loads(body))


async def test_a_slack_request_over_its_cap_is_refused_before_it_is_sent(
    relay: ThreadedRelay,
) -> None:
    # Slack's payloads echo whole messages, so /slack/events takes up to 2 MiB; not 100 MB.
    stamp = str(int(time.time()))
    request = head("/slack/events", length=100_000_000, token=None).replace(
        "Content-Type: application/json",
        "Content-Type: application/x-www-form-urlencoded\r\n"
        f"X-Slack-Request-Timestamp: {stamp}\r\nX-Slack-Signature: v0={'0' * 64}",
    )
    status, body = await raw_request(relay, request, [b"payload=" + b"x" * (3 * 2**20)])
    assert status == 413
    assert_documented_error(status, json.loads(body))


async def test_a_body_at_the_cap_is_read(relay: ThreadedRelay) -> None:
    text = json.dumps(ASK)
    body = text[:-1] + " " * (MAX_BODY - len(text)) + "}"
    assert len(body) == MAX_BODY
    status, answer = await raw_request(relay, head("/v1/asks", length=MAX_BODY), [body.encode()])
    assert status == 201, answer


# ---- tokens: nothing readable or changeable without the right one ---------------------------

authorizations = st.one_of(
    st.none(),
    st.text(st.characters(exclude_categories=["Cc", "Cs"]), max_size=60).map(
        lambda t: "Bearer " + t
    ),
    st.sampled_from(
        [
            "",
            "Bearer",
            "Bearer ",
            f"Basic {TOKEN}",
            f"Token {TOKEN}",
            f"Bearer {TOKEN[:-1]}",
            f"Bearer {TOKEN}x",
            f"Bearer {TOKEN},{OTHER_TOKEN}",
            f"Bearer {TOKEN.upper()}",
            f"Bearer {TOKEN} {TOKEN}",
            f"Bearer\t{TOKEN}",
            TOKEN,
            f"Bearer {BOT_TOKEN}",
            f"Bearer {SECRET}",
        ]
    ),
).filter(lambda h: h is None or h.partition(" ")[2].strip() not in (TOKEN, OTHER_TOKEN))


@pytest.fixture
async def owned_ask(relay: ThreadedRelay) -> str:
    """A pending ask created with ``TOKEN``, for this test alone."""
    status, record = await call(relay, "POST", "/v1/asks", f"Bearer {TOKEN}", json=ASK)
    assert status == 201
    return str(record["id"])


async def call(
    relay: ThreadedRelay, method: str, path: str, authorization: str | None, **kw: Any
) -> tuple[int, Any]:
    headers = {} if authorization is None else {"Authorization": authorization}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, relay.url + path, headers=headers, **kw) as response,
    ):
        return response.status, await response.json(content_type=None)


@settings(
    max_examples=AUTH_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    authorization=authorizations,
    route=st.sampled_from(["GET", "GET?wait", "DELETE", "POST", "POST?wait"]),
)
async def test_without_the_owners_token_nothing_is_readable_or_changeable(
    relay: ThreadedRelay, owned_ask: str, authorization: str | None, route: str
) -> None:
    posts, updates = relay.slack_calls("chat.postMessage"), relay.slack_calls("chat.update")
    method, _, wait = route.partition("?")
    path = "/v1/asks" if method == "POST" else f"/v1/asks/{owned_ask}"
    status, body = await call(
        relay, method, path + ("?wait=1" if wait else ""), authorization, json=ASK
    )
    assert status == 401
    assert_documented_error(status, body)
    assert owned_ask not in json.dumps(body)  # nothing about the ask leaks into the refusal
    assert relay.slack_calls("chat.postMessage") == posts
    assert relay.slack_calls("chat.update") == updates
    status, record = await call(relay, "GET", f"/v1/asks/{owned_ask}", f"Bearer {TOKEN}")
    assert (status, record["status"]) == (200, "pending")


async def test_another_tokens_ask_is_reported_exactly_like_a_missing_one(
    relay: ThreadedRelay, owned_ask: str
) -> None:
    other = f"Bearer {OTHER_TOKEN}"
    updates = relay.slack_calls("chat.update")
    for method in ("GET", "DELETE"):
        theirs = await call(relay, method, f"/v1/asks/{owned_ask}", other)
        missing = await call(relay, method, "/v1/asks/no-such-ask-000000", other)
        assert theirs[0] == missing[0] == 404
        assert_documented_error(*theirs)
        assert theirs[1]["error"]["message"].replace(owned_ask, "X") == missing[1]["error"][
            "message"
        ].replace("no-such-ask-000000", "X")
    assert relay.slack_calls("chat.update") == updates  # the DELETE withdrew nothing
    status, record = await call(relay, "GET", f"/v1/asks/{owned_ask}", f"Bearer {TOKEN}")
    assert (status, record["status"]) == (200, "pending")
    # The control: the owner's own token can change it.
    status, record = await call(relay, "DELETE", f"/v1/asks/{owned_ask}", f"Bearer {TOKEN}")
    assert (status, record["status"]) == (200, "aborted")
