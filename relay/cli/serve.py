"""``relay serve``: run the hosted relay (Slack interactivity plus the ``/v1`` API)."""

from __future__ import annotations

import argparse
import os
import sys

from relay.cli.common import Commands, relay_command
from relay.config.settings import ENV_VARS, NO_CREDENTIALS_HELP, Settings
from relay.errors import RelayConfigError

__all__ = ["add_serve"]

# Flag → environment variable it overrides. Secrets are read from the environment only,
# so they never show up in `ps` or shell history.
_FLAGS: dict[str, str] = {
    "port": "PORT",
    "host": "RELAY_HOST",
    "channel": "RELAY_CHANNEL",
    "allowed_users": "RELAY_ALLOWED_USERS",
    "allowed_groups": "RELAY_ALLOWED_GROUPS",
    "timeout": "RELAY_TIMEOUT",
    "api_tokens_file": "RELAY_API_TOKENS_FILE",
    "redis_url": "REDIS_URL",
    "slack_api_url": "SLACK_API_URL",
    "max_wait": "RELAY_MAX_WAIT",
    "retention": "RELAY_RETENTION",
    "log_level": "RELAY_LOG_LEVEL",
}
# How each flag is shown: what it takes, and its default where ENV_VARS states none.
_METAVARS = {
    "allowed_users": "U1,U2",
    "allowed_groups": "S1,S2",
    "channel": "C…",
    "timeout": "SECONDS",
    "max_wait": "SECONDS",
    "retention": "SECONDS",
}
_DEFAULTS = {
    "RELAY_CHANNEL": "none: each ask names its channel",
    "RELAY_ALLOWED_GROUPS": "none",
    "RELAY_API_TOKENS_FILE": "none",
    "SLACK_API_URL": "https://slack.com/api/",
}


def add_serve(commands: Commands) -> None:
    """Register ``relay serve``."""
    parser = commands.add_parser(
        "serve",
        help="run the relay: Slack interactivity and the /v1 API on one port",
        description=(
            "Run the hosted relay. Configuration comes from the environment (SLACK_BOT_TOKEN,"
            " SLACK_SIGNING_SECRET or SLACK_APP_TOKEN, RELAY_API_TOKENS, …); each flag below"
            " overrides the variable it names."
        ),
    )
    parser.add_argument(
        "--sandbox",
        action="store_true",
        help="try relay with no Slack workspace: a local Slack stand-in and a page at"
        " http://127.0.0.1:3000/ (loopback only unless --host or RELAY_HOST says otherwise)",
    )
    for flag, env in _FLAGS.items():
        about = ENV_VARS[env]
        if env in _DEFAULTS:
            about += f" (default: {_DEFAULTS[env]})"
        parser.add_argument(
            f"--{flag.replace('_', '-')}",
            metavar=_METAVARS.get(flag, flag.split("_")[-1].upper()),
            help=f"{about}; overrides {env}",
        )
    parser.set_defaults(handler=_run_serve)


def _run_serve(args: argparse.Namespace) -> int:
    overrides = {env: getattr(args, flag) for flag, env in _FLAGS.items()}
    if args.sandbox:
        from relay.sandbox.run import run_sandbox

        run_sandbox(overrides, env=os.environ, relay=relay_command())
        return 0
    from relay.server.main import run
    from relay.slack.serving import slack_channel

    try:
        settings = Settings.from_env(**overrides)
    except RelayConfigError as exc:
        # Never a silent fall-back to the sandbox: a typo in production must stay an error.
        if str(exc) == NO_CREDENTIALS_HELP:
            sys.stderr.write(NO_CREDENTIALS_HELP.replace("`relay ", f"`{relay_command()} "))
            return 2
        raise
    run(settings, channel=slack_channel)  # the composition root: Slack shows the asks
    return 0
