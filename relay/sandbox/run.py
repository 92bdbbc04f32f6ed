"""``relay serve --sandbox``: the production relay against an embedded Slack stand-in.

The relay is started exactly as ``relay serve`` starts it (same provider, store, API and
``/slack/events`` click path, with signature checks); only its Slack is local: FakeSlack
serves the Web API on a loopback port and delivers the page's clicks, signed, to the relay.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from relay.config.settings import Settings
from relay.config.tuning import tune_gc
from relay.receipts.keys import SigningKey
from relay.sandbox.directory import CHANNELS, DEFAULT_CHANNEL, GROUPS, PEOPLE
from relay.sandbox.page import SandboxPage
from relay.sandbox.standin import Sandbox
from relay.server.main import configure_logging, serve
from relay.slack.serving import slack_channel
from relay.testing import FakeSlack

__all__ = ["run_sandbox", "sandbox_settings", "serve_sandbox"]

_LOOPBACK = ("127.0.0.1", "::1", "localhost")
_SANDBOX_BOT_TOKEN = "xoxb-sandbox-not-a-real-token"  # noqa: S105 - issued by its FakeSlack


def loopback_url(host: str, port: int) -> str:
    """The URL this machine reaches a server listening on ``host:port`` at."""
    if host in ("0.0.0.0", "", "*"):  # noqa: S104 - naming the wildcard, not binding it
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def token_file() -> Path | None:
    """Where the sandbox keeps its generated API token between runs: beside the virtualenv
    relay runs from (``.venv/relay-sandbox-token`` after scripts/serve); ``None`` outside a
    virtualenv, where each start generates a new one."""
    if sys.prefix == sys.base_prefix:
        return None
    return Path(sys.prefix) / "relay-sandbox-token"


def sandbox_token(path: Path | None) -> str:
    """The token kept in ``path``, or a new one written there (readable by its owner only),
    so that an exported ``RELAY_TOKEN`` still works after the sandbox restarts."""
    if path is not None:
        try:
            kept = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            kept = ""
        if len(kept) >= 24 and kept.isascii() and kept.isprintable() and " " not in kept:
            return kept
    token = secrets.token_urlsafe(24)
    if path is not None:
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as f:
                f.write(token + "\n")
            path.chmod(0o600)  # one left by an older run with wider bits
        except OSError:
            pass  # a read-only virtualenv: this run's token is new, as before
    return token


def mcp_snippet(url: str, token: str, relay: str) -> str:
    """An MCP client configuration (``mcpServers``) for ``relay mcp`` against the sandbox,
    with the relay executable's absolute path: an MCP client starts it without the
    virtualenv's ``bin`` on its PATH."""
    import shutil

    found = shutil.which(relay) if relay == "relay" else relay
    if found is not None and Path(found).name == "relay" and len(found.split()) == 1:
        command, args = str(Path(found).absolute()), ["mcp"]
    else:  # run as `python -m relay.cli`: the interpreter, absolute
        command, args = sys.executable, ["-m", "relay.cli", "mcp"]
    server = {"command": command, "args": args, "env": {"RELAY_URL": url, "RELAY_TOKEN": token}}
    return json.dumps({"mcpServers": {"relay": server}})


def sandbox_settings(
    slack: FakeSlack, env: Mapping[str, str], overrides: Mapping[str, str | None]
) -> tuple[Settings, bool]:
    """The relay's settings for the sandbox, and whether its API token was generated.

    Slack settings come from the stand-in (any in ``env`` are ignored); the relay listens on
    loopback unless ``RELAY_HOST`` (or ``--host``) says otherwise; asks go to the sandbox's
    channel and its allowed people unless ``RELAY_CHANNEL``/``RELAY_ALLOWED_USERS`` are set.
    """
    source = {k: v for k, v in env.items() if not k.startswith("SLACK_")}
    source.update(
        SLACK_BOT_TOKEN=_SANDBOX_BOT_TOKEN,
        SLACK_SIGNING_SECRET=slack.signing_secret,
        SLACK_API_URL=slack.base_url,
    )
    defaults = {
        "RELAY_HOST": "127.0.0.1",
        "RELAY_CHANNEL": DEFAULT_CHANNEL,
        "RELAY_ALLOWED_USERS": ",".join(p.id for p in PEOPLE if p.allowed),
        # The sandbox's other channel and its people's DMs, so that an ask may name them
        # (relay serve lets a client name only the channels listed).
        "RELAY_ALLOWED_CHANNELS": ",".join([*CHANNELS, *(p.id for p in PEOPLE)]),
        # Its user group too: the docs' examples name it (--allowed-group, --escalate-to).
        "RELAY_ALLOWED_GROUPS": ",".join(GROUPS),
    }
    for name, value in defaults.items():
        if not source.get(name, "").strip():
            source[name] = value
    generated = not source.get("RELAY_API_TOKENS") and not source.get("RELAY_API_TOKENS_FILE")
    if generated:
        source["RELAY_API_TOKENS"] = sandbox_token(token_file())
    slack_flags = {k: v for k, v in overrides.items() if not k.startswith("SLACK_")}
    return Settings.from_env(source, **slack_flags), generated


def _banner(settings: Settings, *, generated: bool, ignored_slack: bool, relay: str) -> str:
    url = loopback_url(settings.host, settings.port)
    token = settings.api_tokens[0]
    kept = token_file()
    where = f"kept in {kept} across restarts" if kept is not None else "new each start"
    shown = f"{token}   (generated, {where}; set RELAY_API_TOKENS to choose your own)"
    if not generated:
        shown = "the one in RELAY_API_TOKENS"
        token = "<your token>"  # noqa: S105 - a placeholder shown to the user
    lines = [
        "relay sandbox: Slack is simulated on this machine, no workspace is involved. To connect"
        " a real one, set SLACK_BOT_TOKEN and SLACK_APP_TOKEN (steps: docs/operate/slack-app.md)"
        f" and run `{relay} serve` without --sandbox.",
        f"  page:   {url}/",
        f"  API:    {url}/v1/asks   token: {shown}",
        f"  try:    RELAY_URL={url} RELAY_TOKEN={token} {relay} ask -q 'Ship it?' -o Ship -o Wait",
    ]
    if ignored_slack:
        lines.append(
            "  note:   the sandbox does not use the SLACK_* variables set in the environment"
        )
    if settings.host not in _LOOPBACK:
        lines.append(
            f"  note:   listening on {settings.host}, not only loopback: anyone who can reach it"
            " can use the page"
        )
    # After the notes: tests and scripts read the first lines (page, token) as they were.
    lines.append(f"  env:    export RELAY_URL={url} RELAY_TOKEN={token}")
    lines.append(f"  MCP:    {mcp_snippet(url, token, relay)}")
    return "\n".join(lines) + "\n"


async def serve_sandbox(
    env: Mapping[str, str],
    overrides: Mapping[str, str | None],
    *,
    out: TextIO = sys.stdout,
    relay: str = "relay",
) -> None:
    """Run the sandbox until SIGTERM/SIGINT: FakeSlack, the relay on it, and the page."""
    async with FakeSlack(
        signing_secret=secrets.token_hex(20), bot_token=_SANDBOX_BOT_TOKEN
    ) as slack:
        settings, generated = sandbox_settings(slack, env, overrides)
        configure_logging(settings)
        if settings.gc_threshold is not None:
            tune_gc(settings.gc_threshold)
        url = loopback_url(settings.host, settings.port)
        slack.interactivity_url = f"{url}/slack/events"
        sandbox = Sandbox(
            slack, channel=settings.channel or DEFAULT_CHANNEL, allowed_users=settings.allowed_users
        )
        loopback = settings.host in _LOOPBACK
        page = SandboxPage(
            sandbox,
            api_url=url,
            token=settings.api_tokens[0],
            hostnames=frozenset({"127.0.0.1", "localhost", "::1"}) if loopback else None,
        )
        ready = asyncio.Event()
        ignored = any(k.startswith("SLACK_") and v.strip() for k, v in env.items())

        async def announce() -> None:
            await ready.wait()
            out.write(_banner(settings, generated=generated, ignored_slack=ignored, relay=relay))
            out.flush()

        announcing = asyncio.create_task(announce())
        try:
            # A key of its own, so that the sandbox shows receipts (gone with the process).
            await serve(
                settings,
                channel=slack_channel,
                ready=ready,
                extend=page.install,
                receipt_key=SigningKey.generate(),
            )
        finally:
            announcing.cancel()


def run_sandbox(
    overrides: Mapping[str, str | None], *, env: Mapping[str, str], relay: str = "relay"
) -> None:
    """The body of ``relay serve --sandbox``."""
    asyncio.run(serve_sandbox(env, overrides, relay=relay))
