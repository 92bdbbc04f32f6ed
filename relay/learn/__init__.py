"""Rules learned from the signed decision log: ``relay rules suggest`` and ``relay rules replay``.

``log`` reads verified receipts and the calls they decided, ``replay`` puts every call to the
Decider's rules step under a rules file, and ``suggest`` proposes allow rules whose replay
lets through no call people denied or edited. Nothing here changes a rules file.
"""

from relay.learn.log import DecisionLog, LogMismatch, ReceiptedCall, log_of, read_log
from relay.learn.replay import Replay, Wrong, replay
from relay.learn.suggest import Candidate, Suggestions, Thresholds, suggest

__all__ = [
    "Candidate",
    "DecisionLog",
    "LogMismatch",
    "ReceiptedCall",
    "Replay",
    "Suggestions",
    "Thresholds",
    "Wrong",
    "log_of",
    "read_log",
    "replay",
    "suggest",
]
