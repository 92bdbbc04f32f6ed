"""Modals in the fake workspace: the ``trigger_id``s interactions hand out, the views
``views.open``/``views.update`` open and change, and what the app's answer to a
``view_submission`` does to them.

What Slack does, and the fake too (docs.slack.dev/reference/methods/views.open,
docs.slack.dev/surfaces/modals):

- A ``trigger_id`` comes with an interaction (``block_actions``, ``view_submission``), opens
  one view (``exchanged_trigger_id`` the second time) and expires 3 seconds after it was
  issued (``expired_trigger_id``); one Slack never issued answers ``invalid_trigger_id``.
- The modal opens for the user whose interaction issued the trigger. A modal holds a stack of
  at most 3 views (``push_limit_reached``); ``external_id`` is unique in the workspace
  (``duplicate_external_id``).
- ``views.update`` takes ``view_id`` or ``external_id`` and, with ``hash``, refuses a stale
  update (``hash_conflict``); what the user typed stays in inputs whose ``block_id`` and
  ``action_id`` the new view keeps.
- The answer to ``view_submission``: an empty 200 closes the view; ``response_action``
  ``errors`` keeps it open with a message under each named ``input`` block; ``update``
  replaces it, ``push`` stacks a new one and ``clear`` closes the whole modal.

Time comes from ``clock`` (``time.monotonic`` unless given), so a test can expire a trigger
with ``ManualClock.advance`` instead of sleeping.
"""

from __future__ import annotations

import copy
import json
import secrets
import string
import time
from typing import Any

from .elements import iter_elements, state_values
from .faults import ApiReply
from .install import Install
from .modal_check import view_errors, view_too_large
from .modal_view import Clock, FakeModal, FakeView, ManualClock, Trigger

__all__ = [
    "MAX_VIEW_STACK",
    "TRIGGER_LIFETIME",
    "Clock",
    "FakeModal",
    "FakeView",
    "ManualClock",
    "Modals",
    "Trigger",
]

TRIGGER_LIFETIME = 3.0
"""Seconds a ``trigger_id`` stays usable after the interaction that issued it."""
MAX_VIEW_STACK = 3
"""Views one modal may stack (``views.push``, ``response_action: push``)."""

_ID_CHARS = string.ascii_uppercase + string.digits
_Args = dict[str, Any]


class Modals:
    """The workspace's triggers and modals, and the ``views.*`` methods."""

    def __init__(self, *, install: Install, clock: Clock) -> None:
        self.install = install
        self.clock = clock
        self.triggers: dict[str, Trigger] = {}
        self.modals: list[FakeModal] = []

    # -- triggers -------------------------------------------------------------------------

    def issue_trigger(self, user: str, *, view_id: str | None = None) -> str:
        """A new ``trigger_id`` for an interaction of ``user`` (in view ``view_id``)."""
        trigger_id = f"{secrets.randbelow(10**13)}.{int(time.time())}.{secrets.token_hex(16)}"
        self.triggers[trigger_id] = Trigger(
            trigger_id=trigger_id, user=user, issued=self.clock(), view_id=view_id
        )
        return trigger_id

    def _take_trigger(self, args: _Args) -> Trigger | ApiReply:
        trigger_id = args.get("trigger_id") or args.get("interactivity_pointer")
        if not trigger_id:
            return _invalid_arguments("missing required field: trigger_id")
        trigger = self.triggers.get(str(trigger_id))
        if trigger is None:
            return ApiReply.error("invalid_trigger_id")
        if trigger.used:
            return ApiReply.error("exchanged_trigger_id")
        if self.clock() - trigger.issued > TRIGGER_LIFETIME:
            return ApiReply.error("expired_trigger_id")
        return trigger

    # -- lookups --------------------------------------------------------------------------

    def open_for(self, user: str) -> FakeModal | None:
        """``user``'s open modal (the latest), if any."""
        for modal in reversed(self.modals):
            if modal.user == user and not modal.closed:
                return modal
        return None

    def _find_view(self, args: _Args) -> tuple[FakeModal, int] | None:
        view_id, external_id = args.get("view_id"), args.get("external_id")
        for modal in self.modals:
            if modal.closed:
                continue
            for index, view in enumerate(modal.stack):
                if (view_id and view.id == view_id) or (
                    external_id and view.definition.get("external_id") == external_id
                ):
                    return modal, index
        return None

    def _external_id_taken(self, definition: dict[str, Any], *, but: FakeView | None) -> bool:
        external_id = definition.get("external_id")
        if not external_id:
            return False
        return any(
            view.definition.get("external_id") == external_id and view is not but
            for modal in self.modals
            if not modal.closed
            for view in modal.stack
        )

    # -- views.* --------------------------------------------------------------------------

    def views_open(self, args: _Args) -> ApiReply:
        """``views.open``: a new modal for the trigger's user."""
        definition = _parse_view(args)
        if isinstance(definition, ApiReply):
            return definition
        trigger = self._take_trigger(args)
        if isinstance(trigger, ApiReply):
            return trigger
        if self._external_id_taken(definition, but=None):
            return ApiReply.error("duplicate_external_id")
        trigger.used = True
        view = self.new_view(definition, root=None)
        self.modals.append(FakeModal(user=trigger.user, stack=[view]))
        return ApiReply(body={"ok": True, "view": self.view_json(view)})

    def views_push(self, args: _Args) -> ApiReply:
        """``views.push``: a view on top of the modal the trigger came from."""
        definition = _parse_view(args)
        if isinstance(definition, ApiReply):
            return definition
        trigger = self._take_trigger(args)
        if isinstance(trigger, ApiReply):
            return trigger
        modal = self._modal_of(trigger.view_id)
        if modal is None:
            return ApiReply.error("not_found")
        if len(modal.stack) >= MAX_VIEW_STACK:
            return ApiReply.error("push_limit_reached")
        if self._external_id_taken(definition, but=None):
            return ApiReply.error("duplicate_external_id")
        trigger.used = True
        view = self.push(modal, definition)
        return ApiReply(body={"ok": True, "view": self.view_json(view)})

    def views_update(self, args: _Args) -> ApiReply:
        """``views.update``: replace a view of an open modal, by ``view_id`` or
        ``external_id``, refused when ``hash`` is stale."""
        if not args.get("view_id") and not args.get("external_id"):
            return _invalid_arguments("missing required field: view_id or external_id")
        definition = _parse_view(args)
        if isinstance(definition, ApiReply):
            return definition
        found = self._find_view(args)
        if found is None:
            return ApiReply.error("not_found")
        modal, index = found
        view = modal.stack[index]
        if args.get("hash") and args["hash"] != view.hash:
            return ApiReply.error("hash_conflict")
        if self._external_id_taken(definition, but=view):
            return ApiReply.error("duplicate_external_id")
        self.replace(view, definition)
        return ApiReply(body={"ok": True, "view": self.view_json(view)})

    # -- changes ----------------------------------------------------------------------------

    def new_view(self, definition: dict[str, Any], *, root: FakeView | None) -> FakeView:
        """A new view with a fresh id and hash (the root of a modal when ``root`` is None)."""
        view_id = "V" + "".join(secrets.choice(_ID_CHARS) for _ in range(10))
        return FakeView(
            id=view_id,
            definition=copy.deepcopy(definition),
            hash=_new_hash(),
            root_view_id=root.root_view_id if root else view_id,
            previous_view_id=root.id if root else None,
        )

    def push(self, modal: FakeModal, definition: dict[str, Any]) -> FakeView:
        """Stack a new view on ``modal``."""
        view = self.new_view(definition, root=modal.top)
        modal.stack.append(view)
        return view

    def replace(self, view: FakeView, definition: dict[str, Any]) -> None:
        """Make ``definition`` the content of ``view``: new hash, errors gone, what the user
        entered kept where the new view has the same block and action ids."""
        view.definition = copy.deepcopy(definition)
        view.hash = _new_hash()
        view.errors = {}
        kept = {located.key for located in iter_elements(view.blocks)}
        view.state = {key: entry for key, entry in view.state.items() if key in kept}

    def close(self, modal: FakeModal, *, everything: bool) -> None:
        """Take the top view off, back to the one below; the last one (or, with
        ``everything``, all) closes the modal, which keeps its stack for a test to read."""
        if everything or len(modal.stack) <= 1:
            modal.closed = True
        else:
            modal.stack.pop()

    def _modal_of(self, view_id: str | None) -> FakeModal | None:
        for modal in self.modals:
            if not modal.closed and any(v.id == view_id for v in modal.stack):
                return modal
        return None

    # -- payload shapes ---------------------------------------------------------------------

    def view_json(self, view: FakeView) -> dict[str, Any]:
        """The view object Slack returns and puts in payloads, state included (a copy)."""
        definition = view.definition
        body: dict[str, Any] = {
            "id": view.id,
            "team_id": self.install.team_id,
            "type": "modal",
            "blocks": copy.deepcopy(view.blocks),
            "private_metadata": view.private_metadata,
            "callback_id": view.callback_id,
            "state": {"values": state_values(view.blocks, view.state)},
            "hash": view.hash,
            "title": copy.deepcopy(definition.get("title")),
            "clear_on_close": bool(definition.get("clear_on_close", False)),
            "notify_on_close": bool(definition.get("notify_on_close", False)),
            "close": copy.deepcopy(definition.get("close")),
            "submit": copy.deepcopy(definition.get("submit")),
            "previous_view_id": view.previous_view_id,
            "root_view_id": view.root_view_id,
            "app_id": self.install.api_app_id,
            "external_id": str(definition.get("external_id") or ""),
            "app_installed_team_id": self.install.team_id,
            "bot_id": self.install.bot_id,
        }
        return body


def parse_view_answer(definition: object) -> dict[str, Any] | str:
    """A view from an app's ``response_action: update/push`` answer, or why it is refused."""
    if view_too_large(definition):
        return "view_too_large"
    errors = view_errors(definition)
    if errors or not isinstance(definition, dict):
        return "; ".join(errors)
    return definition


def _parse_view(args: _Args) -> dict[str, Any] | ApiReply:
    raw = args.get("view")
    if raw is None:
        return _invalid_arguments("missing required field: view")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return _invalid_arguments("invalid `view`: not valid JSON [json-pointer:/view]")
    if view_too_large(raw):
        return ApiReply.error("view_too_large")
    errors = view_errors(raw)
    if errors or not isinstance(raw, dict):
        return ApiReply.error(
            "invalid_arguments",
            response_metadata={"messages": [f"[ERROR] {error}" for error in errors]},
        )
    return raw


def _invalid_arguments(message: str) -> ApiReply:
    return ApiReply.error(
        "invalid_arguments", response_metadata={"messages": [f"[ERROR] {message}"]}
    )


def _new_hash() -> str:
    return f"{int(time.time())}.{secrets.token_hex(4)}"
