"""The line an answered question ends with: who answered, and what.

A tool approval (``relay.gate.approval``'s question) reads as a verdict: "Denied by @bob:
<reason>", or "Allowed by @bob: *Allow for this session* — <what the grant covers>", so
nobody reads a deny as an answer or has to guess what an allow let through.
"""

from __future__ import annotations

from dataclasses import replace

from relay.seam.edits import read_edit
from relay.seam.plan_review import APPROVE, read_narrowing
from relay.seam.questions import AskUserQuestionAnswerItem, AskUserQuestionItem
from relay.slack.rendering.team import votes_text
from relay.slack.rendering.text import chunks, escape, mention, units, within
from relay.slack.rendering.versions import edit_diff

__all__ = ["OUTCOME_LINE_CHARS", "answered_line", "answered_summary", "slack_date"]

OUTCOME_LINE_CHARS = 3000  # room every message keeps for its final "Answered by …: …"


def slack_date(epoch: float, fallback: str) -> str:
    """A date Slack shows in the reader's time zone (``fallback`` where it cannot)."""
    return f"<!date^{int(epoch)}^{{date_short_pretty}} at {{time}}|{escape(fallback)}>"


def _who(item: AskUserQuestionAnswerItem) -> str:
    return "someone" if item.answered_by is None else mention(item.answered_by.id)


# relay.gate.approval's question id and deny label (the gate sits above this module).
_APPROVAL_ID = "approval"
_DENY = "Deny"


def _edited(
    question: AskUserQuestionItem | None, item: AskUserQuestionAnswerItem
) -> tuple[AskUserQuestionAnswerItem, str]:
    """For an edited tool call, the answer read as its choice, and the lines that show the
    edit: who edited, and the input's change as a diff (original first)."""
    edit = read_edit(item.custom)
    intent = question.intent if question is not None else None
    if question is None or edit is None or intent is None or intent.edit is None:
        return item, ""
    shown = f"\n:pencil2: Edited by {mention(edit.edited_by)} (version {edit.version}), then"
    shown += f" allowed as edited:\n```{escape(edit_diff(question, edit))}```"
    return replace(item, selected=(edit.choice,), custom=None), shown


def _narrowed(
    question: AskUserQuestionItem | None, item: AskUserQuestionAnswerItem
) -> tuple[AskUserQuestionAnswerItem, str]:
    """For a plan approved with a narrower scope (its Edit form), the answer read as
    *Approve*, and the line that shows the narrowing: who, and what was taken out."""
    intent = question.intent if question is not None else None
    narrowing = read_narrowing(item.custom) if item.custom is not None else None
    if intent is None or intent.kind != "plan-review" or narrowing is None or item.selected:
        return item, ""
    out = ", ".join(f"`{escape(d)}`" for d in narrowing.dropped) or "nothing"
    shown = (
        f"\n:scissors: Scope narrowed by {mention(narrowing.by)} before approving; taken out: {out}"
    )
    return replace(item, selected=(APPROVE,), custom=None), shown


def _verdict_head(question: AskUserQuestionItem | None, item: AskUserQuestionAnswerItem) -> str:
    """For a tool approval, the outcome as a verdict: who denied, or who allowed what."""
    if question is None or question.id != _APPROVAL_ID:
        return ""
    if item.custom is not None or _DENY in item.selected:
        return ":no_entry: Denied by"
    return ":white_check_mark: Allowed by"


def answered_line(
    item: AskUserQuestionAnswerItem, question: AskUserQuestionItem | None = None
) -> str:
    """The final line of an answered question: who answered what (for a tool approval, who
    denied and why, or who allowed what), shortened to ``OUTCOME_LINE_CHARS``."""
    who = _who(item)
    item, edited = _edited(question, item)
    if not edited:
        item, edited = _narrowed(question, item)
    when = ""
    if item.answered_at is not None:
        when = f" · {slack_date(item.answered_at.timestamp(), item.answered_at.isoformat())}"
    if not item.selected and item.custom is None:
        return f":next_track_button: Skipped by {who}{when}"
    parts = [", ".join(f"*{escape(label)}*" for label in item.selected)] if item.selected else []
    head = _verdict_head(question, item)
    if head.startswith(":white_check_mark:") and question is not None:
        # Name what was allowed: the option's own words (this one call, or a grant's scope).
        said = [o.description for o in question.options or () if o.label in item.selected]
        parts += [f" — {escape(d)}" for d in said if d]
    if item.custom is not None:
        quoted = "\n".join(f"> {escape(line)}" for line in item.custom.splitlines() or [""])
        reason = item.custom.strip()
        if head:  # "Denied by @bob: <reason>", quoted below when it runs over lines
            parts = [escape(reason) if "\n" not in reason else f"\n{quoted}"]
        else:
            parts.append(f"\n{quoted}")
    elif head.startswith(":no_entry:"):
        parts = []
    line = f"{head or ':white_check_mark: Answered by'} {who}{when}" + (
        ": " + "".join(parts) if parts else ""
    )
    line += edited
    if item.votes:
        line += f"\nVotes: {votes_text(item.votes)}"
    if within(line, OUTCOME_LINE_CHARS):
        return line
    # The whole answer went to the agent; the message shows as much as its room holds.
    note = "… _(shortened here; the agent has the whole answer)_"
    return chunks(line, OUTCOME_LINE_CHARS - units(note))[0].rstrip() + note


def answered_summary(
    item: AskUserQuestionAnswerItem, question: AskUserQuestionItem | None = None
) -> str:
    """What happened, in the words ``answered_line`` leads with, for the message's fallback
    text (notifications, screen readers): "denied", "allowed", "edited, then allowed"..."""
    item, edited = _edited(question, item)
    if not edited and _narrowed(question, item)[1]:
        return "approved with a narrower scope"
    if not item.selected and item.custom is None:
        return "skipped"
    if edited:
        return "edited, then allowed"
    head = _verdict_head(question, item)
    return "denied" if head.startswith(":no_entry:") else "allowed" if head else "answered"
