"""``relay hook`` and ``relay exec`` run as harnesses run them: subprocesses, stdin to stdout."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Run", "clean_env", "start", "write_rules"]


def clean_env(**extra: str) -> dict[str, str]:
    """The developer's environment without any relay or Slack setting, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLACK_", "RELAY_", "GITHUB_", "GITLAB_", "CI"))
    }
    env.update(extra)
    return env


@dataclass
class Run:
    """A finished run: exit code, stdout, stderr."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        """stdout as JSON."""
        return json.loads(self.out)


async def start(
    *args: str, env: dict[str, str], stdin: str | None = None, cwd: Path | None = None
) -> asyncio.subprocess.Process:
    """Start ``relay ARGS`` with ``stdin`` written and closed."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        *args,
        env=env,
        cwd=cwd,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None
    if stdin is not None:
        process.stdin.write(stdin.encode())
    process.stdin.close()
    return process


async def finish(process: asyncio.subprocess.Process, timeout: float = 60) -> Run:
    """Wait for ``process`` and collect what it wrote."""
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None
    return Run(process.returncode, out.decode(), err.decode())


def write_rules(tmp: Path, text: str) -> str:
    """A rules file with ``text``; its path."""
    path = tmp / "relay-rules.toml"
    path.write_text(text)
    return str(path)
