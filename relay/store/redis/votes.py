"""Votes on Redis (``relay.store.votes``): in the ask's hash (``vote:{i}``, a JSON list), so
they expire with it; one script (``vote.lua``) counts a vote and claims the answer at quorum."""

from __future__ import annotations

import json

from relay.seam.questions import AskUserQuestionAnswerItem, Vote
from relay.store.record import VoteOutcome, VoteResult, item_to_json, vote_of
from relay.store.redis.base import RedisBase, translated
from relay.store.redis.codec import as_text, compact, decode_flat, epoch, votes_of
from relay.store.votes import VersionedVotes


class RedisVotes(VersionedVotes, RedisBase):
    """Votes counted once per person and version; the vote that reaches the quorum claims
    the answer."""

    @translated
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
        reply = await self._run(
            self._script("vote"),
            self._claim_keys(ask_id),
            [
                index,
                vote.by.id,
                compact(vote.to_store()),
                required,
                json.dumps(sorted(veto)),
                vote.label,
                compact(item_to_json(item)),
                vote.at.isoformat(),
                ask_id,
                self._retention_ms,
                self._channel,
                epoch(vote.at),
                vote.version,
                "1" if revise else "0",
                item.custom if revise and item.custom is not None else "",
            ],
        )
        if as_text(reply[0]) == "bad_index":
            raise IndexError(f"ask {ask_id} has no question {index}")
        outcome: VoteOutcome = as_text(reply[0])  # type: ignore[assignment]
        if self._cluster and outcome in ("completed", "not_pending", "unknown"):
            await self._release(ask_id)
            if outcome == "completed":
                await self._unsettle(ask_id, epoch(vote.at))
        found = decode_flat(reply[1]) if len(reply) > 1 else None
        votes = votes_of(as_text(reply[2])) if len(reply) > 2 else ()
        revision = as_text(reply[3]) or None if len(reply) > 3 else None
        return VoteResult(outcome, found, votes, revision)

    @translated
    async def votes(self, *, ask_id: str) -> tuple[tuple[Vote, ...], ...]:
        """Every question's votes so far (one read of the ask's hash)."""
        raw = await self._redis.hgetall(self._key(ask_id))
        fields = {as_text(k): as_text(v) for k, v in raw.items()}
        if "n" not in fields:
            return ()
        return tuple(votes_of(fields.get(f"vote:{i}", "[]")) for i in range(int(fields["n"])))

    @translated
    async def revisions(self, *, ask_id: str) -> tuple[str | None, ...]:
        """Every question's current edit (one read of the ask's hash)."""
        raw = await self._redis.hgetall(self._key(ask_id))
        fields = {as_text(k): as_text(v) for k, v in raw.items()}
        if "n" not in fields:
            return ()
        return tuple(fields.get(f"rev:{i}") for i in range(int(fields["n"])))
