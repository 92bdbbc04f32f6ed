"""The ask's lifecycle: what may happen to an ask and when, with no channel in it.

``terms`` holds the pure terms an ask runs under (how long, how it ended, reminders,
escalation); ``AskLifecycle`` applies them with the store's atomic claims; ``Expiry`` is the
one task per process that times asks out. Channels (Slack) show what happened and turn clicks
into answers; they never decide an outcome.
"""

from relay.asks.expiry import Expiry, Settling
from relay.asks.lifecycle import AskLifecycle
from relay.asks.terms import LONGEST_TIMEOUT

__all__ = ["LONGEST_TIMEOUT", "AskLifecycle", "Expiry", "Settling"]
