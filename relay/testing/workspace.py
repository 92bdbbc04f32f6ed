"""The fake workspace's data and its Web API methods, as pure functions of a request.

``Workspace.call`` answers one decoded Web API request the way Slack does (errors included);
``Workspace.respond`` applies a post to a ``response_url``. No I/O happens here: the server
in ``fake_slack`` decodes requests, records them and sends these answers.

Only the workspace's own channels exist: a channel id that is not declared (nor a DM the bot
opened) answers ``channel_not_found``, as each ``chat.*`` method's errors table says
(docs.slack.dev/reference/methods/chat.postMessage, chat.update: "Value passed for channel
was invalid"); ``any_channel`` (``FakeSlack(lenient=...)``) relaxes it for tests that want to.
"""

from __future__ import annotations

import copy
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .blockkit_check import code_units
from .blocks import MAX_TEXT_CHARS, check_blocks, with_generated_ids
from .faults import ApiReply
from .install import Install
from .modals import Clock, Modals
from .records import FakeMessage

__all__ = [
    "MAX_OPEN_USERS",
    "RESPONSE_URL_LIFETIME",
    "RESPONSE_URL_MAX_USES",
    "ResponseTarget",
    "Workspace",
]

RESPONSE_URL_MAX_USES = 5
"""How many times an app may post to one ``response_url``."""
RESPONSE_URL_LIFETIME = 30 * 60.0
"""Seconds a ``response_url`` stays usable."""
MAX_OPEN_USERS = 8
"""Users one ``conversations.open`` takes (more: ``too_many_users``)."""

_Args = dict[str, Any]


@dataclass(kw_only=True)
class ResponseTarget:
    """Where a ``response_url`` points: the message clicked on, by whom, and its use count."""

    message: FakeMessage
    user: str
    created: float
    uses: int = 0


class Workspace:
    """One Slack workspace with one bot: its users, user groups, channels and messages."""

    def __init__(self, *, install: Install, clock: Clock = time.monotonic) -> None:
        self.install = install
        self.modals = Modals(install=install, clock=clock)
        """Triggers handed out with interactions, and the modals they opened."""
        self.team_id = install.team_id
        self.team_domain = install.team_domain
        self.api_app_id = install.api_app_id
        self.bot_user_id = install.bot_user_id
        self.bot_id = install.bot_id
        self.users: dict[str, dict[str, str]] = {}
        self.channels: dict[str, str] = {}
        """Declared channels (id -> name): every other answers ``channel_not_found`` (with
        ``any_channel``, only once one is declared)."""
        self.any_channel = False
        self._opened: set[str] = set()  # DMs and group DMs conversations.open handed out
        self.usergroups: dict[str, list[str]] = {}
        self.missing_channels: set[str] = set()
        self.not_in_channels: set[str] = set()
        self.channel_members: dict[str, set[str]] = {}
        self.messages: list[FakeMessage] = []
        # (channel, ts) -> message: chat.update finds its message without a scan.
        self._by_key: dict[tuple[str, str], FakeMessage] = {}
        self.response_targets: dict[str, ResponseTarget] = {}
        self._dm_channels: dict[str, str] = {}
        self._last_ts_micros = 0
        self._methods: dict[str, Callable[[_Args], ApiReply]] = {
            "auth.test": self._auth_test,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.delete": self._delete,
            "chat.getPermalink": self._permalink,
            "chat.postEphemeral": self._post_ephemeral,
            "conversations.open": self._open_conversation,
            "usergroups.users.list": self._usergroup_users,
            "users.info": self._user_info,
            "views.open": self.modals.views_open,
            "views.push": self.modals.views_push,
            "views.update": self.modals.views_update,
        }

    @property
    def methods(self) -> frozenset[str]:
        """The Web API methods this workspace answers."""
        return frozenset(self._methods)

    def call(self, method: str, args: _Args) -> ApiReply:
        """Answer one Web API call whose token was already accepted."""
        handler = self._methods.get(method)
        return handler(args) if handler else ApiReply.error("unknown_method")

    def next_ts(self) -> str:
        """A new message timestamp: unique, increasing, ``"1700000000.000100"``-shaped."""
        micros = max(time.time_ns() // 1000, self._last_ts_micros + 1)
        self._last_ts_micros = micros
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    def dm_channel(self, user: str) -> str:
        """The id of the bot's DM with ``user``: the same one every time."""
        if user not in self._dm_channels:
            self._dm_channels[user] = "D" + user[1:] if len(user) > 1 else "D" + user
            self._opened.add(self._dm_channels[user])
        return self._dm_channels[user]

    def channel_name(self, channel: str) -> str:
        """The ``name`` Slack reports for a channel in interaction payloads."""
        if channel.startswith("D"):
            return "directmessage"
        return "privategroup" if channel.startswith("G") else channel.lower()

    def knows_channel(self, channel: str) -> bool:
        """Whether ``channel`` exists: not in ``missing_channels``, and declared or a DM the
        bot opened (with ``any_channel``, any id until a channel is declared)."""
        if not channel or channel in self.missing_channels:
            return False
        if self.any_channel and not self.channels:
            return True
        return channel in self.channels or channel in self._opened

    def knows_user(self, user: str) -> bool:
        """Whether ``user`` exists: the bot, or, once people are declared (``add_user``),
        one of them; until then every user id exists."""
        return user == self.bot_user_id or not self.users or user in self.users

    def user_name(self, user: str) -> str:
        """The user's handle, registered with ``add_user`` or derived from the id."""
        return self.users.get(user, {}).get("name", user.lower())

    def user_team(self, user: str) -> str:
        """The workspace (or, on Grid, organisation) a user belongs to: ``user.team_id``."""
        return self.users.get(user, {}).get("team_id") or self.team_id

    def is_member(self, channel: str, user: str) -> bool:
        """Whether ``user`` is in ``channel``: a DM holds its one user, a channel listed in
        ``channel_members`` holds those, and any other channel holds everyone."""
        if channel.startswith("D"):
            return self._dm_channels.get(user) == channel
        members = self.channel_members.get(channel)
        return members is None or user in members

    def find_message(self, channel: str, ts: str) -> FakeMessage | None:
        """The live message ``ts`` in ``channel``, if there is one."""
        message = self._by_key.get((channel, ts))
        return message if message is not None and not message.deleted else None

    def message_json(
        self, message: FakeMessage, *, text: str | None = None, blocks: list[Any] | None = None
    ) -> dict[str, Any]:
        """The message object Slack returns and puts in payloads (a given version of it), as
        a copy: tampering with a payload must not change the stored message."""
        shown_blocks = message.blocks if blocks is None else blocks
        body: dict[str, Any] = {
            "type": "message",
            "user": message.user,
            "bot_id": self.bot_id,
            "app_id": self.api_app_id,
            "text": message.text if text is None else text,
            "ts": message.ts,
            "team": self.team_id,
        }
        if shown_blocks:
            body["blocks"] = shown_blocks
        if message.thread_ts:
            body["thread_ts"] = message.thread_ts
        if message.is_thread_parent:
            body.update(
                reply_count=message.reply_count,
                reply_users_count=len(message.reply_users),
                latest_reply=message.latest_reply,
                reply_users=list(message.reply_users),
                is_locked=False,
                subscribed=False,
            )
        if message.metadata is not None:
            body["metadata"] = message.metadata
        return copy.deepcopy(body)

    def open_response_url(self, message: FakeMessage, user: str) -> str:
        """Register a new ``response_url`` for ``user``'s action on ``message``; its id."""
        key = secrets.token_hex(8)
        self.response_targets[key] = ResponseTarget(message=message, user=user, created=time.time())
        return key

    # -- response_url ---------------------------------------------------------------------

    def respond(self, key: str, body: _Args) -> tuple[ApiReply, bool]:
        """Apply a post to ``response_url`` ``key``; the answer and whether it was ephemeral."""
        target = self.response_targets.get(key)
        if target is None:
            return ApiReply(body={"ok": False, "error": "invalid_url"}, status=404), False
        if time.time() - target.created > RESPONSE_URL_LIFETIME:
            return ApiReply(body={"ok": False, "error": "expired_url"}, status=404), False
        if target.uses >= RESPONSE_URL_MAX_USES:
            return ApiReply(body={"ok": False, "error": "used_url"}, status=404), False
        message = target.message
        if _flag(body.get("delete_original")):
            target.uses += 1
            message.deleted = True
            return ApiReply(body={"ok": True}), False
        rejected = self._rejected_content(body, status=400)
        if rejected is not None:
            return rejected, False
        target.uses += 1
        text = str(body.get("text") or "")
        blocks = body.get("blocks") or []
        if _flag(body.get("replace_original")):
            if message.deleted:
                return ApiReply(body={"ok": False, "error": "message_not_found"}, status=404), False
            message.replace(text=text, blocks=with_generated_ids(blocks, seed=self.next_ts()))
            return ApiReply(body={"ok": True}), False
        if body.get("response_type") == "in_channel":
            self._add_message(channel=message.channel, thread_ts=message.thread_ts, args=body)
            return ApiReply(body={"ok": True}), False
        return ApiReply(body={"ok": True}), True

    # -- Web API methods ------------------------------------------------------------------

    def _auth_test(self, args: _Args) -> ApiReply:
        return ApiReply(body=self.install.auth_test(bot_name=self.user_name(self.bot_user_id)))

    def _post_message(self, args: _Args) -> ApiReply:
        channel = args.get("channel")
        if not isinstance(channel, str) or not channel:
            return ApiReply.error("channel_not_found")
        if channel[0] in "UW":
            if not self.knows_user(channel):
                return ApiReply.error("channel_not_found")
            channel = self.dm_channel(channel)
        rejected = self._rejected_channel(channel) or self._rejected_content(args)
        if rejected is not None:
            return rejected
        thread_ts = args.get("thread_ts")
        message = self._add_message(
            channel=channel, thread_ts=str(thread_ts) if thread_ts else None, args=args
        )
        return ApiReply(
            body={
                "ok": True,
                "channel": channel,
                "ts": message.ts,
                "message": self.message_json(message),
            }
        )

    def _update(self, args: _Args) -> ApiReply:
        channel, ts = str(args.get("channel") or ""), str(args.get("ts") or "")
        rejected = self._rejected_channel(channel)
        if rejected is not None:
            return rejected
        message = self.find_message(channel, ts)
        if message is None:
            return ApiReply.error("message_not_found")
        rejected = self._rejected_content(args)
        if rejected is not None:
            return rejected
        # Slack keeps the previous blocks when ``blocks`` is left out; ``[]`` removes them.
        blocks = message.blocks
        if "blocks" in args:
            blocks = with_generated_ids(args["blocks"] or [], seed=self.next_ts())
        text = str(args["text"]) if "text" in args else message.text
        if isinstance(args.get("metadata"), dict):
            message.metadata = args["metadata"]
        message.replace(text=text, blocks=blocks)
        reply = {"ok": True, "channel": channel, "ts": ts, "text": text}
        return ApiReply(body={**reply, "message": self.message_json(message)})

    def _delete(self, args: _Args) -> ApiReply:
        channel, ts = str(args.get("channel") or ""), str(args.get("ts") or "")
        if not self.knows_channel(channel):
            return ApiReply.error("channel_not_found")
        message = self.find_message(channel, ts)
        if message is None:
            return ApiReply.error("message_not_found")
        message.deleted = True
        return ApiReply(body={"ok": True, "channel": channel, "ts": ts})

    def _permalink(self, args: _Args) -> ApiReply:
        # Slack's shape: https://<domain>.slack.com/archives/<channel>/p<ts without the dot>,
        # with ?thread_ts=…&cid=… for a reply in a thread (no scope is needed).
        channel, ts = str(args.get("channel") or ""), str(args.get("message_ts") or "")
        if not self.knows_channel(channel):
            return ApiReply.error("channel_not_found")
        message = self.find_message(channel, ts)
        if message is None:
            return ApiReply.error("message_not_found")
        link = f"https://{self.team_domain}.slack.com/archives/{channel}/p{ts.replace('.', '')}"
        if message.thread_ts and message.thread_ts != ts:
            link += f"?thread_ts={message.thread_ts}&cid={channel}"
        return ApiReply(body={"ok": True, "channel": channel, "permalink": link})

    def _post_ephemeral(self, args: _Args) -> ApiReply:
        channel = str(args.get("channel") or "")
        if not channel:
            return ApiReply.error("channel_not_found")
        user = str(args.get("user") or "")
        rejected = self._rejected_channel(channel)
        if rejected is not None:
            return rejected
        if user and not self.knows_user(user):
            return ApiReply.error("user_not_found")
        # "The user should be in the channel" (api.slack.com/methods/chat.postEphemeral):
        # a public channel's non-member can see and click a message, but not get this.
        if not user or not self.is_member(channel, user):
            return ApiReply.error("user_not_in_channel")
        rejected = self._rejected_content(args)
        if rejected is not None:
            return rejected
        return ApiReply(body={"ok": True, "message_ts": self.next_ts()})

    def _open_conversation(self, args: _Args) -> ApiReply:
        users = [u.strip() for u in str(args.get("users") or "").split(",") if u.strip()]
        if not users:
            if args.get("channel"):
                if not self.knows_channel(str(args["channel"])):
                    return ApiReply.error("channel_not_found")
                return ApiReply(body={"ok": True, "channel": {"id": str(args["channel"])}})
            return ApiReply.error("users_list_not_supplied")
        if len(users) > MAX_OPEN_USERS:
            return ApiReply.error("too_many_users")  # "Needs at most 8 users to open"
        if not all(self.knows_user(user) for user in users):
            return ApiReply.error("user_not_found")
        if len(users) == 1:
            already_open = users[0] in self._dm_channels
            body: dict[str, Any] = {"ok": True, "channel": {"id": self.dm_channel(users[0])}}
            if already_open:
                body.update(no_op=True, already_open=True)
            return ApiReply(body=body)
        group = "G" + "".join(sorted(u[1:] for u in users))[:10]
        self._opened.add(group)
        return ApiReply(body={"ok": True, "channel": {"id": group}})

    def _usergroup_users(self, args: _Args) -> ApiReply:
        group = str(args.get("usergroup") or "")
        if not group:
            return _missing_argument("usergroup")
        if group not in self.usergroups:
            return ApiReply.error("no_such_subteam")
        return ApiReply(body={"ok": True, "users": list(self.usergroups[group])})

    def _user_info(self, args: _Args) -> ApiReply:
        user = str(args.get("user") or "")
        if not user:
            return _missing_argument("user")
        if user not in self.users:
            return ApiReply.error("user_not_found")
        name, real_name = self.users[user]["name"], self.users[user]["real_name"]
        profile = {"real_name": real_name, "display_name": name}
        return ApiReply(
            body={
                "ok": True,
                "user": {
                    "id": user,
                    "team_id": self.user_team(user),
                    "name": name,
                    "real_name": real_name,
                    "deleted": False,
                    "is_bot": False,
                    "profile": profile,
                },
            }
        )

    # -- shared checks --------------------------------------------------------------------

    def _rejected_channel(self, channel: str) -> ApiReply | None:
        if not self.knows_channel(channel):
            return ApiReply.error("channel_not_found")
        if channel in self.not_in_channels:
            return ApiReply.error("not_in_channel")
        return None

    def _rejected_content(self, args: _Args, *, status: int = 200) -> ApiReply | None:
        blocks, text = args.get("blocks"), args.get("text")
        if blocks is not None:
            rejected = check_blocks(blocks)
            if rejected is not None:
                body: dict[str, Any] = {"ok": False, "error": rejected.error}
                if rejected.error == "invalid_blocks":  # msg_blocks_too_long says no more
                    # Slack's shape: the bare messages in ``errors``, and each prefixed with
                    # its level in ``response_metadata.messages`` (what slack_sdk shows).
                    body["errors"] = rejected.errors
                    body["response_metadata"] = {
                        "messages": [f"[ERROR] {error}" for error in rejected.errors]
                    }
                return ApiReply(body=body, status=status)
        if not text and not blocks:
            return ApiReply(body={"ok": False, "error": "no_text"}, status=status)
        if isinstance(text, str) and code_units(text) > MAX_TEXT_CHARS:
            return ApiReply(body={"ok": False, "error": "msg_too_long"}, status=status)
        return None

    def _add_message(self, *, channel: str, thread_ts: str | None, args: _Args) -> FakeMessage:
        ts = self.next_ts()
        blocks = with_generated_ids(args.get("blocks") or [], seed=ts)
        text = str(args.get("text") or "")
        metadata = args.get("metadata")
        message = FakeMessage(
            channel=channel,
            ts=ts,
            thread_ts=thread_ts,
            text=text,
            blocks=blocks,
            versions=[blocks],
            text_versions=[text],
            user=self.bot_user_id,
            metadata=metadata if isinstance(metadata, dict) else None,
        )
        self.messages.append(message)
        self._by_key[(channel, ts)] = message
        parent = self.find_message(channel, thread_ts) if thread_ts else None
        if parent is not None and parent.thread_ts in (None, parent.ts):
            # A reply makes its parent a thread parent: Slack gives the parent a thread_ts
            # of its own ts and counts the replies (conversations.replies' first message).
            parent.thread_ts = parent.ts
            parent.reply_count += 1
            if message.user not in parent.reply_users:
                parent.reply_users.append(message.user)
            parent.latest_reply = ts
        return message


def _missing_argument(name: str) -> ApiReply:
    return ApiReply.error(
        "invalid_arguments",
        response_metadata={"messages": [f"[ERROR] missing required field: {name}"]},
    )


def _flag(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1"))
