"""Flow: an app installed on a whole Enterprise Grid organisation answers its clicks.

For an org-wide install Slack sends ``team: null``, ``is_enterprise_install: true``,
``enterprise: {id}`` and the clicker's workspace (or the organisation's ``E…`` id) in
``user.team_id`` (bolt-python tests/slack_bolt/request/test_request.py); ``auth.test`` names
the organisation in ``enterprise_id`` and says ``is_enterprise_install``. FakeSlack plays
both (``enterprise_id=``, ``enterprise_install=True``).
"""

from __future__ import annotations

from typing import Any

from tests.slack_env import first_button, question, result, slack_env

ORG = {"enterprise_id": "E0ORG", "enterprise_install": True}


async def test_a_click_on_an_org_wide_install_answers_the_ask() -> None:
    async with slack_env(slack_options=ORG) as env:
        task = env.ask(question())
        message = await env.message()
        await env.slack.click(message, "prod", user="U0ALICE")
        answer = await result(task)
        assert answer.answers[0].selected == ("prod",)


async def test_a_clicker_named_by_the_organisations_id_is_accepted_too() -> None:
    async with slack_env(slack_options=ORG) as env:
        env.slack.add_user("W0OWNER", name="owner", team_id="E0ORG")
        task = env.ask(question())
        await env.slack.click(await env.message(), "staging", user="W0OWNER")
        assert (await result(task)).answers[0].answered_by.id == "W0OWNER"  # type: ignore[union-attr]


async def test_clickers_from_other_workspaces_of_the_org_are_accepted() -> None:
    async with slack_env(slack_options=ORG) as env:
        env.slack.add_user("U0SALES", name="sales", team_id="T0SALES")
        task = env.ask(question())
        await env.slack.click(await env.message(), "prod", user="U0SALES")
        assert (await result(task)).answers[0].selected == ("prod",)


async def test_a_workspace_install_on_a_grid_org_works_as_before() -> None:
    async with slack_env(slack_options={"enterprise_id": "E0ORG"}) as env:
        task = env.ask(question())
        await env.slack.click(await env.message(), "prod", user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("prod",)


async def test_a_click_from_another_organisation_is_refused_and_told_why() -> None:
    seen: list[dict[str, Any]] = []
    async with slack_env(slack_options=ORG) as env:
        env.provider.events.subscribe(lambda e: seen.append({"name": e.name, **e.fields}))
        task = env.ask(question())
        message = await env.message()
        payload = env.slack.build_block_actions(message, first_button(message), user="U0EVE")
        payload["enterprise"] = {"id": "E0OTHER", "name": "Someone else"}
        payload["user"]["team_id"] = "T0ELSEWHERE"
        assert (await env.slack.post_interaction(payload)).status == 200
        notice = await env.slack.wait_for_ephemeral(user="U0EVE")
        assert notice.method == "response_url"
        assert "another Slack organisation or workspace" in notice.args["text"]
        assert {"name": "refused", "why": "foreign_org"}.items() <= seen[-1].items()
        assert not task.done()
        assert not message.updated
