"""Asking through `relay serve`: RelayProvider for agents, `relay ask` for scripts and CI."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator

import pytest

from relay import (
    AbortController,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
)
from relay.client import RelayProvider
from relay.testing import FakeSlack
from tests.server_env import OTHER_TOKEN, TOKEN, Relay, relay_server

# A bound, not a wait: most messages here come from a process started for the test (a
# `relay ask`), which on a loaded 2-core machine takes seconds to import and connect.
STARTS = 30.0

QUESTION = AskUserQuestionItem(
    id="go",
    question="Ship release 1.4?",
    options=(AskUserQuestionOption("Ship it"), AskUserQuestionOption("Hold")),
)


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeSlack, Relay]]:
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        slack.add_user("U0ALICE", name="alice")
        async with relay_server(slack) as relay:
            yield slack, relay


async def test_relay_provider_is_registered_and_answered_like_any_provider(
    env: tuple[FakeSlack, Relay],
) -> None:
    slack, relay = env
    provider = RelayProvider(relay.url, TOKEN, poll=1.0)
    service = UserInteractionService()
    service.register_provider(provider)
    task = asyncio.create_task(service.ask(AskUserQuestionRequest([QUESTION])))
    message = await slack.wait_for_message(timeout=STARTS)
    await slack.type(message, "after the freeze", user="U0ALICE")
    await slack.press_enter(message, user="U0ALICE")
    answer = await asyncio.wait_for(task, 10)
    assert answer.to_dict() == {
        "answers": [{"id": "go", "selected": [], "custom": "after the freeze"}]
    }
    assert answer.answers[0].answered_by is not None
    assert answer.answers[0].answered_by.id == "U0ALICE"
    await provider.aclose()


async def test_aborting_a_relay_provider_ask_deletes_it(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    provider = RelayProvider(relay.url, TOKEN, poll=5.0)
    controller = AbortController()
    task = asyncio.create_task(
        provider.ask(AskUserQuestionRequest([QUESTION], signal=controller.signal))
    )
    message = await slack.wait_for_message(timeout=STARTS)
    controller.abort()
    with pytest.raises(UserInteractionError) as info:
        await asyncio.wait_for(task, 10)
    assert (info.value.code, info.value.reason) == (ErrorCode.ASK_ABORTED, "aborted")
    await slack.wait_until(lambda: message.updated)
    assert "Withdrawn" in str(message.blocks)
    await provider.aclose()


async def test_cancelling_a_relay_provider_ask_deletes_it(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    provider = RelayProvider(relay.url, TOKEN, poll=5.0)
    task = asyncio.create_task(provider.ask(AskUserQuestionRequest([QUESTION])))
    message = await slack.wait_for_message(timeout=STARTS)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await slack.wait_until(lambda: message.updated)
    assert "Withdrawn" in str(message.blocks)
    await provider.aclose()


async def test_relay_errors_map_to_the_seam_codes(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    wrong = RelayProvider(relay.url, "not-a-valid-token-000000")
    with pytest.raises(UserInteractionError) as info:
        await wrong.ask(AskUserQuestionRequest([QUESTION]))
    assert info.value.code == ErrorCode.PROVIDER_FAILED
    assert "refused the API token" in str(info.value)
    await wrong.aclose()

    provider = RelayProvider(relay.url, OTHER_TOKEN)
    bad = AskUserQuestionItem(id="x", question="q" * 4000)
    with pytest.raises(UserInteractionError) as info:
        await provider.ask(AskUserQuestionRequest([bad]))
    assert info.value.code == ErrorCode.BAD_REQUEST

    timed = RelayProvider(relay.url, OTHER_TOKEN, timeout=0.3, poll=2)
    with pytest.raises(UserInteractionError) as info:
        await timed.ask(AskUserQuestionRequest([QUESTION]))
    assert (info.value.code, info.value.reason) == (ErrorCode.ASK_ABORTED, "timed_out")
    assert "timed out after 0.3 s" in str(info.value)

    slack.fail("chat.postMessage", error="channel_not_found")
    with pytest.raises(UserInteractionError) as info:
        await provider.ask(AskUserQuestionRequest([QUESTION]))
    assert info.value.code == ErrorCode.PROVIDER_FAILED
    for p in (provider, timed):
        await p.aclose()


async def test_an_unreachable_relay_is_a_clear_provider_failure() -> None:
    provider = RelayProvider("http://127.0.0.1:9", TOKEN)
    with pytest.raises(UserInteractionError) as info:
        await provider.ask(AskUserQuestionRequest([QUESTION]))
    assert info.value.code == ErrorCode.PROVIDER_FAILED
    assert "cannot reach the relay" in str(info.value)
    await provider.aclose()


async def relay_ask(relay: Relay, *args: str) -> asyncio.subprocess.Process:
    env = {**relay.env, "RELAY_URL": relay.url, "RELAY_TOKEN": TOKEN}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        "ask",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(process: asyncio.subprocess.Process) -> tuple[int, str, str]:
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_relay_ask_prints_the_answer(env: tuple[FakeSlack, Relay]) -> None:
    slack, relay = env
    process = await relay_ask(
        relay,
        "--question",
        "Deploy where?",
        "-o",
        "staging",
        "-o",
        "prod",
        "--header",
        "Deploy gate",
    )
    message = await slack.wait_for_message(timeout=STARTS)
    assert "Deploy gate" in str(message.blocks)
    await slack.click(message, "prod", user="U0ALICE")
    code, out, err = await finish(process)
    assert (code, err) == (0, "")
    assert json.loads(out) == {"answers": [{"id": "answer", "selected": ["prod"]}]}


@pytest.mark.parametrize(("click", "code"), [("Ship it", 0), ("Hold", 1)])
async def test_relay_ask_approve_is_a_ci_gate(
    env: tuple[FakeSlack, Relay], click: str, code: int
) -> None:
    slack, relay = env
    process = await relay_ask(
        relay, "-q", "Ship 1.4?", "-o", "Ship it", "-o", "Hold", "--approve", "Ship it"
    )
    await slack.click(await slack.wait_for_message(timeout=STARTS), click, user="U0ALICE")
    exit_code, out, _ = await finish(process)
    assert exit_code == code
    assert json.loads(out)["answers"][0]["selected"] == [click]


async def test_relay_ask_from_a_file_with_a_detail_file_and_a_timeout(
    env: tuple[FakeSlack, Relay], tmp_path: pytest.TempPathFactory
) -> None:
    slack, relay = env
    plan = tmp_path / "plan.md"  # type: ignore[operator]
    plan.write_text("# Plan\n\n1. migrate")
    process = await relay_ask(
        relay, "-q", "Approve?", "-o", "yes", "--detail-file", str(plan), "--timeout", "0.5"
    )
    message = await slack.wait_for_message(timeout=STARTS)
    assert "# Plan" in str(message.blocks)
    code, out, err = await finish(process)
    assert code == 3
    assert out == ""
    assert "timed out after 0.5 s" in err

    request = tmp_path / "request.json"  # type: ignore[operator]
    request.write_text(json.dumps({"questions": [{"id": "n", "question": "Name?"}]}))
    process = await relay_ask(relay, "--file", str(request))
    message = await slack.wait_for_message(count=2)
    await slack.type(message, "Aurora", user="U0ALICE")
    await slack.press_enter(message, user="U0ALICE")
    code, out, _ = await finish(process)
    assert code == 0
    assert json.loads(out) == {"answers": [{"id": "n", "selected": [], "custom": "Aurora"}]}


async def test_relay_ask_usage_errors_are_one_line_and_exit_2(env: tuple[FakeSlack, Relay]) -> None:
    _, relay = env
    for args, fragment in (
        ((), "say what to ask"),
        (("-q", "x", "-o", "a", "--approve", "b"), "--approve 'b' is not one of the options"),
    ):
        code, out, err = await finish(await relay_ask(relay, *args))
        assert (code, out) == (2, "")
        assert err.startswith("relay: error: USAGE: ")
        assert fragment in err
        assert err.count("\n") == 1


async def test_relay_ask_says_who_may_answer_with_users_and_groups() -> None:
    # S0OPS may be named: the operator lists it.
    async with (
        FakeSlack(signing_secret="server-signing-secret") as slack,
        relay_server(slack, RELAY_ALLOWED_GROUPS="S0OPS") as relay,
    ):
        slack.add_user("U0ALICE", name="alice")
        slack.usergroups = {"S0OPS": ["U0CAROL"]}
        process = await relay_ask(
            relay, "-q", "Ship?", "-o", "yes", "--allowed-users", "U0BOB", "--allowed-groups=S0OPS"
        )
        message = await slack.wait_for_message(timeout=STARTS)
        await slack.click(message, "yes", user="U0ALICE")
        notice = await slack.wait_for_ephemeral(user="U0ALICE")
        assert "not allowed" in notice.args["text"]
        await slack.click(message, "yes", user="U0CAROL")  # a member of the allowed group
        code, out, _ = await finish(process)
        assert code == 0
        assert json.loads(out) == {"answers": [{"id": "answer", "selected": ["yes"]}]}


async def test_relay_ask_file_may_carry_the_apis_slack_section(
    env: tuple[FakeSlack, Relay], tmp_path: pytest.TempPathFactory
) -> None:
    slack, relay = env
    request = tmp_path / "request.json"  # type: ignore[operator]
    request.write_text(
        json.dumps(
            {
                "questions": [{"id": "go", "question": "Deploy?", "options": [{"label": "yes"}]}],
                "slack": {
                    "allowed_users": ["U0ALICE", "U0BOB"],
                    "requester": "U0BOB",
                    "prevent_self_approval": True,
                },
            }
        )
    )
    process = await relay_ask(relay, "--file", str(request))
    message = await slack.wait_for_message(timeout=STARTS)
    await slack.click(message, "yes", user="U0BOB")
    assert "you asked for this approval" in (
        (await slack.wait_for_ephemeral(user="U0BOB")).args["text"].lower()
    )
    await slack.click(message, "yes", user="U0ALICE")
    code, out, _ = await finish(process)
    assert code == 0
    assert json.loads(out)["answers"][0]["selected"] == ["yes"]

    request.write_text(json.dumps({"questions": [{"id": "a", "question": "?"}], "slack": {"x": 1}}))
    code, out, err = await finish(await relay_ask(relay, "--file", str(request)))
    assert (code, out) == (2, "")
    assert err.startswith("relay: error: BAD_REQUEST: slack.x is not a known field (known:")
    assert len(slack.messages) == 1  # nothing was asked


async def test_relay_ask_prints_the_relays_refusal_as_its_own_errors(
    env: tuple[FakeSlack, Relay],
) -> None:
    # The same line whichever side found the error: here the relay refuses the channel.
    _, relay = env
    code, out, err = await finish(await relay_ask(relay, "-q", "x", "--channel", "C0ELSEWHERE"))
    assert (code, out) == (2, "")
    assert err.startswith("relay: error: BAD_REQUEST: "), err
    assert err.count("\n") == 1
