"""Each ``relay hook`` answers within the rules' timeout plus ``DECISION_GRACE`` of asking,
whatever the relay does: hangs before answering the POST, half-answers it, accepts it and
never answers the long-poll, half-answers that, drips bytes, or answers 503 for ever; the
answer is a deny saying the relay did not answer, and the question is withdrawn.

After posting, a hook answered only after 20-31 s where its bound was timeout + 15 s: the
withdraw after the deadline took its own 10 s, and per-call timeouts added up. A small
aiohttp stand-in relay misbehaves at each step; in-process runs use a short grace, and one
subprocess run per harness holds the real one.
"""

from __future__ import annotations

# Looks inside: the hook's deadline is tested on its decision step against a hanging relay.
import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from relay.cli import build_parser
from relay.cli.hook import _ask
from relay.gate.approval import DECISION_GRACE
from relay.gate.remote import WITHDRAW_WITHIN
from relay.gate.rules import load_rules
from relay.hooks import ADAPTERS
from relay.hooks.intake import load_event
from tests.gate_env import clean_env, write_rules
from tests.server_env import TOKEN, free_port

PAYLOADS = Path(__file__).parent / "payloads" / "hooks"
# One recorded payload per harness; the rules ask about everything.
PAYLOAD = {
    "claude-code": "claude-code-PermissionRequest",
    "codex": "codex-PermissionRequest",
    "copilot": "copilot-permissionRequest",
    "cursor": "cursor-beforeShellExecution",
}
TIMEOUT = 1
GRACE = WITHDRAW_WITHIN + 1.0  # short, but with room to withdraw the question
# What a process needs past its bound to exit (imports are before the question is posted).
MARGIN = 1.0
MODES = ("hang_post", "half_post", "hang_poll", "half_poll", "drip_poll", "unavailable")


@dataclass
class StandIn:
    """A relay that misbehaves as ``mode`` says, and hangs on every withdraw."""

    mode: str
    posted: dict[str, float] = field(default_factory=dict)
    """When each harness's question came (by the agent id's prefix, ``codex:…``)."""
    withdrawn: int = 0
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def _forever(self, request: web.Request) -> web.StreamResponse:
        await self.stop.wait()
        return web.Response(status=503)

    async def _half(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = 200
        await response.prepare(request)
        await response.write(b'{"id": "ap_1", "deci')
        await self.stop.wait()
        return response

    async def post(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.posted[body["agent"]["id"].split(":")[0]] = asyncio.get_running_loop().time()
        if self.mode == "hang_post":
            return await self._forever(request)
        if self.mode == "half_post":
            return await self._half(request)
        return web.json_response({"id": "ap_1", "status": "pending"}, status=201)

    async def get(self, request: web.Request) -> web.StreamResponse:
        if self.mode == "half_poll":
            return await self._half(request)
        if self.mode == "unavailable":  # the relay restarting, for ever: the hook retries
            body = {"error": {"code": "UNAVAILABLE", "message": "restarting"}}
            return web.json_response(body, status=503)
        if self.mode == "drip_poll":
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            while not self.stop.is_set():  # whitespace JSON allows, a byte at a time
                await response.write(b" ")
                await asyncio.sleep(0.2)  # (a slow relay stands in: the drip is the test)
            return response
        return await self._forever(request)

    async def delete(self, request: web.Request) -> web.StreamResponse:
        self.withdrawn += 1
        return await self._forever(request)


@asynccontextmanager
async def stand_in(mode: str) -> AsyncIterator[tuple[StandIn, str]]:
    relay = StandIn(mode)
    app = web.Application()
    app.router.add_post("/v1/approvals", relay.post)
    app.router.add_get("/v1/approvals/{id}", relay.get)
    app.router.add_delete("/v1/approvals/{id}", relay.delete)
    runner = web.AppRunner(app, shutdown_timeout=1)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield relay, f"http://127.0.0.1:{port}"
    finally:
        relay.stop.set()
        await runner.cleanup()


async def ask_through(harness: str, mode: str, rules_path: str) -> tuple[float, str, StandIn]:
    """Ask as ``relay hook HARNESS`` does, in-process with the short grace: the seconds
    from posting to the answer, the answer, and the stand-in."""
    async with stand_in(mode) as (relay, url):
        args = build_parser().parse_args(["hook", harness, "--relay-url", url])
        adapter = ADAPTERS[harness]
        call = adapter.read(load_event((PAYLOADS / f"{PAYLOAD[harness]}.json").read_bytes()), args)
        loop = asyncio.get_running_loop()
        started = loop.time()
        decision = await _ask(args, adapter, call, load_rules(rules_path), "/repo", grace=GRACE)
        answered = loop.time()
        assert decision is not None
        assert not hasattr(decision, "allowed") or not decision.allowed  # type: ignore[union-attr]
        reply = adapter.reply(call, decision)  # type: ignore[arg-type]
        assert relay.posted[harness] >= started
        return answered - relay.posted[harness], json.dumps(reply.output), relay


@pytest.mark.parametrize("harness", sorted(PAYLOAD))
async def test_each_hook_answers_within_its_bound_whatever_the_relay_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, harness: str
) -> None:
    monkeypatch.setenv("RELAY_TOKEN", TOKEN)
    rules = write_rules(tmp_path, f'timeout = {TIMEOUT}\ndefault = "ask"\n')
    runs = await asyncio.gather(*(ask_through(harness, mode, rules) for mode in MODES))
    for mode, (took, answer, relay) in zip(MODES, runs, strict=True):
        assert took < TIMEOUT + GRACE + 0.5, (mode, took)
        assert "deny" in answer, (mode, answer)
        assert f"relay got no decision within {TIMEOUT + GRACE:g} s" in answer, (mode, answer)
        # Once the relay gave the approval an id, the hook tried to withdraw it.
        assert relay.withdrawn == (mode not in ("hang_post", "half_post")), mode


async def run_hook(harness: str, url: str, rules: str) -> tuple[float, str]:
    """``relay hook HARNESS`` as a subprocess: when it exited, and what it answered."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        "hook",
        harness,
        "--rules",
        rules,
        env=clean_env(RELAY_URL=url, RELAY_TOKEN=TOKEN),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdin = (PAYLOADS / f"{PAYLOAD[harness]}.json").read_bytes()
    bound = TIMEOUT + DECISION_GRACE + MARGIN + 30
    out, err = await asyncio.wait_for(process.communicate(stdin), bound)
    assert process.returncode == 0, err
    return asyncio.get_running_loop().time(), out.decode()


async def test_the_real_hooks_answer_within_timeout_plus_the_grace(tmp_path: Path) -> None:
    """As the harnesses run them, with the documented ``DECISION_GRACE``: a relay that
    accepts the question and never answers the long-poll."""
    rules = write_rules(tmp_path, f'timeout = {TIMEOUT}\ndefault = "ask"\n')
    async with stand_in("hang_poll") as (relay, url):
        runs = await asyncio.gather(*(run_hook(harness, url, rules) for harness in PAYLOAD))
        assert len(relay.posted) == len(PAYLOAD)
        assert relay.withdrawn == len(PAYLOAD)
    for harness, (ended, out) in zip(PAYLOAD, runs, strict=True):
        took = ended - relay.posted[harness]
        # It waited (the decision until the time kept for the withdraw), then answered.
        assert took > TIMEOUT + DECISION_GRACE - WITHDRAW_WITHIN - 0.5, (harness, took)
        assert took < TIMEOUT + DECISION_GRACE + MARGIN, (harness, took)
        assert f"relay got no decision within {TIMEOUT + DECISION_GRACE:g} s" in out, out
