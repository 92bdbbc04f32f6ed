"""Votes in memory (``relay.store.votes``): counted once per person, the quorum claims."""

from __future__ import annotations

from dataclasses import replace

from relay.questions import AskUserQuestionAnswerItem, Vote
from relay.store.memory.asks import MemoryAsks
from relay.store.memory.base import _check_index
from relay.store.record import (
    VoteResult,
    quorum_reached,
    vote_of,
)


class MemoryVotes(MemoryAsks):
    """Votes kept beside each ask, dropped with it; the vote that decides claims the answer
    as ``MemoryAsks.answer`` does."""

    async def vote(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        required: int,
        veto: frozenset[str],
    ) -> VoteResult:
        """Count one person's vote; the one that reaches the quorum answers the question."""
        vote = vote_of(item)
        record = self._lookup(ask_id)
        if record is None:
            return VoteResult("unknown", None)
        _check_index(record, index)
        tallies = self._votes.setdefault(ask_id, [()] * len(record.request.questions))
        votes = tallies[index]
        if not record.pending:
            return VoteResult("not_pending", record, votes)
        if index < len(record.responses) and record.responses[index] is not None:
            return VoteResult("already_answered", record, votes)
        if any(v.by.id == vote.by.id for v in votes):
            return VoteResult("already_voted", record, votes)
        votes = tallies[index] = (*votes, vote)
        if not quorum_reached(votes, vote.label, required, veto):
            return VoteResult("counted", record, votes)
        decided = replace(item, votes=votes)
        result = await self.answer(ask_id=ask_id, index=index, item=decided)
        return VoteResult(
            "completed" if result.outcome == "completed" else "decided", result.record, votes
        )

    async def votes(self, *, ask_id: str) -> tuple[tuple[Vote, ...], ...]:
        """Every question's votes so far."""
        record = self._lookup(ask_id)
        if record is None:
            return ()
        return tuple(self._votes.get(ask_id) or [()] * len(record.request.questions))
