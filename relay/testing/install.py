"""Where the fake app is installed: one workspace, a workspace of an Enterprise Grid
organisation, or the whole organisation (an org-wide install), and what that changes in
``auth.test`` and in interaction payloads.

What Slack sends for an org-wide install (bolt-python ``tests/slack_bolt/request/
test_request.py`` ``test_org_wide_installations_block_actions``, and ``slack_bolt/request/
internals.py`` ``extract_team_id``): ``team`` is ``null``, ``is_enterprise_install`` is true,
``enterprise`` is ``{"id": "E…", "name": …}``, and the workspace is only in ``user.team_id``,
which is the clicker's workspace or the organisation's ``E…`` id. ``auth.test`` returns
``enterprise_id`` for any token of a Grid organisation (docs.slack.dev/reference/methods/
auth.test) and ``is_enterprise_install`` (node-slack-sdk's ``AuthTestResponse``); for an
org-level token the fake names the organisation as ``team_id`` and ``team``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Install"]


@dataclass(frozen=True, kw_only=True)
class Install:
    """The app's installation: its workspace, bot, and (on Grid) organisation."""

    team_id: str
    team_domain: str
    api_app_id: str
    bot_user_id: str
    bot_id: str
    enterprise_id: str | None = None
    enterprise_name: str = "Fake Organisation"
    enterprise_install: bool = False

    def __post_init__(self) -> None:
        if self.enterprise_install and not self.enterprise_id:
            raise ValueError("an org-wide install (enterprise_install=True) needs enterprise_id")

    def auth_test(self, *, bot_name: str) -> dict[str, Any]:
        """What ``auth.test`` answers for the bot token."""
        body: dict[str, Any] = {
            "ok": True,
            "url": f"https://{self.team_domain}.slack.com/",
            "team": "Fake Workspace",
            "user": bot_name,
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "app_id": self.api_app_id,
            "is_enterprise_install": self.enterprise_install,
        }
        if self.enterprise_id is not None:
            body["enterprise_id"] = self.enterprise_id
        if self.enterprise_install:
            body.update(
                url=f"https://{self.team_domain}.enterprise.slack.com/",
                team=self.enterprise_name,
                team_id=self.enterprise_id,
            )
        return body

    def payload_fields(self) -> dict[str, Any]:
        """``team``, ``enterprise`` and ``is_enterprise_install`` of an interaction payload."""
        enterprise = (
            {"id": self.enterprise_id, "name": self.enterprise_name}
            if self.enterprise_id is not None
            else None
        )
        team = None if self.enterprise_install else {"id": self.team_id, "domain": self.team_domain}
        return {
            "team": team,
            "enterprise": enterprise,
            "is_enterprise_install": self.enterprise_install,
        }
