"""The Slack app manifest for the relay's app: paste it into "Create app → From a manifest".

Pure: builds a dict and its text, no I/O. ``deploy/slack-app-manifest*.yaml`` are the same data
with comments; a test keeps them equal to ``build_manifest``.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from relay.errors import RelayConfigError

__all__ = ["BOT_SCOPES", "build_manifest", "manifest_text"]

# The bot scopes the relay's Web API calls need, and no more: whoever installs the app reviews
# this list, and every extra scope is one more permission to justify.
BOT_SCOPES: tuple[str, ...] = (
    # chat.postMessage, chat.update, chat.postEphemeral: post a question, lock it with its
    # outcome, and tell someone privately that they may not answer it.
    "chat:write",
    # conversations.open: ask one person in a DM (a U… id as the channel).
    "im:write",
    # usergroups.users.list: allow the members of a user group (S… id) to answer.
    "usergroups:read",
)

# Slack's manifest schema: display_information.name is 1..35 characters.
_NAME_CHARS = 35
_DESCRIPTION = "Lets an AI agent ask your team a question and wait for a trustworthy answer."


def build_manifest(
    *, socket_mode: bool, request_url: str | None = None, name: str = "relay"
) -> dict[str, Any]:
    """The app manifest for Socket Mode, or for HTTP mode with ``request_url`` (https).

    Raises ``RelayConfigError`` when the mode and ``request_url`` disagree or ``name`` does not
    fit Slack's limit.
    """
    name = name.strip()
    if not name or len(name) > _NAME_CHARS:
        raise RelayConfigError(
            f"the app name must be 1 to {_NAME_CHARS} characters (got {len(name)}):"
            " choose a shorter --name",
            setting="name",
        )
    interactivity: dict[str, Any] = {"is_enabled": True}
    if socket_mode:
        if request_url is not None:
            raise RelayConfigError(
                "Socket Mode takes no request URL: clicks arrive over the app-level token's"
                " WebSocket; drop the request URL or turn Socket Mode off",
                setting="request_url",
            )
    else:
        interactivity["request_url"] = _checked_request_url(request_url)
    return {
        "display_information": {"name": name, "description": _DESCRIPTION},
        "features": {"bot_user": {"display_name": name, "always_online": True}},
        "oauth_config": {"scopes": {"bot": list(BOT_SCOPES)}},
        "settings": {
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": socket_mode,
            "token_rotation_enabled": False,
        },
    }


def _checked_request_url(request_url: str | None) -> str:
    if request_url is None:
        raise RelayConfigError(
            "HTTP mode needs the public URL Slack sends clicks to, like"
            " https://relay.example.com/slack/events (or use Socket Mode, which needs none)",
            setting="request_url",
        )
    parts = urlsplit(request_url)
    if parts.scheme != "https" or not parts.hostname:
        raise RelayConfigError(
            f"the request URL must be an https:// URL with a host, like"
            f" https://relay.example.com/slack/events (got {request_url!r}); Slack sends"
            " clicks only to https",
            setting="request_url",
        )
    return request_url


def manifest_text(manifest: dict[str, Any]) -> str:
    """The manifest as text to paste into Slack: JSON, indented, with a final newline.

    JSON is valid YAML and Slack's manifest editor takes either, so the relay needs no YAML
    library at run time.
    """
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
