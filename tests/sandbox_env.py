"""`relay serve --sandbox` started as a user starts it: a subprocess on a free port."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from tests.server_env import Relay, free_port, start_relay

TOKEN = "sandbox-test-token-0123456789"
ALICE, BOB, CAROL, DAVE = "U0SBALICE", "U0SBBOB", "U0SBCAROL", "U0SBDAVE"


def sandbox_env(port: int, **extra: str) -> dict[str, str]:
    """The environment of a test sandbox: nothing from the developer's shell but PATH & co."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLACK_", "RELAY_")) and k not in ("REDIS_URL", "PORT")
    }
    env.update(PORT=str(port), RELAY_API_TOKENS=TOKEN, PYTHONUNBUFFERED="1", **extra)
    return env


@asynccontextmanager
async def running_sandbox(**extra: str) -> AsyncIterator[Relay]:
    """``relay serve --sandbox`` on a free port, stopped with SIGTERM afterwards (exit 0)."""
    relay = await start_relay(sandbox_env(free_port(), **extra), "--sandbox")
    try:
        yield relay
    finally:
        code = await relay.stop()
        assert code == 0, f"the sandbox exited with {code}; log:\n{''.join(relay.log)}"
