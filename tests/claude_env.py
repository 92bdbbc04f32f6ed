"""The real Claude Code CLI, offline: ``claude -p`` against a scripted Messages API served here.

Claude Code (the npm package ``@anthropic-ai/claude-code``, pinned in ``scripts/test`` and
installed into ``.venv/npm``; its native binary needs no Node of its own) takes
``ANTHROPIC_BASE_URL``. The script answers a turn that has no tool result yet with one
``Bash`` tool use (id ``toolu_e2e``) and any later turn with ``done``; each request is kept.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.cli_harness import RELAY, event_stream, finished, serve_model, start_cli

TOOL_USE_ID = "toolu_e2e"


@dataclass
class ScriptedClaude:
    """A Messages API that runs ``command`` with Bash (or the shell tool named ``tool``:
    Copilot's is ``bash``) once, then says ``done``."""

    command: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    tool: str = "Bash"
    parallel: tuple[str, ...] = ()
    """More commands asked for in the same turn, as parallel tool calls (``toolu_e2e_2``…)."""

    def results(self) -> list[str]:
        """The tool results Claude Code sent back for the scripted call."""
        return [
            json.dumps(block.get("content"))
            for body in self.requests
            for message in body.get("messages", [])
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_result" and block.get("tool_use_id") == TOOL_USE_ID
        ]

    def all_results(self) -> dict[str, str]:
        """Every tool result Claude Code sent back, by tool use id."""
        return {
            block["tool_use_id"]: json.dumps(block.get("content"))
            for body in self.requests
            for message in body.get("messages", [])
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        }

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        tools = {t.get("name") for t in body.get("tools", [])}
        blocks: list[tuple[dict[str, Any], dict[str, Any]]] = []
        if self.tool in tools and not self.results():
            for number, command in enumerate((self.command, *self.parallel), start=1):
                arguments = {"command": command, "description": "the task needs it"}
                use = TOOL_USE_ID if number == 1 else f"{TOOL_USE_ID}_{number}"
                block = {"type": "tool_use", "id": use, "name": self.tool, "input": arguments}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
                blocks.append((block, delta))
            stop = "tool_use"
        else:
            block = {"type": "text", "text": "done"}
            blocks.append((block, {"type": "text_delta", "text": "done"}))
            stop = "end_turn"
        return anthropic_reply(body, blocks, stop, number=len(self.requests))


def anthropic_reply(
    body: dict[str, Any],
    blocks: list[tuple[dict[str, Any], dict[str, Any]]],
    stop: str,
    *,
    number: int,
) -> web.StreamResponse:
    """A Messages API reply of ``blocks`` (each a content block and the delta that streams
    it), streamed as server-sent events when the request asked for a stream."""
    message = {
        "id": f"msg_{number}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    if not body.get("stream"):
        content = [block for block, _ in blocks]
        return web.json_response({**message, "content": content, "stop_reason": stop})
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for index, (block, delta) in enumerate(blocks):
        kind = block["type"]
        start = {**block, "input": {}} if kind == "tool_use" else {**block, "text": ""}
        events += [
            {"type": "content_block_start", "index": index, "content_block": start},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]
    return event_stream(events)


@asynccontextmanager
async def scripted_claude(
    command: str, tool: str = "Bash", parallel: tuple[str, ...] = ()
) -> AsyncIterator[ScriptedClaude]:
    """The scripted API on a free loopback port (``parallel``: more calls in the same turn)."""
    model = ScriptedClaude(command, tool=tool, parallel=parallel)
    async with serve_model("/v1/messages", model._messages, {}) as url:
        model.url = url
        yield model


def hook_settings(path: Path, rules: str, *extra: str) -> Path:
    """A ``--settings`` file whose ``PreToolUse`` hook on Bash is ``relay hook claude-code``."""
    command = " ".join([str(RELAY), "hook", "claude-code", "--rules", rules, *extra])
    return settings_file(path, "PreToolUse", "Bash", command)


def settings_file(path: Path, event: str, matcher: str, command: str) -> Path:
    """A ``--settings`` file with one ``event`` hook (on tools ``matcher``) running ``command``."""
    hook = {"type": "command", "command": command, "timeout": 120, "onFailure": "block"}
    path.write_text(json.dumps({"hooks": {event: [{"matcher": matcher, "hooks": [hook]}]}}))
    return path


def claude_env(home: Path, model: ScriptedClaude, **extra: str) -> dict[str, str]:
    """The environment of an offline run: its own ``HOME``, the scripted API, no traffic."""
    from tests.gate_env import clean_env

    home.mkdir(parents=True, exist_ok=True)
    return clean_env(
        HOME=str(home),
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="offline",
        DISABLE_TELEMETRY="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        **extra,
    )


async def claude(workdir: Path, env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    """Start ``claude -p ARGS --output-format json`` in ``workdir``."""
    args = ("-p", *args, "--output-format", "json")
    return await start_cli("claude", "Claude Code", *args, cwd=workdir, env=env)


async def result(process: asyncio.subprocess.Process) -> dict[str, Any]:
    """The run's final JSON (``--output-format json``)."""
    loaded: dict[str, Any] = json.loads(await finished(process, 120))
    return loaded
