"""Simulated humans using the bot's messages in Slack's client.

Each action finds an element by its visible text in the blocks the viewer sees (the current
version, or an older one their client still shows), updates that viewer's client-side state
the way Slack's client does, and, when the element dispatches, builds the ``block_actions``
payload exactly as Slack does and hands it to ``deliver``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .elements import (
    CHECKBOXES,
    MULTI_SELECTS,
    SINGLE_SELECTS,
    TEXT_INPUTS,
    Located,
    ViewerState,
    action_for,
    button_text_shown,
    find_button,
    find_input,
    find_options,
    iter_elements,
    state_values,
)
from .records import ClickResult, FakeMessage
from .workspace import Workspace

__all__ = ["Deliver", "Humans", "shown"]

Deliver = Callable[[dict[str, Any]], Awaitable[ClickResult]]
"""Sends a payload to the app and returns what it answered."""

_NOT_DISPATCHED = ClickResult(status=0, body="", dispatched=False)


class Humans:
    """The workspace's people at their Slack clients, one client-side state per
    (message, user) pair as in Slack, where what you typed is only yours."""

    def __init__(
        self,
        *,
        workspace: Workspace,
        deliver: Deliver,
        response_url_base: Callable[[], str],
        verification_token: str,
    ) -> None:
        self._workspace = workspace
        self._deliver = deliver
        self._response_url_base = response_url_base
        self._verification_token = verification_token
        self._states: dict[tuple[str, str, str], ViewerState] = {}

    def state_of(self, message: FakeMessage, user: str) -> ViewerState:
        """``user``'s client-side state of ``message`` (mutable)."""
        return self._states.setdefault((message.channel, message.ts, user), {})

    def build_block_actions(
        self,
        message: FakeMessage,
        action: dict[str, Any],
        *,
        user: str,
        version: int | None = None,
    ) -> dict[str, Any]:
        """The ``block_actions`` payload Slack sends when ``user`` uses ``action`` on
        ``message`` (as shown in ``version``), with a fresh ``response_url``."""
        blocks, text = shown(message, version)
        workspace = self._workspace
        action = {**action}
        action.setdefault("action_ts", _now_ts())
        container: dict[str, Any] = {
            "type": "message",
            "message_ts": message.ts,
            "channel_id": message.channel,
            "is_ephemeral": False,
        }
        if message.thread_ts:
            container["thread_ts"] = message.thread_ts
        name = workspace.user_name(user)
        response_key = workspace.open_response_url(message, user)
        return {
            "type": "block_actions",
            "user": {
                "id": user,
                "username": name,
                "name": name,
                "team_id": workspace.user_team(user),
            },
            "api_app_id": workspace.api_app_id,
            "token": self._verification_token,
            "container": container,
            "trigger_id": workspace.modals.issue_trigger(user),
            **workspace.install.payload_fields(),
            "channel": {"id": message.channel, "name": workspace.channel_name(message.channel)},
            "message": workspace.message_json(message, text=text, blocks=blocks),
            "state": {"values": state_values(blocks, self.state_of(message, user))},
            "response_url": f"{self._response_url_base()}{response_key}",
            "actions": [action],
        }

    def buttons_seen(self, message: FakeMessage, *, version: int | None = None) -> list[str]:
        """The text of each button of ``message`` as a human sees it: cut at about 30
        characters, so that two labels alike that far look the same."""
        blocks, _ = shown(message, version)
        return [
            button_text_shown(str((located.element.get("text") or {}).get("text", "")))
            for located in iter_elements(blocks)
            if located.kind == "button"
        ]

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
        """Click the button whose visible text is ``text``."""
        blocks, _ = shown(message, version)
        located = find_button(blocks, text, block_id=block_id, action_id=action_id)
        return await self._use(message, located, user=user, version=version)

    async def submit(
        self, message: FakeMessage, *, user: str, version: int | None = None
    ) -> ClickResult:
        """``user`` clicks the ``Submit`` button."""
        return await self.click(message, "Submit", user=user, version=version)

    async def skip(
        self, message: FakeMessage, *, user: str, version: int | None = None
    ) -> ClickResult:
        """``user`` clicks the ``Skip`` button."""
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
        """Pick the option ``text`` of a ``static_select`` (or radio buttons)."""
        blocks, _ = shown(message, version)
        located, options = find_options(
            blocks, SINGLE_SELECTS, [text], block_id=block_id, action_id=action_id
        )
        self.state_of(message, user)[located.key] = {
            "type": located.kind,
            "selected_option": options[0],
        }
        return await self._use(message, located, user=user, version=version)

    async def choose_many(
        self,
        message: FakeMessage,
        texts: Sequence[str],
        *,
        kinds: frozenset[str],
        user: str,
        version: int | None = None,
        block_id: str | None = None,
        action_id: str | None = None,
    ) -> ClickResult:
        """Set the checkboxes (``kinds=CHECKBOXES``) or the multi-select
        (``kinds=MULTI_SELECTS``) offering ``texts`` to exactly those options."""
        if isinstance(texts, str):
            raise TypeError("pass a list of option texts, not one string")
        blocks, _ = shown(message, version)
        located, options = find_options(
            blocks, kinds, list(texts), block_id=block_id, action_id=action_id
        )
        self.state_of(message, user)[located.key] = {
            "type": located.kind,
            "selected_options": options,
        }
        return await self._use(message, located, user=user, version=version)

    async def check(self, message: FakeMessage, texts: Sequence[str], **how: Any) -> ClickResult:
        """Tick exactly the checkboxes ``texts`` (see ``choose_many``)."""
        return await self.choose_many(message, texts, kinds=CHECKBOXES, **how)

    async def multi_select(
        self, message: FakeMessage, texts: Sequence[str], **how: Any
    ) -> ClickResult:
        """Select exactly ``texts`` in a ``multi_static_select`` (see ``choose_many``)."""
        return await self.choose_many(message, texts, kinds=MULTI_SELECTS, **how)

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
        """Replace the text input's content with ``text``. Nothing is sent unless the input
        dispatches ``on_character_entered``."""
        blocks, _ = shown(message, version)
        located = find_input(blocks, TEXT_INPUTS, block_id=block_id, action_id=action_id)
        self.state_of(message, user)[located.key] = {"type": located.kind, "value": text or None}
        return await self._use(
            message, located, user=user, version=version, trigger="on_character_entered"
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
        """Press Enter in the text input: dispatches its current value when its input block
        has ``dispatch_action`` (with ``on_enter_pressed``, the default trigger)."""
        blocks, _ = shown(message, version)
        located = find_input(blocks, TEXT_INPUTS, block_id=block_id, action_id=action_id)
        return await self._use(message, located, user=user, version=version)

    async def _use(
        self,
        message: FakeMessage,
        located: Located,
        *,
        user: str,
        version: int | None,
        trigger: str = "on_enter_pressed",
    ) -> ClickResult:
        if not located.dispatches(trigger):
            return _NOT_DISPATCHED
        action = action_for(located, action_ts=_now_ts(), state=self.state_of(message, user))
        payload = self.build_block_actions(message, action, user=user, version=version)
        return await self._deliver(payload)


def shown(message: FakeMessage, version: int | None) -> tuple[list[dict[str, Any]], str]:
    """The blocks and text a viewer of ``version`` of ``message`` sees (``None``: current)."""
    if version is None:
        if message.deleted:
            raise LookupError(f"message {message.ts} in {message.channel} was deleted")
        return message.blocks, message.text
    try:
        return message.versions[version], message.text_versions[version]
    except IndexError:
        count = len(message.versions)
        raise LookupError(
            f"message {message.ts} has {count} version(s); there is no version {version}"
        ) from None


def _now_ts() -> str:
    return f"{time.time():.6f}"
