"""Which asks a piece of work made: noted where each ask is created, read by whoever runs it.

An MCP tool call names its ask's receipt (``relay.mcp.server``) whichever way the ask was
made: by the relay's own lifecycle (``/mcp``, an ``Events`` observer) or through a hosted
relay's API (``relay mcp``: ``RelayProvider`` and ``RemoteApprover`` learn the id when they
create it). Both note the id here, so the tool call reads it from one place and no door
decides anything twice.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["note_ask", "noting_asks"]

# The list of the running work's asks; tasks it starts copy the context, hence share the list.
_ASKED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "relay_asked", default=None
)


@contextmanager
def noting_asks() -> Iterator[list[str]]:
    """A list that fills with the id of each ask created inside the ``with`` block."""
    asked: list[str] = []
    token = _ASKED.set(asked)
    try:
        yield asked
    finally:
        _ASKED.reset(token)


def note_ask(ask_id: str) -> None:
    """Note that ask ``ask_id`` was created for the work running here (if anyone listens)."""
    if (asked := _ASKED.get()) is not None and ask_id not in asked:
        asked.append(ask_id)
