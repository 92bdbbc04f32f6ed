"""The plan-review question ``exit_plan_mode`` asks, and reading the human's verdict."""

from __future__ import annotations

import pytest

from relay import (
    AbortController,
    AgentRef,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    PlanVerdict,
    UserInteractionError,
    UserInteractionService,
    plan_review_question,
    review_plan,
)

PLAN = "# Migrate to pnpm\n\n1. Replace the lockfile.\n2. Update CI."


class AnsweringProvider:
    """Answers every ask with a fixed answer and records the requests."""

    def __init__(self, answer: AskUserQuestionAnswer) -> None:
        self.answer = answer
        self.requests: list[AskUserQuestionRequest] = []

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.requests.append(request)
        return self.answer


def reply(*items: AskUserQuestionAnswerItem) -> AnsweringProvider:
    return AnsweringProvider(AskUserQuestionAnswer(items))


def service_with(provider: AnsweringProvider) -> UserInteractionService:
    service = UserInteractionService()
    service.register_provider(provider)
    return service


# --- the question --------------------------------------------------------------------------


def test_the_question_is_exactly_seam_mds() -> None:
    assert plan_review_question(PLAN) == AskUserQuestionItem(
        id="plan-review",
        header="Plan review",
        question="Approve this plan and leave plan mode?",
        detail=PLAN,
        options=(
            AskUserQuestionOption(
                "Approve", "Leave plan mode; the plan is carried out from the next step."
            ),
            AskUserQuestionOption(
                "Keep planning", "Stay in plan mode; feedback goes back to the model."
            ),
        ),
        multi_select=False,
        intent=AskUserQuestionIntent(approve="Approve", kind="plan-review"),
    )


def test_the_question_on_the_wire() -> None:
    assert plan_review_question("# Plan").to_dict() == {
        "id": "plan-review",
        "question": "Approve this plan and leave plan mode?",
        "header": "Plan review",
        "detail": "# Plan",
        "options": [
            {
                "label": "Approve",
                "description": "Leave plan mode; the plan is carried out from the next step.",
            },
            {
                "label": "Keep planning",
                "description": "Stay in plan mode; feedback goes back to the model.",
            },
        ],
        "intent": {"kind": "plan-review", "approve": "Approve"},
    }


def test_surrounding_whitespace_is_stripped_from_the_plan() -> None:
    assert plan_review_question(f"\n\n  {PLAN}  \n").detail == PLAN


@pytest.mark.parametrize(
    "plan",
    ["# Plan", "#  Plan", "#\tPlan", "   # Plan", "# P\nbody", "# 计划", "# 1"],
)
def test_a_plan_starting_with_a_heading_is_accepted(plan: str) -> None:
    assert plan_review_question(plan).detail == plan.strip()


@pytest.mark.parametrize(
    "plan",
    [
        pytest.param("", id="empty"),
        pytest.param("   \n\t", id="blank"),
        pytest.param("Plan", id="no-heading"),
        pytest.param("#Plan", id="no-space-after-hash"),
        pytest.param("#", id="hash-only"),
        pytest.param("#   ", id="hash-and-space-only"),
        pytest.param("## Plan", id="second-level-heading"),
        pytest.param("- # Plan", id="heading-not-first"),
        pytest.param("Intro\n# Plan", id="heading-on-a-later-line"),
        pytest.param("#\nPlan", id="empty-heading-then-text"),
        pytest.param("#\n\n# Plan", id="empty-heading-then-heading"),
    ],
)
def test_a_plan_without_a_leading_heading_is_refused(plan: str) -> None:
    with pytest.raises(UserInteractionError) as info:
        plan_review_question(plan)

    assert info.value.code == ErrorCode.BAD_REQUEST
    assert "'# '" in str(info.value)


# --- review_plan ---------------------------------------------------------------------------


async def test_review_asks_the_plan_review_question_alone_with_agent_and_signal() -> None:
    provider = reply(AskUserQuestionAnswerItem("plan-review", ("Approve",)))
    agent = AgentRef("planner")
    controller = AbortController()

    await review_plan(service_with(provider), PLAN, agent=agent, signal=controller.signal)

    (request,) = provider.requests
    assert request == AskUserQuestionRequest((plan_review_question(PLAN),), agent=agent)
    assert request.signal is controller.signal


async def test_approved() -> None:
    provider = reply(AskUserQuestionAnswerItem("plan-review", ("Approve",)))

    verdict = await review_plan(service_with(provider), PLAN)

    assert verdict == PlanVerdict(approved=True, feedback=None)


async def test_keep_planning() -> None:
    provider = reply(AskUserQuestionAnswerItem("plan-review", ("Keep planning",)))

    verdict = await review_plan(service_with(provider), PLAN)

    assert verdict == PlanVerdict(approved=False, feedback=None)


async def test_keep_planning_with_feedback() -> None:
    provider = reply(AskUserQuestionAnswerItem("plan-review", (), custom="Add a rollback step."))

    verdict = await review_plan(service_with(provider), PLAN)

    assert verdict == PlanVerdict(approved=False, feedback="Add a rollback step.")


@pytest.mark.parametrize(
    ("items", "feedback"),
    [
        pytest.param(
            (AskUserQuestionAnswerItem("plan-review", ("Approve",), custom="but rename it"),),
            "but rename it",
            id="approve-with-custom",
        ),
        pytest.param((AskUserQuestionAnswerItem("plan-review"),), None, id="skipped"),
        pytest.param(
            (AskUserQuestionAnswerItem("plan-review", ("Approve", "Keep planning")),),
            None,
            id="both-labels",
        ),
        pytest.param((AskUserQuestionAnswerItem("plan-review", ("approve",)),), None, id="case"),
        pytest.param((AskUserQuestionAnswerItem("other", ("Approve",)),), None, id="wrong-id"),
        pytest.param((), None, id="no-answer"),
        pytest.param(
            (
                AskUserQuestionAnswerItem("plan-review", ("Approve",)),
                AskUserQuestionAnswerItem("plan-review", ("Approve",)),
            ),
            None,
            id="two-answers",
        ),
    ],
)
async def test_anything_but_a_plain_approve_is_keep_planning(
    items: tuple[AskUserQuestionAnswerItem, ...], feedback: str | None
) -> None:
    verdict = await review_plan(service_with(reply(*items)), PLAN)

    assert verdict == PlanVerdict(approved=False, feedback=feedback)


async def test_a_refused_plan_is_never_asked() -> None:
    provider = reply(AskUserQuestionAnswerItem("plan-review", ("Approve",)))

    with pytest.raises(UserInteractionError) as info:
        await review_plan(service_with(provider), "just do it")

    assert info.value.code == ErrorCode.BAD_REQUEST
    assert provider.requests == []


async def test_a_refused_plan_is_refused_before_any_other_check() -> None:
    controller = AbortController()
    controller.abort()

    with pytest.raises(UserInteractionError) as info:
        await review_plan(UserInteractionService(), "just do it", signal=controller.signal)

    assert info.value.code == ErrorCode.BAD_REQUEST


async def test_review_goes_through_the_services_checks() -> None:
    controller = AbortController()
    controller.abort()
    provider = reply(AskUserQuestionAnswerItem("plan-review", ("Approve",)))

    with pytest.raises(UserInteractionError) as aborted:
        await review_plan(service_with(provider), PLAN, signal=controller.signal)
    with pytest.raises(UserInteractionError) as no_provider:
        await review_plan(UserInteractionService(), PLAN)

    assert aborted.value.code == ErrorCode.ASK_ABORTED
    assert no_provider.value.code == ErrorCode.NO_PROVIDER
    assert provider.requests == []
