"""``relay webhook-secret``: print the webhook secret of an API token, for its receiver.

The relay signs each token's webhooks with a secret derived from ``RELAY_WEBHOOK_KEY`` and
the token; the operator runs this (with both in the environment) and hands the secret to
whoever runs that token's webhook receiver. The token alone does not give the secret.
"""

from __future__ import annotations

import argparse
import os
import sys

from relay.cli.common import USAGE, CommandError, Commands, plain

__all__ = []


def add_webhook_secret(commands: Commands) -> None:
    """Register ``relay webhook-secret``."""
    parser = commands.add_parser(
        "webhook-secret",
        help="print the secret that signs an API token's webhooks (for its receiver)",
        description=plain(__doc__),
    )
    parser.set_defaults(handler=_run)


def _run(_: argparse.Namespace) -> int:
    from relay.webhooks.signing import token_secret  # (the package loads the webhook sender)

    key = os.environ.get("RELAY_WEBHOOK_KEY", "").strip()
    token = os.environ.get("RELAY_TOKEN", "").strip()
    if not key or not token:
        raise CommandError(
            USAGE, "set RELAY_WEBHOOK_KEY (the relay's) and RELAY_TOKEN (the API token)"
        )
    sys.stdout.write(token_secret(key, token) + "\n")
    return 0
