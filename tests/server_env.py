"""``relay serve`` started as users start it: a subprocess, configured by its environment."""

from __future__ import annotations

# Looks inside: a relay process adopted by a test (its own Relay helper) starts its own log reader.
import asyncio
import contextlib
import os
import resource
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from redis_server import free_port

from relay.server.main import SHUTDOWN_TIMEOUT
from relay.testing import FakeSlack
from tests.slack_env import WORKSPACE_CHANNELS

TOKEN = "token-for-agent-one-0123456789"
OTHER_TOKEN = "token-for-agent-two-9876543210"
BOT_TOKEN = "xoxb-1234-5678-secretbottoken"
SECRET = "server-signing-secret"
CHANNEL = "C0SERVER"


@dataclass
class Relay:
    """A running ``relay serve`` process and how to talk to it."""

    url: str
    port: int
    process: asyncio.subprocess.Process
    env: dict[str, str]
    log: list[str] = field(default_factory=list)
    _reader: asyncio.Task[None] | None = None

    def headers(self, token: str = TOKEN) -> dict[str, str]:
        """The API's auth header."""
        return {"Authorization": f"Bearer {token}"}

    async def request(
        self, method: str, path: str, *, token: str | None = TOKEN, **kw: Any
    ) -> tuple[int, Any]:
        """One API call; returns the status and the decoded JSON body."""
        headers = kw.pop("headers", {})
        if token is not None:
            headers = {**self.headers(token), **headers}
        async with (
            aiohttp.ClientSession() as session,
            session.request(method, self.url + path, headers=headers, **kw) as response,
        ):
            text = await response.text()
            try:
                return response.status, await response.json(content_type=None)
            except ValueError:
                return response.status, text

    async def metric(self, name: str) -> float | None:
        """The current value of an unlabelled metric from ``/metrics``."""
        _, text = await self.request("GET", "/metrics", token=None)
        for line in str(text).splitlines():
            if line.startswith(f"{name} "):
                return float(line.split()[1])
        return None

    async def wait_for_metric(self, name: str, value: float, timeout: float = 10.0) -> None:
        """Wait until metric ``name`` reads ``value`` (the relay has no event to await for
        it, so this reads ``/metrics`` until it does, failing after ``timeout``)."""
        deadline = time.monotonic() + timeout
        seen = await self.metric(name)
        while seen != value:
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} is {seen}, not {value}, after {timeout} s")
            await asyncio.sleep(0.02)
            seen = await self.metric(name)

    async def wait_for_log(self, fragment: str, timeout: float = 10.0) -> str:
        """The first log line containing ``fragment`` (waits for it)."""
        try:
            return await asyncio.wait_for(self._find(fragment), timeout)
        except TimeoutError:
            raise AssertionError(
                f"no log line with {fragment!r} in {timeout} s; log:\n{''.join(self.log)}"
            ) from None

    async def _find(self, fragment: str) -> str:
        while True:
            for line in self.log:
                if fragment in line:
                    return line
            if self._eof:
                raise AssertionError(f"relay exited; log:\n{''.join(self.log)}")
            self._changed.clear()
            await self._changed.wait()

    def __post_init__(self) -> None:
        self._changed = asyncio.Event()
        self._eof = False

    async def _read(self) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            self.log.append(line.decode(errors="replace"))
            self._changed.set()
        self._eof = True
        self._changed.set()

    async def stop(self, sig: int = signal.SIGTERM) -> int:
        """Stop the process (SIGTERM: graceful; SIGKILL: a crash) and return its exit code."""
        if self.process.returncode is None:
            self.process.send_signal(sig)
        # A bound, not a wait: relay serve's own shutdown is bounded at about 3 x its
        # SHUTDOWN_TIMEOUT (requests in flight, then the Slack updates owed, then receipts,
        # webhooks and the store), which a replica that just ended 500 asks can use up.
        try:
            code = await asyncio.wait_for(self.process.wait(), 4 * SHUTDOWN_TIMEOUT)
        except TimeoutError:
            self.process.kill()  # (not left running past the test)
            await self.process.wait()
            if self._reader is not None:
                await self._reader
            tail = "".join(self.log[-40:])
            raise AssertionError(
                f"relay serve did not exit on signal {sig}; log:\n{tail}"
            ) from None
        if self._reader is not None:
            await self._reader
        return code


def relay_env(slack: FakeSlack, port: int, **extra: str) -> dict[str, str]:
    """The environment a test relay runs with (nothing from the developer's shell)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLACK_", "RELAY_")) and k not in ("REDIS_URL", "PORT")
    }
    env.update(
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=slack.base_url,
        RELAY_API_TOKENS=f"{TOKEN},{OTHER_TOKEN}",
        RELAY_CHANNEL=CHANNEL,
        RELAY_MAX_WAIT="10",
        PORT=str(port),
        RELAY_HOST="127.0.0.1",
    )
    env.update(extra)
    # The workspace issued the relay its tokens and holds its channel: FakeSlack takes no
    # other (as Slack answers invalid_auth / channel_not_found).
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"):
        if env.get(name):
            slack.issue_token(env[name])
    listed = env.get("RELAY_ALLOWED_CHANNELS", "").split(",")
    for channel in (env.get("RELAY_CHANNEL", ""), *listed, *WORKSPACE_CHANNELS):
        if channel[:1] in ("C", "G") and channel not in slack.channels:
            slack.add_channel(channel)
    return env


async def start_relay(env: dict[str, str], *args: str, max_files: int | None = None) -> Relay:
    """Start ``relay serve`` and wait until it says it is listening; ``max_files`` lowers
    its descriptor limit (``RLIMIT_NOFILE``), as a container's would be."""

    def limit_files() -> None:
        if max_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (max_files, max_files))

    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        "serve",
        *args,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=limit_files if max_files is not None else None,
    )
    port = int(env["PORT"])
    relay = Relay(url=f"http://127.0.0.1:{port}", port=port, process=process, env=env)
    relay._reader = asyncio.create_task(relay._read())
    try:
        # Generous: it starts in ~1 s of CPU, but a machine busy with parallel tests may
        # give it that over many more seconds; a relay that fails exits and fails at once.
        await relay.wait_for_log("relay listening", timeout=60)
    except BaseException:
        await relay.stop(signal.SIGKILL)
        raise
    return relay


@asynccontextmanager
async def relay_server(
    slack: FakeSlack, *, socket_mode: bool = False, **extra: str
) -> AsyncIterator[Relay]:
    """A ``relay serve`` process wired to ``slack`` (clicks go to its /slack/events)."""
    port = free_port()
    if socket_mode:
        extra = {"SLACK_APP_TOKEN": "xapp-1-server", "SLACK_SIGNING_SECRET": "", **extra}
    relay = await start_relay(relay_env(slack, port, **extra))
    if not socket_mode:
        slack.interactivity_url = f"{relay.url}/slack/events"
    try:
        yield relay
    finally:
        with contextlib.suppress(ProcessLookupError):
            await relay.stop()


async def run_to_exit(
    env: dict[str, str], *args: str, within: float = 20.0
) -> tuple[int, list[str]]:
    """Run ``relay serve`` until it exits by itself; its exit code and stderr lines."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        "serve",
        *args,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, err = await asyncio.wait_for(process.communicate(), within)
    except TimeoutError:
        process.kill()
        _, err = await process.communicate()
        raise AssertionError(f"relay serve did not exit in {within} s:\n{err.decode()}") from None
    assert process.returncode is not None
    return process.returncode, err.decode().splitlines()
