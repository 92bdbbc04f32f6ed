"""Run an example as its user would: a new process, its own environment, output collected."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

__all__ = ["EXAMPLES", "example", "example_env"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example_env(**extra: str) -> dict[str, str]:
    """The environment without any relay or Slack setting of the developer's, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLACK_", "RELAY_")) and k not in ("REDIS_URL", "PORT")
    }
    return {**env, **extra}


async def example(
    name: str, *args: str, env: dict[str, str], timeout: float = 60
) -> tuple[int, str, str]:
    """Run ``examples/NAME ARGS`` to its end: exit code, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / name),
        *args,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()
