"""The limits every entry point checks against, in one module that imports nothing. Pure.

``relay.asks.terms``, ``relay.seam.questions`` and the gate's rules file all use them; living
here, a ``relay hook`` decided by its rules reads them without loading the ask lifecycle.
"""

from __future__ import annotations

__all__ = [
    "LONGEST_TIMEOUT",
    "MAX_ALLOWED_GROUPS",
    "MAX_ALLOWED_USERS",
    "MAX_APPROVALS",
    "MAX_REMINDERS",
]

# The longest timeout anything may set (a year): a deadline beyond it is no deadline a person
# can act on, and past ~1e11 s it cannot even be shown as a date.
LONGEST_TIMEOUT = 366 * 24 * 3600.0

# The most reminders one ask may send (more is nagging, not reminding).
MAX_REMINDERS = 10

# The most distinct people a question can wait for (a message's tally stays readable).
MAX_APPROVALS = 25

# Who may answer one ask: enough for any team; each group is a Slack call on a click.
MAX_ALLOWED_USERS = 100
MAX_ALLOWED_GROUPS = 10
