"""Each framework's example in docs/harnesses/frameworks.md runs as written in a fresh venv
holding only ``slack-relay[that-framework]``: the extra carries everything the page uses
(issue 53: ``[langgraph]`` once lacked the SQLite checkpointer the page imports).

The venvs are made with uv (from its cache: a few seconds each) under the test's own tmp
dir, so each run starts fresh; the example then runs against a real ``relay serve`` with
FakeSlack's reviewer allowing the call, as tests/test_readme.py runs it in the dev venv.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from pathlib import Path

import pytest

from relay.testing import FakeSlack
from tests.server_env import TOKEN, relay_server
from tests.test_examples import base_env, finish, run

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "harnesses" / "frameworks.md"
# The page's section headings, and the extra each section's example needs.
EXTRAS = {
    "pydantic-ai": "pydantic-ai",
    "OpenAI Agents SDK": "openai-agents",
    "LangGraph and LangChain": "langgraph",
    "Google ADK": "google-adk",
}
_BLOCK = re.compile(r"<!-- readme-test: approval -->\n```python\n(.*?)\n```", re.S)


def examples() -> list[object]:
    """(extra, code) for each section's runnable example."""
    found = []
    for section in re.split(r"^### ", PAGE.read_text(encoding="utf-8"), flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        for code in _BLOCK.findall(body):
            found.append(pytest.param(EXTRAS[heading.strip()], code, id=EXTRAS[heading.strip()]))
    return found


def uv() -> str:
    """The uv next to the test's interpreter (the dev venv's), else on PATH."""
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.exists() else shutil.which("uv")
    assert found, "uv is missing: install it into the dev venv (pip install uv)"
    return found


async def fresh_venv(where: Path, extra: str) -> Path:
    """A new venv at ``where`` with only this checkout's ``slack-relay[extra]``; its python."""
    for args in (
        ("venv", "-q", "-p", sys.executable, str(where)),
        ("pip", "install", "-q", "-p", str(where / "bin" / "python"), f"{ROOT}[{extra}]"),
    ):
        process = await asyncio.create_subprocess_exec(
            uv(), *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await asyncio.wait_for(process.communicate(), 300)
        assert process.returncode == 0, (out + err).decode()
    return where / "bin" / "python"


def test_every_framework_section_has_one_example() -> None:
    assert sorted(p.values[0] for p in examples()) == sorted(EXTRAS.values())  # type: ignore[attr-defined]


@pytest.mark.parametrize(("extra", "code"), examples())
async def test_the_example_runs_with_only_its_extra(extra: str, code: str, tmp_path: Path) -> None:
    python = await fresh_venv(tmp_path / "venv", extra)
    script = tmp_path / "example.py"
    script.write_text(code)
    async with FakeSlack(signing_secret="server-signing-secret") as slack:
        slack.add_user("U01ALICE", name="alice")
        async with relay_server(slack) as relay:
            env = base_env(RELAY_URL=relay.url, RELAY_TOKEN=TOKEN)
            env["PATH"] = f"{python.parent}:{env['PATH']}"  # its own `relay`, not the dev one
            process = await run(str(python), str(script), env=env, cwd=tmp_path)
            message = await slack.wait_for_message(timeout=60)
            await slack.click(message, "Allow once", user="U01ALICE")
            exit_code, out, err = await finish(process, timeout=120)
    assert exit_code == 0, err
    assert "deleted branch" in out, out + err
