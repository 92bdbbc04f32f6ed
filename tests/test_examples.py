"""Every agent in examples/ runs as a user would run it, against FakeSlack playing Slack and
its humans: the in-process seam over Socket Mode, RelayProvider and the relay ask CI gate
through `relay serve`, and the pytest plugin example under a plain pytest configuration."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from relay.testing import FakeSlack
from tests.server_env import TOKEN, Relay, relay_server

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


async def run(
    *argv: str, env: dict[str, str], cwd: Path | None = None
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv,
        env=env,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(process: asyncio.subprocess.Process, timeout: float = 60) -> tuple[int, str, str]:
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def base_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLACK_", "RELAY_")) and k not in ("REDIS_URL", "PORT")
    }
    # The `relay` command of this interpreter's environment comes first on PATH.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **extra}


@pytest.mark.parametrize(
    ("click", "code", "said"),
    [
        ("prod", 0, "deploying release 1.4 to prod"),
        ("nowhere", 1, "not deploying: alice cancelled it"),
    ],
)
async def test_the_in_process_deploy_agent(click: str, code: int, said: str) -> None:
    async with FakeSlack(
        bot_token="xoxb-example", app_token="xapp-example", channels={"C0DEPLOYS": "deploys"}
    ) as slack:
        slack.add_user("U0ALICE", name="alice")
        env = base_env(
            SLACK_BOT_TOKEN="xoxb-example",
            SLACK_APP_TOKEN="xapp-example",
            SLACK_API_URL=slack.base_url,
            RELAY_CHANNEL="C0DEPLOYS",
        )
        process = await run(sys.executable, str(EXAMPLES / "deploy_agent.py"), env=env)
        await slack.wait_for_socket(timeout=30)
        message = await slack.wait_for_message(channel="C0DEPLOYS", timeout=30)
        assert (await slack.click(message, click, user="U0ALICE")).ok
        exit_code, out, err = await finish(process)
    assert (exit_code, out.strip()) == (
        code,
        f"{said}" if code else f"{said} (approved by alice)",
    ), err


@pytest.fixture
async def hosted() -> AsyncIterator[tuple[FakeSlack, Relay]]:
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        slack.add_user("U0ALICE", name="alice")
        async with relay_server(slack) as relay:
            yield slack, relay


async def test_the_remote_agent_asks_for_a_plan_review_through_relay_provider(
    hosted: tuple[FakeSlack, Relay],
) -> None:
    slack, relay = hosted
    env = base_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
    process = await run(sys.executable, str(EXAMPLES / "remote_agent.py"), env=env)
    message = await slack.wait_for_message(timeout=30)
    await slack.type(message, "Revoke only after a day", user="U0ALICE")
    await slack.press_enter(message, user="U0ALICE")
    code, out, err = await finish(process)
    assert (code, out.strip()) == (1, "keep planning: Revoke only after a day"), err

    process = await run(sys.executable, str(EXAMPLES / "remote_agent.py"), env=env)
    message = await slack.wait_for_message(count=2, timeout=30)
    await slack.click(message, "Approve", user="U0ALICE")
    code, out, err = await finish(process)
    assert (code, out.strip()) == (0, "plan approved: carrying it out"), err


@pytest.mark.parametrize(
    ("click", "code", "said"),
    [("Deploy", 0, "approved: deploying 2.0"), ("Hold", 1, "not approved: ")],
)
async def test_the_ci_gate_script(
    hosted: tuple[FakeSlack, Relay], click: str, code: int, said: str
) -> None:
    slack, relay = hosted
    env = base_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN, CI_PIPELINE_ID="77")
    process = await run("bash", str(EXAMPLES / "ci_gate.sh"), "2.0", env=env)
    message = await slack.wait_for_message(timeout=30)
    assert "Pipeline 77" in str(message.blocks)
    await slack.click(message, click, user="U0ALICE")
    exit_code, out, err = await finish(process)
    assert exit_code == code, err
    assert out.startswith(said)


async def test_the_pytest_plugin_example_passes_under_a_plain_pytest_setup(tmp_path: Path) -> None:
    # A user's project: their test file and no configuration of ours (pytest-asyncio in its
    # default strict mode); run twice, since a leaked port or socket would fail the second.
    shutil.copy(EXAMPLES / "test_my_agent.py", tmp_path / "test_my_agent.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for _ in range(2):
        process = await run(
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            env=base_env(),
            cwd=tmp_path,
        )
        code, out, err = await finish(process, timeout=120)
        assert code == 0, out + err
        assert "2 passed" in out


SKIPPING_TEST = """
import asyncio

import pytest

from relay import AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest


@pytest.mark.asyncio
async def test_a_skipped_batch_reads_as_skipped(fake_slack, relay_service):
    questions = tuple(
        AskUserQuestionItem(id=i, question=f"{i}?", options=(AskUserQuestionOption("Yes"),))
        for i in ("a", "b")
    )
    run = asyncio.create_task(relay_service.ask(AskUserQuestionRequest(questions)))
    for n in (1, 2):  # a batch: a message per question, each with its own Skip
        await fake_slack.skip(await fake_slack.wait_for_message(count=n), user="U0ALICE")
    answer = await run
    assert answer.skipped
    assert [item.skipped for item in answer.answers] == [True, True]
    assert answer.answers[0].selected == []
    assert answer.to_dict() == {"answers": [{"id": i, "selected": []} for i in ("a", "b")]}
    # What the test writes compares as the JSON shows it: lists and dicts, no to_dict().
    assert answer.answers == [{"id": "a", "selected": []}, {"id": "b", "selected": []}]
    assert answer.answers[1] == {"id": "b", "selected": []}
    assert answer == {"answers": [{"id": i, "selected": []} for i in ("a", "b")]}
"""


async def test_the_pytest_plugin_in_a_new_project_runs_with_warnings_as_errors(
    tmp_path: Path,
) -> None:
    # No pytest.ini, no conftest, no pytest-asyncio setting: what a new user has. Any warning
    # (pytest-asyncio's about its loop scope among them) fails the run under -W error.
    shutil.copy(EXAMPLES / "test_my_agent.py", tmp_path / "test_my_agent.py")
    (tmp_path / "test_skipping.py").write_text(SKIPPING_TEST)
    process = await run(
        sys.executable,
        *("-W", "error", "-m", "pytest", "-q", "-W", "error", "-p", "no:cacheprovider"),
        *("--rootdir", str(tmp_path)),
        env=base_env(),
        cwd=tmp_path,
    )
    code, out, err = await finish(process, timeout=120)
    assert code == 0, out + err
    assert "3 passed" in out
    assert "warning" not in (out + err).lower(), out + err


@pytest.mark.parametrize(
    "script",
    [
        "pydantic_ai_agent.py",
        "openai_agents_agent.py",
        "langgraph_agent.py",
        "google_adk_agent.py",
    ],
)
async def test_a_framework_run_paused_on_an_approval_resumes_in_a_new_process(
    hosted: tuple[FakeSlack, Relay], tmp_path: Path, script: str
) -> None:
    # Each framework keeps the paused run its own way (saved messages, RunState JSON, a
    # checkpointer, a session store); no process of the agent runs while the team decides.
    slack, relay = hosted
    env = base_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN, RUN_FILE=str(tmp_path / "run"))
    agent = str(EXAMPLES / script)
    code, out, err = await finish(await run(sys.executable, agent, "start", env=env))
    assert (code, out.strip()) == (3, "paused: 1 approval(s) asked in Slack; run `resume` later")
    message = await slack.wait_for_message(timeout=30)
    await slack.click(message, "Allow once", user="U0ALICE")
    code, out, err = await finish(await run(sys.executable, agent, "resume", env=env))
    assert code == 0, err
    assert "deleted branch" in out
    assert os.listdir(tmp_path) == []  # the run is over: nothing kept

    # Denied with a reason: the model reads it, in a new process again.
    code, _, err = await finish(await run(sys.executable, agent, "start", env=env))
    assert code == 3, err
    message = await slack.wait_for_message(count=2, timeout=30)
    await slack.type(message, "that branch has open PRs", user="U0ALICE")
    await slack.press_enter(message, user="U0ALICE")
    code, out, err = await finish(await run(sys.executable, agent, "resume", env=env))
    assert code == 0, err
    assert "alice denied this in Slack: that branch has open PRs" in out
    assert "deleted branch" not in out
