"""Which installation of the app the relay serves, and whether a click belongs to it. Pure.

A click signed with the app's secret can still come from another installation of the same
app (another workspace, another organisation), where the relay's asks do not live. The
relay learns its own from ``auth.test`` once per process: ``team_id`` and ``app_id``, and on
Enterprise Grid ``enterprise_id`` and ``is_enterprise_install``
(docs.slack.dev/reference/methods/auth.test; node-slack-sdk's ``AuthTestResponse``).

For an org-wide install, Slack's interaction payloads have ``team: null``, ``enterprise:
{id}`` and the workspace only in ``user.team_id``, which is the clicker's own workspace or
the organisation's ``E…`` id (bolt-python ``tests/slack_bolt/request/test_request.py``,
``slack_bolt/request/internals.py`` ``extract_team_id``): such a click is ours when it comes
from our organisation, whichever workspace of it the clicker is in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from relay.slack.intake.parse import Click

__all__ = ["Installation"]


def _id(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True, slots=True)
class Installation:
    """The app's installation the relay serves, as ``auth.test`` describes its token."""

    team_id: str | None
    app_id: str | None
    enterprise_id: str | None = None
    org_wide: bool = False

    @classmethod
    def from_auth_test(cls, response: Mapping[str, Any]) -> Installation:
        """The installation of the token that ``auth.test`` answered for."""
        return cls(
            team_id=_id(response.get("team_id")),
            app_id=_id(response.get("app_id")),
            enterprise_id=_id(response.get("enterprise_id")),
            org_wide=response.get("is_enterprise_install") is True,
        )

    def refusal(self, click: Click) -> str | None:
        """Why ``click`` is not this installation's to answer (an event's ``why``), or
        ``None`` when it is."""
        if self.app_id is not None and click.api_app_id != self.app_id:
            return "foreign_app"
        if self.org_wide and self.enterprise_id is not None:
            # Any workspace of the organisation: the admin chose which ones get the app.
            org = click.enterprise_id or click.team_id
            return None if org == self.enterprise_id else "foreign_org"
        if self.team_id is not None and click.team_id != self.team_id:
            return "foreign_team"
        return None
