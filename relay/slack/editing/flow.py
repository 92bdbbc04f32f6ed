"""``EditIntake``: a tool approval's "Edit…" button, its modal, and the edited call allowed.

A click on "Edit…" opens the form (``views.open`` with the click's ``trigger_id``, which
Slack honours for 3 seconds) for someone who may answer; anyone else is told privately and
nothing changes. Submitting the form is the editor's answer: the edited input and the allow
option chosen go into the answer's ``custom`` (``relay.seam.edits``), claimed like any click, so
an approval of the original that landed first wins and the form says so; invalid values
come back under their fields (``response_action: errors``) and nothing is recorded.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from relay.asks.edit_review import EditReview
from relay.asks.lifecycle import AskLifecycle
from relay.asks.terms import widened
from relay.errors import UserInteractionError
from relay.seam.edits import Edit, edit_custom, read_edit, same_json
from relay.seam.intents import ToolEdit
from relay.seam.questions import AskUserQuestionAnswerItem, AskUserQuestionItem, Responder
from relay.slack.editing.fields import unavailable
from relay.slack.editing.form import edit_view, first_block, read_edit_view
from relay.slack.editing.opening import open_form, settled
from relay.slack.intake.parse import Click
from relay.slack.intake.people import Gatekeeper
from relay.slack.intake.reading import clicked_record
from relay.slack.rendering import notices
from relay.slack.rendering.final import answered_of
from relay.slack.rendering.text import cut
from relay.slack.webapi.background import Background
from relay.slack.webapi.messages import SlackMessages
from relay.store import AskRecord, MessageRef, utcnow
from relay.store.record import Target

__all__ = ["EditIntake"]

_log = logging.getLogger("relay.slack")
_DENY = "Deny"  # relay.gate.approval's deny label (the gate sits above this module)
_FIELD_ERROR = 2000  # a field error's text, as Slack shows it under a block
# A submit is answered within Slack's 3 s: its waits on Slack (who may answer, then who the
# relay's rules let allow the edit) get at most this much of it, together.
_MEMBERSHIP_WITHIN = 2.0
_LATE = "relay could not check with Slack in time whether you may do this; submit again."


def allow_choices(question: AskUserQuestionItem) -> tuple[str, ...]:
    """The options an edited call may be allowed with: every one but *Deny*."""
    return tuple(label for label in question.labels if label != _DENY)


def _editable(record: AskRecord | None, index: int) -> AskUserQuestionItem | None:
    if record is None or index >= len(record.request.questions):
        return None
    question = record.request.questions[index]
    intent = question.intent
    if intent is None or intent.edit is None:
        return None
    return question


async def _standing(
    life: AskLifecycle, record: AskRecord, index: int, edit: ToolEdit
) -> tuple[ToolEdit, str | None, int]:
    """The call as it stands to be voted on: the latest edit's input (a question decided
    by one person is never revised), that edit's ``custom`` text, and its version."""
    if record.request.questions[index].quorum <= 1:
        return edit, None, 1
    revisions = await life.store.revisions(ask_id=record.id)
    revision = revisions[index] if index < len(revisions) else None
    current = read_edit(revision)
    if current is None:
        return edit, None, 1
    return replace(edit, input=current.input), revision, current.version


class EditIntake:
    """Opens edit forms and turns their submissions into answers."""

    def __init__(
        self,
        *,
        life: AskLifecycle,
        messages: SlackMessages,
        background: Background,
        judge: Callable[[AskRecord, Click], Awaitable[str | None]],
        review: EditReview | None = None,
        gatekeeper: Gatekeeper | None = None,
    ) -> None:
        self._life = life
        self._messages = messages
        self._background = background
        # ClickIntake.judge: an edit is judged by exactly the rules a click is (the
        # installation, the question's own message, who may answer), events included.
        self._refusal = judge
        # An edit is a new proposal: the relay's rules decide it again (``review``, the
        # Decider's), and who they let allow it is checked as any click's answerer is.
        self._review = review
        self._gatekeeper = gatekeeper

    async def open(self, click: Click) -> None:
        """Start opening the edit form for ``click`` (an "Edit…" click), or saying privately
        why not; returns at once, so that nothing here holds Slack's ack of the click."""
        self._background.spawn(self._open(click))

    async def _open(self, click: Click) -> None:
        notify = self._messages.notify
        read, record = await clicked_record(
            self._life.store, self._messages, click, doing="opening an edit"
        )
        if not read:
            return
        question = _editable(record, click.index)
        if record is None or question is None or question.intent is None:
            notify(click, notices.no_longer_pending(record))
            return
        existing = record.responses[click.index] if click.index < len(record.responses) else None
        if not record.pending or existing is not None:
            notify(click, notices.closed(record, existing))
            return
        # A membership Slack must be asked for never stands before views.open: the trigger
        # opens a "checking…" view at once, updated to the form or the refusal after.
        slow = self._gatekeeper is not None and self._gatekeeper.needs_slack(
            widened(record, now=time.time()), click.user_id
        )
        prepared = self._prepare(record, question, click)
        client = self._messages.lean.client
        await open_form(
            client, click, prepared, at_once=slow, notify=notify, spawn=self._background.spawn
        )

    async def _prepare(
        self, record: AskRecord, question: AskUserQuestionItem, click: Click
    ) -> dict[str, Any] | str:
        """The edit form for ``click``'s user, or the notice saying why they get none."""
        refusal = await self._refusal(record, click)
        if refusal is not None:
            return refusal
        assert question.intent is not None
        assert question.intent.edit is not None
        try:
            edit, _, version = await _standing(
                self._life, record, click.index, question.intent.edit
            )
        except Exception:
            _log.exception("store unreachable while opening an edit of ask %s", record.id)
            return notices.cannot_record()
        if (reason := unavailable(edit)) is not None:
            return notices.edit_unavailable(reason)
        who = record.request.agent.display_name if record.request.agent else "An agent"
        where = {"a": record.id, "i": click.index, "c": click.channel_id, "t": click.message_ts}
        metadata = json.dumps({**where, "v": version} if version > 1 else where)
        return edit_view(
            edit,
            metadata=metadata,
            choices=allow_choices(question),
            who=who,
            quorum=question.quorum,
            version=version,
        )

    async def submit(self, click: Click) -> dict[str, str] | None:
        """Apply a submitted edit form (``click``, of kind ``SAVE``): ``None`` when the
        edited call was allowed (the form closes), else the errors to show under its fields."""
        values, ask_id, index, user_id = (
            click.values or {},
            click.ask_id,
            click.index,
            click.user_id,
        )
        deadline = asyncio.get_running_loop().time() + _MEMBERSHIP_WITHIN
        try:
            record = await self._life.store.get(ask_id=ask_id)
        except Exception:
            _log.exception("store unreachable while applying an edit of ask %s", ask_id)
            return self._form_error(values, "relay could not record this now; submit again.")
        question = _editable(record, index)
        if record is None or question is None or question.intent is None:
            return self._form_error(values, "This approval is gone; nothing was changed.")
        edit = question.intent.edit
        assert edit is not None
        first = _first_block(values, edit)
        existing = record.responses[index] if index < len(record.responses) else None
        if not record.pending or existing is not None:
            return {first: _decided(existing)}
        try:
            refusal = await self._within(self._refusal(record, click), deadline)
        except TimeoutError:
            return {first: _LATE}
        if refusal is not None:
            return {first: refusal}
        if question.quorum > 1:
            return await self._vote(record, question, click, edit, deadline)
        read = read_edit_view(edit, values, allow_choices(question))
        if not isinstance(read, tuple):
            return read
        edited, choice = read
        by = Responder(id=user_id, name=click.user_name, team=click.team_id)
        custom = None
        selected: tuple[str, ...] = (choice,)
        # Unchanged (as JSON: 1 is not true): the plain choice, as a click makes it.
        if not same_json(edited, dict(edit.input)):
            # An edit is a new proposal: held to the relay's rules before it is recorded.
            held = await self._held(record, index, edited, choice, user_id, deadline=deadline)
            if held is not None:
                return {first: held}
            custom, selected = edit_custom(Edit(edited, choice, 2, user_id)), ()
        item = AskUserQuestionAnswerItem(
            id=question.id, selected=selected, custom=custom, answered_by=by, answered_at=utcnow()
        )
        try:
            result = await self._life.answer(record, index, item, by=user_id)
        except UserInteractionError as exc:
            return {first: str(exc)}
        except Exception:
            _log.exception("store failed while recording an edit of ask %s", ask_id)
            return {first: "relay could not record this now; submit again."}
        if result.outcome in ("accepted", "completed"):
            self._show_final(record, index, click, item)
            return None
        winner = result.record.responses[index] if result.record is not None else None
        return {first: _decided(winner)}

    async def _vote(
        self,
        record: AskRecord,
        question: AskUserQuestionItem,
        click: Click,
        original: ToolEdit,
        deadline: float,
    ) -> dict[str, str] | None:
        """A submitted form on a question decided by votes: a changed input is the call's
        next version, with its editor's vote; an unchanged one a vote on the version shown."""
        values, index = click.values or {}, click.index
        first = _first_block(values, original)
        failed = {first: "relay could not record this now; submit again."}
        try:
            edit, revision, version = await _standing(self._life, record, index, original)
        except Exception:
            _log.exception("store unreachable while applying an edit of ask %s", record.id)
            return failed
        if version != click.version:
            return {first: _replaced(version)}
        read = read_edit_view(edit, values, allow_choices(question))
        if not isinstance(read, tuple):
            return read
        edited, choice = read
        by = Responder(id=click.user_id, name=click.user_name, team=click.team_id)
        item = AskUserQuestionAnswerItem(
            id=question.id, selected=(choice,), answered_by=by, answered_at=utcnow()
        )
        revise = not same_json(edited, dict(edit.input))
        if revise:
            held = await self._held(record, index, edited, choice, click.user_id, deadline=deadline)
            if held is not None:
                return {first: held}
            custom = edit_custom(Edit(edited, choice, version + 1, click.user_id))
            item = replace(item, selected=(), custom=custom)
        elif (current := read_edit(revision)) is not None and choice == current.choice:
            item = replace(item, selected=(), custom=revision)  # a vote for the edit shown
        try:
            result = await self._life.vote(
                record, index, item, by=click.user_id, version=version, revise=revise
            )
        except UserInteractionError as exc:
            return {first: str(exc)}
        except Exception:
            _log.exception("store failed while recording an edit of ask %s", record.id)
            return failed
        message = self._message_of(record, index, click)
        if result.outcome == "counted":
            shown = self._messages.show_live(record, index, message, result.votes, result.revision)
            self._background.spawn(shown)
            return None
        if result.outcome in ("decided", "completed") and result.record is not None:
            answer = result.record.responses[index]
            if answer is not None:
                self._show_final(record, index, click, answer)
            return None
        if result.outcome == "stale_version":
            self._background.spawn(self._messages.show_live(record, index, message))
            return {first: _replaced(result.version)}
        if result.outcome == "already_voted":
            return {first: "You already voted on this version; a vote cannot be changed."}
        winner = result.record.responses[index] if result.record is not None else None
        return {first: _decided(winner)}

    async def _within(self, check: Awaitable[str | None], deadline: float) -> str | None:
        """``check``'s answer; ``TimeoutError`` past ``deadline`` (loop time), while the
        check goes on in the background: what it looks up is cached for the retry."""
        task = asyncio.ensure_future(check)
        try:
            async with asyncio.timeout_at(deadline):
                return await asyncio.shield(task)
        except TimeoutError:
            if not task.done():
                self._background.spawn(settled(task))
            raise

    async def _held(
        self,
        record: AskRecord,
        index: int,
        edited: Mapping[str, Any],
        choice: str,
        user: str,
        *,
        deadline: float | None = None,
    ) -> str | None:
        """Why the relay's rules do not let ``user`` allow the edited call as chosen (shown
        under the form's field; nothing is recorded), or ``None``. Slack is asked until
        ``deadline`` (loop time; the submit's budget), 2 s from now at most."""
        if self._review is None:
            return None
        terms = self._review(record, index, edited)
        if terms.refusal is not None:
            return cut(
                f"The relay's rules do not allow this edited call: {terms.refusal}. Change"
                " it, or close this form and deny.",
                _FIELD_ERROR,
            )
        if terms.quorum > record.request.questions[index].quorum:
            return (
                f"The relay's rules need {terms.quorum} people to allow this edited call, more"
                " than this question asks: deny it, and let the agent ask for the edited call."
            )
        if terms.choices is not None and choice not in terms.choices:
            return (
                f"The relay's rules offer no '{choice}' for this edited call: choose"
                f" {' or '.join(repr(c) for c in terms.choices)}."
            )
        if terms.restricted and self._gatekeeper is not None:
            needed = Target(
                channel="",
                allowed_users=frozenset(terms.approvers) if terms.approvers is not None else None,
                allowed_groups=frozenset(terms.approver_groups)
                if terms.approver_groups is not None
                else None,
            )
            latest = asyncio.get_running_loop().time() + _MEMBERSHIP_WITHIN
            try:
                refused = await self._within(
                    self._gatekeeper.refusal(needed, user), min(deadline or latest, latest)
                )
            except TimeoutError:
                return "relay could not check who may allow this edited call in time; submit again."
            if refused is not None:
                return (
                    "The relay's rules name other approvers for this edited call, so you cannot"
                    " allow it: close this form and deny, or ask one of them to edit it."
                )
        return None

    def _message_of(self, record: AskRecord, index: int, click: Click) -> MessageRef:
        known = record.messages[index] if index < len(record.messages) else None
        return known or MessageRef(click.channel_id or "", click.message_ts or "")

    def _show_final(
        self, record: AskRecord, index: int, click: Click, item: AskUserQuestionAnswerItem
    ) -> None:
        final = answered_of(record, index, item)
        message = self._message_of(record, index, click)
        self._background.spawn(self._messages.update(record.id, message, final, index=index))

    def _form_error(self, values: Mapping[str, Any], text: str) -> dict[str, str]:
        block = next(iter(values), None)
        return {block: text} if isinstance(block, str) else {}


def _first_block(values: Mapping[str, Any], edit: Any) -> str:
    block = first_block(edit)
    return block if block in values or not values else next(iter(values))


def _replaced(version: int) -> str:
    return (
        f"Someone edited this call while you did (it is now version {version}), so your edit"
        " was not applied: close this form, read the message as it shows now, and edit again."
    )


def _decided(winner: AskUserQuestionAnswerItem | None) -> str:
    who = winner.answered_by.display_name if winner and winner.answered_by else "someone"
    return (
        f"{who} already decided this call, so your edit was not applied; close this form"
        " (nothing was changed)."
    )
