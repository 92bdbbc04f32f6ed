"""The real Codex CLI, offline: ``codex exec`` against a scripted Responses API served here.

Codex (the npm package ``@openai/codex``, pinned in ``scripts/test`` and installed into
``.venv/npm``) takes a custom model provider whose ``base_url`` serves ``POST /responses``
as server-sent events. The script answers the first turn with one ``exec_command`` call
(asking for escalated permissions, so Codex's approval path and its ``PermissionRequest``
hook run) and, once the call's output comes back, with a final message. ``--approve-for-me``
routes approvals through Codex's automatic review, which runs the hooks first; hooks are
configured in ``$CODEX_HOME/hooks.json`` and run without the interactive trust review
(``--dangerously-bypass-hook-trust``).
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

from tests.cli_harness import RELAY, event_stream, serve_model, start_cli


@dataclass
class ScriptedModel:
    """A Responses API that runs ``command`` once (or, given ``tool``, calls that MCP tool
    with ``arguments``), then says ``done``; it keeps each request."""

    command: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)

    def outputs(self) -> list[str]:
        """The outputs Codex sent back for the scripted call."""
        return [
            json.dumps(item.get("output"))
            for body in self.requests
            for item in body.get("input", [])
            if item.get("type") == "function_call_output" and item.get("call_id") == "call_1"
        ]

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        answered = any(i.get("type") == "function_call_output" for i in body.get("input", []))
        n = len(self.requests)
        if answered:
            item: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{n}",
                "content": [{"type": "output_text", "text": "done"}],
            }
        else:
            name, arguments = (
                "exec_command",
                {
                    "cmd": self.command,
                    "sandbox_permissions": "require_escalated",
                    "justification": "the task needs it",
                },
            )
            item = {"type": "function_call", "id": "fc_1", "call_id": "call_1"}
            if self.tool is not None:
                # An MCP server's tools come as one "namespace" tool (mcp__<server>).
                name, arguments = self.tool, self.arguments
                item["namespace"] = next(
                    str(t.get("name"))
                    for t in body.get("tools", [])
                    if t.get("type") == "namespace"
                    and any(sub.get("name") == self.tool for sub in t.get("tools", []))
                )
            item |= {"name": name, "arguments": json.dumps(arguments)}
        usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
        events = [
            {"type": "response.created", "response": {"id": f"resp_{n}"}},
            {"type": "response.output_item.done", "item": item},
            {"type": "response.completed", "response": {"id": f"resp_{n}", "usage": usage}},
        ]
        return event_stream(events)


@asynccontextmanager
async def scripted_model(
    command: str, *, tool: str | None = None, arguments: dict[str, Any] | None = None
) -> AsyncIterator[ScriptedModel]:
    """The scripted API on a free loopback port."""
    model = ScriptedModel(command, tool=tool, arguments=arguments or {})
    async with serve_model("/v1/responses", model._responses, {"models": [], "data": []}) as url:
        model.url = f"{url}/v1"
        yield model


def codex_home(
    home: Path, model: ScriptedModel, hooks: dict[str, Any], extra_config: str = ""
) -> Path:
    """A ``CODEX_HOME`` whose provider is ``model``, whose hooks are ``hooks``, and whose
    ``config.toml`` ends with ``extra_config``."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        'model = "scripted"\nmodel_provider = "scripted"\n\n'
        "[model_providers.scripted]\n"
        'name = "scripted"\n'
        f'base_url = "{model.url}"\n'
        'env_key = "SCRIPTED_API_KEY"\n'
        'wire_api = "responses"\n' + extra_config
    )
    (home / "hooks.json").write_text(json.dumps({"hooks": hooks}))
    return home


def relay_hook(
    event: str, rules: str, timeout: int = 120, *, capture: Path | None = None
) -> dict[str, Any]:
    """One hooks.json entry running ``relay hook codex`` for ``event`` (its stdin and stdout
    also appended to ``capture``.in and ``capture``.out, given one)."""
    command = f"{RELAY} hook codex --rules {rules}"
    if capture is not None:
        command = f"tee -a {capture}.in | {command} | tee -a {capture}.out"
    return {event: [{"hooks": [{"type": "command", "command": command, "timeout": timeout}]}]}


def captured(capture: Path) -> tuple[Any, Any]:
    """The one hook input and the one output a ``relay_hook(capture=…)`` entry saw."""
    (sent,) = Path(f"{capture}.in").read_text().splitlines()
    (answered,) = Path(f"{capture}.out").read_text().splitlines()
    return json.loads(sent), json.loads(answered)


async def codex_exec(
    workdir: Path, env: dict[str, str], prompt: str = "make the file", *, auto_review: bool = True
) -> asyncio.subprocess.Process:
    """Start ``codex exec`` in ``workdir`` (``env`` names the ``CODEX_HOME``); without
    ``auto_review`` its approval policy stays ``never``."""
    review = ["--approve-for-me"] if auto_review else []
    args = ("exec", "--skip-git-repo-check", *review, "--dangerously-bypass-hook-trust", prompt)
    env = {"SCRIPTED_API_KEY": "offline", **env}
    return await start_cli("codex", "@openai/codex", *args, cwd=workdir, env=env)
