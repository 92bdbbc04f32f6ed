"""The fake workspace as a test sees and arranges it: its messages, people, user groups and
channels (``FakeSlack`` mixes this in)."""

from __future__ import annotations

from .records import FakeMessage
from .workspace import Workspace

__all__ = ["WorkspaceView"]


class WorkspaceView:
    """``FakeSlack``'s handles on its ``Workspace``."""

    _workspace: Workspace

    @property
    def messages(self) -> list[FakeMessage]:
        """Every message the bot posted, in post order (deleted ones included)."""
        return self._workspace.messages

    @property
    def usergroups(self) -> dict[str, list[str]]:
        """User groups for ``usergroups.users.list``: ``{"S123": ["U1", "U2"]}``."""
        return self._workspace.usergroups

    @usergroups.setter
    def usergroups(self, groups: dict[str, list[str]]) -> None:
        self._workspace.usergroups = groups

    @property
    def channel_members(self) -> dict[str, set[str]]:
        """Who is in which channel: ``{"C123": {"U1", "U2"}}``. A channel not listed has
        everyone in it. ``chat.postEphemeral`` to anyone else answers
        ``user_not_in_channel``; they can still see and click a public channel's messages
        (and ``response_url`` reaches them)."""
        return self._workspace.channel_members

    @channel_members.setter
    def channel_members(self, members: dict[str, set[str]]) -> None:
        self._workspace.channel_members = members

    @property
    def missing_channels(self) -> set[str]:
        """Channels that answer ``channel_not_found`` (any other id exists)."""
        return self._workspace.missing_channels

    @missing_channels.setter
    def missing_channels(self, channels: set[str]) -> None:
        self._workspace.missing_channels = channels

    @property
    def not_in_channels(self) -> set[str]:
        """Channels the bot is not a member of: posting answers ``not_in_channel``."""
        return self._workspace.not_in_channels

    @not_in_channels.setter
    def not_in_channels(self, channels: set[str]) -> None:
        self._workspace.not_in_channels = channels

    @property
    def channels(self) -> dict[str, str]:
        """Declared channels (id -> name): any other answers ``channel_not_found`` (DMs the
        bot opens excepted; with ``lenient={"any_channel"}``, every id until one is
        declared)."""
        return self._workspace.channels

    def add_channel(self, channel_id: str, *, name: str | None = None) -> None:
        """Declare a channel of the workspace (see ``channels``)."""
        self._workspace.channels[channel_id] = name or channel_id.lower()

    def add_user(
        self,
        user_id: str,
        *,
        name: str,
        real_name: str | None = None,
        team_id: str | None = None,
    ) -> None:
        """Register a human (for ``users.info`` and the ``user`` of their actions); once one
        is, people not registered answer ``user_not_found`` (until then everyone exists);
        ``team_id`` is their own workspace when it is not the app's (a Slack Connect guest,
        another workspace of the organisation, or on an org-wide install the ``E…`` id)."""
        self._workspace.users[user_id] = {
            "name": name,
            "real_name": real_name or name,
            "team_id": team_id or self._workspace.team_id,
        }
