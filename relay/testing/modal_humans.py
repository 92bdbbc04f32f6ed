"""Simulated humans in a modal: they read it, fill it, submit or close it, and see what the
app answered, as in Slack's client.

Submitting first runs the checks Slack's client makes before it sends anything (a required
field left empty, a number that is not one or out of range, text shorter than
``min_length``); then FakeSlack delivers the ``view_submission`` payload Slack sends (signed
over HTTP, or as a Socket Mode envelope that accepts a response payload) and applies the
app's answer: an empty 200 closes the view, ``response_action`` ``errors`` shows each message
under its input block (every key must be the ``block_id`` of an input block of the view, or
Slack shows nothing but a generic failure), ``update``, ``push`` and ``clear`` change the
modal. ``view_closed`` is sent on close only when the view asked with ``notify_on_close``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from .changes import ChangeFeed
from .elements import TEXT_INPUTS, action_for, find_button, iter_elements, state_values
from .modals import MAX_VIEW_STACK, FakeModal, FakeView, parse_view_answer
from .records import ClickResult, ViewResult
from .workspace import Workspace

__all__ = ["MAX_INPUT_CHARS", "REQUIRED_FIELD_ERROR", "ModalHumans"]

MAX_INPUT_CHARS = 3000
"""Characters a ``plain_text_input`` takes (its ``max_length`` may only lower it)."""

REQUIRED_FIELD_ERROR = "Please fill out this field."
"""What the fake's client shows under a required input left empty (Slack's client refuses
the submission without sending it; its exact wording is not documented)."""


class ModalHumans:
    """``FakeSlack``'s modal side: find the modal a user has open, submit or close it."""

    _workspace: Workspace
    _deliver: Callable[[dict[str, Any]], Awaitable[ClickResult]]
    _verification_token: str
    _changes: ChangeFeed

    @property
    def modals(self) -> list[FakeModal]:
        """Every modal the app opened, in order (closed ones included)."""
        return self._workspace.modals.modals

    def modal_of(self, user: str) -> FakeModal | None:
        """The modal ``user`` has open now, or ``None``."""
        return self._workspace.modals.open_for(user)

    def open_modal(self, user: str) -> FakeModal:
        """The modal ``user`` has open now; ``LookupError`` when there is none."""
        modal = self._workspace.modals.open_for(user)
        if modal is None:
            raise LookupError(f"{user} has no modal open")
        return modal

    async def wait_for_modal(self, *, user: str, timeout: float = 5.0) -> FakeModal:
        """``user``'s open modal, as soon as the app has opened one."""

        def found() -> FakeModal | None:
            return self._workspace.modals.open_for(user)

        return await self._changes.wait_for(
            found, timeout=timeout, describe=lambda: f"no modal opened for {user}"
        )

    def build_view_submission(self, modal: FakeModal) -> dict[str, Any]:
        """The ``view_submission`` payload Slack sends when ``modal``'s user submits it."""
        return self._view_payload(modal, "view_submission")

    async def submit_view(self, modal: FakeModal) -> ViewResult:
        """The user clicks the modal's submit button: Slack's client checks the fields,
        then the app gets ``view_submission`` and its answer is applied to the modal."""
        if modal.closed:
            raise LookupError("the modal is closed; it cannot be submitted")
        view = modal.top
        if "submit" not in view.definition:
            raise LookupError("the view has no submit button")
        refused = client_errors(view)
        if refused:
            view.errors = refused
            modal.problem = None
            await self._changes.notify()
            return ViewResult(
                status=0, body="", dispatched=False, outcome="invalid", errors=refused
            )
        view.errors = {}
        result = await self._deliver(self.build_view_submission(modal))
        outcome = self._apply_answer(modal, view, result)
        await self._changes.notify()
        return outcome

    async def close_view(self, modal: FakeModal) -> ClickResult | None:
        """The user clicks Cancel (or the ×): the view closes (all of them with
        ``clear_on_close``); the app gets ``view_closed`` only with ``notify_on_close``,
        and then what it answered is returned (else ``None``)."""
        if modal.closed:
            raise LookupError("the modal is already closed")
        view = modal.top
        everything = view.definition.get("clear_on_close") is True
        payload = None
        if view.definition.get("notify_on_close") is True:
            payload = self._view_payload(modal, "view_closed")
            payload["is_cleared"] = everything and len(modal.stack) > 1
        self._workspace.modals.close(modal, everything=everything)
        await self._changes.notify()
        return None if payload is None else await self._deliver(payload)

    async def click_in_modal(
        self, modal: FakeModal, text: str, *, block_id: str | None = None
    ) -> ClickResult:
        """The user clicks the button ``text`` in the modal's view: the app gets
        ``block_actions`` from the view (``container.type`` ``view``, the view with its
        state, and a ``trigger_id`` that may ``views.push`` onto this modal)."""
        if modal.closed:
            raise LookupError("the modal is closed")
        located = find_button(modal.top.blocks, text, block_id=block_id)
        action = action_for(located, action_ts=f"{time.time():.6f}", state=modal.top.state)
        payload = self._view_payload(modal, "block_actions")
        payload["container"] = {"type": "view", "view_id": modal.top.id}
        payload["trigger_id"] = self._workspace.modals.issue_trigger(
            modal.user, view_id=modal.top.id
        )
        payload["actions"] = [action]
        result = await self._deliver(payload)
        await self._changes.notify()
        return result

    def _view_payload(self, modal: FakeModal, kind: str) -> dict[str, Any]:
        workspace = self._workspace
        user = modal.user
        name = workspace.user_name(user)
        view = modal.top
        payload: dict[str, Any] = {
            "type": kind,
            **workspace.install.payload_fields(),
            "user": {
                "id": user,
                "username": name,
                "name": name,
                "team_id": workspace.user_team(user),
            },
            "api_app_id": workspace.api_app_id,
            "token": self._verification_token,
            "view": workspace.modals.view_json(view),
        }
        if kind == "view_submission":
            payload["trigger_id"] = workspace.modals.issue_trigger(user, view_id=view.id)
            payload["response_urls"] = []
        return payload

    def _apply_answer(self, modal: FakeModal, view: FakeView, result: ClickResult) -> ViewResult:
        modals = self._workspace.modals

        def failed(problem: str) -> ViewResult:
            modal.problem = problem
            return ViewResult(
                status=result.status, body=result.body, outcome="failed", problem=problem
            )

        def done(outcome: str, errors: dict[str, str] | None = None) -> ViewResult:
            modal.problem = None
            return ViewResult(
                status=result.status, body=result.body, outcome=outcome, errors=errors or {}
            )

        if result.status != 200:
            return failed(f"the app answered HTTP {result.status}: {result.body[:200]}")
        if not result.body.strip():
            modals.close(modal, everything=False)
            return done("closed")
        try:
            answer = json.loads(result.body)
        except ValueError:
            return failed("the app's answer is neither empty nor JSON")
        if not isinstance(answer, dict):
            return failed("the app's answer is not a JSON object")
        action = answer.get("response_action")
        if action is None:
            modals.close(modal, everything=False)
            return done("closed")
        if action == "errors":
            errors = answer.get("errors")
            problem = errors_problem(errors, view)
            if problem is not None or not isinstance(errors, dict):
                return failed(problem or "errors must be an object")
            view.errors = {str(k): str(v) for k, v in errors.items()}
            return done("errors", dict(view.errors))
        if action == "clear":
            modals.close(modal, everything=True)
            return done("cleared")
        if action in ("update", "push"):
            definition = parse_view_answer(answer.get("view"))
            if isinstance(definition, str):
                return failed(f"response_action {action} with a view Slack refuses: {definition}")
            if action == "update":
                modals.replace(view, definition)
                return done("updated")
            if len(modal.stack) >= MAX_VIEW_STACK:
                return failed(f"push_limit_reached: a modal stacks at most {MAX_VIEW_STACK} views")
            modals.push(modal, definition)
            return done("pushed")
        return failed(f"unknown response_action {action!r}")


def errors_problem(errors: object, view: FakeView) -> str | None:
    """Why Slack refuses ``response_action: errors`` with ``errors`` for ``view``, or
    ``None``: it must map ``block_id``s of the view's input blocks to non-empty strings."""
    if not isinstance(errors, dict) or not errors:
        return "response_action errors needs errors: an object of block_id -> message"
    inputs = view.input_block_ids()
    for block_id, message in errors.items():
        if block_id not in inputs:
            return (
                f"response_action errors names {block_id!r}, which is not the block_id of an "
                f"input block of the view (input blocks: {sorted(inputs)})"
            )
        if not isinstance(message, str) or not message:
            return f"the error for {block_id!r} must be a non-empty string"
    return None


def client_errors(view: FakeView) -> dict[str, str]:
    """What Slack's client refuses before sending a submission: ``block_id`` -> message."""
    errors: dict[str, str] = {}
    values = state_values(view.blocks, view.state)
    for located in iter_elements(view.blocks):
        block = located.block
        if block.get("type") != "input":
            continue
        entry = values.get(located.block_id, {}).get(located.action_id, {})
        message = _field_error(located.kind, located.element, entry, block.get("optional") is True)
        if message is not None:
            errors[located.block_id] = message
    return errors


def _field_error(
    kind: str, element: dict[str, Any], entry: dict[str, Any], optional: bool
) -> str | None:
    filled = {k: v for k, v in entry.items() if k != "type"}
    empty = all(v in (None, "", [], {}) for v in filled.values())
    if empty:
        return None if optional else REQUIRED_FIELD_ERROR
    if kind not in TEXT_INPUTS:
        return None
    value = str(entry.get("value") or "")
    if kind == "plain_text_input":
        # Slack's plain_text_input holds at most 3,000 characters unless max_length says less.
        low, high = element.get("min_length"), element.get("max_length", MAX_INPUT_CHARS)
        if isinstance(low, int) and len(value) < low:
            return f"Use at least {low} characters."
        if isinstance(high, int) and len(value) > high:
            return f"Use at most {high} characters."
    if kind == "number_input":
        return _number_error(element, value)
    if kind == "email_text_input" and "@" not in value:
        return "Enter an email address."
    if kind == "url_text_input" and not value.startswith(("http://", "https://")):
        return "Enter a URL."
    return None


def _number_error(element: dict[str, Any], value: str) -> str | None:
    try:
        number = Decimal(value)
    except InvalidOperation:
        return "Enter a number."
    if not number.is_finite():
        return "Enter a number."
    if element.get("is_decimal_allowed") is not True and number != number.to_integral_value():
        return "Enter a whole number."
    low, high = _decimal(element.get("min_value")), _decimal(element.get("max_value"))
    if low is not None and number < low:
        return f"Enter a number at least {element['min_value']}."
    if high is not None and number > high:
        return f"Enter a number at most {element['max_value']}."
    return None


def _decimal(bound: object) -> Decimal | None:
    if not isinstance(bound, str):
        return None
    try:
        return Decimal(bound)
    except InvalidOperation:
        return None
