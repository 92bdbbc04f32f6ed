"""The votes part of the store: votes counted once per person and version of a question, the
deciding one claiming; an edit of a tool call makes a new version."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from relay.seam.edits import read_edit
from relay.seam.questions import AskUserQuestionAnswerItem, Vote
from relay.store.record import VoteResult

__all__ = ["VersionedVotes", "Votes"]


@runtime_checkable
class Votes(Protocol):
    """Votes on an ask's questions (a seam ``Protocol``); every method is atomic.

    A question starts at version 1; ``revise`` makes an edited call (``relay.seam.edits``) its
    next version. Only votes cast on the current version count, so the vote that completes
    the quorum approves exactly the version its voter was shown.
    """

    async def vote(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        required: int,
        veto: frozenset[str],
        version: int = 1,
    ) -> VoteResult:
        """Count ``item`` (one label, ``answered_by`` someone; or the current edit in
        ``custom``, a vote for its choice on its version) as a vote on question ``index``
        at ``version``, once per person and version: a second vote by the same person is
        ``already_voted``, a vote on a version that is not the current one
        ``stale_version``, and neither changes anything. When the label reaches
        ``required`` votes on the version, or is in ``veto``, claim ``item`` as the
        question's answer as ``answer`` does, with every vote in its ``votes``."""
        ...

    async def revise(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        required: int,
        veto: frozenset[str],
    ) -> VoteResult:
        """Make ``item``'s edit (``custom``, of version ``n``) question ``index``'s version
        ``n`` if ``n - 1`` is the current one (else ``stale_version``: someone else edited
        it first), and count it as its editor's vote on it, claiming as ``vote`` does."""
        ...

    async def votes(self, *, ask_id: str) -> tuple[tuple[Vote, ...], ...]:
        """Every question's votes so far (every version's), in question order (empty for
        an unknown ask)."""
        ...

    async def revisions(self, *, ask_id: str) -> tuple[str | None, ...]:
        """Every question's current edit (its ``custom`` text; ``None`` while the original
        stands), in question order (empty for an unknown ask)."""
        ...


class VersionedVotes:
    """``Votes.vote`` and ``Votes.revise`` for a store that implements ``_cast``: one
    atomic step that counts a vote on ``version`` (``revise``: makes it the next one)."""

    async def vote(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        required: int,
        veto: frozenset[str],
        version: int = 1,
    ) -> VoteResult:
        """See ``Votes.vote``."""
        return await self._cast(ask_id, index, item, required, veto, version, revise=False)

    async def revise(
        self,
        *,
        ask_id: str,
        index: int,
        item: AskUserQuestionAnswerItem,
        required: int,
        veto: frozenset[str],
    ) -> VoteResult:
        """See ``Votes.revise``."""
        edit = read_edit(item.custom)
        if edit is None:
            raise ValueError("a revision is an edited call in custom")
        return await self._cast(ask_id, index, item, required, veto, edit.version, revise=True)

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
        raise NotImplementedError
