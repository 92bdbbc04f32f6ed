"""The reminder a pending ask posts in its thread: who may answer, and the time left. Pure."""

from __future__ import annotations

import re

from relay.slack.team import duration_text
from relay.slack.text import mention
from relay.store.record import AskRecord

__all__ = ["reminder_text"]

_GROUP_ID = re.compile(r"S[A-Z0-9]{2,}")


def reminder_text(record: AskRecord, *, sent: int, now: float) -> str:
    """Reminder number ``sent`` + 1 of ``record``, mentioning the people and groups who may
    answer (nobody is pinged when anyone may), with the time left before it times out."""
    target = record.target
    who = [mention(user) for user in sorted(target.allowed_users or ())]
    who += [
        f"<!subteam^{group}>"
        for group in sorted(target.allowed_groups or ())
        if _GROUP_ID.fullmatch(group)
    ]
    count = len(record.request.questions)
    what = "This question is" if count == 1 else f"These {count} questions are"
    lead = f"{', '.join(who)}: " if who else ""
    left = ""
    if record.deadline is not None:
        remaining = max(record.deadline - now, 0.0)
        left = f" It times out in {duration_text(remaining)}."
    return (
        f":alarm_clock: Reminder {sent + 1} of {target.reminders}. {lead}{what} still waiting"
        f" for an answer.{left}"
    )
