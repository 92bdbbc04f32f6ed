"""What the fake Slack remembers: the Web API calls it answered, the messages it holds, and
what a simulated human's action got back from the app."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClickResult", "FakeMessage", "RecordedCall", "ViewResult"]


@dataclass(frozen=True, kw_only=True)
class RecordedCall:
    """One request the fake answered: a Web API call or a post to a ``response_url``.

    ``args`` is the decoded body (``blocks``, ``metadata`` and ``attachments`` decoded from
    JSON strings), without the token; ``status`` is the HTTP status the fake answered with and
    ``response`` the JSON body it sent. ``at`` is ``time.time()`` when the answer was decided.
    """

    method: str
    args: dict[str, Any]
    at: float
    status: int
    response: dict[str, Any] = field(default_factory=dict)
    token: str | None = None

    @property
    def ok(self) -> bool:
        """Whether Slack answered HTTP 200 with ``"ok": true``."""
        return self.status == 200 and self.response.get("ok") is True

    @property
    def error(self) -> str | None:
        """The ``error`` code of a failed call, else ``None``."""
        error = self.response.get("error")
        return error if isinstance(error, str) else None


@dataclass(kw_only=True, eq=False)
class FakeMessage:
    """A message the bot posted, as Slack holds it; ``chat.update`` changes it in place.

    ``blocks`` and ``text`` are the current version. ``versions`` holds the blocks of every
    version (``versions[0]`` as posted) and ``text_versions`` their texts, so that a test can
    let a human click on an old version their client still shows. Slack fills in a
    ``block_id`` for every block and an ``action_id`` for every element that lacks one; the
    stored blocks carry those generated ids, as the messages Slack returns do.
    """

    channel: str
    ts: str
    thread_ts: str | None
    text: str
    blocks: list[dict[str, Any]]
    versions: list[list[dict[str, Any]]]
    text_versions: list[str]
    user: str
    metadata: dict[str, Any] | None = None
    deleted: bool = False
    reply_count: int = 0
    """Replies in the thread this message starts; once it has one, Slack also sets the
    parent's own ``thread_ts`` (to its ``ts``), ``reply_users`` and ``latest_reply``."""
    reply_users: list[str] = field(default_factory=list)
    latest_reply: str | None = None

    @property
    def is_thread_parent(self) -> bool:
        """Whether replies were posted in this message's thread."""
        return self.reply_count > 0

    @property
    def updated(self) -> bool:
        """Whether the message was changed after it was posted."""
        return len(self.versions) > 1

    def replace(self, *, text: str, blocks: list[dict[str, Any]]) -> None:
        """Make ``text`` and ``blocks`` the current version, keeping the old ones."""
        self.text = text
        self.blocks = blocks
        self.versions.append(blocks)
        self.text_versions.append(text)


@dataclass(frozen=True, kw_only=True)
class ClickResult:
    """What the app answered to a simulated human action.

    Over HTTP: the status and body of the app's response. Over Socket Mode: 200 once the app
    acknowledged the envelope, with the ack's ``payload`` as JSON (``""`` when it had none, or
    when the envelope did not accept one: Slack drops it then).
    504 when the app did not answer within ``FakeSlack.ack_timeout`` (Slack shows the user an
    error then). ``dispatched`` is false when the action sent nothing, like ticking a box in
    an input block without ``dispatch_action``: Slack only records the new state then.
    """

    status: int
    body: str
    dispatched: bool = True

    @property
    def ok(self) -> bool:
        """Whether the app acknowledged the action with a 200."""
        return self.dispatched and self.status == 200


@dataclass(frozen=True, kw_only=True)
class ViewResult(ClickResult):
    """What submitting (or closing) a modal came to.

    ``outcome`` is what the user saw next: ``"closed"`` (the view closed), ``"errors"`` (the
    app sent field errors: see ``errors``), ``"updated"``, ``"pushed"``, ``"cleared"`` (the
    whole modal closed), ``"invalid"`` (Slack's client refused the submission before sending
    it: a required field empty, a number out of range; see ``errors``) or ``"failed"`` (the
    app's answer was an error, late, or not one Slack accepts: see ``problem``; the modal
    stays open as it was).
    """

    outcome: str
    errors: dict[str, str] = field(default_factory=dict)
    problem: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the app took the submission and Slack accepted its answer."""
        return self.dispatched and self.status == 200 and self.problem is None
