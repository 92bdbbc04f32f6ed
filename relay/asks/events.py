"""Ask lifecycle events: one structured log line each, and hooks for metrics.

Each value is escaped and bounded (``relay.asks.logline.for_log``), so that what a client sent
can neither forge a second event line nor make one line 60 kB long.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from relay.asks.logline import for_log

__all__ = ["AskEvent", "EventName", "Events"]

EventName = Literal[
    "created",
    "posted",
    "answered",
    "question_answered",
    "voted",
    "reminded",
    "escalated",
    "timed_out",
    "defaulted",
    "aborted",
    "closed",
    "failed",
    "refused",
    "slack_error",
    "repaired",
    "swept",
]

_log = logging.getLogger("relay.ask")


@dataclass(frozen=True, slots=True)
class AskEvent:
    """Something that happened to an ask, with the fields worth logging."""

    name: EventName
    ask_id: str
    fields: dict[str, Any] = field(default_factory=dict)


class Events:
    """Logs each ask event as one ``key=value`` line and passes it to observers."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self._log = logger or _log
        self._observers: list[Callable[[AskEvent], None]] = []

    def subscribe(self, observer: Callable[[AskEvent], None]) -> Callable[[], None]:
        """Call ``observer`` for every event; returns an unsubscriber."""
        self._observers.append(observer)

        def unsubscribe() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return unsubscribe

    def emit(self, name: EventName, ask_id: str, **fields: Any) -> None:
        """Record one event."""
        level = logging.WARNING if name in ("failed", "slack_error") else logging.INFO
        if self._log.isEnabledFor(level):
            details = " ".join(f"{k}={_value(v)}" for k, v in fields.items() if v is not None)
            self._log.log(
                level,
                "event=%s ask=%s%s",
                name,
                ask_id,
                f" {details}" if details else "",
                extra={
                    "event": name,
                    "ask_id": ask_id,
                    **{f"relay_{k}": v for k, v in fields.items()},
                },
            )
        event = AskEvent(name, ask_id, fields)
        for observer in self._observers:
            try:
                observer(event)
            except Exception:
                self._log.exception("event observer %r failed", observer)


def _value(value: Any) -> str:
    # logfmt: quoted (with \\ and \" escaped) when it holds a space, a quote, an = or a
    # control character; what a client sent never starts a second line nor fills one.
    text = str(value)
    if text and text.isprintable() and not any(c.isspace() or c in '"=' for c in text):
        return for_log(text)
    return '"' + for_log(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'
