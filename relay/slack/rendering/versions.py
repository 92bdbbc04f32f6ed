"""An edited tool call as reviewers see it: the change as a diff, and, on a question decided
by votes, which version is being voted. Pure."""

from __future__ import annotations

import difflib
import json
from typing import Any

from relay.seam.edits import Edit, read_edit
from relay.seam.questions import AskUserQuestionItem
from relay.slack.rendering import kit
from relay.slack.rendering.text import escape, mention, units

__all__ = ["REVISION_CHARS", "edit_diff", "revision_block"]

REVISION_CHARS = kit.SECTION_CHARS  # room a tool approval voted on keeps for the edit shown
_DIFF_CUT = "\n_(The diff is cut here: *Edit…* shows the whole call.)_"


def edit_diff(question: AskUserQuestionItem, edit: Edit) -> str:
    """``edit``'s change to ``question``'s tool input as a unified diff, original first
    (empty when the question offered no edit)."""
    intent = question.intent
    if intent is None or intent.edit is None:
        return ""
    before = json.dumps(dict(intent.edit.input), indent=2, ensure_ascii=False).splitlines()
    after = json.dumps(dict(edit.input), indent=2, ensure_ascii=False).splitlines()
    return "\n".join(difflib.unified_diff(before, after, "shown", "allowed", lineterm="", n=2))


def revision_block(question: AskUserQuestionItem, revision: str | None) -> dict[str, Any] | None:
    """What the votes on an edited tool call are for: its version, who edited it, and the
    change as a diff (cut to one section, *Edit…* showing the whole); ``None`` unedited."""
    edit = read_edit(revision)
    if edit is None:
        return None
    head = (
        f":pencil2: *Voting on version {edit.version}*: {mention(edit.edited_by)} edited the"
        " call; allowing it runs the edited input (votes on earlier versions no longer count)."
    )
    diff = escape(edit_diff(question, edit))
    room = REVISION_CHARS - units(head) - len("\n``````")  # (Slack's count: UTF-16 units)
    if units(diff) > room:
        diff = kit.fit(diff, room - units(_DIFF_CUT))
        return kit.section(f"{head}\n```{diff}```{_DIFF_CUT}")
    return kit.section(f"{head}\n```{diff}```")
