"""How the fake Slack reads a Web API request's token and arguments, and judges the token,
as Slack does.

- The token counts only from the ``Authorization: Bearer`` header, or from a ``token`` field
  of a form-encoded body. A ``token`` in a JSON body is not read (JSON bodies need the
  header: ``not_authed``), nor one in the query string (refused for apps created after
  February 2021, docs.slack.dev/changelog/2020-11-no-more-tokens-in-querystrings-for-newly-
  created-apps).
- No token: ``not_authed``. A token Slack does not know (wrong, malformed, revoked):
  ``invalid_auth``.
- Some read methods take no JSON body (the reference lists only form encoding for them):
  their JSON arguments are not read, so a required one is missing (``invalid_arguments``).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["FORM_ONLY_METHODS", "DecodedRequest", "TokenCheck", "decode_api_request"]

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


@dataclass(kw_only=True)
class TokenCheck:
    """Which tokens the workspace knows: exactly ``bot_token``/``app_token`` when given,
    otherwise any token of the right shape (``xoxb-``/``xoxp-`` or ``xapp-`` and more);
    ``revoked`` ones never."""

    bot_token: str | None = None
    app_token: str | None = None
    revoked: set[str] = field(default_factory=set)

    def error(self, token: str | None) -> str | None:
        """``not_authed``, ``invalid_auth`` or ``None`` when Slack would take ``token``."""
        if not token:
            return "not_authed"
        if token in self.revoked:
            return "invalid_auth"
        if token.startswith(_APP_PREFIX):
            expected, well_formed = self.app_token, len(token) > len(_APP_PREFIX)
        else:
            expected = self.bot_token
            well_formed = token.startswith(_BOT_PREFIXES) and len(token) > len(_BOT_PREFIXES[0])
        if expected is not None:
            return None if token == expected else "invalid_auth"
        return None if well_formed else "invalid_auth"


async def decode_api_request(request: web.Request, method: str) -> DecodedRequest:
    """The call's arguments (query, form or JSON body; JSON-string fields decoded; no
    ``None`` values) and the token Slack would read from it."""
    args: dict[str, Any] = dict(request.query)
    args.pop("token", None)  # never read from the query string
    token: str | None = None
    json_body = False
    ignored: dict[str, Any] = {}
    if request.can_read_body:
        if request.content_type == "application/json":
            json_body = True
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
    return DecodedRequest(args=args, token=token or None, json_body=json_body, ignored_json=ignored)


def loads(text: str | bytes) -> Any:
    """``json.loads`` for what a client sent, refusing (``ValueError``) integers too long to
    compute with, which no Slack argument is (``relay.testing`` imports nothing of relay, so
    this is its own small guard; ``RecursionError`` is the caller's to catch)."""
    return json.loads(text, parse_int=_bounded_int)


def _bounded_int(text: str) -> int:
    if len(text) > 30:
        raise ValueError(f"an integer of {len(text)} digits")
    return int(text)
