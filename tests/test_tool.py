"""The model-facing tool ``ask_user_question``: its schema, its arguments and its exact texts."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from strategies import answers

from relay import (
    AbortController,
    AgentRef,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    HarnessError,
    Responder,
    UserInteractionError,
    UserInteractionService,
)
from relay.errors import ask_aborted, ask_closed, ask_timed_out
from relay.seam.tool import ASK_USER_QUESTION_TOOL, ToolResult, js_json, run_ask_user_question

TIMEOUT = 2.0

DESCRIPTION = (
    "Ask the user a concise question when you need confirmation, a choice, or missing"
    " information before proceeding. Send one or more questions, each with a stable id that"
    " will be echoed in the answer."
)

PKG_ARGS = {
    "questions": [
        {
            "id": "pkg",
            "question": "Which package manager?",
            "options": [{"label": "pnpm"}, {"label": "npm"}],
        }
    ]
}


class AnsweringProvider:
    """Answers every ask at once with a fixed answer and records the requests."""

    def __init__(self, answer: AskUserQuestionAnswer) -> None:
        self.answer = answer
        self.requests: list[AskUserQuestionRequest] = []

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.requests.append(request)
        return self.answer


class FailingProvider:
    """Fails every ask with the given error."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise self.error


class AbortWaitingProvider:
    """Never answers: waits on the request's signal and then raises ``ASK_ABORTED``."""

    def __init__(self) -> None:
        self.pending = asyncio.Event()

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        assert request.signal is not None
        self.pending.set()
        await request.signal.wait()
        raise ask_aborted()


def service_with(provider: object) -> UserInteractionService:
    service = UserInteractionService()
    service.register_provider(provider)  # type: ignore[arg-type]
    return service


def one_answer(item: AskUserQuestionAnswerItem) -> AskUserQuestionAnswer:
    return AskUserQuestionAnswer((item,))


async def run_with_answer(answer: AskUserQuestionAnswer) -> ToolResult:
    return await run_ask_user_question(service_with(AnsweringProvider(answer)), PKG_ARGS)


# --- the definition ------------------------------------------------------------------------


def test_tool_has_exactly_name_description_and_parameters() -> None:
    assert set(ASK_USER_QUESTION_TOOL) == {"name", "description", "parameters"}
    assert ASK_USER_QUESTION_TOOL["name"] == "ask_user_question"
    assert ASK_USER_QUESTION_TOOL["description"] == DESCRIPTION


def test_parameters_require_a_list_of_questions() -> None:
    params = ASK_USER_QUESTION_TOOL["parameters"]

    assert params["type"] == "object"
    assert params["required"] == ["questions"]
    assert set(params["properties"]) == {"questions"}
    assert params["properties"]["questions"]["type"] == "array"


def test_question_schema_is_what_seam_md_lists_and_nothing_internal() -> None:
    question = ASK_USER_QUESTION_TOOL["parameters"]["properties"]["questions"]["items"]
    props = question["properties"]

    assert question["type"] == "object"
    assert set(props) == {"id", "question", "header", "options", "multi_select"}
    assert sorted(question["required"]) == ["id", "question"]
    assert props["id"]["type"] == "string"
    assert props["question"]["type"] == "string"
    assert props["header"]["type"] == "string"
    assert props["multi_select"]["type"] == "boolean"
    assert props["multi_select"]["default"] is False
    for internal in ("detail", "intent", "multiSelect"):
        assert internal not in props


def test_option_schema_has_a_required_label_and_an_optional_description() -> None:
    question = ASK_USER_QUESTION_TOOL["parameters"]["properties"]["questions"]["items"]
    options = question["properties"]["options"]

    assert options["type"] == "array"
    assert options["items"]["type"] == "object"
    assert set(options["items"]["properties"]) == {"label", "description"}
    assert options["items"]["properties"]["label"]["type"] == "string"
    assert options["items"]["properties"]["description"]["type"] == "string"
    assert options["items"]["required"] == ["label"]
    assert (
        'If you recommend one, put it first and append "(Recommended)" to its label.'
        in options["description"]
    )


JSON_SCHEMA_TYPES = {"object", "array", "string", "boolean", "number", "integer", "null"}


def check_portable_schema(node: dict[str, Any], path: str) -> None:
    """The plain JSON Schema every common function-calling API takes as it is."""
    assert node["type"] in JSON_SCHEMA_TYPES, path
    assert "$ref" not in node, path
    if "description" in node:
        assert isinstance(node["description"], str), path
        assert node["description"], path
    if node["type"] == "object":
        assert isinstance(node["properties"], dict), path
        assert isinstance(node.get("required", []), list), path
        assert set(node.get("required", [])) <= set(node["properties"]), path
        for name, child in node["properties"].items():
            check_portable_schema(child, f"{path}.{name}")
    if node["type"] == "array":
        check_portable_schema(node["items"], f"{path}[]")


def test_schema_is_portable_to_common_llm_apis() -> None:
    tool = ASK_USER_QUESTION_TOOL

    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", tool["name"])
    assert json.loads(json.dumps(tool)) == tool
    check_portable_schema(tool["parameters"], "parameters")


# --- success: exactly what JSON.stringify gives -----------------------------------------------


async def test_success_text_is_compact_json_of_the_answer() -> None:
    result = await run_with_answer(one_answer(AskUserQuestionAnswerItem("pkg", ("pnpm",))))

    assert result.is_error is False
    assert result.text == '{"answers":[{"id":"pkg","selected":["pnpm"]}]}'
    assert result.value == {"answers": [{"id": "pkg", "selected": ["pnpm"]}]}
    assert result.error is None


async def test_success_text_keeps_a_batch_in_order_and_omits_unused_custom() -> None:
    answer = AskUserQuestionAnswer(
        (
            AskUserQuestionAnswerItem("pkg", ("pnpm",)),
            AskUserQuestionAnswerItem("features", ("auth", "billing"), custom="and SSO"),
            AskUserQuestionAnswerItem("skipped"),
        )
    )

    result = await run_with_answer(answer)

    assert result.text == (
        '{"answers":[{"id":"pkg","selected":["pnpm"]},'
        '{"id":"features","selected":["auth","billing"],"custom":"and SSO"},'
        '{"id":"skipped","selected":[]}]}'
    )


async def test_success_text_keeps_non_ascii_labels_as_they_are() -> None:
    answer = one_answer(
        AskUserQuestionAnswerItem("lang", ("日本語 (Recommended)", "Ünïcödé", "🚀"))
    )

    result = await run_with_answer(answer)

    assert (
        result.text
        == '{"answers":[{"id":"lang","selected":["日本語 (Recommended)","Ünïcödé","🚀"]}]}'
    )


async def test_success_text_leaves_out_audit_metadata() -> None:
    answer = one_answer(AskUserQuestionAnswerItem("pkg", ("npm",), answered_by=Responder("U1")))

    result = await run_with_answer(answer)

    assert result.text == '{"answers":[{"id":"pkg","selected":["npm"]}]}'


async def test_a_default_taken_at_the_timeout_says_so_in_the_result() -> None:
    answer = one_answer(AskUserQuestionAnswerItem("pkg", ("npm",), defaulted=True))

    result = await run_with_answer(answer)

    assert result.text == '{"answers":[{"id":"pkg","selected":["npm"],"defaulted":true}]}'
    assert result.value == {"answers": [{"id": "pkg", "selected": ["npm"], "defaulted": True}]}


@pytest.mark.parametrize(
    ("custom", "quoted"),
    [
        pytest.param('say "hi"', r'"say \"hi\""', id="quote"),
        pytest.param("back\\slash/", r'"back\\slash/"', id="backslash-and-slash-unescaped"),
        pytest.param("a\nb\tc\rd\be\ff", r'"a\nb\tc\rd\be\ff"', id="short-escapes"),
        pytest.param("\x00\x01\x1f", r'"\u0000\u0001\u001f"', id="control-chars-lowercase-hex"),
        pytest.param("\x1b[31mred", r'"\u001b[31mred"', id="escape-char"),
        pytest.param("\x0b", r'"\u000b"', id="vertical-tab-has-no-short-form"),
        pytest.param("del\x7f", '"del\x7f"', id="delete-kept-raw"),
        pytest.param("\u2028\u2029", '"\u2028\u2029"', id="line-separators-kept-raw"),
        pytest.param("<b>&amp;</b>", '"<b>&amp;</b>"', id="html-kept-raw"),
        pytest.param("é😀", '"é😀"', id="non-ascii-and-astral-kept-raw"),
        pytest.param("\ud800", r'"\ud800"', id="lone-high-surrogate-escaped"),
        pytest.param("x\udfffy", r'"x\udfffy"', id="lone-low-surrogate-escaped"),
        pytest.param("\udbffA", r'"\udbffA"', id="high-surrogate-before-ascii"),
    ],
)
async def test_success_text_escapes_strings_as_json_stringify_does(
    custom: str, quoted: str
) -> None:
    result = await run_with_answer(one_answer(AskUserQuestionAnswerItem("note", (), custom)))

    assert result.text == '{"answers":[{"id":"note","selected":[],"custom":' + quoted + "}]}"
    result.text.encode("utf-8")  # always sendable, even with a lone surrogate in the answer


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
_SHORT_ESCAPES["\t"] = "\\t"


def quote_json_string(text: str) -> str:
    """ECMA-262 QuoteJSONString, written from the spec, one code point at a time."""
    out = ['"']
    for ch in text:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ord(ch) < 0x20 or 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def stringify(value: object) -> str:
    """``JSON.stringify`` for the values an answer's wire form holds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quote_json_string(value)
    if isinstance(value, list):
        return "[" + ",".join(stringify(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{stringify(k)}:{stringify(v)}" for k, v in value.items()) + "}"
    raise AssertionError(f"unexpected {value!r}")


@settings(deadline=None)
@given(answers())
def test_answer_text_is_json_stringify_of_the_wire_form(answer: AskUserQuestionAnswer) -> None:
    text = js_json(answer.to_dict())

    assert text == stringify(answer.to_dict())
    text.encode("utf-8")


# --- the model's arguments -----------------------------------------------------------------


async def test_model_arguments_become_the_request() -> None:
    provider = AnsweringProvider(one_answer(AskUserQuestionAnswerItem("x")))
    controller = AbortController()
    agent = AgentRef("deploy-bot", "Deploy bot")
    arguments = {
        "questions": [
            {
                "id": "features",
                "question": "Which features?",
                "header": "Scope",
                "options": [{"label": "auth", "description": "Sign-in"}, {"label": "billing"}],
                "multi_select": True,
            },
            {"id": "note", "question": "Anything else?"},
        ]
    }

    await run_ask_user_question(
        service_with(provider), arguments, agent=agent, signal=controller.signal
    )

    (request,) = provider.requests
    assert request == AskUserQuestionRequest(
        (
            AskUserQuestionItem(
                "features",
                "Which features?",
                header="Scope",
                options=(
                    AskUserQuestionOption("auth", "Sign-in"),
                    AskUserQuestionOption("billing"),
                ),
                multi_select=True,
            ),
            AskUserQuestionItem("note", "Anything else?"),
        ),
        agent=agent,
    )
    assert request.signal is controller.signal


async def test_model_cannot_send_detail_or_intent() -> None:
    provider = AnsweringProvider(one_answer(AskUserQuestionAnswerItem("x")))
    arguments = {
        "questions": [
            {
                "id": "plan",
                "question": "Approve?",
                "detail": "# Sneaky plan",
                "options": [{"label": "Approve"}],
                "intent": {"kind": "plan-review", "approve": "Approve"},
            }
        ]
    }

    result = await run_ask_user_question(service_with(provider), arguments)

    assert result.is_error is False
    (request,) = provider.requests
    assert request.questions[0].detail is None
    assert request.questions[0].intent is None


async def test_multi_select_false_or_absent_is_single_select() -> None:
    provider = AnsweringProvider(one_answer(AskUserQuestionAnswerItem("x")))
    questions = [
        {"id": "a", "question": "?", "multi_select": False},
        {"id": "b", "question": "?"},
    ]

    await run_ask_user_question(service_with(provider), {"questions": questions})

    assert [q.multi_select for q in provider.requests[0].questions] == [False, False]


async def test_run_does_not_mutate_the_model_arguments() -> None:
    arguments = {"questions": [{"id": "a", "question": "?", "multi_select": True}]}
    before = copy.deepcopy(arguments)

    await run_ask_user_question(
        service_with(AnsweringProvider(one_answer(AskUserQuestionAnswerItem("a")))), arguments
    )

    assert arguments == before


# --- failures: error results, never exceptions ---------------------------------------------


def error_info(code: str) -> dict[str, str]:
    return {"name": "UserInteractionError", "code": code}


def assert_error_result(result: ToolResult, code: str, message: str) -> None:
    assert result.is_error is True
    assert result.text == f"Error: {message}"
    assert result.error == {"message": message, "info": error_info(code)}
    assert result.value is None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param({}, "questions is required", id="missing-questions"),
        pytest.param({"questions": "Which?"}, "questions must be a list", id="questions-not-list"),
        pytest.param({"questions": ["Which?"]}, "questions[0] must be an object", id="not-object"),
        pytest.param(
            {"questions": [{"question": "Which?"}]}, "questions[0].id is required", id="no-id"
        ),
        pytest.param(
            {"questions": [{"id": "a", "question": "?"}, {"id": "b"}]},
            "questions[1].question is required",
            id="no-question",
        ),
        pytest.param(
            {"questions": [{"id": "a", "question": "?", "options": [{"description": "x"}]}]},
            "questions[0].options[0].label is required",
            id="option-without-label",
        ),
        pytest.param(
            {"questions": [{"id": "a", "question": "?", "options": [{"label": 1}]}]},
            "questions[0].options[0].label must be a string",
            id="label-not-string",
        ),
        pytest.param(
            {"questions": [{"id": "a", "question": "?", "multi_select": "yes"}]},
            "questions[0].multi_select must be a boolean",
            id="multi-select-not-boolean",
        ),
    ],
)
async def test_malformed_model_arguments_are_a_bad_request_result(
    arguments: dict[str, Any], message: str
) -> None:
    provider = AnsweringProvider(one_answer(AskUserQuestionAnswerItem("a")))

    result = await run_ask_user_question(service_with(provider), arguments)

    assert_error_result(result, ErrorCode.BAD_REQUEST, message)
    assert provider.requests == []


async def test_arguments_that_are_not_an_object_are_a_bad_request_result() -> None:
    result = await run_ask_user_question(UserInteractionService(), ["Which?"])  # type: ignore[arg-type]

    assert result.is_error is True
    assert result.text.startswith("Error: ")
    assert result.error is not None
    assert result.error["info"] == error_info(ErrorCode.BAD_REQUEST)


async def test_no_questions_text() -> None:
    result = await run_ask_user_question(UserInteractionService(), {"questions": []})

    assert_error_result(
        result, ErrorCode.EMPTY_QUESTIONS, "ask_user_question requires at least one question"
    )


async def test_no_provider_text() -> None:
    result = await run_ask_user_question(UserInteractionService(), PKG_ARGS)

    assert_error_result(result, ErrorCode.NO_PROVIDER, "no user-interaction provider is registered")


async def test_aborted_before_asking_text() -> None:
    controller = AbortController()
    controller.abort()
    provider = AnsweringProvider(one_answer(AskUserQuestionAnswerItem("pkg")))

    result = await run_ask_user_question(service_with(provider), PKG_ARGS, signal=controller.signal)

    assert_error_result(
        result, ErrorCode.ASK_ABORTED, "ask_user_question was aborted before the user answered"
    )
    assert provider.requests == []


async def test_aborted_while_waiting_text() -> None:
    provider = AbortWaitingProvider()
    controller = AbortController()
    call = asyncio.create_task(
        run_ask_user_question(service_with(provider), PKG_ARGS, signal=controller.signal)
    )
    await asyncio.wait_for(provider.pending.wait(), TIMEOUT)

    controller.abort()

    result = await asyncio.wait_for(call, TIMEOUT)
    assert_error_result(
        result, ErrorCode.ASK_ABORTED, "ask_user_question was aborted before the user answered"
    )


@pytest.mark.parametrize(
    "error",
    [
        UserInteractionError(ErrorCode.ASK_CANCELLED, "the user cancelled ask_user_question"),
        ask_timed_out(900),
        ask_closed(),
        UserInteractionError(ErrorCode.PROVIDER_FAILED, "Slack said: channel_not_found"),
    ],
    ids=lambda e: e.code,
)
async def test_provider_errors_become_error_results(error: UserInteractionError) -> None:
    result = await run_ask_user_question(service_with(FailingProvider(error)), PKG_ARGS)

    assert_error_result(result, error.code, str(error))


async def test_timeout_text_says_it_timed_out() -> None:
    result = await run_ask_user_question(
        service_with(FailingProvider(ask_timed_out(900))), PKG_ARGS
    )

    assert result.text == "Error: ask_user_question timed out after 900 s before the user answered"


async def test_a_plain_harness_error_carries_its_code() -> None:
    error = HarnessError("SOMETHING", "it broke")

    result = await run_ask_user_question(service_with(FailingProvider(error)), PKG_ARGS)

    assert result.is_error is True
    assert result.text == "Error: it broke"
    assert result.error is not None
    assert result.error["info"]["code"] == "SOMETHING"


async def test_an_unexpected_provider_exception_is_an_error_result() -> None:
    result = await run_ask_user_question(
        service_with(FailingProvider(RuntimeError("boom"))), PKG_ARGS
    )

    assert result.is_error is True
    assert result.text == "Error: boom"
    assert result.error is not None
    assert result.error["message"] == "boom"


async def test_cancelling_the_tool_call_propagates_cancelled_error() -> None:
    provider = AbortWaitingProvider()
    call = asyncio.create_task(
        run_ask_user_question(service_with(provider), PKG_ARGS, signal=AbortController().signal)
    )
    await asyncio.wait_for(provider.pending.wait(), TIMEOUT)

    call.cancel()

    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, TIMEOUT)
