"""``relay serve`` settings, read from the environment (and flags), checked before start-up.

Every problem is a ``RelayConfigError`` whose message names the variable and how to fix it.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from relay.config.mcp import MCP_ENV_VARS, McpSettings
from relay.config.receipts import RECEIPT_ENV_VARS, receipt_settings
from relay.config.tuning import DEFAULT_GC_THRESHOLD
from relay.config.values import (
    DEFAULT_BATCH_WINDOW,
    read_api_tokens,
    read_batch_window,
    read_gc_threshold,
    read_ids,
    read_log_level,
    read_max_connections,
    read_max_timeout,
    read_maybe_seconds,
    read_number,
    read_operator_tokens,
    read_port,
    read_redis_settings,
    read_seconds,
    read_timeout,
    read_url,
    read_whole,
)
from relay.errors import RelayConfigError
from relay.seam.questions import MAX_APPROVALS

__all__ = ["ENV_VARS", "NO_CREDENTIALS_HELP", "Settings", "TeamDefaults"]

# Every environment variable ``relay serve`` reads, with what it is for.
ENV_VARS: dict[str, str] = {
    "SLACK_BOT_TOKEN": "the bot token (xoxb-…) from OAuth & Permissions",
    "SLACK_SIGNING_SECRET": "the signing secret from Basic Information (HTTP mode)",
    "SLACK_APP_TOKEN": "an app-level token (xapp-…, connections:write): use Socket Mode",
    "SLACK_API_URL": "base URL of the Slack Web API (point it at relay.testing's fake)",
    "RELAY_CHANNEL": "default channel id (C…) or user id (U…, a DM) to ask in",
    "RELAY_ALLOWED_USERS": "comma-separated user ids allowed to answer (default: anyone)",
    "RELAY_ALLOWED_GROUPS": "comma-separated user group ids (S…) whose members may answer",
    "RELAY_ALLOWED_CHANNELS": "channel ids an API client may name besides RELAY_CHANNEL",
    "RELAY_TIMEOUT": "seconds before an unanswered ask times out; 'none' waits forever"
    " (default 900)",
    "RELAY_MAX_TIMEOUT": "the longest timeout any ask may have, in seconds (default: none);"
    " a longer or no timeout becomes this",
    "RELAY_REMIND_AFTER": "seconds after which (and between which) a pending ask reminds who"
    " may answer, in its thread (default: no reminders)",
    "RELAY_REMINDERS": "how many reminders at most, 1 to 10 (default 1)",
    "RELAY_ESCALATE_AFTER": "seconds after which a pending ask is escalated (default: never)",
    "RELAY_ESCALATE_TO": "comma-separated user (U…) and user group (S…) ids who may answer"
    " an escalated ask, and are mentioned (within RELAY_ALLOWED_USERS/GROUPS)",
    "RELAY_ESCALATE_CHANNEL": "channel id (or user id, a DM) the escalation is posted in, with"
    " a link back (default: the question's thread)",
    "RELAY_DEFAULT_OPTION": "the option label taken when nobody answers in time, for every"
    " question offering it that names no default",
    "RELAY_APPROVALS_REQUIRED": "distinct people who must vote for an option of every"
    " single-select question that sets no approvalsRequired (default 1)",
    "RELAY_VETO": "comma-separated option labels one vote decides at once, where offered",
    "RELAY_BATCH_WINDOW": "seconds a tool approval waits for others from the same agent"
    " session to share one Slack message (default 0.25; 0 posts each alone)",
    "RELAY_RULES_FILE": "the operator's rules file for tool approvals (/v1/approvals, /mcp):"
    " what is allowed or denied without a person, and what a grant may cover",
    "RELAY_PLAN_TTL": "seconds an approved plan lets its session's in-scope calls run"
    " without a post (default 14400, 4 hours; POST /v1/plans)",
    "RELAY_API_TOKENS": "comma-separated bearer tokens for the /v1 API",
    "RELAY_API_TOKENS_FILE": "a file with one bearer token per line (instead of the above)",
    "RELAY_OPERATOR_TOKENS": "comma-separated bearer tokens that read every token's receipts"
    " (and nothing else), for audit; never an agent's token",
    "RELAY_MAX_WAIT": "longest ?wait= a request may hold, in seconds (default 60)",
    "RELAY_RETENTION": "seconds to keep finished asks for audit (default 7 days)",
    "RELAY_RETENTION_BYTES": "most bytes of finished asks kept in memory, oldest dropped first"
    " (default 67108864; without Redis only)",
    "RELAY_MAX_BODY": "largest request body the API reads, in bytes (default 262144)",
    "RELAY_RATE_LIMIT": "API requests per second per token, per replica (default 50)",
    "RELAY_MAX_LONG_POLLS": "API requests one token may hold open with ?wait=, per replica"
    " (default 500)",
    "RELAY_MAX_PENDING": "asks one token may have pending at once, across replicas (default 1000)",
    "RELAY_HOST": "address to listen on (default 0.0.0.0)",
    "PORT": "port to listen on (default 3000)",
    "RELAY_READ_TIMEOUT": "seconds a client has to send a request's head, and then its body"
    " (default 10)",
    "RELAY_MAX_CONNECTIONS": "most client connections at once (default: the descriptor limit"
    " less a reserve)",
    "REDIS_URL": "Redis URL for state shared between replicas (default: in memory):"
    " redis[s]://, redis[s]+sentinel://sentinel:26379,…/master/0 or redis[s]+cluster://node:6379,…",
    "RELAY_REDIS_CA_FILE": "PEM file of the CA that signed the Redis server's certificate"
    " (rediss only; default: the system's CAs)",
    "RELAY_REDIS_CERT_FILE": "PEM client certificate to present to Redis (rediss only)",
    "RELAY_REDIS_KEY_FILE": "PEM private key of RELAY_REDIS_CERT_FILE (rediss only)",
    "RELAY_REDIS_MAX_CONNECTIONS": "most connections to Redis at once, per replica; commands"
    " beyond them wait their turn (default 64; claims have one more of their own)",
    "RELAY_LOG_LEVEL": "debug, info, warning or error (default info)",
    "RELAY_MCP_PROGRESS_INTERVAL": "seconds between MCP progress notifications while a human"
    " thinks (default 10)",
    "RELAY_GC_THRESHOLD": "Python's first-generation GC threshold (default 50000; 'python'"
    " keeps CPython's own)",
    "RELAY_IDEMPOTENCY_WINDOW": "seconds an Idempotency-Key keeps answering with the ask it"
    " created (default 86400)",
    "RELAY_WEBHOOK_KEY": "the key each API token's webhook secret is derived from (32+"
    " characters; `relay webhook-secret` prints a token's); turns webhooks on",
    "RELAY_WEBHOOK_ALLOWED_HOSTS": "comma-separated hosts a callback_url may name"
    " (*.example.com for subdomains)",
    "RELAY_WEBHOOK_ALLOWED_NETWORKS": "comma-separated CIDR networks a webhook host may resolve"
    " into although not public (e.g. 10.0.0.0/8); default none",
    "RELAY_WEBHOOK_RETRY_FOR": "seconds to keep retrying a webhook delivery (default 86400)",
    "RELAY_WEBHOOK_BACKOFF": "seconds before the first retry of a webhook, doubling up to"
    " 600 (default 1)",
    **RECEIPT_ENV_VARS,
    **MCP_ENV_VARS,
}

NO_CREDENTIALS_HELP = """\
relay: no Slack credentials are set, so there is nothing to connect to yet.

  1. Create a Slack app from the manifest: https://api.slack.com/apps?new_app=1
     → "From a manifest", and paste the output of `relay manifest --socket-mode`
     (or deploy/slack-app-manifest.yaml).
  2. Install it to your workspace, then set:
       SLACK_BOT_TOKEN=xoxb-…   (OAuth & Permissions → Bot User OAuth Token)
       SLACK_APP_TOKEN=xapp-…   (Basic Information → App-Level Tokens, scope connections:write)
       RELAY_CHANNEL=C…         (a channel the bot was invited to)
       RELAY_API_TOKENS=…       (any long random string; agents send it as a bearer token)
  3. Run `relay serve` again.  For HTTP mode set SLACK_SIGNING_SECRET instead of
     SLACK_APP_TOKEN and use `relay manifest --request-url https://<host>/slack/events`.

To try relay first with no workspace: `relay serve --sandbox` (a Slack stand-in in your browser).
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class TeamDefaults:
    """Every ask's team decisions unless it sets its own: reminders, escalation, the option
    taken at timeout, quorum and veto (``RELAY_REMIND_AFTER``…``RELAY_VETO``)."""

    remind_after: float | None = None
    reminders: int = 1
    escalate_after: float | None = None
    escalate_users: frozenset[str] | None = None
    escalate_groups: frozenset[str] | None = None
    escalate_channel: str | None = None
    default_option: str | None = None
    approvals_required: int | None = None
    veto: tuple[str, ...] | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TeamDefaults:
        """Read them from ``env``; ``RelayConfigError`` naming the variable that is wrong."""

        def get(name: str) -> str | None:
            value = env.get(name)
            return value.strip() if value is not None and value.strip() else None

        reminders = read_whole(get("RELAY_REMINDERS"), "RELAY_REMINDERS", 1)
        if reminders > 10:
            raise RelayConfigError(
                f"RELAY_REMINDERS must be 1 to 10 (got {reminders})", setting="RELAY_REMINDERS"
            )
        remind_after = get("RELAY_REMIND_AFTER")
        after = get("RELAY_ESCALATE_AFTER")
        to = read_ids(
            get("RELAY_ESCALATE_TO"), "RELAY_ESCALATE_TO", "user or user group", "U0123ABCD"
        )
        channel = get("RELAY_ESCALATE_CHANNEL")
        if after is None and (to is not None or channel is not None):
            raise RelayConfigError(
                "RELAY_ESCALATE_TO and RELAY_ESCALATE_CHANNEL need RELAY_ESCALATE_AFTER: say"
                " after how many seconds to escalate",
                setting="RELAY_ESCALATE_AFTER",
            )
        if after is not None and to is None and channel is None:
            raise RelayConfigError(
                "RELAY_ESCALATE_AFTER needs someone to escalate to: set RELAY_ESCALATE_TO"
                " (U…/S… ids) or RELAY_ESCALATE_CHANNEL",
                setting="RELAY_ESCALATE_AFTER",
            )
        approvals = get("RELAY_APPROVALS_REQUIRED")
        required = (
            None if approvals is None else read_whole(approvals, "RELAY_APPROVALS_REQUIRED", 1)
        )
        if required is not None and required > MAX_APPROVALS:
            raise RelayConfigError(
                f"RELAY_APPROVALS_REQUIRED must be 1 to {MAX_APPROVALS} (got {required})",
                setting="RELAY_APPROVALS_REQUIRED",
            )
        veto = tuple(v.strip() for v in (get("RELAY_VETO") or "").split(",") if v.strip())
        users = frozenset(i for i in to or () if not i.startswith("S"))
        groups = frozenset(i for i in to or () if i.startswith("S"))
        return cls(
            remind_after=read_maybe_seconds(remind_after, "RELAY_REMIND_AFTER"),
            reminders=reminders,
            escalate_after=read_maybe_seconds(after, "RELAY_ESCALATE_AFTER"),
            escalate_users=users or None,
            escalate_groups=groups or None,
            escalate_channel=channel,
            default_option=get("RELAY_DEFAULT_OPTION"),
            approvals_required=required,
            veto=veto or None,
        )

    def provider_kwargs(self) -> dict[str, Any]:
        """These defaults as ``SlackProvider`` keyword arguments."""
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Everything ``relay serve`` needs; build it with ``Settings.from_env``."""

    bot_token: str
    signing_secret: str | None = None
    app_token: str | None = None
    slack_api_url: str | None = None
    channel: str | None = None
    allowed_users: frozenset[str] | None = None
    allowed_groups: frozenset[str] | None = None
    allowed_channels: frozenset[str] | None = None
    timeout: float | None = 900.0
    api_tokens: tuple[str, ...] = field(default=(), repr=False)
    operator_tokens: tuple[str, ...] = field(default=(), repr=False)
    max_wait: float = 60.0
    plan_ttl: float = 4 * 3600.0
    retention: float = 7 * 24 * 3600.0
    max_body: int = 256 * 1024
    max_timeout: float | None = None
    retention_bytes: int = 64 * 1024 * 1024
    rate_limit: float = 50.0
    max_long_polls: int = 500
    max_pending: int = 1000
    read_timeout: float = 10.0
    max_connections: int | None = None
    host: str = "0.0.0.0"  # noqa: S104 - a service in a container listens on every interface
    port: int = 3000
    redis_url: str | None = None
    redis_ca_file: str | None = None
    redis_cert_file: str | None = None
    redis_key_file: str | None = None
    redis_max_connections: int = 64
    log_level: str = "info"
    gc_threshold: int | None = DEFAULT_GC_THRESHOLD
    mcp_progress_interval: float = 10.0
    idempotency_window: float = 24 * 3600.0
    webhook_key: str | None = field(default=None, repr=False)
    webhook_hosts: frozenset[str] = frozenset()
    webhook_networks: tuple[str, ...] = ()
    webhook_retry_for: float = 24 * 3600.0
    webhook_backoff: float = 1.0
    receipt_key_file: str | None = None
    receipt_retired_keys_file: str | None = None
    receipt_issuer: str = "relay"
    checkpoint_interval: float = 300.0
    checkpoint_every: int = 1000
    receipt_retention: float | None = None
    tsa_url: str | None = None
    team: TeamDefaults = field(default_factory=TeamDefaults)
    mcp: McpSettings = field(default_factory=McpSettings)
    rules_file: str | None = None
    batch_window: float = DEFAULT_BATCH_WINDOW

    @property
    def socket_mode(self) -> bool:
        """Whether interactions arrive over Socket Mode instead of ``/slack/events``."""
        return self.app_token is not None

    def __repr__(self) -> str:
        # Never print a token, not even by accident in a traceback.
        return (
            f"Settings(socket_mode={self.socket_mode}, channel={self.channel!r},"
            f" port={self.port}, redis={'yes' if self.redis_url else 'no'})"
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: str | None) -> Settings:
        """Read settings from ``env`` (default ``os.environ``); flags in ``overrides`` win.

        ``overrides`` are keyed by variable name (``PORT="8080"``); ``None`` means "not given".
        """
        source = dict(os.environ if env is None else env)
        source.update({k: v for k, v in overrides.items() if v is not None})

        def get(name: str) -> str | None:
            value = source.get(name)
            return value.strip() if value is not None and value.strip() else None

        bot_token, secret, app_token = _slack_credentials(get)
        timeout = read_timeout(get("RELAY_TIMEOUT"))
        redis = read_redis_settings(get)
        max_timeout = read_max_timeout(get("RELAY_MAX_TIMEOUT"), timeout)
        api_tokens = read_api_tokens(get("RELAY_API_TOKENS"), get("RELAY_API_TOKENS_FILE"))
        return cls(
            bot_token=bot_token,
            signing_secret=secret,
            app_token=app_token,
            slack_api_url=read_url(get("SLACK_API_URL"), "SLACK_API_URL"),
            channel=get("RELAY_CHANNEL"),
            allowed_users=read_ids(
                get("RELAY_ALLOWED_USERS"), "RELAY_ALLOWED_USERS", "user", "U0123ABCD"
            ),
            allowed_groups=read_ids(
                get("RELAY_ALLOWED_GROUPS"), "RELAY_ALLOWED_GROUPS", "user group", "S0123ABCD"
            ),
            allowed_channels=read_ids(
                get("RELAY_ALLOWED_CHANNELS"), "RELAY_ALLOWED_CHANNELS", "channel", "C0123ABCD"
            ),
            timeout=timeout,
            max_timeout=max_timeout,
            api_tokens=api_tokens,
            operator_tokens=read_operator_tokens(get("RELAY_OPERATOR_TOKENS"), api_tokens),
            rules_file=get("RELAY_RULES_FILE") or None,
            batch_window=read_batch_window(get("RELAY_BATCH_WINDOW")),
            max_wait=read_seconds(get("RELAY_MAX_WAIT"), "RELAY_MAX_WAIT", 60.0),
            plan_ttl=read_seconds(get("RELAY_PLAN_TTL"), "RELAY_PLAN_TTL", 4 * 3600.0),
            retention=read_seconds(get("RELAY_RETENTION"), "RELAY_RETENTION", 7 * 24 * 3600.0),
            max_body=int(
                read_number(get("RELAY_MAX_BODY"), "RELAY_MAX_BODY", 256 * 1024, whole=True)
            ),
            retention_bytes=read_whole(
                get("RELAY_RETENTION_BYTES"), "RELAY_RETENTION_BYTES", 64 << 20
            ),
            rate_limit=read_number(get("RELAY_RATE_LIMIT"), "RELAY_RATE_LIMIT", 50.0),
            max_long_polls=read_whole(get("RELAY_MAX_LONG_POLLS"), "RELAY_MAX_LONG_POLLS", 500),
            max_pending=read_whole(get("RELAY_MAX_PENDING"), "RELAY_MAX_PENDING", 1000),
            read_timeout=read_seconds(get("RELAY_READ_TIMEOUT"), "RELAY_READ_TIMEOUT", 10.0),
            max_connections=read_max_connections(get("RELAY_MAX_CONNECTIONS")),
            host=get("RELAY_HOST") or "0.0.0.0",  # noqa: S104
            port=read_port(get("PORT")),
            log_level=read_log_level(get("RELAY_LOG_LEVEL")),
            gc_threshold=read_gc_threshold(get("RELAY_GC_THRESHOLD")),
            mcp_progress_interval=read_seconds(
                get("RELAY_MCP_PROGRESS_INTERVAL"), "RELAY_MCP_PROGRESS_INTERVAL", 10.0
            ),
            idempotency_window=read_seconds(
                get("RELAY_IDEMPOTENCY_WINDOW"), "RELAY_IDEMPOTENCY_WINDOW", 24 * 3600.0
            ),
            team=TeamDefaults.from_env(source),
            receipt_key_file=get("RELAY_RECEIPT_KEY_FILE"),
            receipt_retired_keys_file=get("RELAY_RECEIPT_RETIRED_KEYS_FILE"),
            receipt_issuer=get("RELAY_RECEIPT_ISSUER") or "relay",
            mcp=McpSettings.from_env(get),
            **redis,
            **_webhooks(get),
            **receipt_settings(get),
        )


def _webhooks(get: Callable[[str], str | None]) -> dict[str, Any]:
    """The webhook settings: all or nothing (a key without hosts could call nobody)."""
    key, hosts = get("RELAY_WEBHOOK_KEY"), get("RELAY_WEBHOOK_ALLOWED_HOSTS")
    if key is None and hosts is None:
        return {}
    if key is None or len(key) < 32:
        raise RelayConfigError(
            "RELAY_WEBHOOK_KEY must be set, 32 characters or more, to sign webhooks; make one"
            ' with: python3 -c "import secrets; print(secrets.token_urlsafe(32))"',
            setting="RELAY_WEBHOOK_KEY",
        )
    names = frozenset(h.strip().lower().rstrip(".") for h in (hosts or "").split(",") if h.strip())
    # Host names only: no scheme, path or port (an IPv6 literal goes in brackets).
    bad = sorted(h for h in names if "/" in h or (":" in h and not h.startswith("[")))
    if not names or bad:
        listed = f"; these are not hosts: {', '.join(bad)}" if bad else ""
        raise RelayConfigError(
            "RELAY_WEBHOOK_ALLOWED_HOSTS must list the hosts webhooks may call, comma-separated"
            f" (hooks.example.com, *.example.com; no scheme, path or port){listed}",
            setting="RELAY_WEBHOOK_ALLOWED_HOSTS",
        )
    networks = tuple(
        n.strip() for n in (get("RELAY_WEBHOOK_ALLOWED_NETWORKS") or "").split(",") if n.strip()
    )
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise RelayConfigError(
                f"RELAY_WEBHOOK_ALLOWED_NETWORKS: {network!r} is not a CIDR network like"
                " 10.0.0.0/8 or 127.0.0.1/32",
                setting="RELAY_WEBHOOK_ALLOWED_NETWORKS",
            ) from None
    return {
        "webhook_key": key,
        "webhook_hosts": names,
        "webhook_networks": networks,
        "webhook_retry_for": read_seconds(
            get("RELAY_WEBHOOK_RETRY_FOR"), "RELAY_WEBHOOK_RETRY_FOR", 24 * 3600.0
        ),
        "webhook_backoff": read_seconds(get("RELAY_WEBHOOK_BACKOFF"), "RELAY_WEBHOOK_BACKOFF", 1.0),
    }


def _slack_credentials(get: Callable[[str], str | None]) -> tuple[str, str | None, str | None]:
    """The bot token, signing secret and app token: the bot token and one of the other two,
    each of its kind; ``RelayConfigError`` says which is missing or pasted in the wrong place."""
    bot_token, secret, app_token = (
        get("SLACK_BOT_TOKEN"),
        get("SLACK_SIGNING_SECRET"),
        get("SLACK_APP_TOKEN"),
    )
    if bot_token is None and secret is None and app_token is None:
        raise RelayConfigError(NO_CREDENTIALS_HELP, setting="SLACK_BOT_TOKEN")
    if bot_token is None:
        raise RelayConfigError(
            "SLACK_BOT_TOKEN is not set: copy the Bot User OAuth Token (xoxb-…) from your"
            " app's OAuth & Permissions page",
            setting="SLACK_BOT_TOKEN",
        )
    if not bot_token.startswith(("xoxb-", "xoxp-")):
        raise RelayConfigError(
            "SLACK_BOT_TOKEN must be a bot token starting with xoxb- (check you did not"
            " paste the signing secret or the app token)",
            setting="SLACK_BOT_TOKEN",
        )
    if app_token is not None and not app_token.startswith("xapp-"):
        raise RelayConfigError(
            "SLACK_APP_TOKEN must be an app-level token starting with xapp- (Basic"
            " Information → App-Level Tokens, scope connections:write)",
            setting="SLACK_APP_TOKEN",
        )
    if app_token is None and secret is None:
        raise RelayConfigError(
            "set SLACK_SIGNING_SECRET (HTTP mode: Basic Information → Signing Secret) or"
            " SLACK_APP_TOKEN (Socket Mode: an xapp- token)",
            setting="SLACK_SIGNING_SECRET",
        )
    return bot_token, secret, app_token
