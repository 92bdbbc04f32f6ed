"""The public surface of ``relay``: exactly the documented names, each importable and documented."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import typing
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

import pytest

import relay
from relay import (
    AgentRef,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    HarnessError,
    PlanVerdict,
    RelayConfigError,
    Responder,
    ToolResult,
    UserInteractionError,
    UserInteractionProvider,
)

# The section 2: the interaction seam.
SEAM = {
    "AskUserQuestionOption",
    "AskUserQuestionIntent",
    "AskUserQuestionItem",
    "AgentRef",
    "AskUserQuestionRequest",
    "AskUserQuestionAnswerItem",
    "Responder",
    "AskUserQuestionAnswer",
    "AbortController",
    "AbortSignal",
    "UserInteractionProvider",
    "HarnessError",
    "UserInteractionError",
    "ErrorCode",
    "UserInteractionService",
    "validate_answer",
}
# Sections 3 and 4 live in relay.seam.tool and relay.seam.plan_review; the package re-exports them.
TOOL = {"ASK_USER_QUESTION_TOOL", "ToolResult", "run_ask_user_question"}
PLAN_REVIEW = {"PlanVerdict", "plan_review_question", "review_plan"}
# Also exported: the type of UserInteractionError.reason, the configuration error the house
# style keeps apart from runtime failures, the base of every error a user can catch, and the
# version.
EXTRAS = {"AbortReason", "RelayConfigError", "RelayException", "__version__"}

DOCUMENTED = SEAM | TOOL | PLAN_REVIEW | EXTRAS

CORE_MODULES = [
    "relay.errors",
    "relay.seam.abort",
    "relay.seam.questions",
    "relay.seam.service",
    "relay.seam.tool",
    "relay.seam.plan_review",
]


def test_all_is_exactly_the_documented_set() -> None:
    assert len(relay.__all__) == len(set(relay.__all__))
    assert set(relay.__all__) == DOCUMENTED


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_every_name_imports(name: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"from relay import {name}", namespace)  # noqa: S102 - the import statement is the test

    assert namespace[name] is getattr(relay, name)


@pytest.mark.parametrize(
    ("module", "names"), [("relay.seam.tool", TOOL), ("relay.seam.plan_review", PLAN_REVIEW)]
)
def test_tool_and_plan_review_names_are_the_same_objects_in_their_modules(
    module: str, names: set[str]
) -> None:
    mod = importlib.import_module(module)

    for name in names:
        assert getattr(mod, name) is getattr(relay, name)


def own_docstring(obj: Any) -> str | None:
    """The object's own docstring: not inherited, not a dataclass's generated signature."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    if doc and inspect.isclass(obj) and doc.startswith(f"{obj.__name__}("):
        return None
    return doc.strip() if doc else None


@pytest.mark.parametrize(
    "name", sorted(n for n in DOCUMENTED if callable(getattr(relay, n)) and n != "AbortReason")
)
def test_every_public_class_and_function_has_a_docstring(name: str) -> None:
    assert own_docstring(getattr(relay, name)), name


@pytest.mark.parametrize(
    "name", sorted(n for n in DOCUMENTED if inspect.isclass(getattr(relay, n, None)))
)
def test_every_public_method_and_property_has_a_docstring(name: str) -> None:
    cls = getattr(relay, name)
    if issubclass(cls, StrEnum):
        return
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        target = value.__func__ if isinstance(value, classmethod | staticmethod) else value
        if isinstance(target, property) or inspect.isfunction(target):
            assert (target.__doc__ or "").strip(), f"{name}.{attr}"


def test_the_package_has_a_docstring_and_ships_py_typed() -> None:
    assert (relay.__doc__ or "").strip()
    assert (Path(relay.__file__).parent / "py.typed").is_file()


def test_non_callable_exports() -> None:
    assert isinstance(relay.__version__, str)
    assert isinstance(relay.ASK_USER_QUESTION_TOOL, dict)
    assert set(typing.get_args(relay.AbortReason)) == {"aborted", "timed_out", "closed"}


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_modules_declare_all_with_importable_documented_names(module: str) -> None:
    mod = importlib.import_module(module)

    assert (mod.__doc__ or "").strip()
    for name in mod.__all__:
        obj = getattr(mod, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert own_docstring(obj), f"{module}.{name}"


# --- the types' shapes ---------------------------------------------------------------------

MISSING = dataclasses.MISSING


@pytest.mark.parametrize(
    ("cls", "fields"),
    [
        (AskUserQuestionOption, [("label", MISSING), ("description", None)]),
        (
            AskUserQuestionIntent,
            [("approve", MISSING), ("kind", "plan-review"), ("edit", None)],
        ),
        (
            AskUserQuestionItem,
            [
                ("id", MISSING),
                ("question", MISSING),
                ("detail", None),
                ("header", None),
                ("options", None),
                ("multi_select", False),
                ("intent", None),
                ("default", None),
                ("approvals_required", None),
                ("veto", None),
            ],
        ),
        (AgentRef, [("id", MISSING), ("name", None)]),
        (AskUserQuestionRequest, [("questions", MISSING), ("agent", None), ("signal", None)]),
        (
            AskUserQuestionAnswerItem,
            [
                ("id", MISSING),
                ("selected", ()),
                ("custom", None),
                ("answered_by", None),
                ("answered_at", None),
                ("defaulted", False),
                ("votes", ()),
            ],
        ),
        (Responder, [("id", MISSING), ("name", None), ("team", None), ("request", None)]),
        (AskUserQuestionAnswer, [("answers", MISSING)]),
        (PlanVerdict, [("approved", MISSING), ("feedback", None)]),
        (ToolResult, [("is_error", MISSING), ("text", MISSING), ("value", None), ("error", None)]),
    ],
)
def test_types_are_frozen_dataclasses_with_the_documented_fields(
    cls: type[Any], fields: list[tuple[str, object]]
) -> None:
    assert dataclasses.is_dataclass(cls)
    assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert [(f.name, f.default) for f in dataclasses.fields(cls)] == fields


def test_instances_cannot_be_changed() -> None:
    option = AskUserQuestionOption("A")

    with pytest.raises(dataclasses.FrozenInstanceError):
        option.label = "B"  # type: ignore[misc]


@pytest.mark.parametrize(
    "cls",
    [
        AskUserQuestionOption,
        AskUserQuestionIntent,
        AskUserQuestionItem,
        AgentRef,
        AskUserQuestionRequest,
        AskUserQuestionAnswerItem,
        Responder,
        AskUserQuestionAnswer,
    ],
)
def test_every_seam_type_has_to_dict_and_a_from_dict_classmethod(cls: type[Any]) -> None:
    assert inspect.isfunction(cls.to_dict)
    assert isinstance(inspect.getattr_static(cls, "from_dict"), classmethod)
    assert inspect.signature(cls.from_dict).parameters["strict"].kind is (
        inspect.Parameter.KEYWORD_ONLY
    )
    assert inspect.signature(cls.from_dict).parameters["strict"].default is False


def test_provider_is_a_protocol_with_an_async_ask() -> None:
    assert Protocol in UserInteractionProvider.__mro__
    assert inspect.iscoroutinefunction(UserInteractionProvider.ask)


# --- errors --------------------------------------------------------------------------------


def test_error_codes_are_exactly_the_documented_str_enum() -> None:
    assert issubclass(ErrorCode, StrEnum)
    # The seam's own codes; the full set (with the API's) is pinned by test_error_codes.
    assert {c.name for c in ErrorCode} >= {
        "EMPTY_QUESTIONS",
        "BAD_INTENT",
        "NO_PROVIDER",
        "DUPLICATE_PROVIDER",
        "ASK_ABORTED",
        "ASK_CANCELLED",
        "BAD_REQUEST",
        "PROVIDER_FAILED",
    }
    assert all(c.value == c.name for c in ErrorCode)


def test_harness_error_carries_a_str_code_and_its_message() -> None:
    error = HarnessError(ErrorCode.PROVIDER_FAILED, "Slack is down; retry later")

    assert isinstance(error, Exception)
    assert error.code == "PROVIDER_FAILED"
    assert type(error.code) is str
    assert str(error) == "Slack is down; retry later"


def test_user_interaction_error_is_a_harness_error_with_a_reason() -> None:
    aborted = UserInteractionError(ErrorCode.ASK_ABORTED, "gone", reason="timed_out")
    other = UserInteractionError(ErrorCode.NO_PROVIDER, "none")

    assert isinstance(aborted, HarnessError)
    assert (aborted.code, str(aborted), aborted.reason) == ("ASK_ABORTED", "gone", "timed_out")
    assert other.reason is None


def test_configuration_mistakes_are_not_runtime_failures() -> None:
    assert not issubclass(RelayConfigError, HarnessError)
    assert issubclass(RelayConfigError, Exception)


# --- what every other module's __all__ may hold ---------------------------------------------

# The modules users import (the docs, README and examples show them): their __all__ is their
# surface, whether or not relay itself uses a name.
USER_MODULES = (
    *("relay", "relay.client", "relay.gate.planning", "relay.gate.remote", "relay.slack"),
    "relay.webhooks",
)
USER_PACKAGES = ("relay.integrations", "relay.testing")
RELAY_ROOT = Path(relay.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(RELAY_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exports_and_uses() -> tuple[dict[str, list[str]], dict[str, set[str]]]:
    exports: dict[str, list[str]] = {}
    uses: dict[str, set[str]] = {}  # a name -> the modules that say it
    for path in sorted(RELAY_ROOT.rglob("*.py")):
        name = _module_name(path)
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                exports[name] = [ast.literal_eval(e) for e in node.value.elts]  # type: ignore[attr-defined]
        for node in ast.walk(tree):
            said = (
                node.id
                if isinstance(node, ast.Name)
                else node.attr
                if isinstance(node, ast.Attribute)
                else node.name.rpartition(".")[2]
                if isinstance(node, ast.alias)
                else None
            )
            if said is not None:
                uses.setdefault(said, set()).add(name)
    return exports, uses


def test_an_internal_module_exports_only_what_another_module_uses() -> None:
    # An internal module's __all__ is its interface to the rest of relay: a name only a test
    # imports is not part of it (the test may still import it, as any internal name).
    exports, uses = _exports_and_uses()
    unused = sorted(
        f"{module}.{name}"
        for module, names in exports.items()
        if module not in USER_MODULES and not module.startswith(USER_PACKAGES)
        for name in names
        if not uses.get(name, set()) - {module}
        # relay.cli finds each command's add_<command> by its name
        and not (module.startswith("relay.cli.") and name.startswith("add_"))
    )
    assert unused == []
