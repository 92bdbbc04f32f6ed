"""The sandbox's Slack stand-in: ``relay.testing.FakeSlack`` with the sandbox's people, what
each of them sees, and their actions on the page turned into FakeSlack's human actions.

Everything here goes through FakeSlack's public API: its humans find an element in the
message as posted, keep each viewer's client-side state and build the signed
``block_actions`` request Slack would send to the relay's ``/slack/events``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Mapping
from typing import Any

from relay.errors import ErrorCode, RelayException
from relay.sandbox.directory import CHANNELS, GROUPS, PEOPLE
from relay.seam.tasks import stop_task
from relay.testing import ClickResult, FakeMessage, FakeModal, FakeSlack, RecordedCall, ViewResult

__all__ = ["ActionRefused", "Sandbox"]

_KINDS = ("button", "select", "checks", "multi", "enter")
_VIEW_KINDS = ("view_submit", "view_close")


class ActionRefused(RelayException):
    """An action from the page that cannot be carried out; ``status`` is the HTTP status."""

    def __init__(self, code: ErrorCode, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


class Sandbox:
    """The sandbox's workspace on top of ``slack``: people, views, actions and a change feed."""

    def __init__(
        self, slack: FakeSlack, *, channel: str, allowed_users: frozenset[str] | None
    ) -> None:
        self.slack = slack
        self.channel = channel
        """Where asks go unless they name a channel (``RELAY_CHANNEL``)."""
        self.allowed_users = allowed_users
        for person in PEOPLE:
            slack.add_user(person.id, name=person.name, real_name=person.real_name)
        slack.usergroups = {gid: list(members) for gid, (_, members) in GROUPS.items()}
        # Declared channels close the workspace: an ask to any other channel is refused with
        # channel_not_found, as Slack refuses it, instead of waiting in a channel nobody sees.
        for channel_id, name in CHANNELS.items():
            slack.add_channel(channel_id, name=name)
        if channel not in CHANNELS:
            slack.add_channel(channel)
        self._generation = 0
        self._changed: asyncio.Condition | None = None
        self._watcher: asyncio.Task[None] | None = None

    # -- who is who ------------------------------------------------------------------------

    def directory(self) -> dict[str, Any]:
        """People, user groups and channel names, for the page's mentions and sidebar."""
        people = [
            {
                "id": p.id,
                "name": p.name,
                "real_name": p.real_name,
                "title": p.title,
                "allowed": self.allowed_users is None or p.id in self.allowed_users,
            }
            for p in PEOPLE
        ]
        groups = [
            {"id": gid, "handle": handle, "members": list(members)}
            for gid, (handle, members) in GROUPS.items()
        ]
        names = dict(CHANNELS)
        names.setdefault(self.channel, self.channel.lower())
        return {
            "people": people,
            "groups": groups,
            "channel_names": names,
            "default_channel": self.channel,
        }

    def is_person(self, user: str) -> bool:
        """Whether ``user`` is one of the sandbox's people."""
        return any(p.id == user for p in PEOPLE)

    def dm_owners(self) -> dict[str, str]:
        """DM channel id -> the person it is with, learnt from the relay's own calls (a post
        to a user id, or ``conversations.open``), so nothing assumes how Slack names DMs."""
        owners: dict[str, str] = {}
        for call in self.slack.calls:
            if not call.ok:
                continue
            if call.method == "chat.postMessage" and str(call.args.get("channel", ""))[:1] in "UW":
                owners[str(call.response.get("channel"))] = str(call.args["channel"])
            elif call.method == "conversations.open":
                users = str(call.args.get("users") or "").split(",")
                channel = call.response.get("channel")
                if len(users) == 1 and isinstance(channel, dict):
                    owners[str(channel.get("id"))] = users[0].strip()
        return owners

    # -- what a viewer sees ----------------------------------------------------------------

    def visible(self, channel: str, viewer: str, owners: Mapping[str, str]) -> bool:
        """Whether ``viewer`` sees ``channel``: every channel, but only their own DMs."""
        owner = owners.get(channel)
        return owner is None or owner == viewer

    def message_view(self, message: FakeMessage, viewer: str) -> dict[str, Any]:
        """One message as ``viewer``'s client shows it, with their client-side state."""
        state = [
            {"block_id": block_id, "action_id": action_id, **entry}
            for (block_id, action_id), entry in self.slack.state_of(message, viewer).items()
        ]
        return {
            "channel": message.channel,
            "ts": message.ts,
            "thread_ts": message.thread_ts,
            "version": len(message.versions) - 1,
            "text": message.text,
            "blocks": message.blocks,
            "deleted": message.deleted,
            "state": state,
        }

    def ephemeral_view(self, index: int, call: RecordedCall) -> dict[str, Any]:
        """One private notice (``chat.postEphemeral`` or an ephemeral ``response_url`` post)."""
        blocks = call.args.get("blocks")
        return {
            "index": index,
            "channel": call.args.get("channel"),
            "thread_ts": call.args.get("thread_ts"),
            "text": str(call.args.get("text") or ""),
            "blocks": blocks if isinstance(blocks, list) else [],
            "at": call.at,
        }

    def ephemerals_for(self, viewer: str, start: int = 0) -> list[dict[str, Any]]:
        """The private notices sent to ``viewer`` from index ``start`` on: nobody else's."""
        return [
            self.ephemeral_view(i, call)
            for i, call in enumerate(self.slack.ephemerals[start:], start)
            if call.args.get("user") == viewer
        ]

    def shown_modal(self, viewer: str) -> FakeModal | None:
        """The modal on ``viewer``'s screen: the last one opened for them, while it is open.
        Slack's client shows one modal; one opened over it (an "Edit…" clicked twice) takes
        its place, and the one it replaced must not come back once this one is closed."""
        for modal in reversed(self.slack.modals):
            if modal.user == viewer:
                return None if modal.closed else modal
        return None

    def modal_view(self, viewer: str) -> dict[str, Any] | None:
        """The modal ``viewer`` has open, as their client shows it (``None``: none)."""
        modal = self.shown_modal(viewer)
        if modal is None:
            return None
        view = modal.top
        state = [
            {"block_id": block_id, "action_id": action_id, **entry}
            for (block_id, action_id), entry in view.state.items()
        ]
        definition = view.definition
        return {
            "id": view.id,
            "hash": view.hash,
            "title": definition.get("title"),
            "submit": definition.get("submit"),
            "close": definition.get("close"),
            "blocks": view.blocks,
            "state": state,
            "errors": dict(view.errors),
            "problem": modal.problem,
            "depth": len(modal.stack),
        }

    def find(self, channel: str, ts: str) -> FakeMessage:
        """The message ``ts`` in ``channel`` (deleted ones too), or ``ActionRefused``."""
        for message in self.slack.messages:
            if message.channel == channel and message.ts == ts:
                return message
        raise ActionRefused(
            ErrorCode.NOT_FOUND, f"there is no message {ts} in {channel}", status=404
        )

    # -- a viewer's action -------------------------------------------------------------------

    async def act(self, viewer: str, body: Mapping[str, Any]) -> ClickResult:
        """Carry out one action of ``viewer`` on the page: first the text they typed in the
        message (client-side state, as in Slack), then the click, choice or Enter, which
        FakeSlack delivers to the relay as Slack's signed ``block_actions`` request."""
        if not self.is_person(viewer):
            raise ActionRefused(
                ErrorCode.BAD_REQUEST, f"{viewer!r} is not one of the sandbox's people"
            )
        if body.get("kind") in _VIEW_KINDS:
            return await self.act_in_modal(viewer, body)
        message = self.find(_text(body, "channel"), _text(body, "ts"))
        version = body.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise ActionRefused(ErrorCode.BAD_REQUEST, "version must be the message version shown")
        shown = None if version >= len(message.versions) - 1 else version
        kind = body.get("kind")
        if kind not in _KINDS:
            raise ActionRefused(ErrorCode.BAD_REQUEST, f"kind must be one of {', '.join(_KINDS)}")
        where = {"block_id": _text(body, "block_id"), "action_id": _text(body, "action_id")}
        how: dict[str, Any] = {"user": viewer, "version": shown, **where}
        try:
            for typed in _list(body, "typed"):
                if not isinstance(typed, Mapping) or not isinstance(typed.get("value"), str):
                    raise ActionRefused(
                        ErrorCode.BAD_REQUEST, "typed entries need block_id, action_id and value"
                    )
                await self.slack.type(
                    message,
                    typed["value"],
                    user=viewer,
                    version=shown,
                    block_id=_text(typed, "block_id"),
                    action_id=_text(typed, "action_id"),
                )
            if kind == "button":
                return await self.slack.click(message, _text(body, "text"), **how)
            if kind == "select":
                return await self.slack.select(message, _text(body, "text"), **how)
            if kind == "checks":
                return await self.slack.check(message, _texts(body), **how)
            if kind == "multi":
                return await self.slack.multi_select(message, _texts(body), **how)
            return await self.slack.press_enter(message, **how)
        except LookupError as exc:
            raise ActionRefused(
                ErrorCode.GONE, f"that is no longer in the message: {exc}", status=409
            ) from None
        except ConnectionError as exc:
            raise ActionRefused(ErrorCode.UNREACHABLE, str(exc), status=502) from None

    async def act_in_modal(self, viewer: str, body: Mapping[str, Any]) -> ViewResult:
        """Submit (``view_submit``, with the ``values`` the page holds) or close
        (``view_close``) ``viewer``'s open modal ``view_id``; FakeSlack checks the fields as
        Slack's client does and delivers ``view_submission`` (or ``view_closed``)."""
        modal = self.shown_modal(viewer)
        if modal is None or modal.top.id != _text(body, "view_id"):
            raise ActionRefused(ErrorCode.GONE, "that modal is no longer open", status=409)
        try:
            if body.get("kind") == "view_close":
                closed = await self.slack.close_view(modal)
                return ViewResult(
                    status=closed.status if closed else 200,
                    body=closed.body if closed else "",
                    dispatched=closed is not None,
                    outcome="closed",
                )
            saved = copy.deepcopy(modal.top.state)
            try:
                _fill(modal, _list(body, "values"))
            except (ActionRefused, LookupError):
                modal.top.state = saved  # a bad entry leaves what the person had entered
                raise
            return await self.slack.submit_view(modal)
        except LookupError as exc:
            raise ActionRefused(
                ErrorCode.GONE, f"that is no longer in the modal: {exc}", status=409
            ) from None
        except ConnectionError as exc:
            raise ActionRefused(ErrorCode.UNREACHABLE, str(exc), status=502) from None
        finally:
            # A submission's outcome may change no Slack call (field errors): show it anyway.
            self._generation += 1
            await self._notify()

    # -- the change feed --------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """Bumped on every recorded Slack call (every post, update, delete and notice)."""
        return self._generation

    def start(self) -> None:
        """Start following FakeSlack's changes."""
        self._changed = asyncio.Condition()
        self._watcher = asyncio.get_running_loop().create_task(self._watch())

    async def stop(self) -> None:
        """Stop following changes, waking every waiter."""
        if self._watcher is not None:
            await stop_task(self._watcher)
            self._watcher = None
        self._generation += 1
        await self._notify()

    async def _watch(self) -> None:
        slack = self.slack
        while True:
            seen = len(slack.calls)

            def changed(seen: int = seen) -> bool:
                return len(slack.calls) != seen

            with contextlib.suppress(TimeoutError):
                await self.slack.wait_until(changed, timeout=600)
            if len(slack.calls) != seen:
                self._generation += 1
                await self._notify()

    async def _notify(self) -> None:
        if self._changed is not None:
            async with self._changed:
                self._changed.notify_all()

    async def wait_for_change(self, generation: int, *, timeout: float) -> int:
        """The generation once it differs from ``generation``, or the same after ``timeout``."""
        if self._changed is None:
            raise RuntimeError("the sandbox is not started")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout), self._changed:
                await self._changed.wait_for(lambda: self._generation != generation)
        return self._generation


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise ActionRefused(ErrorCode.BAD_REQUEST, f"{key} must be a non-empty string")
    return value


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise ActionRefused(ErrorCode.BAD_REQUEST, f"{key} must be a list")
    return value


def _fill(modal: FakeModal, values: list[Any]) -> None:
    """Enter what the page holds into ``modal``: ``{block_id, value}`` for a text or number
    input, ``{block_id, option}`` for a menu, ``{block_id, options}`` for checkboxes."""
    for entry in values:
        if not isinstance(entry, Mapping):
            raise ActionRefused(ErrorCode.BAD_REQUEST, "values entries must be objects")
        block_id = _text(entry, "block_id")
        if isinstance(entry.get("value"), str):
            modal.fill(block_id, entry["value"])
        elif isinstance(entry.get("option"), str):
            modal.choose(block_id, entry["option"])
        elif isinstance(entry.get("options"), list):
            modal.tick(block_id, _texts(entry, "options"))
        else:
            raise ActionRefused(ErrorCode.BAD_REQUEST, "a value needs value, option or options")


def _texts(data: Mapping[str, Any], key: str = "texts") -> list[str]:
    texts = _list(data, key)
    if not all(isinstance(t, str) for t in texts):
        raise ActionRefused(ErrorCode.BAD_REQUEST, f"{key} must be a list of option texts")
    return texts
