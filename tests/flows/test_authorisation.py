"""Flow: only the allowed people may answer; the rest are told privately."""

from __future__ import annotations

import time

import pytest

from relay import AskUserQuestionRequest, ErrorCode, UserInteractionError
from relay.slack import SlackTarget
from tests.slack_env import first_button, question, result, slack_env


async def test_someone_not_allowed_is_told_privately_and_the_ask_stays_pending() -> None:
    async with slack_env(allowed_users={"U0ALICE"}) as env:
        task = env.ask(question())
        message = await env.message()
        await env.slack.click(message, "prod", user="U0EVE")
        notice = await env.slack.wait_for_ephemeral(user="U0EVE")
        assert "not allowed to answer" in notice.args["text"]
        assert notice.args["channel"] == message.channel
        assert not task.done()
        assert not message.updated

        await env.slack.click(message, "staging", user="U0ALICE")
        answer = await result(task)
        assert answer.answers[0].selected == ("staging",)
        assert answer.answers[0].answered_by is not None
        assert answer.answers[0].answered_by.id == "U0ALICE"


async def test_a_route_can_narrow_who_answers_for_one_kind_of_question() -> None:
    def route(request: AskUserQuestionRequest) -> SlackTarget:
        if request.questions[0].id == "deploy":
            return SlackTarget(channel="C0DEPLOYS", allowed_users={"U0BOB"})
        return SlackTarget(channel="C0GENERAL")

    async with slack_env(route=route) as env:
        task = env.ask(question("deploy", "Ship it?", "yes", "no"))
        message = await env.message()
        assert message.channel == "C0DEPLOYS"
        await env.slack.click(message, "yes", user="U0ALICE")
        await env.slack.wait_for_ephemeral(user="U0ALICE")
        await env.slack.click(message, "yes", user="U0BOB")
        assert (await result(task)).answers[0].answered_by.id == "U0BOB"  # type: ignore[union-attr]


async def test_members_of_an_allowed_group_may_answer_and_membership_is_cached() -> None:
    async with slack_env(allowed_users=set(), allowed_groups={"S0DEPLOYERS"}) as env:
        env.slack.usergroups = {"S0DEPLOYERS": ["U0BOB"]}
        task = env.ask(question())
        message = await env.message()
        await env.slack.click(message, "prod", user="U0EVE")
        notice = await env.slack.wait_for_ephemeral(user="U0EVE")
        assert "not allowed to answer" in notice.args["text"]
        await env.slack.click(message, "prod", user="U0BOB")
        assert (await result(task)).answers[0].answered_by.id == "U0BOB"  # type: ignore[union-attr]
        assert len(env.slack.calls_to("usergroups.users.list")) == 1  # cached for both clicks


async def test_when_group_membership_cannot_be_checked_nobody_gets_in_by_it() -> None:
    async with slack_env(allowed_groups={"S0GONE"}) as env:
        task = env.ask(question())
        message = await env.message()
        await env.slack.click(message, "prod", user="U0BOB")  # the fake says no_such_subteam
        notice = await env.slack.wait_for_ephemeral(user="U0BOB")
        assert "could not check your user group membership" in notice.args["text"]
        assert not task.done()


async def test_the_requester_cannot_approve_their_own_ask() -> None:
    def route(_: AskUserQuestionRequest) -> SlackTarget:
        return SlackTarget(channel="C0DEPLOYS", requester="U0ALICE", prevent_self_approval=True)

    async with slack_env(route=route) as env:
        task = env.ask(question())
        message = await env.message()
        await env.slack.click(message, "prod", user="U0ALICE")
        notice = await env.slack.wait_for_ephemeral(user="U0ALICE")
        assert "someone else has to answer it" in notice.args["text"]
        assert not task.done()
        await env.slack.click(message, "prod", user="U0BOB")
        assert (await result(task)).answers[0].answered_by.id == "U0BOB"  # type: ignore[union-attr]


async def test_self_approval_is_allowed_unless_prevented() -> None:
    def route(_: AskUserQuestionRequest) -> SlackTarget:
        return SlackTarget(channel="C0DEPLOYS", requester="U0ALICE")

    async with slack_env(route=route) as env:
        task = env.ask(question())
        await env.slack.click(await env.message(), "prod", user="U0ALICE")
        assert (await result(task)).answers[0].selected == ("prod",)


async def test_clicks_from_another_workspace_or_app_are_ignored() -> None:
    async with slack_env() as env:
        task = env.ask(question())
        message = await env.message()
        for field, value in (("api_app_id", "A0OTHER"), ("team", {"id": "T0OTHER", "domain": "x"})):
            payload = env.slack.build_block_actions(message, first_button(message), user="U0ALICE")
            payload[field] = value
            reply = await env.slack.post_interaction(payload)
            assert reply.status == 200
        await env.slack.wait_for_call("auth.test")
        # Another workspace's clicker hears why through their click's response_url (never
        # chat.postEphemeral: that would be this workspace's channel); another app's, nothing.
        (notice,) = [await env.slack.wait_for_ephemeral()]
        assert notice.method == "response_url"
        assert "another Slack organisation or workspace" in notice.args["text"]
        assert not task.done()
        assert not message.updated
        assert len(env.slack.ephemerals) == 1
        await env.slack.click(message, "prod", user="U0ALICE")
        await result(task)


async def test_the_operators_policy_is_a_ceiling_no_route_can_lift() -> None:
    targets = {
        "anyone": SlackTarget(channel="C0OPS", allowed_users=None),
        "bob": SlackTarget(channel="C0OPS", allowed_users={"U0BOB"}),
    }

    def route(request: AskUserQuestionRequest) -> SlackTarget:
        return targets[request.questions[0].id]

    async with slack_env(route=route, policy_users={"U0ALICE", "U0BOB"}) as env:
        # The ask allows anyone: the policy still keeps eve out.
        task = env.ask(question("anyone", "Ship it?", "yes", "no"))
        message = await env.message()
        await env.slack.click(message, "yes", user="U0EVE")
        notice = await env.slack.wait_for_ephemeral(user="U0EVE")
        assert "not allowed to answer" in notice.args["text"]
        assert not task.done()
        await env.slack.click(message, "yes", user="U0ALICE")
        assert (await result(task)).answers[0].answered_by.id == "U0ALICE"  # type: ignore[union-attr]

        # The ask narrows the policy to bob: alice is now refused too.
        task = env.ask(question("bob", "Ship it?", "yes", "no"))
        message = await env.message(2)
        await env.slack.click(message, "yes", user="U0ALICE")
        await env.slack.wait_for_ephemeral(user="U0ALICE")
        await env.slack.click(message, "yes", user="U0BOB")
        assert (await result(task)).answers[0].answered_by.id == "U0BOB"  # type: ignore[union-attr]


async def test_an_ask_naming_someone_outside_the_policy_is_refused_before_posting() -> None:
    def route(request: AskUserQuestionRequest) -> SlackTarget:
        return SlackTarget(channel="C0OPS", allowed_users={"U0ALICE", "U0EVE"})

    async with slack_env(route=route, policy_users={"U0ALICE"}) as env:
        with pytest.raises(UserInteractionError) as info:
            await env.ask(question())
        assert info.value.code == ErrorCode.BAD_REQUEST
        assert "U0EVE" in str(info.value)
        assert "U0ALICE" not in str(info.value)
        assert not env.slack.calls_to("chat.postMessage")


async def test_a_policy_group_admits_its_members_and_only_them() -> None:
    async with slack_env(policy_groups={"S0OPS"}) as env:
        env.slack.usergroups = {"S0OPS": ["U0BOB"]}
        task = env.ask(question())
        message = await env.message()
        await env.slack.click(message, "prod", user="U0ALICE")
        await env.slack.wait_for_ephemeral(user="U0ALICE")
        await env.slack.click(message, "prod", user="U0BOB")
        assert (await result(task)).answers[0].answered_by.id == "U0BOB"  # type: ignore[union-attr]


async def test_several_allowed_groups_are_looked_up_at_once_within_the_ack() -> None:
    groups = {f"S0TEAM{i}" for i in range(5)}
    async with slack_env(allowed_users=set(), allowed_groups=groups) as env:
        env.slack.usergroups = {g: [] for g in groups} | {"S0TEAM4": ["U0BOB"]}
        # Each lookup takes 0.8 s: one after another, five would miss Slack's 3 s ack.
        env.slack.fail("usergroups.users.list", delay=0.8, times=5)
        task = env.ask(question())
        message = await env.message()
        started = time.monotonic()
        await env.slack.click(message, "prod", user="U0BOB")
        assert time.monotonic() - started < 2.0
        assert (await result(task)).answers[0].answered_by.id == "U0BOB"  # type: ignore[union-attr]
        assert len(env.slack.calls_to("usergroups.users.list")) == 5
