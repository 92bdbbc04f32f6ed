"""What a message would set off in Slack: the people it notifies and the links it shows.

Slack parses its ``<…>`` tokens in ``mrkdwn`` text objects and in a message's top-level
``text`` (which notifications show) unless ``mrkdwn`` is false, and in ``markdown`` blocks:
``<!here>``, ``<!channel>``, ``<!everyone>`` and ``<!subteam^S…>`` notify many people,
``<@U…>`` one, and ``<https://address|label>`` shows only ``label``
(docs.slack.dev/messaging/formatting-message-text). ``plain_text`` is shown as it is; escaped
text (``&lt;!here&gt;``) is shown, not parsed. A ``markdown`` block also links
``[label](https://address)``. The fake records each so that a test can assert that nobody's
text pinged the channel or hid where a link goes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Link", "Mention", "links_in", "mentions_in"]

_MENTION = re.compile(
    r"<(?:!(?P<broadcast>here|channel|everyone)|!subteam\^(?P<group>[^|>]+)|@(?P<user>[UW][^|>]*))"
    r"(?:\|[^>]*)?>"
)
_SLACK_LINK = re.compile(r"<(?P<url>[a-zA-Z][a-zA-Z0-9+.-]*:[^|>]*)(?:\|(?P<label>[^>]*))?>")
_MARKDOWN_LINK = re.compile(r"(?<!!)\[(?P<label>[^\]\n]+)\]\(\s*<?(?P<url>[a-zA-Z][^\s)>]*)")


@dataclass(frozen=True, kw_only=True)
class Mention:
    """Someone a message notifies: ``kind`` is ``here``, ``channel``, ``everyone`` (the
    broadcasts), ``subteam`` (a user group) or ``user``; ``target`` the group or user id."""

    kind: str
    target: str | None
    method: str
    channel: str | None

    @property
    def broadcast(self) -> bool:
        """Whether it notifies a whole channel or workspace."""
        return self.kind in ("here", "channel", "everyone")


@dataclass(frozen=True, kw_only=True)
class Link:
    """A link a message shows: where it goes, and the text shown for it."""

    url: str
    label: str
    method: str
    channel: str | None

    @property
    def disguised(self) -> bool:
        """Whether its text hides the address (a label that is not the address itself)."""
        return self.label.strip() not in (self.url, self.url.removeprefix("mailto:"))


def _parsed_texts(args: dict[str, Any]) -> Iterator[tuple[str, bool]]:
    """Every text Slack parses in a message, and whether it is a ``markdown`` block."""
    text = args.get("text")
    if isinstance(text, str) and args.get("mrkdwn") not in (False, "false"):
        yield text, False
    stack: list[Any] = [args.get("blocks")]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if node.get("type") in ("mrkdwn", "markdown") and isinstance(node.get("text"), str):
                yield node["text"], node["type"] == "markdown"
            stack.extend(v for v in node.values() if isinstance(v, dict | list))


def mentions_in(args: dict[str, Any], *, method: str) -> list[Mention]:
    """The notifications a message posted with ``args`` would send."""
    found: list[Mention] = []
    channel = args.get("channel") if isinstance(args.get("channel"), str) else None
    for text, _ in _parsed_texts(args):
        for match in _MENTION.finditer(text):
            kind = match.group("broadcast") or ("subteam" if match.group("group") else "user")
            target = match.group("group") or match.group("user")
            found.append(Mention(kind=kind, target=target, method=method, channel=channel))
    return found


def links_in(args: dict[str, Any], *, method: str) -> list[Link]:
    """The links a message posted with ``args`` would show, with their visible text."""
    found: list[Link] = []
    channel = args.get("channel") if isinstance(args.get("channel"), str) else None
    for text, markdown in _parsed_texts(args):
        for match in _SLACK_LINK.finditer(text):
            url = match.group("url")
            label = match.group("label") or url
            found.append(Link(url=url, label=label, method=method, channel=channel))
        if markdown:
            for match in _MARKDOWN_LINK.finditer(text):
                label, url = match.group("label"), match.group("url")
                found.append(Link(url=url, label=label, method=method, channel=channel))
    return found
