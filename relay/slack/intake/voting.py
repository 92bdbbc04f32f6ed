"""``VoteIntake``: a click on a question that needs several people's votes.

Each vote is counted on the version of the question its clicker was shown (an edited tool
call is a new version, ``relay.store.votes``): on an edited version, an allow of the edit's
choice is the edit itself, so the vote that completes the quorum answers with exactly the
input shown, and a click on a version an edit replaced is refused privately.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from relay.asks.lifecycle import AskLifecycle
from relay.errors import UserInteractionError
from relay.seam.edits import read_edit
from relay.seam.questions import AskUserQuestionAnswerItem
from relay.slack.intake.parse import Click
from relay.slack.rendering import notices
from relay.slack.rendering.final import answered_of
from relay.slack.webapi.background import Background
from relay.slack.webapi.messages import SlackMessages
from relay.store import AskRecord, MessageRef, VoteResult

__all__ = ["VoteIntake"]

_log = logging.getLogger("relay.slack")


class VoteIntake:
    """Counts votes and shows what each did: the tally, the decided question, or why not."""

    def __init__(
        self, *, life: AskLifecycle, messages: SlackMessages, background: Background
    ) -> None:
        self._life = life
        self._messages = messages
        self._background = background

    async def cast(
        self,
        record: AskRecord,
        click: Click,
        expected: MessageRef | None,
        decision: AskUserQuestionAnswerItem,
    ) -> None:
        """A click on a question that needs several votes: count it on the version its
        clicker was shown (an edited tool call's allow votes for the edited input), show
        the tally."""
        notify = self._messages.notify
        question = record.request.questions[click.index]
        if decision.custom is not None or len(decision.selected) != 1:
            notify(click, notices.vote_needs_an_option(question))
            return
        message = expected or MessageRef(click.channel_id or "", click.message_ts or "")
        try:
            item = await self._on_version(record, click, decision)
            result = None
            if not isinstance(item, int):
                result = await self._life.vote(
                    record, click.index, item, by=click.user_id, version=click.version
                )
        except UserInteractionError as exc:
            notify(click, notices.not_recorded(str(exc)))
            return
        except Exception:
            _log.exception("store failed while recording a vote on ask %s", record.id)
            notify(click, notices.cannot_record())
            return
        if result is None or result.outcome == "stale_version":
            # The clicker saw a version an edit replaced: show them (and all) the current one.
            now = result.version if result is not None else item
            assert isinstance(now, int)
            self._background.spawn(self._messages.show_live(record, click.index, message))
            notify(click, notices.stale_version(now))
            return
        self._show_vote(record, click, message, decision.selected[0], result)

    async def _on_version(
        self, record: AskRecord, click: Click, decision: AskUserQuestionAnswerItem
    ) -> AskUserQuestionAnswerItem | int:
        """The vote ``decision`` casts on the version ``click`` came from: on an edited
        call's version, an allow of the edit's choice is the edit itself (``custom``), so
        the vote that completes the quorum answers with exactly the input shown; the
        current version when that one is no longer (or never was) the one being voted."""
        if click.version == 1:
            return decision  # (the store refuses it if an edit replaced the original)
        revisions = await self._life.store.revisions(ask_id=record.id)
        revision = revisions[click.index] if click.index < len(revisions) else None
        edit = read_edit(revision)
        if edit is None or edit.version != click.version:
            return edit.version if edit is not None else 1
        if decision.selected[0] != edit.choice:
            return decision  # a deny of the edited call: a plain vote on its version
        return replace(decision, selected=(), custom=revision)

    def _show_vote(
        self,
        record: AskRecord,
        click: Click,
        message: MessageRef,
        label: str,
        result: VoteResult,
    ) -> None:
        """Show what a vote did: the tally, the decided question, or why it did not count."""
        notify = self._messages.notify
        question = record.request.questions[click.index]
        if result.outcome == "counted":
            shown = self._messages.show_live(
                record, click.index, message, result.votes, result.revision
            )
            self._background.spawn(shown)
            counted = sum(1 for v in result.votes if v.version == result.version)
            notify(click, notices.vote_counted(question, label, counted))
        elif result.outcome in ("decided", "completed") and result.record is not None:
            answer = result.record.responses[click.index]
            if answer is not None:  # (decided: the store holds it)
                final = answered_of(record, click.index, answer)
                update = self._messages.update(record.id, message, final, index=click.index)
                self._background.spawn(update)
        elif result.outcome == "already_voted":
            mine = next(
                (
                    v
                    for v in result.votes
                    if v.by.id == click.user_id and v.version == result.version
                ),
                None,
            )
            notify(click, notices.already_voted(mine.label if mine else label))
        elif result.outcome == "already_answered" and result.record is not None:
            winner = result.record.responses[click.index]
            if winner is not None:
                notify(click, notices.already_answered(winner))
        else:
            notify(click, notices.no_longer_pending(result.record))
