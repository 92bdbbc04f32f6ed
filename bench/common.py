"""What every benchmark shares: signed clicks, the baselines, figures, tables and JSON.

The click path measured is always the server's: each benchmark builds the ``block_actions``
payload as Slack would (``FakeSlack.build_block_actions``), signs it, and sends the same bytes
to the relay and to its baselines over loopback HTTP, so that only the server differs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from aiohttp import web
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from relay import AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest
from relay.testing import FakeMessage, FakeSlack

SECRET = "bench-signing-secret"
BOT_TOKEN = "xoxb-bench-token"
CHANNEL = "C0BENCH"
# The channels the load spreads its asks over; the relays under test list them
# (RELAY_ALLOWED_CHANNELS) as an operator must before an API client may name one.
CHANNELS = [f"C0BENCH{n:02d}" for n in range(32)]
USER = "U0ALICE"
RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parent.parent


# ---- the questions and clicks -----------------------------------------------------------


def question(number: int) -> AskUserQuestionItem:
    """A typical approval: two options, as an agent asks before a deploy."""
    return AskUserQuestionItem(
        id=f"q{number}",
        question=f"Deploy build {number} to production?",
        header="Deploy",
        options=(
            AskUserQuestionOption("Approve", description="ship it now"),
            AskUserQuestionOption("Reject", description="keep the current build"),
        ),
    )


def request(number: int) -> AskUserQuestionRequest:
    """A one-question request numbered ``number`` (the number is in the question's id)."""
    return AskUserQuestionRequest(questions=(question(number),))


def first_button(message: FakeMessage) -> dict[str, Any]:
    """The first button of a posted question, as an ``actions[0]`` entry."""
    for block in message.versions[0]:
        if block["type"] == "actions":
            for element in block["elements"]:
                if element["type"] == "button":
                    return {**element, "block_id": block["block_id"]}
    raise LookupError(f"message {message.ts} has no button")


def ask_id_of(message: FakeMessage) -> str:
    """The relay ask a posted message belongs to (from its routing block id)."""
    return first_button(message)["block_id"].split(":")[1]


def click_body(slack: FakeSlack, message: FakeMessage, *, user: str = USER) -> bytes:
    """The form body Slack sends when ``user`` clicks the first button of ``message``."""
    payload = slack.build_block_actions(message, first_button(message), user=user)
    return urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()


def signed_headers(body: bytes, *, secret: str = SECRET) -> dict[str, str]:
    """The headers of a request Slack signed now."""
    stamp = str(int(time.time()))
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body.decode())
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature or "",
    }


def raw_request(port: int, body: bytes, *, path: str = "/slack/events") -> bytes:
    """A complete signed HTTP/1.1 request (keep-alive) for the load generator."""
    head = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Length: {len(body)}"]
    head += [f"{name}: {value}" for name, value in signed_headers(body).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


# ---- the baselines ----------------------------------------------------------------------


async def signed_payload(verifier: SignatureVerifier, request: web.Request) -> Any:
    """A click's decoded ``payload`` if Slack's signature on it holds, else ``None``."""
    body = await request.text()
    valid = verifier.is_valid(
        body=body,
        timestamp=request.headers.get("X-Slack-Request-Timestamp", ""),
        signature=request.headers.get("X-Slack-Signature", ""),
    )
    if not valid:
        return None
    form = await request.post()
    return json.loads(str(form["payload"]))


def floor_app(*, secret: str = SECRET) -> web.Application:
    """The floor: an aiohttp handler that checks the signature and parses the payload."""
    verifier = SignatureVerifier(secret)

    async def handle(request: web.Request) -> web.Response:
        payload = await signed_payload(verifier, request)
        if payload is None:
            return web.Response(status=401)
        return web.Response(status=200 if payload.get("type") == "block_actions" else 400)

    app = web.Application()
    app.router.add_post("/slack/events", handle)
    return app


def bare_bolt_app(client: AsyncWebClient, *, secret: str = SECRET) -> AsyncApp:
    """Bare Bolt in its fastest configuration: the listener only acks, before the response."""
    app = AsyncApp(client=client, signing_secret=secret, process_before_response=True)

    @app.action(re.compile(r"^relay\."))
    async def only_ack(ack: AsyncAck) -> None:
        await ack()

    return app


def bolt_bot_app(client: AsyncWebClient, *, secret: str = SECRET) -> AsyncApp:
    """Bare Bolt as a hand-written approval bot: the fastest configuration again, and the
    listener acks and then shows the answer in the clicked message (one ``chat.update``
    through slack-sdk), the work the relay does per click besides waking its agent."""
    app = AsyncApp(client=client, signing_secret=secret, process_before_response=True)

    @app.action(re.compile(r"^relay\."))
    async def ack_and_update(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        container, user = body["container"], body["user"]["id"]
        text = f":white_check_mark: Answered by <@{user}>"
        await client.chat_update(
            channel=container["channel_id"],
            ts=container["message_ts"],
            text=text,
            blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": text}}],
        )

    return app


class WebApiStub:
    """A Slack Web API that answers every call ``{"ok": true}`` at once and counts them.

    For the throughput rounds only: ``FakeSlack`` validates Block Kit and deep-copies the
    message on every ``chat.update``, so it, not the server under test, would set the pace.
    Real Slack's work is not on the server's core either.
    """

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.app = web.Application()
        self.app.router.add_post("/api/{method}", self._answer)
        self._changed = asyncio.Event()

    async def _answer(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        await request.read()
        self.calls[method] = self.calls.get(method, 0) + 1
        self._changed.set()
        return web.Response(body=b'{"ok":true}', content_type="application/json")

    async def wait_for(self, method: str, count: int, *, timeout: float) -> None:
        """Return once ``method`` was called ``count`` times in all."""
        async with asyncio.timeout(timeout):
            while self.calls.get(method, 0) < count:
                self._changed.clear()
                await self._changed.wait()


async def serve(app: web.Application, *, port: int = 0) -> tuple[web.AppRunner, int]:
    """Serve ``app`` on 127.0.0.1 (a free port by default); the runner and the port."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, int(runner.addresses[0][1])


# ---- load over raw keep-alive connections ---------------------------------------------


async def send_all(port: int, requests: Sequence[bytes], *, connections: int) -> dict[int, int]:
    """Send every request over ``connections`` keep-alive connections, one in flight on
    each; the count of responses by status. Cheap on the client side, so that the server
    under test is the bottleneck."""
    queue = iter(requests)
    statuses: dict[int, int] = {}

    async def connection() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for raw in queue:
                writer.write(raw)
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head[9:12])
                statuses[status] = statuses.get(status, 0) + 1
                match = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
                if match and int(match.group(1)):
                    await reader.readexactly(int(match.group(1)))
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(connections)))
    return statuses


# ---- figures ----------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) by linear interpolation between closest ranks."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency_ms(samples: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99, max and mean of durations in seconds, in milliseconds."""
    return {
        "n": len(samples),
        "p50_ms": percentile(samples, 50) * 1e3,
        "p90_ms": percentile(samples, 90) * 1e3,
        "p99_ms": percentile(samples, 99) * 1e3,
        "max_ms": max(samples) * 1e3 if samples else math.nan,
        "mean_ms": sum(samples) / len(samples) * 1e3 if samples else math.nan,
    }


def verdict(ok: bool | None) -> str:
    """How a target reads in a table."""
    return "n/a (smoke)" if ok is None else ("met" if ok else "NOT met")


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Print a plain-text table."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    line = "  ".join("-" * w for w in widths)
    print(f"\n{title}\n{line}")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print(line)
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    print(line, flush=True)


def report_targets(
    targets: dict[str, tuple[float, float, bool]], *, smoke: bool, measured: str = "measured"
) -> dict[str, Any]:
    """Print the ``targets`` (name -> measured, limit, met) as a table, and return them as
    the results file holds them (no verdict in a smoke run)."""
    print_table(
        "Targets",
        ["target", measured, "limit", "verdict"],
        [[n, v, lim, verdict(None if smoke else ok)] for n, (v, lim, ok) in targets.items()],
    )
    return {
        name: {"measured": v, "limit": lim, "met": None if smoke else ok}
        for name, (v, lim, ok) in targets.items()
    }


def _cell(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    versions = {}
    for package in ("slack-bolt", "slack-sdk", "aiohttp", "redis"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": versions,
    }


def write_json(name: str, data: dict[str, Any]) -> Path:
    """Write ``bench/results/<name>.json`` (with the machine description) and say where."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    document = {"benchmark": name, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **data}
    document["machine"] = machine()
    path.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n")
    print(f"wrote {path.relative_to(ROOT)}", flush=True)
    return path


def rss_bytes() -> int:
    """This process's resident set size, from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def pin_to_cpu(cpu: int) -> bool:
    """Run this process on one CPU only (when the machine has it); whether it was pinned.

    A child inherits its parent's pinning, so a server started by a load generator pinned
    to CPU 1 may still ask for CPU 0: whether the machine has it is what counts."""
    if not hasattr(os, "sched_setaffinity") or cpu >= (os.cpu_count() or 1):
        return False
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:  # not a CPU this process may use (a container's cpuset, say)
        return False
    return os.sched_getaffinity(0) == {cpu}


def arguments(
    description: str,
    *,
    stores: bool = False,
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """The command line every benchmark takes: ``--smoke`` (and ``--store`` where a
    benchmark runs the relay on either store; ``extra`` adds a benchmark's own options)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a seconds-long run with tiny sizes: exercises every path, asserts no speed",
    )
    if stores:
        parser.add_argument(
            "--store",
            choices=["memory", "redis", "both"],
            default="both",
            help="which store the relay runs on; both (the default) measures them side by side"
            " in one run, Redis started by the benchmark on a free port",
        )
    if extra is not None:
        extra(parser)
    return parser.parse_args()


def stores_of(args: argparse.Namespace) -> list[str]:
    """The stores ``--store`` names, memory first."""
    choice = getattr(args, "store", "memory")
    return ["memory", "redis"] if choice == "both" else [choice]


def bench_slack(**options: Any) -> FakeSlack:
    """A ``FakeSlack`` whose workspace issued ``BOT_TOKEN`` and holds the benches' channels
    (it takes no other token or channel, as Slack does not)."""
    channels = {c: c.lower() for c in (CHANNEL, *CHANNELS)}
    return FakeSlack(bot_token=BOT_TOKEN, channels=channels, **options)


def web_client(slack: FakeSlack) -> AsyncWebClient:
    """A bot client for ``slack``, configured as a relay user would."""
    return AsyncWebClient(token=BOT_TOKEN, base_url=slack.base_url)


# ---- a real Redis -----------------------------------------------------------------------


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_NO_PERSISTENCE = ("--save", "", "--appendonly", "no")


class Redis:
    """A throwaway ``redis-server`` on a free loopback port, without persistence."""

    def __init__(self, *, cpu: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("redis-server is not installed (apt-get install redis-server)")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process = subprocess.Popen(  # noqa: S603 - a fixed binary and our arguments
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", *_NO_PERSISTENCE],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if cpu is not None and cpu < (os.cpu_count() or 1):
            with contextlib.suppress(OSError):
                os.sched_setaffinity(self._process.pid, {cpu})
        assert self._process.stdout is not None
        for line in self._process.stdout:  # bounded: the server prints a few lines and is ready
            if "Ready to accept connections" in line:
                # Keep reading its log so that the server never blocks on a full pipe.
                threading.Thread(target=self._drain, daemon=True).start()
                return
        raise SystemExit(f"redis-server exited with {self._process.wait()}")

    def _drain(self) -> None:
        assert self._process.stdout is not None
        for _ in self._process.stdout:
            pass

    def cpu_seconds(self) -> float:
        """CPU time the server has used so far (user + system, from /proc)."""
        fields = Path(f"/proc/{self._process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """Stop the server."""
        self._process.terminate()
        try:
            self._process.wait(5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(5)


def python() -> str:
    """The interpreter running the benchmarks (the project's virtual environment)."""
    return sys.executable


# ---- the Redis floor --------------------------------------------------------------------

# One claim's worth of work: write a field, publish the id (what the answer script does).
_FLOOR_SCRIPT = """
redis.call('HSET', KEYS[1], 'status', ARGV[2])
redis.call('PUBLISH', KEYS[2], ARGV[1])
return 1
"""


class RedisFloor:
    """The floor under a Redis-mode click: one ``EVALSHA`` round trip plus one pub/sub hop,
    with redis-py on the same Redis. Each ``sample`` runs a script that sets a hash field
    and publishes an id, and ends when a subscriber on another connection has it; the round
    trip alone is timed too. Use it as an async context manager."""

    def __init__(self, url: str) -> None:
        import redis.asyncio as aioredis

        self._client = aioredis.Redis.from_url(url)
        self._pubsub = self._client.pubsub()
        self._script = self._client.register_script(_FLOOR_SCRIPT)
        self._count = 0

    async def __aenter__(self) -> RedisFloor:
        await self._pubsub.subscribe("bench:floor")
        while (await self._pubsub.get_message(timeout=1.0)) is None:
            pass  # the subscribe confirmation
        await self.sample()  # (loads the script)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._pubsub.aclose()  # type: ignore[no-untyped-call]
        await self._client.aclose()

    async def sample(self) -> tuple[float, float]:
        """One script and its message: (round trip, round trip and pub/sub hop) in seconds."""
        self._count += 1
        sent = time.perf_counter()
        await self._script(keys=["bench:floor:ask", "bench:floor"], args=[str(self._count), "x"])
        returned = time.perf_counter()
        message = await self._pubsub.get_message(timeout=5.0)
        while message is None or message.get("type") != "message":
            message = await self._pubsub.get_message(timeout=5.0)
        return returned - sent, time.perf_counter() - sent


async def redis_floor(url: str, samples: int) -> dict[str, Any]:
    """``samples`` of ``RedisFloor``, back to back: its latencies."""
    trip: list[float] = []
    hop: list[float] = []
    async with RedisFloor(url) as floor:
        for _ in range(samples):
            round_trip, with_hop = await floor.sample()
            trip.append(round_trip)
            hop.append(with_hop)
    return {"evalsha": latency_ms(trip), "evalsha_and_pubsub": latency_ms(hop)}
