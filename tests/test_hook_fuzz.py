"""No stdin makes ``relay hook`` crash: whatever arrives (deep, huge, not JSON, not an object,
not UTF-8, lone surrogates, ``NaN``, recorded payloads with any field replaced), each
harness's hook answers with its own deny and at most one line on stderr, never a traceback.

A tool input nested 1,000 deep (about 2 KB) made every ``relay hook`` exit 1 with a
``RecursionError`` traceback and no decision. Generated inputs run in-process through the
real entry point (``relay.cli.main``) for speed, derandomized; a few run as subprocesses.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay.cli import main
from relay.hooks.intake import MAX_DEPTH
from tests.gate_env import clean_env

PAYLOADS = Path(__file__).parent / "payloads" / "hooks"
HARNESSES = ("claude-code", "codex", "copilot", "cursor")
RECORDED = {
    harness: [json.loads(p.read_text()) for p in sorted(PAYLOADS.glob(f"{harness}-*.json"))]
    for harness in HARNESSES
}
# Deny recursive deletes, ask about the rest: with nowhere to ask, every use is denied.
RULES = """
timeout = 5
default = "ask"

[[rules]]
action = "deny"
tools = ["Bash"]
commands = ["rm -rf *"]
"""
FUZZ = settings(
    derandomize=True,
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@contextlib.contextmanager
def stdio(raw: bytes) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """``raw`` as stdin, stdout and stderr captured, for one in-process ``relay`` run."""
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(raw))
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield out, err
    finally:
        sys.stdin = saved


def assert_denied(harness: str, code: int, out: str, err: str) -> None:
    """The harness's own deny, with at most one line on stderr and no traceback."""
    assert "Traceback" not in err, err
    assert err.count("\n") <= 1, err
    assert not err or err.endswith("\n"), err
    if code == 2:  # Claude Code's and Codex's blocking exit, the reason on stderr
        assert harness in ("claude-code", "codex"), (harness, out, err)
        assert out == ""
        assert err.startswith("relay: error: BAD_HOOK_INPUT: "), err
        return
    assert code == 0, (code, out, err)
    assert out.endswith("\n"), out
    assert out.count("\n") == 1, out
    answer = json.loads(out)
    if harness == "cursor":
        assert answer["permission"] == "deny", answer
    elif harness == "copilot":
        assert "deny" in (answer.get("behavior"), answer.get("permissionDecision")), answer
    else:
        specific = answer["hookSpecificOutput"]
        decided = specific.get("permissionDecision") or specific["decision"]["behavior"]
        assert decided == "deny", answer
    if err:
        assert err.startswith("relay: error: BAD_HOOK_INPUT: "), err


def run_in_process(harness: str, rules: str, raw: bytes) -> None:
    with stdio(raw) as (out, err):
        code = main(["hook", harness, "--rules", rules])
    assert_denied(harness, code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("rules") / "relay-rules.toml"
    path.write_text(RULES)
    return str(path)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    [
        "hook_event_name",
        "hookName",
        "tool_name",
        "toolName",
        "tool_input",
        "toolInput",
        "toolArgs",
        "command",
        "session_id",
        "sessionId",
        "cwd",
        "workspace_roots",
        "tool_use_id",
        "turn_id",
    ]
)


def nested(depth: int, leaf: Any, kind: str) -> str:
    """JSON text of ``leaf`` inside ``depth`` arrays or objects (built as text: no recursion)."""
    leaf_text = json.dumps(leaf)
    if kind == "list":
        return "[" * depth + leaf_text + "]" * depth
    return '{"a":' * depth + leaf_text + "}" * depth


@st.composite
def mutated(draw: st.DrawFn, harness: str) -> bytes:
    """A recorded payload of ``harness`` with one thing broken."""
    data = dict(draw(st.sampled_from(RECORDED[harness])))
    how = draw(st.sampled_from(["replace", "delete", "deep", "string", "token", "twice"]))
    key = draw(KEYS | st.sampled_from(sorted(data)))
    if how == "replace":
        data[key] = draw(JSON_VALUES)
    elif how == "delete":
        data.pop(key, None)
    elif how == "string":  # the input as JSON text of anything
        data[key] = json.dumps(draw(JSON_VALUES))
    text = json.dumps(data)
    if how == "deep":
        depth = draw(st.sampled_from([MAX_DEPTH - 2, MAX_DEPTH, MAX_DEPTH + 1, 1000, 20_000]))
        deep = nested(depth, draw(st.text(max_size=5)), draw(st.sampled_from(["list", "dict"])))
        text = text[:-1] + f', "{key}": {deep}}}'
    elif how == "token":  # what Python's json reads but JSON is not, or no UTF-8 carries
        token = draw(st.sampled_from(["NaN", "Infinity", "-Infinity", '"\\ud800"', '"\\udfff x"']))
        text = text[:-1] + f', "{key}": {token}}}'
    elif how == "twice":
        text = text[:-1] + f", {json.dumps(key)}: {json.dumps(draw(JSON_VALUES))}}}"
    return text.encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("harness", HARNESSES)
@FUZZ
@given(raw=st.binary(max_size=300))
def test_any_bytes_are_denied(rules: str, harness: str, raw: bytes) -> None:
    run_in_process(harness, rules, raw)


@pytest.mark.parametrize("harness", HARNESSES)
@FUZZ
@given(value=JSON_VALUES)
def test_any_json_value_is_denied(rules: str, harness: str, value: Any) -> None:
    run_in_process(harness, rules, json.dumps(value).encode())


@pytest.mark.parametrize("harness", HARNESSES)
@FUZZ
@given(data=st.data())
def test_any_broken_recorded_payload_is_denied(
    rules: str, harness: str, data: st.DataObject
) -> None:
    run_in_process(harness, rules, data.draw(mutated(harness)))


# A recorded payload per harness whose tool input is an object, and its key.
OBJECT_INPUT = {
    "claude-code": ("claude-code-PreToolUse", "tool_input"),
    "codex": ("codex-PermissionRequest", "tool_input"),
    "copilot": ("copilot-permissionRequest", "toolInput"),
    "cursor": ("cursor-beforeMCPExecution", "tool_input"),
}


@pytest.mark.parametrize("harness", HARNESSES)
def test_the_nesting_bound_is_the_documented_one(rules: str, harness: str) -> None:
    """``MAX_DEPTH`` levels are read (and the use then decided as usual); one more is not."""
    name, key = OBJECT_INPUT[harness]
    data = json.loads((PAYLOADS / f"{name}.json").read_text())
    for depth, refused in ((MAX_DEPTH, False), (MAX_DEPTH + 1, True)):
        # The payload is level 1, the tool input level 2, the arrays inside it the rest.
        inner = '{"x": ' + nested(depth - 2, 1, "list") + "}"
        text = json.dumps({**data, key: "HOLE"}).replace('"HOLE"', inner)
        with stdio(text.encode()) as (out, err):
            code = main(["hook", harness, "--rules", rules])
        assert_denied(harness, code, out.getvalue(), err.getvalue())
        said = out.getvalue() + err.getvalue()
        assert (f"nests deeper than {MAX_DEPTH} levels" in said) is refused, said


# The input: a tool input 1,000 levels deep, about 2 KB.
DEEP = nested(1000, "x", "list")
ODD_STDIN = {
    "deep": lambda p: json.dumps(p)[:-1].encode() + b', "tool_input": ' + DEEP.encode() + b"}",
    "not UTF-8": lambda p: json.dumps(p).encode()[:-1] + b', "x": "\xff\xfe"}',
    "NaN": lambda p: json.dumps(p).encode()[:-1] + b', "x": NaN}',
    "lone surrogate": lambda p: json.dumps(p).encode()[:-1] + b', "x": "\\ud800"}',
    "not an object": lambda p: b"[" + json.dumps(p).encode() + b"]",
    "huge": lambda p: json.dumps({**p, "x": "a" * 8_000_000}).encode(),
    "empty": lambda p: b"",
}


async def _run(harness: str, rules: str, raw: bytes) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "relay.cli",
        "hook",
        harness,
        "--rules",
        rules,
        env=clean_env(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(raw), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("harness", HARNESSES)
async def test_odd_stdin_as_a_subprocess_is_denied_in_one_line(rules: str, harness: str) -> None:
    recorded = RECORDED[harness][0]
    runs = await asyncio.gather(
        *(_run(harness, rules, make(recorded)) for make in ODD_STDIN.values())
    )
    for what, (code, out, err) in zip(ODD_STDIN, runs, strict=True):
        assert_denied(harness, code, out, err)
        if what != "huge":  # an input that big is a valid object, so it is asked about
            assert err.startswith("relay: error: BAD_HOOK_INPUT: "), (what, err)
    assert "nests deeper than 64 levels" in runs[0][1] + runs[0][2]
    # The boundary's refusal names its stable code, as every door's does.
    surrogate = runs[list(ODD_STDIN).index("lone surrogate")]
    assert "(JSON_LONE_SURROGATE)" in surrogate[2], surrogate
