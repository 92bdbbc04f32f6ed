"""``relay serve`` itself in a process of its own, answering the benchmark's commands on stdin.

``python -m bench.relay_serve --slack-url URL [--redis-url URL] [--cpu N]`` reads
``Settings`` from an environment as an operator's would be (an API token, no default
channel, a rate limit and a pending limit high enough for the benchmark, no timeout) and
does what ``relay.server.main.run`` does: ``tune_gc`` with the settings' threshold, then
``serve(settings, channel=slack_channel)``, which builds the app (``build_app`` over Slack) and
freezes the start-up heap once it listens. Then it prints ``{"port": …}`` and answers one
JSON line per command line, as ``bench.server`` does (``stats``, ``gc_mode``, ``gc_reset``,
``tracked``, ``gc``, ``idle``, ``quit``). The pending count is on ``/metrics``
(``relay_asks_pending``): nothing of the relay's is reached into from here.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from bench.common import BOT_TOKEN, CHANNELS, SECRET, free_port, pin_to_cpu
from bench.replicas import API_TOKEN
from bench.server import install_collections, obey, reply
from relay.config.settings import Settings
from relay.config.tuning import tune_gc
from relay.server.main import configure_logging, serve
from relay.slack.serving import slack_channel


def settings_for(slack_url: str, redis_url: str | None) -> Settings:
    """``relay serve``'s settings, read from an environment as an operator would set it."""
    env = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack_url,
        "RELAY_API_TOKENS": API_TOKEN,
        "RELAY_HOST": "127.0.0.1",
        "PORT": str(free_port()),
        # One token fills and churns 100,000 asks: neither limit is what is measured.
        "RELAY_RATE_LIMIT": "1000000",
        "RELAY_MAX_PENDING": "10000000",
        "RELAY_TIMEOUT": "none",
        "RELAY_LOG_LEVEL": "warning",
        "RELAY_ALLOWED_CHANNELS": ",".join(CHANNELS),
    }
    if redis_url is not None:
        env["REDIS_URL"] = redis_url
    return Settings.from_env(env)


async def run(settings: Settings) -> None:
    """Serve, then obey commands until ``quit`` or end of input."""
    ready = asyncio.Event()
    serving = asyncio.create_task(serve(settings, channel=slack_channel, ready=ready))
    waiting = asyncio.create_task(ready.wait())
    await asyncio.wait({serving, waiting}, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if serving.done():
        serving.result()  # it stopped before listening: say why
    reply({"port": settings.port})
    loop = asyncio.get_running_loop()
    try:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            command, *rest = line.split()
            if command == "quit":
                break
            reply(await obey(command, rest, None))
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)


def main() -> None:
    """Parse the command line; start as ``relay serve`` starts (``relay.server.main.run``)."""
    parser = argparse.ArgumentParser(description="relay serve under test (bench/relay_serve.py)")
    parser.add_argument("--slack-url", required=True)
    parser.add_argument("--redis-url", default=None)
    parser.add_argument("--cpu", type=int, default=None)
    args = parser.parse_args()
    if args.cpu is not None:
        pin_to_cpu(args.cpu)
    install_collections()
    settings = settings_for(args.slack_url, args.redis_url)
    configure_logging(settings)
    if settings.gc_threshold is not None:
        tune_gc(settings.gc_threshold)
    asyncio.run(run(settings))


if __name__ == "__main__":
    main()
