"""The bare program: agents waiting for an answer with no relay at all, the baseline of the
collector benchmark.

Each agent is an asyncio task that holds a request (``bench.common.request``, the one an
embedding program's agent passes to ``ask()``) and awaits a future of its own; a signed
click (``POST /slack/events``, checked and parsed as the floor does) resolves the future of
the agent it names. What the collector walks here is what a program's own N waiting tasks
cost it, whatever library they wait on.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse

from aiohttp import web
from slack_sdk.signature import SignatureVerifier

from bench.common import SECRET, USER, request, signed_payload

__all__ = ["WaitingAgents", "bare_click_body", "bare_program_app"]

_WAVE = 200


class WaitingAgents:
    """Agents each awaiting a future of their own, started in waves as ``bench.server``'s."""

    def __init__(self, *, wave: int = _WAVE) -> None:
        self.wave = wave
        self.started = 0
        self.answered = 0
        self.failed = 0
        self._waiting: dict[int, asyncio.Future[str]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def posted(self) -> int:
        """Agents that started waiting (nothing is posted anywhere: every one of them)."""
        return self.started

    async def _agent(self, number: int) -> None:
        held = request(number)
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[number] = answer
        await answer
        self.answered += len(held.questions)

    def answer(self, number: int, label: str) -> bool:
        """Answer the agent ``number``; whether it was waiting."""
        waiting = self._waiting.pop(number, None)
        if waiting is None:
            return False
        waiting.set_result(label)
        return True

    async def ask(self, count: int) -> float:
        """Start ``count`` more agents; the seconds until all of them wait."""
        began = time.perf_counter()
        target = self.started + count
        while self.started < target:
            wave = min(self.wave, target - self.started)
            for number in range(self.started, self.started + wave):
                task = asyncio.create_task(self._agent(number))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            self.started += wave
            await asyncio.sleep(0)  # let the wave's agents run up to their await
        return time.perf_counter() - began

    async def count_pending(self) -> int:
        """Agents still waiting."""
        return len(self._waiting)

    async def close(self) -> None:
        """Cancel the agents still waiting."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def bare_click_body(number: int, *, user: str = USER) -> bytes:
    """The form body of a click that answers the bare program's agent ``number``."""
    payload = {
        "type": "block_actions",
        "user": {"id": user},
        "actions": [{"action_id": "bare.answer", "block_id": "bare", "value": str(number)}],
    }
    return urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()


def bare_program_app(agents: WaitingAgents, *, secret: str = SECRET) -> web.Application:
    """``POST /slack/events``: check the signature, parse the click, answer its agent."""
    verifier = SignatureVerifier(secret)

    async def handle(http: web.Request) -> web.Response:
        payload = await signed_payload(verifier, http)
        if payload is None:
            return web.Response(status=401)
        action = payload["actions"][0]
        found = agents.answer(int(action["value"]), action["action_id"])
        return web.Response(status=200 if found else 404)

    app = web.Application()
    app.router.add_post("/slack/events", handle)
    return app
