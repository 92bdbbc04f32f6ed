#!/usr/bin/env python3
"""Time a new user's first hour, shortened: from ``git clone`` to a first answered question
in the sandbox, with nothing but ``bash scripts/serve``.

    python3 scripts/time_first_answer.py [--no-pip-cache] [SOURCE]

SOURCE is the repository to clone (default: this one). It clones into a temporary folder,
runs ``bash scripts/serve`` there (which makes the virtualenv and installs relay), waits for
the page, asks the plan-review sample through the page's own control, approves it as Alice
through the page's action endpoint (FakeSlack delivers it to ``/slack/events``, signed), and
prints the seconds each step took. ``--no-pip-cache`` makes pip and uv download everything,
as on a fresh machine. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def post(url: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(  # noqa: S310 - our own loopback server
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        data: dict[str, object] = json.loads(response.read())
        return data


def events(url: str):  # type: ignore[no-untyped-def]
    """Yield (event, data) from a server-sent event stream."""
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310
        event, data = "", []
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif not line and event:
                yield event, json.loads("\n".join(data))
                event, data = "", []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--no-pip-cache", action="store_true", help="as on a fresh machine")
    parser.add_argument("--branch", help="the branch to clone (default: the source's HEAD)")
    parser.add_argument("--pip", action="store_true", help="pip only (RELAY_NO_UV=1): the baseline")
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "RELAY_"))}
    port = free_port()
    env.update(PORT=str(port), PYTHONUNBUFFERED="1")
    if args.no_pip_cache:
        # Neither installer's cache: scripts/serve installs with uv when it can, else pip.
        env.update(PIP_NO_CACHE_DIR="1", UV_NO_CACHE="1")
    if args.pip:
        env.update(RELAY_NO_UV="1")
    with tempfile.TemporaryDirectory(prefix="relay-first-run-") as tmp:
        started = time.monotonic()
        clone = ["git", "clone", "-q"]
        if args.branch:
            clone += ["--branch", args.branch]
        subprocess.run([*clone, args.source, f"{tmp}/relay"], check=True)  # noqa: S603
        cloned = time.monotonic()
        process = subprocess.Popen(
            ["bash", "scripts/serve"],  # noqa: S607
            cwd=f"{tmp}/relay",
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert process.stdout is not None
            page = None
            for line in process.stdout:
                if "page:" in line:
                    page = line.split("page:")[1].strip()
                if "token:" in line:
                    break
            if page is None:
                print("scripts/serve ended without starting the sandbox", file=sys.stderr)
                return 1
            serving = time.monotonic()
            with urllib.request.urlopen(page, timeout=10) as response:  # noqa: S310
                assert response.status == 200
            feed = events(f"{page}sandbox/events?as=U0SBALICE")
            next(feed)  # the snapshot
            post(f"{page}sandbox/sample", {"name": "plan-review"})
            message = next(data for event, data in feed if event == "message")
            block = next(b for b in message["blocks"] if b["type"] == "actions")
            approve = next(e for e in block["elements"] if e["text"]["text"] == "Approve")
            post(
                f"{page}sandbox/act",
                {
                    "as": "U0SBALICE",
                    "channel": message["channel"],
                    "ts": message["ts"],
                    "version": message["version"],
                    "kind": "button",
                    "text": "Approve",
                    "block_id": block["block_id"],
                    "action_id": approve["action_id"],
                },
            )
            for event, message in feed:
                if event == "message" and "Answered by" in json.dumps(message["blocks"]):
                    break
            answered = time.monotonic()
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
    cache = ("no pip cache" if args.no_pip_cache else "pip cache as it is") + (
        ", pip only" if args.pip else ""
    )
    print(
        f"clone {cloned - started:.1f} s, scripts/serve to the page {serving - cloned:.1f} s,"
        f" ask and answer {answered - serving:.1f} s: {answered - started:.1f} s in all ({cache})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
