"""What a pending ask's nudges say: a reminder in its thread (who may answer, the time left),
its escalation (the people it now reaches, with a link back), and the note on the original
message that it was escalated. Pure."""

from __future__ import annotations

import re
from collections.abc import Collection

from relay.asks.terms import escalated, widened
from relay.slack.rendering import kit
from relay.slack.rendering.team import duration_text
from relay.slack.rendering.text import escape_within, mention, within
from relay.store.record import AskRecord

__all__ = ["escalation_note", "escalation_text", "reminder_text"]

_GROUP_ID = re.compile(r"S[A-Z0-9]{2,}")
_NOTE_CHARS = 300  # the most the escalation note names before it counts instead
# The most a reminder or an escalation names before it counts the rest ("and 87 others"):
# with the API's own caps (100 users and 10 groups, twice over after an escalation) the
# whole list would pass Slack's 3,000 characters a section, and the message be refused.
_WHO_CHARS = 2000


def _mentions(users: Collection[str] | None, groups: Collection[str] | None) -> list[str]:
    """Mentions of ``users`` and of the user groups among ``groups`` (ids only)."""
    who = [mention(user) for user in sorted(users or ())]
    who += [f"<!subteam^{group}>" for group in sorted(groups or ()) if _GROUP_ID.fullmatch(group)]
    return who


def _lead(who: list[str]) -> str:
    return f"{kit.mention_list(who, _WHO_CHARS)}: " if who else ""


def _time_left(record: AskRecord, now: float) -> str:
    if record.deadline is None:
        return ""
    return f" It times out in {duration_text(max(record.deadline - now, 0.0))}."


def _what(record: AskRecord) -> str:
    count = len(record.request.questions)
    return "This question is" if count == 1 else f"These {count} questions are"


def reminder_text(record: AskRecord, *, sent: int, now: float) -> str:
    """Reminder number ``sent`` + 1 of ``record``, mentioning the people and groups who may
    answer (after an escalation, those it added too; nobody is pinged when anyone may),
    with the time left before it times out."""
    target = widened(record, now=now)
    lead = _lead(_mentions(target.allowed_users, target.allowed_groups))
    return (
        f":alarm_clock: Reminder {sent + 1} of {record.target.reminders}. {lead}{_what(record)}"
        f" still waiting for an answer.{_time_left(record, now)}"
    )


def escalation_text(record: AskRecord, *, now: float, link: str | None) -> str:
    """The escalation message: who it reaches, what waits (the first question, shortened),
    and ``link`` (the original message's permalink) to answer it at."""
    target = record.target
    lead = _lead(_mentions(target.escalate_users, target.escalate_groups))
    waited = duration_text(target.escalate_after or 0.0)
    first = record.request.questions[0]
    asked = escape_within(first.header or first.question, 150)
    where = f" <{link}|Answer it here>." if link else ""
    if record.target.restricted and (target.escalate_users or target.escalate_groups):
        where += " You may answer it now."
    return (
        f":rotating_light: Escalated after {waited} with no answer. {lead}"
        f"{_what(record)} waiting for a decision: *{asked}*.{where}{_time_left(record, now)}"
    )


def escalation_note(record: AskRecord, *, now: float) -> str | None:
    """The line the original message shows once the ask is escalated, else ``None``."""
    if not escalated(record, now=now):
        return None
    target = record.target
    who = _mentions(target.escalate_users, target.escalate_groups)
    if target.escalate_channel and not who:
        who = [_place(target.escalate_channel)]
    if not who:
        return ":rotating_light: Escalated"
    named = ", ".join(who)
    if not within(named, _NOTE_CHARS):
        named = f"{len(who)} more people and groups"
    return f":rotating_light: Escalated to {named}"


def _place(channel: str) -> str:
    if channel.startswith(("U", "W")):
        return mention(channel)
    return (
        f"<#{channel}>"
        if re.fullmatch(r"[CG][A-Z0-9]{2,}", channel)
        else escape_within(channel, 40)
    )
