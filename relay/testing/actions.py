"""The actions a simulated human takes on the bot's messages, as ``FakeSlack`` methods.

Each finds the element by its visible text in the message as ``user`` sees it (``version``:
an older version their client still shows), updates that user's client-side state and, when
Slack would, delivers the ``block_actions`` payload; ``block_id``/``action_id`` narrow the
search when a message holds several matching elements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .human import Humans
from .records import ClickResult, FakeMessage

__all__ = ["HumanActions"]


class HumanActions:
    """Simulated humans' actions; mixed into ``FakeSlack``."""

    _humans: Humans

    def build_block_actions(
        self, message: FakeMessage, action: dict[str, Any], *, user: str, version: int | None = None
    ) -> dict[str, Any]:
        """The ``block_actions`` payload for ``user`` using ``action`` (an ``actions[0]``
        entry) on ``message``, e.g. to tamper with before ``post_interaction``."""
        return self._humans.build_block_actions(message, action, user=user, version=version)

    async def click(
        self,
        message: FakeMessage,
        text: str,
        *,
        user: str,
        version: int | None = None,
        block_id: str | None = None,
        action_id: str | None = None,
    ) -> ClickResult:
        """``user`` clicks the button whose visible text is ``text`` (in ``version`` of the
        message when given: an old version their client still shows)."""
        return await self._humans.click(
            message, text, user=user, version=version, block_id=block_id, action_id=action_id
        )

    async def submit(
        self, message: FakeMessage, *, user: str, version: int | None = None
    ) -> ClickResult:
        """``user`` clicks "Submit"."""
        return await self.click(message, "Submit", user=user, version=version)

    async def skip(
        self, message: FakeMessage, *, user: str, version: int | None = None
    ) -> ClickResult:
        """``user`` clicks "Skip"."""
        return await self.click(message, "Skip", user=user, version=version)

    async def select(
        self,
        message: FakeMessage,
        text: str,
        *,
        user: str,
        version: int | None = None,
        block_id: str | None = None,
        action_id: str | None = None,
    ) -> ClickResult:
        """``user`` picks option ``text`` in a ``static_select`` (or radio buttons)."""
        return await self._humans.select(
            message, text, user=user, version=version, block_id=block_id, action_id=action_id
        )

    async def check(
        self,
        message: FakeMessage,
        texts: Sequence[str],
        *,
        user: str,
        version: int | None = None,
        block_id: str | None = None,
        action_id: str | None = None,
    ) -> ClickResult:
        """``user`` sets the checkboxes to exactly ``texts``; a ``checkboxes`` action is sent
        unless they sit in an input block without ``dispatch_action``."""
        return await self._humans.check(
            message, texts, user=user, version=version, block_id=block_id, action_id=action_id
        )

    async def multi_select(
        self,
        message: FakeMessage,
        texts: Sequence[str],
        *,
        user: str,
        version: int | None = None,
        block_id: str | None = None,
        action_id: str | None = None,
    ) -> ClickResult:
        """``user`` sets a ``multi_static_select`` to exactly ``texts``."""
        return await self._humans.multi_select(
            message, texts, user=user, version=version, block_id=block_id, action_id=action_id
        )

    async def type(
        self,
        message: FakeMessage,
        text: str,
        *,
        user: str,
        version: int | None = None,
        block_id: str | None = None,
        action_id: str | None = None,
    ) -> ClickResult:
        """``user`` types ``text`` into the text input (state only, nothing is sent unless
        it dispatches ``on_character_entered``)."""
        return await self._humans.type(
            message, text, user=user, version=version, block_id=block_id, action_id=action_id
        )

    async def press_enter(
        self,
        message: FakeMessage,
        *,
        user: str,
        version: int | None = None,
        block_id: str | None = None,
        action_id: str | None = None,
    ) -> ClickResult:
        """``user`` presses Enter in the text input: sent when its input block has
        ``dispatch_action: true``; ``ClickResult.dispatched`` is false otherwise."""
        return await self._humans.press_enter(
            message, user=user, version=version, block_id=block_id, action_id=action_id
        )
