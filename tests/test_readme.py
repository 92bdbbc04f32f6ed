"""Every Python example in the documentation runs as written: each ```python block of
README.md and of every page under docs/ is extracted and run as a complete program (or test
file), against FakeSlack playing Slack and its humans.

A block says how to run it with the hidden marker line before it, `<!-- readme-test: KIND -->`:
`seam` (Socket Mode env), `relay-provider` (RELAY_URL/RELAY_TOKEN of a `relay serve`),
`approval` (the same, a framework's tool use the reviewer allows), `pytest` (a user's test
file) or `plain`. A block without a marker is a failure. A block shown on two pages (the
README repeats a few) runs once. `fragment` marks an excerpt of a larger program (lines of a
test shown on their own, `await` at the top level allowed): it is compiled, not run, so keep
those few and let a complete example of the same thing run elsewhere."""

from __future__ import annotations

import ast
import re
import shlex
import sys
from pathlib import Path

import pytest

from relay.testing import FakeSlack
from tests.server_env import TOKEN, relay_server
from tests.test_examples import base_env, finish, run

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
MARKED = re.compile(r"<!-- readme-test: ([a-z-]+) -->\n```python\n(.*?)\n```", re.S)
RUN_KINDS = ("seam", "relay-provider", "approval", "pytest", "plain")
KINDS = (*RUN_KINDS, "fragment")


def blocks() -> list[tuple[str, str, str]]:
    """(kind, code, where) for every marked block, the first place each one is shown."""
    found: dict[str, tuple[str, str, str]] = {}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        name = str(page.relative_to(ROOT))
        marked = MARKED.findall(text)
        assert len(marked) == text.count("```python\n"), f"{name}: a ```python block has no marker"
        for kind, code in marked:
            shown = found.setdefault(code, (kind, code, name))
            assert shown[0] == kind, f"one block, two kinds: {name} and {shown[2]}"
    return list(found.values())


def test_every_python_block_is_marked_with_a_known_kind() -> None:
    found = blocks()
    used = {kind for kind, _, _ in found}
    assert set(RUN_KINDS) <= used <= set(KINDS), used
    for kind, code, where in found:
        compile(code, f"{where} ({kind})", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def of_kind(kind: str) -> list[object]:
    return [pytest.param(code, id=where) for k, code, where in blocks() if k == kind]


@pytest.mark.parametrize("code", of_kind("seam"))
async def test_seam_blocks_run_against_fake_slack_over_socket_mode(
    code: str, tmp_path: Path
) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    async with FakeSlack(
        bot_token="xoxb-readme", app_token="xapp-readme", channels={"C0README": "readme"}
    ) as slack:
        slack.add_user("U01ALICE", name="alice")
        env = base_env(
            SLACK_BOT_TOKEN="xoxb-readme",
            SLACK_APP_TOKEN="xapp-readme",
            SLACK_API_URL=slack.base_url,
            RELAY_CHANNEL="C0README",
        )
        process = await run(sys.executable, str(script), env=env)
        message = await slack.wait_for_message(channel="C0README", timeout=30)
        assert (await slack.click(message, "prod", user="U01ALICE")).ok
        exit_code, out, err = await finish(process)
    assert exit_code == 0, err
    assert out.splitlines() == [
        "{'answers': [{'id': 'env', 'selected': ['prod']}]}",
        "Responder(id='U01ALICE', name='alice')",
    ]


@pytest.mark.parametrize("code", of_kind("relay-provider"))
async def test_relay_provider_blocks_run_against_relay_serve(code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        slack.add_user("U01ALICE", name="alice")
        async with relay_server(slack) as relay:
            env = base_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
            process = await run(sys.executable, str(script), env=env)
            message = await slack.wait_for_message(timeout=30)
            await slack.click(message, "Approve", user="U01ALICE")
            exit_code, out, err = await finish(process)
    assert (exit_code, out.strip()) == (0, "approved"), err


@pytest.mark.parametrize("code", of_kind("approval"))
async def test_framework_blocks_run_their_tool_once_a_reviewer_allows_it(
    code: str, tmp_path: Path
) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        slack.add_user("U01ALICE", name="alice")
        async with relay_server(slack) as relay:
            env = base_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
            process = await run(sys.executable, str(script), env=env)
            message = await slack.wait_for_message(timeout=30)
            assert "delete_branch: permission request" in str(message.blocks)
            await slack.click(message, "Allow once", user="U01ALICE")
            exit_code, out, err = await finish(process)
    assert exit_code == 0, err
    assert "deleted branch" in out, out + err


@pytest.mark.parametrize("code", of_kind("pytest"))
async def test_pytest_blocks_pass_as_a_users_test_file_twice(code: str, tmp_path: Path) -> None:
    (tmp_path / "test_readme_example.py").write_text(code)
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
        exit_code, out, err = await finish(process, timeout=120)
        assert exit_code == 0, out + err
        assert re.search(r"\b1 passed\b", out), out


@pytest.mark.parametrize("code", of_kind("plain"))
async def test_plain_blocks_run(code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    exit_code, out, err = await finish(await run(sys.executable, str(script), env=base_env()))
    assert exit_code == 0, out + err


def test_every_image_the_readme_shows_is_a_screenshot_a_browser_test_makes() -> None:
    # A browser test makes each one on every run (so making it cannot rot) and writes it
    # into docs/ on a run with UPDATE_SCREENSHOTS=1: the README shows real pages, no mock-ups.
    text = README.read_text(encoding="utf-8")
    shots = re.findall(r"!\[([^\]]*)\]\(([^)\s]+)\)", text)
    paths = [path for _, path in shots]
    assert {"docs/sandbox-plan-review.png", "docs/sandbox-edit-modal.png"} <= set(paths), paths
    makers = [
        test.read_text(encoding="utf-8") for test in (ROOT / "tests" / "browser").glob("*.py")
    ]
    for alt, path in shots:
        assert alt.strip(), f"{path}: an image needs alt text"
        png = (README.parent / path).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n", path
        assert len(png) > 20_000, path  # a real page, not a blank one
        name = f'"{Path(path).name}"'
        assert any(name in m and "UPDATE_SCREENSHOTS" in m for m in makers), (
            f"{path}: no test under tests/browser/ makes it"
        )


# The project's own commands live in .venv/bin, which a fresh machine does not have on PATH.
VENV_COMMANDS = {"relay", "mkdocs", "pytest", "ruff", "mypy"}


def test_every_readme_command_runs_as_written_on_a_fresh_machine() -> None:
    """No shell line calls a command only .venv has by its bare name, and nothing installs
    into .venv with pip, which a uv-made .venv does not have: scripts/ set .venv up."""
    text = README.read_text(encoding="utf-8")
    assert "pip install -e" not in text
    blocks = re.findall(r"```sh\n(.*?)\n```", text, re.S)
    assert blocks
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(re.sub(r"<[^>]*>", "PLACEHOLDER", line), comments=True)
            while words and re.match(r"\w+=", words[0]):  # VAR=value before the command
                words.pop(0)
            if words:
                assert words[0] not in VENV_COMMANDS, line
