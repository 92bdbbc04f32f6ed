"""How the fake Slack reads a Web API request's token and arguments, and judges the token,
as Slack does.

- The token counts only from the ``Authorization: Bearer`` header, or from a ``token`` field
  of a form-encoded body. A ``token`` in a JSON body is not read (JSON bodies need the
  header: ``not_authed``), nor one in the query string (refused for apps created after
  February 2021, docs.slack.dev/changelog/2020-11-no-more-tokens-in-querystrings-for-newly-
  created-apps).
- No token: ``not_authed``. A token Slack does not know (one it never issued, malformed,
  revoked): ``invalid_auth`` (docs.slack.dev/authentication/tokens; every method's errors
  table lists ``invalid_auth``). The fake knows the tokens it issued: its bot and app token
  and any ``issue_token`` added; ``any_token`` (an opt-in leniency) takes any well-formed one.
- A JSON body whose ``Content-Type`` names no charset is read as UTF-8 and answered with the
  warning ``missing_charset`` (docs.slack.dev/apis/web-api, "JSON-encoded bodies": "If you
  don't include the charset parameter, we'll assume UTF-8 and return a missing_charset
  warning").
- Some read methods take no JSON body (the reference lists only form encoding for them):
  their JSON arguments are not read, so a required one is missing (``invalid_arguments``).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = [
    "DEFAULT_APP_TOKEN",
    "DEFAULT_BOT_TOKEN",
    "FORM_ONLY_METHODS",
    "DecodedRequest",
    "TokenCheck",
    "decode_api_request",
]

DEFAULT_BOT_TOKEN = "xoxb-0-fake-bot-token"  # noqa: S105 - the fake's own well-known token
"""The bot token a ``FakeSlack`` issues when the test names none."""
DEFAULT_APP_TOKEN = "xapp-0-fake-app-token"  # noqa: S105
"""The app-level (Socket Mode) token a ``FakeSlack`` issues when the test names none."""

FORM_ONLY_METHODS = frozenset({"usergroups.users.list", "users.info", "chat.getPermalink"})
"""Methods that read no JSON body."""

_JSON_STRING_FIELDS = ("blocks", "attachments", "metadata", "view")
_BOT_PREFIXES = ("xoxb-", "xoxp-")
_APP_PREFIX = "xapp-"


@dataclass(kw_only=True)
class DecodedRequest:
    """A Web API request as the fake reads it: arguments, the token Slack would take (if
    any), and whether the body was JSON."""

    args: dict[str, Any]
    token: str | None
    json_body: bool
    ignored_json: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class TokenCheck:
    """Which tokens the workspace knows: the ones it issued (``issued``: its bot and app
    token and any added since); with ``any_token``, any token of the right shape
    (``xoxb-``/``xoxp-`` or ``xapp-`` and more); ``revoked`` ones never."""

    issued: set[str] = field(default_factory=set)
    any_token: bool = False
    revoked: set[str] = field(default_factory=set)

    def error(self, token: str | None) -> str | None:
        """``not_authed``, ``invalid_auth`` or ``None`` when Slack would take ``token``."""
        if not token:
            return "not_authed"
        if token in self.revoked:
            return "invalid_auth"
        if token in self.issued:
            return None
        if not self.any_token:
            return "invalid_auth"
        if token.startswith(_APP_PREFIX):
            well_formed = len(token) > len(_APP_PREFIX)
        else:
            well_formed = token.startswith(_BOT_PREFIXES) and len(token) > len(_BOT_PREFIXES[0])
        return None if well_formed else "invalid_auth"


async def decode_api_request(request: web.Request, method: str) -> DecodedRequest:
    """The call's arguments (query, form or JSON body; JSON-string fields decoded; no
    ``None`` values) and the token Slack would read from it."""
    args: dict[str, Any] = dict(request.query)
    args.pop("token", None)  # never read from the query string
    token: str | None = None
    json_body = False
    ignored: dict[str, Any] = {}
    warnings: list[str] = []
    if request.can_read_body:
        if request.content_type == "application/json":
            json_body = True
            if request.charset is None:
                warnings.append("missing_charset")
            try:
                data = loads(await request.read())
            except (ValueError, RecursionError):  # nested too deep: answered as not JSON
                data = None
            if isinstance(data, dict):
                data.pop("token", None)  # a JSON body's token is not read
                if method in FORM_ONLY_METHODS:
                    ignored = data
                else:
                    args.update(data)
        else:
            form = await request.post()
            fields = {k: v for k, v in form.items() if isinstance(v, str)}
            token = fields.pop("token", None)
            args.update(fields)
    for name in _JSON_STRING_FIELDS:
        if isinstance(args.get(name), str):
            # Undecodable JSON stays a string: validation answers invalid_blocks_format.
            with contextlib.suppress(ValueError, RecursionError):
                args[name] = loads(args[name])
    authorization = request.headers.get("Authorization", "")
    if authorization.startswith("Bearer "):
        token = authorization.removeprefix("Bearer ").strip()
    args = {k: v for k, v in args.items() if v is not None}
    return DecodedRequest(
        args=args,
        token=token or None,
        json_body=json_body,
        ignored_json=ignored,
        warnings=warnings,
    )


def loads(text: str | bytes) -> Any:
    """``json.loads`` for what a client sent, refusing (``ValueError``) integers too long to
    compute with, which no Slack argument is (``relay.testing`` imports nothing of relay, so
    this is its own small guard; ``RecursionError`` is the caller's to catch)."""
    return json.loads(text, parse_int=_bounded_int)


def _bounded_int(text: str) -> int:
    if len(text) > 30:
        raise ValueError(f"an integer of {len(text)} digits")
    return int(text)
