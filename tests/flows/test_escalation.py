"""Flow: escalation of a pending ask. From ``escalate_after`` on, more people may answer
(within the operator's policy), they are mentioned in the escalation channel with a link back
(or in the thread), the original message says so, and it happens exactly once across
replicas, also when the replica that created the ask is gone."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from relay import (
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)
from relay.asks.terms import QuestionDefaults, nudges, widened
from relay.config.settings import Settings, TeamDefaults
from relay.errors import RelayConfigError
from relay.server.api import read_slack_section
from relay.slack import SlackProvider, SlackTarget
from relay.store import AskRecord, AskStatus, Target, utcnow
from relay.store.redis import RedisStore
from relay.testing import FakeMessage, FakeSlack
from tests.server_env import TOKEN, relay_server
from tests.slack_env import WORKSPACE_CHANNELS, question, slack_env

ESCALATION = ":rotating_light: Escalated"


def escalations(messages: list[FakeMessage]) -> list[FakeMessage]:
    return [m for m in messages if m.text.startswith(ESCALATION)]


def target(**kw: object) -> SlackTarget:
    return SlackTarget(
        "C0APPROVALS",
        allowed_users=["U0ALICE"],
        timeout=30,
        **kw,  # type: ignore[arg-type]
    )


def context_text(message: FakeMessage) -> str:
    return json.dumps([b for b in message.blocks if b.get("type") == "context"])


async def test_escalation_lets_more_people_answer_and_tells_them_with_a_link_back() -> None:
    async with slack_env() as env:
        env.slack.add_user("U0CAROL", name="carol")
        escalate = target(
            escalate_after=0.3, escalate_users=["U0CAROL"], escalate_channel="C0ONCALL"
        )
        record = await env.provider.start(AskUserQuestionRequest((question(),)), target=escalate)
        message = await env.message()
        # Before the escalation, Carol may not answer.
        await env.slack.click(message, "prod", user="U0CAROL")
        refusal = await env.slack.wait_for_ephemeral(user="U0CAROL")
        assert "not" in str(refusal.args.get("text")).lower()
        assert (await env.provider.store.get(ask_id=record.id)).pending  # type: ignore[union-attr]

        posted = await env.slack.wait_for_message(
            count=1, where=lambda m: m.text.startswith(ESCALATION), timeout=5
        )
        assert posted.channel == "C0ONCALL"
        assert posted.thread_ts is None
        assert "<@U0CAROL>" in posted.text
        link = f"https://fake.slack.com/archives/{message.channel}/p{message.ts.replace('.', '')}"
        assert f"<{link}|Answer it here>" in posted.text
        assert "*Deploy where?*" in posted.text
        assert "It times out in 2" in posted.text  # about 29 s left
        # The original message says so, and keeps its buttons.
        await env.slack.wait_until(lambda: "Escalated to <@U0CAROL>" in context_text(message))
        assert any(b.get("type") == "actions" for b in message.blocks)

        await env.slack.click(message, "prod", user="U0CAROL")
        final = await env.provider.wait(record.id, within=5)
        assert final.status is AskStatus.ANSWERED
        answer = final.responses[0]
        assert answer is not None
        assert answer.answered_by is not None
        assert answer.answered_by.id == "U0CAROL"
        assert len(escalations(env.slack.messages)) == 1


async def test_without_a_channel_the_escalation_goes_in_the_thread_and_reminders_widen() -> None:
    async with slack_env() as env:
        escalated = asyncio.Event()
        env.provider.events.subscribe(lambda e: escalated.set() if e.name == "escalated" else None)
        both = target(
            escalate_after=0.2,
            escalate_groups=["S0LEADS"],
            remind_after=0.4,
            reminders=1,
        )
        await env.provider.start(AskUserQuestionRequest((question(),)), target=both)
        message = await env.message()
        first = await env.message(2)
        assert first.text.startswith(ESCALATION)
        assert first.thread_ts == message.ts
        assert "<!subteam^S0LEADS>" in first.text
        await asyncio.wait_for(escalated.wait(), 5)
        reminder = await env.message(3)
        assert reminder.text.startswith(":alarm_clock: Reminder 1 of 1.")
        assert "<@U0ALICE>, <!subteam^S0LEADS>: " in reminder.text  # who may answer now


async def test_an_ask_answered_first_is_never_escalated() -> None:
    async with slack_env() as env:
        record = await env.provider.start(
            AskUserQuestionRequest((question(),)),
            target=target(escalate_after=0.4, escalate_channel="C0ONCALL"),
        )
        message = await env.message()
        await env.slack.click(message, "prod", user="U0ALICE")
        await env.provider.wait(record.id, within=5)
        # A control ask escalating later than the first would have: by then it would be out.
        started = time.monotonic()
        await env.provider.start(
            AskUserQuestionRequest((question("other"),)),
            target=target(escalate_after=0.8, escalate_channel="C0CONTROL"),
        )
        await env.slack.wait_until(lambda: len(escalations(env.slack.messages)) == 1, timeout=5)
        assert time.monotonic() - started >= 0.7
        assert [m.channel for m in escalations(env.slack.messages)] == ["C0CONTROL"]


async def test_the_policy_ceiling_bounds_the_escalation() -> None:
    async with slack_env(policy_users=["U0ALICE", "U0CAROL"]) as env:
        with pytest.raises(UserInteractionError) as info:
            await env.provider.start(
                AskUserQuestionRequest((question(),)),
                target=target(escalate_after=5, escalate_users=["U0DAVE"]),
            )
        assert info.value.code == ErrorCode.BAD_REQUEST
        assert "escalate_users names U0DAVE" in str(info.value)
        assert env.slack.messages == []
    # With a group policy, membership is only known at click time: checked then.
    async with slack_env(policy_groups=["S0OPS"]) as env:
        env.slack.usergroups = {"S0OPS": ["U0ALICE"]}
        record = await env.provider.start(
            AskUserQuestionRequest((question(),)),
            target=target(escalate_after=0.1, escalate_users=["U0DAVE"]),
        )
        message = await env.message()
        await env.slack.wait_for_message(count=1, where=lambda m: m.text.startswith(ESCALATION))
        await env.slack.click(message, "prod", user="U0DAVE")
        await env.slack.wait_for_ephemeral(user="U0DAVE")
        assert (await env.provider.store.get(ask_id=record.id)).pending  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"escalate_after": 5}, "escalate_after needs someone to escalate to"),
        ({"escalate_users": ["U0CAROL"]}, "need escalate_after"),
        ({"escalate_channel": "C0ONCALL"}, "need escalate_after"),
        ({"escalate_after": 0, "escalate_channel": "C0X"}, "escalate_after must be a positive"),
    ],
)
async def test_an_impossible_escalation_is_refused_and_nothing_is_posted(
    fields: dict[str, object], fragment: str
) -> None:
    async with slack_env() as env:
        with pytest.raises((UserInteractionError, RelayConfigError)) as info:
            await env.provider.start(
                AskUserQuestionRequest((question(),)),
                target=target(**fields),
            )
        assert fragment in str(info.value)
        assert env.slack.messages == []


async def test_two_replicas_escalate_once_even_when_the_creator_is_gone(redis_url: str) -> None:
    async with FakeSlack(channels={c: c.lower() for c in WORKSPACE_CHANNELS}) as slack:

        def replica(**kw: object) -> SlackProvider:
            return SlackProvider(
                client=AsyncWebClient(token=slack.bot_token, base_url=slack.base_url),
                channel="C0APPROVALS",
                store=RedisStore(url=redis_url, prefix="esc2:"),
                sweep_interval=0.05,
                **kw,  # type: ignore[arg-type]
            )

        creator, other = replica(), replica()
        other.start_expiry()
        try:
            record = await creator.start(
                AskUserQuestionRequest((question(),)),
                target=target(escalate_after=0.5, escalate_channel="C0ONCALL"),
            )
            await creator.aclose()  # gone before the escalation is due (API asks stay)
            await creator.store.aclose()
            await slack.wait_until(lambda: len(escalations(slack.messages)) == 1, timeout=5)
            control = await other.start(
                AskUserQuestionRequest((question("other"),)),
                target=target(escalate_after=0.5, escalate_channel="C0CONTROL"),
            )
            await slack.wait_until(lambda: len(escalations(slack.messages)) == 2, timeout=5)
            assert sorted(m.channel for m in escalations(slack.messages)) == [
                "C0CONTROL",
                "C0ONCALL",
            ]
            assert record.id != control.id
        finally:
            await other.aclose()
            await other.store.aclose()


def record_of(target: Target, *, timeout: float | None = 30.0) -> AskRecord:
    return AskRecord(
        id="a1",
        request=AskUserQuestionRequest((question(),)),
        target=target,
        created_at=utcnow(),
        deadline=time.time() + timeout if timeout else None,
    )


def test_nudges_fall_in_time_order_and_none_after_the_deadline() -> None:
    both = Target(
        "C1",
        allowed_users=frozenset({"U0ALICE"}),
        remind_after=10.0,
        reminders=3,
        escalate_after=20.0,
        escalate_users=frozenset({"U0CAROL"}),
        timeout=25.0,
    )
    record = record_of(both, timeout=25.0)
    created = record.created_at.timestamp()
    steps = [(round(s.at - created), s.kind, s.number) for s in nudges(record)]
    assert steps == [(10, "remind", 1), (20, "escalate", 0), (20, "remind", 2)]


def test_widening_starts_at_the_escalation_time_and_never_restricts_an_open_ask() -> None:
    closed = Target(
        "C1",
        allowed_users=frozenset({"U0ALICE"}),
        escalate_after=60.0,
        escalate_users=frozenset({"U0CAROL"}),
        escalate_groups=frozenset({"S0LEADS"}),
    )
    record = record_of(closed)
    now = record.created_at.timestamp()
    assert widened(record, now=now + 59).allowed_users == {"U0ALICE"}
    later = widened(record, now=now + 60)
    assert later.allowed_users == {"U0ALICE", "U0CAROL"}
    assert later.allowed_groups == {"S0LEADS"}
    anyone = record_of(Target("C1", escalate_after=60.0, escalate_users=frozenset({"U0CAROL"})))
    assert not widened(anyone, now=now + 61).restricted  # still anyone, not only Carol


def test_question_defaults_apply_only_where_a_question_sets_none_and_offers_them() -> None:
    rules = QuestionDefaults.checked("Hold", 2, ["Reject"])
    approve = question("a", "Ship?", "Ship", "Hold", "Reject")
    own = question("b", "Ship?", "Ship", "Reject", approvals_required=3, default="Ship")
    multi = question("c", "Which?", "x", "Hold", multi=True)
    free = AskUserQuestionItem(id="d", question="Why?")
    done = rules.apply(AskUserQuestionRequest((approve, own, multi, free))).questions
    assert (done[0].default, done[0].approvals_required, done[0].veto) == ("Hold", 2, ("Reject",))
    assert (done[1].default, done[1].approvals_required, done[1].veto) == ("Ship", 3, ("Reject",))
    assert (done[2].default, done[2].approvals_required) == ("Hold", None)
    assert done[3] == free
    with pytest.raises(RelayConfigError):
        QuestionDefaults.checked(None, 26, None)


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"RELAY_ESCALATE_AFTER": "60"}, "RELAY_ESCALATE_AFTER needs someone"),
        ({"RELAY_ESCALATE_TO": "U0CAROL"}, "need RELAY_ESCALATE_AFTER"),
        ({"RELAY_ESCALATE_AFTER": "soon", "RELAY_ESCALATE_TO": "U0C"}, "RELAY_ESCALATE_AFTER"),
        ({"RELAY_ESCALATE_AFTER": "9", "RELAY_ESCALATE_TO": "carol"}, "RELAY_ESCALATE_TO"),
        ({"RELAY_REMINDERS": "11"}, "RELAY_REMINDERS must be 1 to 10"),
        ({"RELAY_APPROVALS_REQUIRED": "26"}, "RELAY_APPROVALS_REQUIRED must be 1 to 25"),
    ],
)
def test_bad_team_settings_name_the_variable(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(RelayConfigError) as info:
        TeamDefaults.from_env(env)
    assert fragment in str(info.value)


def test_team_settings_are_read() -> None:
    settings = Settings.from_env(
        {
            "SLACK_BOT_TOKEN": "xoxb-1",
            "SLACK_SIGNING_SECRET": "s",
            "RELAY_API_TOKENS": "t" * 32,
            "RELAY_REMIND_AFTER": "300",
            "RELAY_REMINDERS": "2",
            "RELAY_ESCALATE_AFTER": "900",
            "RELAY_ESCALATE_TO": "U0CAROL, S0LEADS",
            "RELAY_ESCALATE_CHANNEL": "C0ONCALL",
            "RELAY_DEFAULT_OPTION": "Hold",
            "RELAY_APPROVALS_REQUIRED": "2",
            "RELAY_VETO": "Reject, Deny",
        }
    )
    assert settings.team == TeamDefaults(
        remind_after=300.0,
        reminders=2,
        escalate_after=900.0,
        escalate_users=frozenset({"U0CAROL"}),
        escalate_groups=frozenset({"S0LEADS"}),
        escalate_channel="C0ONCALL",
        default_option="Hold",
        approvals_required=2,
        veto=("Reject", "Deny"),
    )


@pytest.mark.parametrize(
    ("section", "fragment"),
    [
        ({"escalate_after_s": 0}, "slack.escalate_after_s must be a positive number"),
        ({"escalate_users": "U0CAROL"}, "slack.escalate_users must be a list"),
        ({"escalate_groups": [""]}, "slack.escalate_groups must be a list"),
        ({"escalate_channel": 7}, "slack.escalate_channel must be a channel id"),
        ({"escalate_channel": "  "}, "slack.escalate_channel must be a channel id"),
    ],
)
def test_the_api_refuses_impossible_escalations(section: dict[str, object], fragment: str) -> None:
    with pytest.raises(UserInteractionError) as info:
        read_slack_section(section)
    assert info.value.code == ErrorCode.BAD_REQUEST
    assert fragment in str(info.value)


async def test_relay_serve_escalates_by_its_settings_and_relay_ask_takes_the_flags() -> None:
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(
            slack,
            RELAY_ESCALATE_AFTER="0.3",
            RELAY_ESCALATE_TO="U0CAROL",
            RELAY_ESCALATE_CHANNEL="C0ONCALL",
            RELAY_APPROVALS_REQUIRED="2",
            # relay ask below escalates to S0LEADS: a group an ask may name only if listed.
            RELAY_ALLOWED_GROUPS="S0LEADS",
        ) as relay,
    ):
        slack.usergroups = {"S0LEADS": ["U0ALICE", "U0DAN", "U0CAROL"]}
        body = {
            "questions": [
                {"id": "go", "question": "Ship?", "options": [{"label": "Ship"}, {"label": "No"}]}
            ],
            "slack": {"allowed_users": ["U0ALICE"]},
        }
        status, created = await relay.request("POST", "/v1/asks", json=body)
        assert status == 201, created
        message = await slack.wait_for_message()
        assert "Needs 2 votes" in str(message.blocks)  # RELAY_APPROVALS_REQUIRED
        posted = await slack.wait_for_message(count=1, where=lambda m: m.channel == "C0ONCALL")
        assert "<@U0CAROL>" in posted.text
        await relay.request("DELETE", f"/v1/asks/{created['id']}")

        process = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "relay.cli", "ask", "-q", "Ship 1.4?", "-o", "Ship", "-o", "Reject"),
            *("--allowed-user", "U0ALICE", "--approve", "Ship"),
            *("--escalate-after", "0.3", "--escalate-to", "U0DAN", "--escalate-to", "S0LEADS"),
            env={**relay.env, "RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        ask_message = await slack.wait_for_message(
            count=1, where=lambda m: "Ship 1.4?" in m.text, timeout=30
        )
        # The server's escalation channel, with the ask's own people.
        reply = await slack.wait_for_message(
            count=2, where=lambda m: m.channel == "C0ONCALL", timeout=10
        )
        assert "<@U0DAN>" in reply.text
        assert "<!subteam^S0LEADS>" in reply.text
        await slack.click(ask_message, "Ship", user="U0DAN")
        await slack.wait_for_ephemeral(user="U0DAN")  # vote 1 of 2 counted
        await slack.click(ask_message, "Ship", user="U0ALICE")
        out, err = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 0, err
        answer = AskUserQuestionAnswer.from_dict(json.loads(out))
        assert answer.answers[0].selected == ("Ship",)


async def test_the_audit_trail_says_when_an_ask_was_escalated() -> None:
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack, RELAY_ALLOWED_CHANNELS="C0X") as relay,
    ):
        questions = [{"id": "go", "question": "Ship?", "options": [{"label": "Ship"}]}]
        early = {
            "questions": questions,
            "slack": {"escalate_after_s": 0.2, "escalate_channel": "C0X"},
        }
        late = {
            "questions": questions,
            "slack": {"escalate_after_s": 600, "escalate_channel": "C0X"},
        }
        _, escalated = await relay.request("POST", "/v1/asks", json=early)
        _, answered = await relay.request("POST", "/v1/asks", json=late)
        await slack.wait_for_message(count=1, where=lambda m: m.channel == "C0X")
        for created in (escalated, answered):
            await relay.request("DELETE", f"/v1/asks/{created['id']}")
        status, page = await relay.request("GET", "/v1/asks")
        assert status == 200
        listed = {item["id"]: item for item in page["asks"]}
        assert "escalated_at" in listed[escalated["id"]]
        assert "escalated_at" not in listed[answered["id"]]  # ended before its escalation time


async def test_an_escalation_channel_slack_refuses_for_good_is_reported_and_the_rest_goes_on() -> (
    None
):
    async with slack_env() as env:
        env.slack.missing_channels.add("C0GONE")
        errors: list[str] = []
        env.provider.events.subscribe(
            lambda e: errors.append(str(e.fields.get("error"))) if e.name == "slack_error" else None
        )
        gone = target(
            escalate_after=0.2,
            escalate_users=["U0CAROL"],
            escalate_channel="C0GONE",
            remind_after=0.5,
        )
        await env.provider.start(AskUserQuestionRequest((question(),)), target=gone)
        message = await env.message()
        # The reminder after it still goes out: the escalation was not retried forever.
        reminder = await env.slack.wait_for_message(
            count=1, where=lambda m: "Reminder" in m.text, timeout=5
        )
        assert "<@U0CAROL>" in reminder.text  # the escalation widened who may answer
        assert "Escalated to <@U0CAROL>" in context_text(message)
        tries = [c for c in env.slack.calls_to("chat.postMessage") if c.args["channel"] == "C0GONE"]
        assert len(tries) == 1
        assert errors == ["channel_not_found: escalate_channel C0GONE"]
