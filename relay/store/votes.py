"""The votes part of the store: votes counted once per person, the deciding one claiming."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from relay.questions import AskUserQuestionAnswerItem, Vote
from relay.store.record import VoteResult

__all__ = ["Votes"]


@runtime_checkable
class Votes(Protocol):
    """Votes on an ask's questions (a seam ``Protocol``); every method is atomic."""

    async def vote(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        required: int,
        veto: frozenset[str],
    ) -> VoteResult:
        """Count ``item`` (one label, ``answered_by`` someone) as a vote on question
        ``index``, once per person: a second vote by the same person is ``already_voted``
        and changes nothing. When the label reaches ``required`` votes, or is in ``veto``,
        claim ``item`` as the question's answer as ``answer`` does, with every vote in its
        ``votes``."""
        ...

    async def votes(self, *, ask_id: str) -> tuple[tuple[Vote, ...], ...]:
        """Every question's votes so far, in question order (empty for an unknown ask)."""
        ...
