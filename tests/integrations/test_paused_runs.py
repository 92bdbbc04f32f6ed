"""A run paused on an approval survives the wait as each framework intends: the example's
first process posts the approvals to a real ``relay serve`` and exits; the team answers in
FakeSlack; a new process collects the decisions and finishes the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.testing import FakeSlack
from tests.integrations.env import example, example_env
from tests.server_env import SECRET, TOKEN, relay_server


@pytest.mark.parametrize(
    ("script", "said_when_allowed"),
    [("pydantic_ai_agent.py", "deleted branch a")],
)
async def test_a_paused_run_resumes_in_a_new_process(
    tmp_path: Path, script: str, said_when_allowed: str
) -> None:
    async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
        slack.add_user("U0ALICE", name="alice")
        env = example_env(
            RELAY_URL=relay.url, RELAY_TOKEN=TOKEN, RUN_FILE=str(tmp_path / "run.json")
        )
        code, out, err = await example(script, "start", env=env)
        assert code == 3, err
        assert out.startswith("paused: 1 approval(s) asked in Slack"), out
        # No process of the agent runs now; the team answers.
        message = await slack.wait_for_message(timeout=15)
        await slack.click(message, "Allow once", user="U0ALICE")
        code, out, err = await example(script, "resume", env=env)
        assert code == 0, err
        assert said_when_allowed in out
        assert not (tmp_path / "run.json").exists()

        # Denied with a reason: the model reads it, in a new process again.
        code, _, err = await example(script, "start", env=env)
        assert code == 3, err
        message = await slack.wait_for_message(count=2, timeout=15)
        await slack.type(message, "that branch has open PRs", user="U0ALICE")
        await slack.press_enter(message, user="U0ALICE")
        code, out, err = await example(script, "resume", env=env)
        assert code == 0, err
        assert "alice denied this in Slack: that branch has open PRs" in out
        assert said_when_allowed not in out
