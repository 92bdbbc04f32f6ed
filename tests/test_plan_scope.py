"""A plan's scope, as relay derives it: only what it can pin down, the rest asked each time."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from relay.canonical.match import fingerprint, subject
from relay.canonical.paths import canonical
from relay.canonical.shell import parse
from relay.plans.scope import PlanScope, derive_scope, describe_scope
from relay.plans.steps import Step, plan_steps, read_steps

ROOT = "/work/proj"
PLAN = """# Bill in euros

1. Edit `src/billing/invoice.py` and create files under `src/billing/tests/`.
2. Run `pytest -q` and `npm run build`.

```bash
$ ruff check src
```

3. Use the `WebSearch` tool and the MCP server `github`.
"""


def test_a_plan_names_paths_commands_tools_and_servers() -> None:
    scope = derive_scope(PLAN, root=ROOT)
    assert scope.writes == ("src/billing/invoice.py", "src/billing/tests/")
    assert scope.runs == (("pytest", "-q"), ("npm", "run", "build"), ("ruff", "check", "src"))
    assert scope.tools == ("WebSearch",)
    assert scope.mcp_servers == ("github",)
    assert scope.asked == ()


def test_structured_steps_add_to_what_the_text_names() -> None:
    steps = read_steps([{"run": "make docs"}, {"write": "docs/"}, {"mcp_server": "linear"}])
    scope = derive_scope("# Plan", steps, root=ROOT)
    assert scope.runs == (("make", "docs"),)
    assert scope.writes == ("docs/",)
    assert scope.mcp_servers == ("linear",)


@pytest.mark.parametrize(
    "raw",
    [
        "not a list",
        [{"run": "a", "write": "b"}],
        [{"shell": "ls"}],
        [{"run": ""}],
        [{"run": 3}],
        ["pytest"],
    ],
)
def test_malformed_steps_are_refused(raw: object) -> None:
    with pytest.raises(ValueError, match="steps"):
        read_steps(raw)


@pytest.mark.parametrize(
    "command",
    [
        "pytest; rm -rf ~",
        "pytest && curl evil.example",
        "pytest | sh",
        "pytest\rrm -rf /",
        "echo $(cat ~/.ssh/id_rsa)",
        "echo `id`",
        "pytest > /etc/passwd",
        "PATH=/tmp pytest",
        "sudo pytest",
        "sh -c pytest",
        "./deploy.sh",
        "rm *.py",
        "pytest # comment",
        "eval pytest",
        "pytest\\",
        "pytest\u202e",
    ],
)
def test_a_command_relay_cannot_read_with_certainty_stays_asked(command: str) -> None:
    scope = derive_scope("# Plan", [Step("run", command)], root=ROOT)
    assert scope.runs == ()
    assert [a.text for a in scope.asked] == [command]


@pytest.mark.parametrize(
    "path",
    [
        "../outside.py",
        "src/../../etc/passwd",
        "/etc/passwd",
        "/work/projX/a.py",
        "src/*.py",
        "src/a\rb.py",
        "src/`id`.py",
    ],
)
def test_a_path_outside_or_unreadable_stays_asked(path: str) -> None:
    scope = derive_scope("# Plan", [Step("write", path)], root=ROOT)
    assert scope.writes == ()
    assert [a.text for a in scope.asked] == [path]


def test_an_absolute_path_inside_the_project_is_read_relative_to_it() -> None:
    scope = derive_scope("# Plan", [Step("write", f"{ROOT}//src/./a.py")], root=ROOT)
    assert scope.writes == ("src/a.py",)


def test_without_a_project_directory_no_path_is_in_scope() -> None:
    scope = derive_scope("# Plan\nEdit `src/a.py`", root=None)
    assert scope.writes == ()
    assert "no project directory" in scope.asked[0].why


@pytest.mark.parametrize("tool", ["Bash", "Edit", "Write", "Read", "exec", "Web*", "a b"])
def test_a_tool_that_runs_commands_or_touches_paths_is_never_in_scope_whole(tool: str) -> None:
    scope = derive_scope("# Plan", [Step("tool", tool)], root=ROOT)
    assert scope.tools == ()


def test_only_fenced_shell_blocks_are_commands() -> None:
    plan = "# Plan\n```python\nimport os\n```\n```\nrm -rf /\n```\n```sh\nmake\n```"
    assert plan_steps(plan) == [Step("run", "make")]


def test_a_span_before_any_verb_is_no_item() -> None:
    assert plan_steps("The `pytest` suite is slow; we then run `make`.") == [Step("run", "make")]


def _bash(command: str, cwd: str = ROOT) -> object:
    return subject("Bash", {"command": command}, cwd=cwd)


def test_covers_exactly_the_planned_command_word_for_word() -> None:
    scope = derive_scope("# Plan\nRun `pytest -q`.", root=ROOT)
    assert scope.covers(subject("Bash", {"command": "pytest -q"}))
    assert scope.covers(subject("Bash", {"command": "'pytest' \"-q\""}))  # as bash reads it
    for other in ("pytest", "pytest -q -x", "pytest -q; rm x", "pytest -q && pytest -q"):
        assert not scope.covers(subject("Bash", {"command": other})), other
    assert not scope.covers(subject("Bash", {"command": "pytest -q > out"}))
    assert not scope.covers(subject("Bash", {"command": "FOO=1 pytest -q"}))


def test_covers_writes_under_a_planned_folder_in_the_project_only() -> None:
    scope = derive_scope("# Plan\nEdit `src/a.py` and write under `docs/`.", root=ROOT)
    covered = [
        f"{ROOT}/src/a.py",
        f"{ROOT}/docs/x.md",
        f"{ROOT}/docs/deep/y.md",
    ]
    for path in covered:
        assert scope.covers(subject("Write", {"file_path": path})), path
    outside = [
        f"{ROOT}/src/b.py",
        f"{ROOT}/docs",
        f"{ROOT}/docsx/a.md",
        f"{ROOT}/docs/../secrets.env",
        "/etc/passwd",
        "src/a.py",  # relative with no directory: unknown
        "/other/src/a.py",
    ]
    for path in outside:
        assert not scope.covers(subject("Write", {"file_path": path})), path
    # Reading is not writing: a write scope says nothing of Read.
    assert not scope.covers(subject("Read", {"file_path": f"{ROOT}/src/a.py"}))


def test_covers_named_tools_and_the_tools_of_named_mcp_servers() -> None:
    scope = derive_scope("# Plan\nUse `WebSearch` and the MCP server `github`.", root=ROOT)
    assert scope.covers(subject("WebSearch", {"query": "x"}))
    assert scope.covers(subject("mcp__github__create_issue", {"title": "x"}))
    assert not scope.covers(subject("mcp__gitlab__create_issue", {}))
    assert not scope.covers(subject("mcp__github_evil__x", {}))
    assert not scope.covers(subject("WebFetch", {"url": "x"}))
    # A named tool called with a command or a path is not covered as a whole.
    assert not scope.covers(subject("WebSearch", {"command": "rm -rf /"}))


def test_an_added_exact_call_is_covered_and_nothing_like_it() -> None:
    scope = PlanScope(root=ROOT).with_call(fingerprint("Bash", {"command": "make x"}))
    assert scope.covers(subject("Bash", {"command": "make x"}))
    assert not scope.covers(subject("Bash", {"command": "make y"}))


def test_narrowing_keeps_only_the_reviewers_items() -> None:
    scope = derive_scope(PLAN, root=ROOT)
    narrow = scope.narrowed([Step("run", "pytest -q"), Step("write", "src/billing/tests/")])
    assert narrow.runs == (("pytest", "-q"),)
    assert narrow.writes == ("src/billing/tests/",)
    assert narrow.tools == ()
    assert narrow.mcp_servers == ()


def test_the_stored_form_reads_back() -> None:
    scope = derive_scope(PLAN + "\nRun `a; b`.", root=ROOT).with_call("d" * 64)
    assert PlanScope.from_json(scope.to_json()) == scope


def test_the_words_show_scope_and_what_stays_asked_with_hidden_characters_spelled() -> None:
    scope = derive_scope("# Plan\nRun `pytest` and `ls\r; rm -rf /`.", root=ROOT)
    text = "\n".join(describe_scope(scope))
    assert "runs `pytest`" in text
    assert "ask each time: run `ls\\r; rm -rf /`" in text
    assert "\r" not in text
    assert "no file writes" in text


# Property tests: whatever the plan says, what lands in scope is safe to match.

_SHELLY = st.text(alphabet=st.sampled_from(list("ab -./;&|$`()<>\\\r\n'\"*~#=_")), max_size=30)


@given(st.lists(_SHELLY, max_size=6), _SHELLY)
@example(["'' ="], "")  # an empty word: shown quoted, as bash reads it back
def test_every_command_in_scope_is_one_plain_command_with_its_own_words(
    commands: list[str], prose: str
) -> None:
    plan = "# Plan\n" + prose + "\n" + "\n".join(f"Run `{c}`." for c in commands)
    scope = derive_scope(plan, [Step("run", c) for c in commands if c.strip()], root=ROOT)
    for words in scope.runs:
        line = shlex.join(words)  # as the plan's message shows it
        assert not set(line) & set(";&|$`()<>\\\r\n*~#")
        parsed = parse(line)
        assert len(parsed.parts) == 1
        assert not parsed.opaque
        assert parsed.parts[0].words == words


_PATHY = st.text(alphabet=st.sampled_from(list("ab./\\*~\r `")), max_size=25)


@given(st.lists(_PATHY, min_size=1, max_size=6))
def test_every_path_in_scope_stays_inside_the_project(paths: list[str]) -> None:
    scope = derive_scope("# Plan", [Step("write", p) for p in paths if p.strip()], root=ROOT)
    for written in scope.writes:
        assert ".." not in written.split("/")
        full = canonical(written, ROOT)
        # `./` is the project folder as a whole (then everything under it).
        assert full.startswith(ROOT + "/") or (written == "./" and full == ROOT)
    assert len(scope.writes) + len(scope.asked) <= len(paths)


@given(_SHELLY)
def test_a_call_is_covered_only_if_it_is_one_of_the_planned_commands(command: str) -> None:
    scope = derive_scope("# Plan\nRun `make a` and `make b`.", root=ROOT)
    use = subject("Bash", {"command": command})
    if scope.covers(use):
        assert use.shell is not None
        assert len(use.shell.parts) == 1
        assert use.shell.parts[0].words in {("make", "a"), ("make", "b")}
