"""``relay manifest``: the Slack app manifest to create the relay's app from."""

from __future__ import annotations

import argparse
import sys

from relay.cli.common import USAGE, CommandError, Commands
from relay.slack.manifest import build_manifest, manifest_text

__all__ = ["add_manifest"]


def add_manifest(commands: Commands) -> None:
    parser = commands.add_parser(
        "manifest",
        help="print the Slack app manifest to create the relay's app from",
        description=(
            "Print the Slack app manifest (JSON, which Slack's manifest editor accepts as"
            " YAML too). Paste it into https://api.slack.com/apps?new_app=1 → From a manifest."
        ),
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--socket-mode",
        action="store_true",
        help="clicks arrive over a WebSocket: no public URL needed (needs SLACK_APP_TOKEN)",
    )
    mode.add_argument(
        "--request-url",
        metavar="URL",
        help="HTTP mode: the public https URL Slack posts clicks to, ending in /slack/events",
    )
    parser.add_argument("--name", default="relay", help="the app's name in Slack (default relay)")
    parser.set_defaults(handler=_run_manifest)


def _run_manifest(args: argparse.Namespace) -> int:
    if not args.socket_mode and args.request_url is None:
        raise CommandError(
            USAGE,
            "choose a mode: --socket-mode (no public URL needed) or"
            " --request-url https://<host>/slack/events",
        )
    manifest = build_manifest(
        socket_mode=args.socket_mode, request_url=args.request_url, name=args.name
    )
    sys.stdout.write(manifest_text(manifest))
    return 0
