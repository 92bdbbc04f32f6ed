"""The ``relay`` command, run in-process through ``main``: manifest, preview, errors, version."""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from relay import __version__
from relay.cli import BLOCK_KIT_BUILDER, build_parser, builder_url, main
from relay.seam.questions import AskUserQuestionRequest
from relay.slack.manifest import build_manifest
from relay.slack.rendering.render import render_question

DATA = Path(__file__).parent / "data"
DEPLOY_GATE = DATA / "deploy-gate.json"
HTTP_URL = "https://relay.example.com/slack/events"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write_request(tmp_path: Path, data: object) -> str:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(data))
    return str(path)


def question(**fields: Any) -> dict[str, Any]:
    return {"id": "q1", "question": "Go ahead?", "options": [{"label": "Yes"}], **fields}


# --- relay manifest ------------------------------------------------------------------------


def test_manifest_socket_mode_prints_the_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "manifest", "--socket-mode")

    assert (code, err) == (0, "")
    assert json.loads(out) == build_manifest(socket_mode=True)
    assert out.endswith("}\n")


def test_manifest_http_mode_with_a_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "manifest", "--request-url", HTTP_URL, "--name", "Deploy gate")

    assert (code, err) == (0, "")
    assert json.loads(out) == build_manifest(
        socket_mode=False, request_url=HTTP_URL, name="Deploy gate"
    )
    assert json.loads(out)["settings"]["interactivity"]["request_url"] == HTTP_URL


def test_manifest_without_a_mode_says_how_to_choose(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "manifest")

    assert (code, out) == (2, "")
    assert err == (
        "relay: error: USAGE: choose a mode: --socket-mode (no public URL needed) or"
        " --request-url https://<host>/slack/events\n"
    )


def test_manifest_with_both_modes_is_one_usage_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "manifest", "--socket-mode", "--request-url", HTTP_URL)

    assert (code, out) == (2, "")
    assert err == (
        "relay: error: USAGE: argument --request-url: not allowed with argument --socket-mode"
        " (see `relay manifest --help`)\n"
    )


def test_manifest_refuses_a_plain_http_url(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "manifest", "--request-url", "http://relay.example.com/x")

    assert (code, out) == (2, "")
    assert err.startswith("relay: error: BAD_CONFIG: the request URL must be an https:// URL")
    assert err.count("\n") == 1


# --- relay preview -------------------------------------------------------------------------


def test_preview_renders_each_question_like_the_relay_would(
    capsys: pytest.CaptureFixture[str],
) -> None:
    request = AskUserQuestionRequest.from_dict(json.loads(DEPLOY_GATE.read_text()), strict=True)

    code, out, err = run(capsys, "preview", str(DEPLOY_GATE))

    assert (code, err) == (0, "")
    messages = json.loads(out)["messages"]
    assert len(messages) == 2
    for i, (message, q) in enumerate(zip(messages, request.questions, strict=True)):
        rendered = render_question(
            q, ask_id="preview", index=i, count=2, agent=request.agent, deadline=None
        )
        assert message == {
            "text": rendered.text,
            "blocks": rendered.blocks,
            "builder_url": builder_url(rendered.blocks),
            "detail_overflow": [],
        }
    assert messages[0]["text"] == "Deploy gate: Ship build 4812 of checkout-api to production?"
    assert messages[0]["blocks"][-1]["elements"][0]["text"] == (
        "Asked by *Deploy bot* · question 1 of 2"
    )


def test_the_builder_url_decodes_back_to_the_blocks(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "preview", str(DEPLOY_GATE))

    assert code == 0
    for message in json.loads(out)["messages"]:
        url = message["builder_url"]
        assert url.startswith("https://app.slack.com/block-kit-builder#")
        fragment = url.removeprefix(BLOCK_KIT_BUILDER)
        # Fully encoded: nothing in the fragment can be read as URL syntax.
        assert re.fullmatch(r"[A-Za-z0-9_.~%-]+", fragment)
        assert json.loads(unquote(fragment)) == {"blocks": message["blocks"]}


def test_preview_reads_stdin_for_dash(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"questions": [question()]})))

    code, out, err = run(capsys, "preview", "-")

    assert (code, err) == (0, "")
    (message,) = json.loads(out)["messages"]
    assert message["text"] == "Go ahead?"
    assert message["blocks"][-1]["elements"][0]["text"] == "Asked by an agent"


def test_preview_lists_detail_that_goes_to_thread_replies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    detail = "word " * 5000  # 25,000 characters: more than one message's 12,000
    path = write_request(tmp_path, {"questions": [question(detail=detail)]})

    code, out, _ = run(capsys, "preview", path)

    assert code == 0
    (message,) = json.loads(out)["messages"]
    shown = next(b["text"] for b in message["blocks"] if b["type"] == "markdown")
    assert len(message["detail_overflow"]) == 2
    assert shown + "".join(message["detail_overflow"]) == detail


def test_preview_reads_strictly_and_names_the_camel_case_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_request(tmp_path, {"questions": [question(multi_select=True)]})

    code, out, err = run(capsys, "preview", path)

    assert (code, out) == (2, "")
    assert err == (
        "relay: error: BAD_REQUEST: questions[0].multi_select is not a known field"
        " (the wire form is camelCase: did you mean multiSelect?)\n"
    )


def test_preview_applies_the_request_checks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    intent = {"kind": "plan-review", "approve": "Ship"}
    path = write_request(tmp_path, {"questions": [question(detail="plan", intent=intent)]})

    code, out, err = run(capsys, "preview", path)

    assert (code, out) == (2, "")
    assert err == (
        "relay: error: BAD_INTENT: question q1 declares intent plan-review whose approve"
        ' label "Ship" names none of its options\n'
    )


def test_preview_of_no_questions(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "preview", write_request(tmp_path, {"questions": []}))

    assert code == 2
    assert err == (
        "relay: error: EMPTY_QUESTIONS: ask_user_question requires at least one question\n"
    )


def test_preview_of_a_json_list(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "preview", write_request(tmp_path, [question()]))

    assert code == 2
    assert err == "relay: error: BAD_REQUEST: the body must be an object\n"


def test_preview_of_a_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"

    code, out, err = run(capsys, "preview", str(missing))

    assert (code, out) == (2, "")
    assert err == f"relay: error: CANNOT_READ: cannot read {missing}: no such file or directory\n"


def test_preview_of_bad_json_says_where(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"questions": [\n  {"id": "q1",}\n]}')

    code, out, err = run(capsys, "preview", str(path))

    assert (code, out) == (2, "")
    assert err == (
        f"relay: error: BAD_REQUEST: {path} is not valid JSON: Expecting property name"
        " enclosed in double quotes at line 2, column 15\n"
    )


def test_preview_of_bytes_that_are_not_utf8(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('{"questions": [{"id": "q", "question": "Prêt ?"}]}'.encode("latin-1"))

    code, _, err = run(capsys, "preview", str(path))

    assert code == 2
    assert err == f"relay: error: BAD_REQUEST: {path} is not UTF-8 text\n"


# --- the command itself --------------------------------------------------------------------


def test_the_subcommands_in_the_order_help_lists_them() -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]

    assert list(commands.choices) == [
        "serve",
        "ask",
        "mcp",
        "hook",
        "exec",
        "audit",
        "verify",
        "doctor",
        "webhook-secret",
        "preview",
        "manifest",
    ]


def test_an_unknown_command_is_one_usage_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "launch")

    assert (code, out) == (2, "")
    assert err == (
        "relay: error: USAGE: argument COMMAND: invalid choice: 'launch' (choose from"
        " 'serve', 'ask', 'mcp', 'hook', 'exec', 'audit', 'verify', 'doctor',"
        " 'webhook-secret', 'preview', 'manifest')"
        " (see `relay --help`)\n"
    )


def test_no_command_prints_the_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)

    assert (code, out) == (2, "")
    assert err.startswith("usage: relay [-h] [--version] COMMAND ...")
    assert "manifest" in err
    assert "preview" in err


def test_version_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--version") == (0, f"relay {__version__}\n", "")


def test_version_as_a_real_process() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "relay.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert (result.returncode, result.stdout, result.stderr) == (0, "relay 0.1.0\n", "")
