"""Whose click is it: the installation check, and where a private notice may be posted."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from relay.slack.intake.installation import Installation
from relay.slack.intake.parse import Click, ClickKind, parse_click
from relay.slack.intake.private import trusted_response_url

# bolt-python tests/slack_bolt/request/test_request.py, org-wide block_actions (ids replaced).
ORG_WIDE: dict[str, Any] = {
    "type": "block_actions",
    "user": {"id": "W111", "username": "owner", "name": "owner", "team_id": "T_EXPECTED"},
    "api_app_id": "A111",
    "container": {"type": "message", "message_ts": "1.1", "channel_id": "C111"},
    "team": None,
    "enterprise": {"id": "E111", "name": "Sandbox Org"},
    "is_enterprise_install": True,
    "channel": {"id": "C111", "name": "random"},
    "state": {"values": {}},
    "response_url": "https://hooks.slack.com/actions/E111/111/xxx",
    "actions": [
        {
            "type": "button",
            "block_id": "relay:ask:0:act",
            "action_id": "relay.option.0",
            "value": "0",
        }
    ],
}


def org_click(**changes: Any) -> Click:
    click = parse_click(ORG_WIDE)
    assert click is not None
    return replace(click, **changes)


def test_an_org_wide_click_carries_its_organisation_and_response_url() -> None:
    click = org_click()
    assert (click.team_id, click.enterprise_id, click.is_enterprise_install) == (
        "T_EXPECTED",
        "E111",
        True,
    )
    assert click.response_url == "https://hooks.slack.com/actions/E111/111/xxx"
    assert click.kind is ClickKind.OPTION


ORG = Installation.from_auth_test(
    {"team_id": "E111", "app_id": "A111", "enterprise_id": "E111", "is_enterprise_install": True}
)
WORKSPACE = Installation.from_auth_test({"team_id": "T1", "app_id": "A111"})


@pytest.mark.parametrize(
    ("installation", "changes", "why"),
    [
        (ORG, {}, None),  # any workspace of the organisation
        (ORG, {"team_id": "E111"}, None),  # the clicker named by the organisation's id
        (ORG, {"enterprise_id": "E999"}, "foreign_org"),
        (ORG, {"enterprise_id": None, "team_id": "E111"}, None),
        (ORG, {"enterprise_id": None}, "foreign_org"),  # nothing ties it to our org
        (ORG, {"api_app_id": "A999"}, "foreign_app"),
        (WORKSPACE, {"team_id": "T1", "enterprise_id": None}, None),
        (WORKSPACE, {"team_id": "T2"}, "foreign_team"),
        (WORKSPACE, {"team_id": None}, "foreign_team"),
        (Installation(team_id=None, app_id=None), {"team_id": "T9"}, None),  # unknown: admit
    ],
)
def test_which_clicks_belong_to_the_installation(
    installation: Installation, changes: dict[str, Any], why: str | None
) -> None:
    assert installation.refusal(org_click(**changes)) == why


def test_auth_test_of_a_workspace_on_a_grid_org_is_not_org_wide() -> None:
    grid = Installation.from_auth_test(
        {"team_id": "T1", "app_id": "A1", "enterprise_id": "E1", "is_enterprise_install": False}
    )
    assert (grid.team_id, grid.enterprise_id, grid.org_wide) == ("T1", "E1", False)


API = "http://127.0.0.1:8123/api/"


@pytest.mark.parametrize(
    ("url", "trusted"),
    [
        ("https://hooks.slack.com/actions/T1/1/x", True),
        ("https://hooks.slack-gov.com/actions/T1/1/x", True),
        ("http://127.0.0.1:8123/response/abc", True),  # the Web API's own origin (FakeSlack)
        ("http://hooks.slack.com/actions/T1/1/x", False),  # not HTTPS
        ("https://hooks.slack.com:8443/actions", False),
        ("https://hooks.slack.com.evil.example/actions", False),
        ("https://evil.example/?https://hooks.slack.com/", False),
        ("http://127.0.0.1:9999/response/abc", False),
        ("http://169.254.169.254/latest/meta-data", False),
        ("https://[::1", False),
        ("", False),
        (None, False),
    ],
)
def test_notices_go_only_to_slacks_response_urls(url: str | None, trusted: bool) -> None:
    assert trusted_response_url(url, base_url=API) is trusted
