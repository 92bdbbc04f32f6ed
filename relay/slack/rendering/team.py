"""The lines a team decision adds to a message: the vote tally, the votes cast, the default
taken, how long nobody answered. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relay.seam.questions import AskUserQuestionAnswerItem, AskUserQuestionItem, Vote
from relay.slack.rendering import kit
from relay.slack.rendering.text import escape, mention, shorten

__all__ = ["TALLY_CHARS", "defaulted_line", "duration_text", "tally_block", "votes_text"]

TALLY_CHARS = 2000  # room a question that needs several votes keeps for its tally


def votes_text(votes: Sequence[Vote], limit: int = TALLY_CHARS - 200) -> str:
    """The votes cast, as "@alice *Approve*, @bob *Reject*", within ``limit`` characters
    (the rest counted: "and 87 others"); once the question was edited, each with the
    version it was cast on ("@bob *Allow once* (v2)")."""
    versioned = any(v.version != 1 for v in votes)
    cast = [
        f"{mention(v.by.id)} *{escape(shorten(v.label, 40))}*"
        + (f" (v{v.version})" if versioned else "")
        for v in votes
    ]
    return kit.mention_list(cast, limit)


def tally_block(
    question: AskUserQuestionItem, votes: Sequence[Vote], version: int = 1
) -> dict[str, Any]:
    """The live tally under a question that needs several votes: the votes cast on the
    version being voted (``version``; those on an edited-away one no longer count)."""
    parts = [f"Needs {question.quorum} votes from different people for an option"]
    if question.veto:
        vetoes = kit.mention_list([f"*{escape(shorten(v, 40))}*" for v in question.veto], 600)
        parts[0] += f" ({vetoes}: one vote decides)"
    if version > 1:
        parts[0] += f" on version {version}"
    counted = [v for v in votes if v.version == version]
    parts.append(f"voted: {votes_text(counted, TALLY_CHARS - 800)}" if counted else "no votes yet")
    if len(counted) < len(votes):
        parts.append(f"{len(votes) - len(counted)} on earlier versions no longer count")
    return kit.context(kit.fit(" · ".join(parts), TALLY_CHARS))


def duration_text(seconds: float) -> str:
    """A timeout as people say it: ``45 s``, ``15 min``, ``2 h``, ``1.5 d``."""
    for unit, size in (("d", 86_400.0), ("h", 3_600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{round(seconds / size, 1):g} {unit}"
    return f"{round(seconds, 1):g} s"


def defaulted_line(item: AskUserQuestionAnswerItem, timeout: float | None) -> str:
    """The outcome line of a default: "No answer in 15 min; defaulted to Hold"."""
    waited = f"in {duration_text(timeout)}" if timeout is not None else "in time"
    taken = ", ".join(escape(label) for label in item.selected) or "no answer"
    return f":hourglass: *No answer {waited}; defaulted to {taken}* — nobody chose this."
