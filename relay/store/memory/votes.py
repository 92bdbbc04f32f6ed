"""Votes in memory (``relay.store.votes``): counted once per person and version, the quorum
claims; an edit makes a new version, which the votes cast before do not count for."""

from __future__ import annotations

from dataclasses import replace

from relay.seam.edits import read_edit
from relay.seam.questions import AskUserQuestionAnswerItem, Vote
from relay.store.memory.asks import MemoryAsks
from relay.store.memory.base import _check_index
from relay.store.record import VoteResult, quorum_reached, vote_of
from relay.store.votes import VersionedVotes


class MemoryVotes(VersionedVotes, MemoryAsks):
    """Votes and edits kept beside each ask, dropped with it; the vote that decides claims
    the answer as ``MemoryAsks.answer`` does."""

    async def _cast(
        self,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        required: int,
        veto: frozenset[str],
        version: int,
        *,
        revise: bool,
    ) -> VoteResult:
        vote = vote_of(item, version)
        record = self._lookup(ask_id)
        if record is None:
            return VoteResult("unknown", None)
        _check_index(record, index)
        count = len(record.request.questions)
        tallies = self._votes.setdefault(ask_id, [()] * count)
        revisions = self._revisions.setdefault(ask_id, [None] * count)
        votes, revision = tallies[index], revisions[index]
        if not record.pending:
            return VoteResult("not_pending", record, votes, revision)
        if index < len(record.responses) and record.responses[index] is not None:
            return VoteResult("already_answered", record, votes, revision)
        current = _version(revision)
        if vote.version != (current + 1 if revise else current):
            return VoteResult("stale_version", record, votes, revision)
        if any(v.by.id == vote.by.id and v.version == vote.version for v in votes):
            return VoteResult("already_voted", record, votes, revision)
        if revise:
            revision = revisions[index] = item.custom
        votes = tallies[index] = (*votes, vote)
        if not quorum_reached(votes, vote.label, required, veto, vote.version):
            return VoteResult("counted", record, votes, revision)
        decided = replace(item, votes=votes)
        result = await self.answer(ask_id=ask_id, index=index, item=decided)
        done = result.outcome == "completed"
        return VoteResult("completed" if done else "decided", result.record, votes, revision)

    async def votes(self, *, ask_id: str) -> tuple[tuple[Vote, ...], ...]:
        """Every question's votes so far."""
        record = self._lookup(ask_id)
        if record is None:
            return ()
        return tuple(self._votes.get(ask_id) or [()] * len(record.request.questions))

    async def revisions(self, *, ask_id: str) -> tuple[str | None, ...]:
        """Every question's current edit (``None`` while its original stands)."""
        record = self._lookup(ask_id)
        if record is None:
            return ()
        return tuple(self._revisions.get(ask_id) or [None] * len(record.request.questions))


def _version(revision: str | None) -> int:
    edit = read_edit(revision)
    return edit.version if edit is not None else 1
