"""Turn a Slack ``block_actions`` payload into a click, and a click into an answer. Pure.

``parse_click`` trusts nothing in the payload: any field of the wrong shape makes it return
``None`` (the click is ignored), never raise. ``decide`` applies the rules on typed text, so a
typed answer is never silently dropped and never silently turns a click into another decision.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from relay.seam.edits import read_edit
from relay.seam.plan_review import read_narrowing
from relay.seam.questions import AskUserQuestionAnswerItem, AskUserQuestionItem, Responder
from relay.slack.rendering.batch_view import ACTION_BATCH
from relay.slack.rendering.inputs import ACTION_EDIT, ACTION_PLAN_EDIT, ACTION_PLAN_STOP
from relay.slack.rendering.render import (
    ACTION_CHECKS,
    ACTION_MULTI,
    ACTION_OPTION,
    ACTION_SELECT,
    ACTION_SKIP,
    ACTION_SUBMIT,
    ACTION_TEXT,
    BLOCK_PREFIX,
    block_id,
    labels_of,
)

# relay.gate.approval's deny label (the gate sits above this module).
_DENY = "Deny"

__all__ = [
    "Click",
    "ClickKind",
    "Notice",
    "decide",
    "parse_click",
    "parse_edit_submission",
    "request_digest",
]

_MAX_ID = 64
BATCH_ACTIONS = frozenset({"allow", "deny", "review", "list", "prev", "next"})
# Payloads are JSON: dict first, so that isinstance never reaches the ABC (a Python-level
# check, a dozen per click); other mappings still pass.
_MAPPING = (dict, Mapping)


class ClickKind(StrEnum):
    """What the human did on a question's message."""

    OPTION = "option"  # a button or a menu pick: answers with that option
    TEXT = "text"  # Enter in the text field
    SUBMIT = "submit"  # the multi-select Submit button
    SKIP = "skip"
    TOGGLE = "toggle"  # ticking a box or changing a multi-select menu: state only
    EDIT = "edit"  # a tool approval's "Edit…": opens the edit modal, answers nothing yet
    SAVE = "save"  # the edit modal submitted (``view_submission``): the edited call allowed
    BATCH = "batch"  # a batch message's own button (``batch_action``, page in ``option``)
    PLAN_STOP = "plan_stop"  # an approved plan's "Stop the plan": ends the plan
    PLAN_EDIT = "plan_edit"  # a plan review's "Edit…": opens the scope form
    PLAN_SAVE = "plan_save"  # the scope form submitted: the plan approved, narrowed


class Notice(StrEnum):
    """Why a click answered nothing; the clicker is told privately (see ``notice_text``)."""

    TEXT_PENDING = "text_pending"
    BLANK_TEXT = "blank_text"
    NOTHING_CHOSEN = "nothing_chosen"
    STALE = "stale"
    EDIT_TYPED = "edit_typed"


@dataclass(frozen=True, slots=True)
class Click:
    """One interaction on a relay message, with the state of the message's inputs."""

    ask_id: str
    index: int
    kind: ClickKind
    user_id: str
    user_name: str | None
    channel_id: str | None
    message_ts: str | None
    thread_ts: str | None
    team_id: str | None
    api_app_id: str | None
    option: int | None = None
    ticked: tuple[int, ...] = ()
    text: str | None = None
    response_url: str | None = None
    """Where to answer the clicker privately: reaches anyone who could click, members of
    the channel or not (a ``chat.postEphemeral`` does not)."""
    enterprise_id: str | None = None
    """The Enterprise Grid organisation the click came from (``enterprise.id``)."""
    is_enterprise_install: bool = False
    """Whether the click came through an org-wide install (then ``team`` is ``null`` and
    ``team_id`` is the clicker's ``user.team_id``: their workspace or the organisation)."""
    request: str | None = None
    """``request_digest`` of the signed HTTP request that carried the click (``None`` over
    Socket Mode, where Slack signs nothing): what a receipt binds the decision to."""
    trigger_id: str | None = None
    """What opens a modal for this click (``views.open``), for 3 seconds."""
    values: Mapping[str, Any] | None = None
    """A submitted edit form's ``view.state.values`` (``ClickKind.SAVE`` only)."""
    version: int = 1
    """The version of the question the clicker was shown (an edited tool call is a new
    version; see ``relay.store.votes``): from the block's id, or the edit form's metadata."""
    batch_action: str | None = None
    """A batch button's action (``BATCH_ACTIONS``); ``None`` for any other click."""


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _route(block: str) -> tuple[str, int, int] | None:
    """The ask id, question index and version a block's id routes to (``block_id``)."""
    parts = block.split(":")
    if len(parts) != 4 or parts[0] != BLOCK_PREFIX:
        return None
    _, ask_id, index, part = parts
    if not ask_id or len(ask_id) > _MAX_ID or not _digits(index):
        return None
    version = 1
    if ".v" in part:
        part, _, shown = part.partition(".v")
        if not _digits(shown) or int(shown) < 2:
            return None
        version = int(shown)
    return ask_id, int(index), version


def _digits(text: str) -> bool:
    # ASCII only: str.isdigit() also accepts "²" (which int() rejects) and "١" (which it reads).
    return text.isascii() and text.isdigit() and len(text) <= 4


def _index(value: object) -> int | None:
    if isinstance(value, str) and _digits(value):
        return int(value)
    return None


def _option_index(option: object) -> int | None:
    return _index(option.get("value")) if isinstance(option, _MAPPING) else None


def _state_of(payload: Mapping[str, Any], block: str, action: str) -> Mapping[str, Any] | None:
    state = payload.get("state")
    values = state.get("values") if isinstance(state, _MAPPING) else None
    entry = values.get(block) if isinstance(values, _MAPPING) else None
    element = entry.get(action) if isinstance(entry, _MAPPING) else None
    return element if isinstance(element, _MAPPING) else None


def _ticked(payload: Mapping[str, Any], ask_id: str, index: int, version: int) -> tuple[int, ...]:
    act = block_id(ask_id, index, "act", version)
    for action in (ACTION_CHECKS, ACTION_MULTI):
        element = _state_of(payload, act, action)
        if element is None:
            continue
        options = element.get("selected_options")
        if isinstance(options, list):
            found = (_option_index(o) for o in options)
            return tuple(i for i in found if i is not None)
    return ()


def _typed(payload: Mapping[str, Any], ask_id: str, index: int, version: int) -> str | None:
    element = _state_of(payload, block_id(ask_id, index, "text", version), ACTION_TEXT)
    return _str(element.get("value")) if element is not None else None


def request_digest(body: bytes, timestamp: str) -> str:
    """Base64url (no padding) SHA-256 of what Slack signed: ``v0:{timestamp}:{body}``, the
    raw body and its ``X-Slack-Request-Timestamp`` (one pass over ~2.4 KB, ~2 µs)."""
    signed = hashlib.sha256(b"v0:" + timestamp.encode() + b":" + body).digest()
    return base64.urlsafe_b64encode(signed).rstrip(b"=").decode("ascii")


def _object(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, _MAPPING) else {}


def parse_edit_submission(payload: Mapping[str, Any]) -> Click | None:
    """The edit form's ``view_submission`` as a ``SAVE`` click on the question the form
    edits (named in its ``private_metadata``; a plan's scope form, ``"p": 1``, is a
    ``PLAN_SAVE``), or ``None`` if it is no form of ours."""
    view, user = _object(payload.get("view")), _object(payload.get("user"))
    try:
        meta = json.loads(view.get("private_metadata") or "")
        ask_id, index = str(meta["a"]), int(meta["i"])
        channel, ts, version = meta.get("c"), meta.get("t"), int(meta.get("v", 1))
        kind = ClickKind.PLAN_SAVE if meta.get("p") == 1 else ClickKind.SAVE
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    user_id, team = _str(user.get("id")), _object(payload.get("team"))
    if not user_id:
        return None
    enterprise = payload.get("enterprise")
    return Click(
        ask_id=ask_id,
        index=index,
        kind=kind,
        user_id=user_id,
        user_name=_str(user.get("name")) or _str(user.get("username")),
        channel_id=_str(channel),
        message_ts=_str(ts),
        thread_ts=None,
        team_id=_str(team.get("id")) or _str(user.get("team_id")),
        api_app_id=_str(payload.get("api_app_id")),
        enterprise_id=_str(enterprise.get("id"))
        if isinstance(enterprise, _MAPPING)
        else _str(enterprise),
        is_enterprise_install=payload.get("is_enterprise_install") is True,
        values=_object(_object(view.get("state")).get("values")),
        version=version,
    )


def parse_click(payload: object, *, request: str | None = None) -> Click | None:
    """The relay click in a ``block_actions`` payload, or ``None`` if it is not one of ours;
    ``request`` is the digest of the signed request that carried it (``request_digest``)."""
    if not isinstance(payload, _MAPPING) or payload.get("type") != "block_actions":
        return None
    actions = payload.get("actions")
    user = payload.get("user")
    if not isinstance(actions, list) or len(actions) != 1 or not isinstance(user, _MAPPING):
        return None
    action = actions[0]
    user_id = _str(user.get("id"))
    if not isinstance(action, _MAPPING) or not user_id:
        return None
    action_id, block = _str(action.get("action_id")), _str(action.get("block_id"))
    route = _route(block) if block else None
    if action_id is None or route is None:
        return None
    ask_id, index, version = route
    found = _action_kind(action_id, action)
    if found is None:
        return None
    kind, option, batch_action = found
    if kind is ClickKind.OPTION and option is None:
        return None
    # The text field's dispatched value is what was in it when Enter was pressed.
    text = (
        _str(action.get("value"))
        if kind is ClickKind.TEXT
        else _typed(payload, ask_id, index, version)
    )
    container = payload.get("container")
    container = container if isinstance(container, _MAPPING) else {}
    team = payload.get("team")
    channel = payload.get("channel")
    enterprise = payload.get("enterprise")
    return Click(
        ask_id=ask_id,
        index=index,
        kind=kind,
        user_id=user_id,
        user_name=_str(user.get("name")) or _str(user.get("username")),
        channel_id=_str(container.get("channel_id"))
        or (_str(channel.get("id")) if isinstance(channel, _MAPPING) else None),
        message_ts=_str(container.get("message_ts")),
        thread_ts=_str(container.get("thread_ts")),
        team_id=(_str(team.get("id")) if isinstance(team, _MAPPING) else None)
        or _str(user.get("team_id")),
        api_app_id=_str(payload.get("api_app_id")),
        option=option,
        ticked=_ticked(payload, ask_id, index, version),
        text=text,
        response_url=_str(payload.get("response_url")),
        # As slack_bolt.request.internals.extract_enterprise_id: an object or a bare id.
        enterprise_id=_str(enterprise.get("id"))
        if isinstance(enterprise, _MAPPING)
        else _str(enterprise),
        is_enterprise_install=payload.get("is_enterprise_install") is True,
        request=request,
        trigger_id=_str(payload.get("trigger_id")),
        version=version,
        batch_action=batch_action,
    )


# The relay's actions that carry nothing but their kind.
_PLAIN_KINDS = {
    ACTION_CHECKS: ClickKind.TOGGLE,
    ACTION_MULTI: ClickKind.TOGGLE,
    ACTION_SUBMIT: ClickKind.SUBMIT,
    ACTION_SKIP: ClickKind.SKIP,
    ACTION_EDIT: ClickKind.EDIT,
    ACTION_PLAN_STOP: ClickKind.PLAN_STOP,
    ACTION_PLAN_EDIT: ClickKind.PLAN_EDIT,
    ACTION_TEXT: ClickKind.TEXT,
}


def _action_kind(
    action_id: str, action: Mapping[str, Any]
) -> tuple[ClickKind, int | None, str | None] | None:
    """What relay action ``action_id`` is: its kind, the option it picks and its batch action;
    ``None``: not one of ours."""
    if action_id.startswith(ACTION_OPTION + "."):
        option = _index(action.get("value"))
        # option i's button is relay.option.i with value "i"; no other is ours
        return ClickKind.OPTION, option if action_id == f"{ACTION_OPTION}.{option}" else None, None
    if action_id == ACTION_SELECT:
        return ClickKind.OPTION, _option_index(action.get("selected_option")), None
    if action_id.startswith(ACTION_BATCH + "."):
        option, batch_action = _index(action.get("value")), action_id[len(ACTION_BATCH) + 1 :]
        if batch_action not in BATCH_ACTIONS or option is None:
            return None
        return ClickKind.BATCH, option, batch_action
    kind = _PLAIN_KINDS.get(action_id)
    return None if kind is None else (kind, None, None)


def decide(
    question: AskUserQuestionItem, click: Click, *, at: datetime
) -> AskUserQuestionAnswerItem | Notice | None:
    """The answer a click gives to ``question``, a ``Notice`` for the clicker, or ``None``."""
    labels = question.labels
    text = click.text if click.text is not None and click.text.strip() else None
    by = Responder(
        id=click.user_id, name=click.user_name, team=click.team_id, request=click.request
    )

    def item(selected: tuple[str, ...], custom: str | None = None) -> AskUserQuestionAnswerItem:
        return AskUserQuestionAnswerItem(
            id=question.id, selected=selected, custom=custom, answered_by=by, answered_at=at
        )

    if click.kind in (
        ClickKind.TOGGLE,
        ClickKind.EDIT,
        ClickKind.SAVE,
        ClickKind.BATCH,
        ClickKind.PLAN_STOP,
        ClickKind.PLAN_EDIT,
        ClickKind.PLAN_SAVE,
    ):
        return None
    if text is not None and (read_edit(text) is not None or read_narrowing(text) is not None):
        # An edit is made in its form, where the message then shows it; typed, it would run
        # an input the other reviewers never saw.
        return Notice.EDIT_TYPED
    if click.kind is ClickKind.OPTION:
        if click.option is None or click.option >= len(labels) or question.multi_select:
            return Notice.STALE
        label = labels[click.option]
        if text is None:
            return item((label,))
        intent = question.intent
        if intent is not None and intent.kind == "plan-review" and label != intent.approve:
            # Declining a plan with feedback typed: the feedback is the answer.
            return item((), text)
        if intent is not None and intent.kind == "tool-approval" and label == _DENY:
            # Deny with the reason typed: the reason is the answer ("Denied by @bob: …").
            return item((), text)
        return Notice.TEXT_PENDING
    if any(i >= len(labels) for i in click.ticked):
        return Notice.STALE
    ticked = labels_of(question, click.ticked) if question.multi_select else ()
    if click.kind is ClickKind.TEXT:
        return Notice.BLANK_TEXT if text is None else item(ticked, text)
    if click.kind is ClickKind.SUBMIT:
        if not question.multi_select:
            return Notice.STALE
        return Notice.NOTHING_CHOSEN if not ticked and text is None else item(ticked, text)
    # Skip: typed text would be lost, so ask the human to send or clear it first.
    return Notice.TEXT_PENDING if text is not None else item(())
