"""``UserInteractionService``: the order of its checks, its messages, and provider registration."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from relay import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionService,
)
from relay.errors import ask_aborted

ABORTED = "ask_user_question was aborted before the user answered"
EMPTY = "ask_user_question requires at least one question"
NO_PROVIDER = "no user-interaction provider is registered"
DUPLICATE = "a user-interaction provider is already registered"

TIMEOUT = 2.0

ANSWER = AskUserQuestionAnswer((AskUserQuestionAnswerItem("env", ("staging",)),))


class RecordingProvider:
    """Answers every ask at once with a fixed answer and records the requests it saw."""

    def __init__(self, answer: AskUserQuestionAnswer = ANSWER) -> None:
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


class PendingProvider:
    """Holds each ask until the test answers it; honours abort and cancellation while waiting.

    While pending it races the human's answer against the request's signal. On abort it
    withdraws the question and raises ``ASK_ABORTED``; on cancellation it withdraws the question
    and lets ``CancelledError`` propagate. With ``honour_abort=False`` it ignores the signal.
    """

    def __init__(self, *, honour_abort: bool = True) -> None:
        self.honour_abort = honour_abort
        self.pending = asyncio.Event()
        self.withdrawn: list[str] = []
        self._answer: asyncio.Future[AskUserQuestionAnswer] | None = None

    def answer(self, answer: AskUserQuestionAnswer) -> None:
        assert self._answer is not None
        self._answer.set_result(answer)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        answered: asyncio.Future[AskUserQuestionAnswer] = asyncio.get_running_loop().create_future()
        self._answer = answered
        waiters: set[asyncio.Future[Any]] = {answered}
        aborted: asyncio.Task[None] | None = None
        if self.honour_abort and request.signal is not None:
            aborted = asyncio.create_task(request.signal.wait())
            waiters.add(aborted)
        self.pending.set()
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self.withdrawn.append("cancelled")
            raise
        finally:
            if aborted is not None and not aborted.done():
                aborted.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await aborted
        if answered.done():
            return answered.result()
        self.withdrawn.append("aborted")
        raise ask_aborted()


def question(qid: str = "env", **fields: object) -> AskUserQuestionItem:
    return AskUserQuestionItem.from_dict({"id": qid, "question": "Deploy where?", **fields})


def request(*questions: AskUserQuestionItem, aborted: bool = False) -> AskUserQuestionRequest:
    controller = AbortController()
    if aborted:
        controller.abort()
    return AskUserQuestionRequest(questions, signal=controller.signal)


REVIEWED = question(
    "plan",
    detail="# Plan",
    options=[{"label": "Approve"}, {"label": "Keep planning"}],
    intent={"kind": "plan-review", "approve": "Approve"},
)
BAD_APPROVE = question(
    "env",
    detail="…",
    options=[{"label": "staging"}, {"label": "prod"}],
    intent={"kind": "plan-review", "approve": "Staging"},
)
BAD_APPROVE_MESSAGE = (
    'question env declares intent plan-review whose approve label "Staging" names none of its'
    " options"
)
NO_DETAIL = question(
    "ship",
    options=[{"label": "Approve"}],
    intent={"kind": "plan-review", "approve": "Approve"},
)
NO_DETAIL_MESSAGE = "question ship declares intent plan-review without the detail it reviews"


async def ask_error(
    service: UserInteractionService, req: AskUserQuestionRequest
) -> UserInteractionError:
    with pytest.raises(UserInteractionError) as info:
        await service.ask(req)
    return info.value


# --- check order ---------------------------------------------------------------------------

CHECK_CASES = [
    pytest.param(request(aborted=True), ErrorCode.ASK_ABORTED, ABORTED, id="aborted-and-empty"),
    pytest.param(
        request(BAD_APPROVE, aborted=True), ErrorCode.ASK_ABORTED, ABORTED, id="aborted-bad-intent"
    ),
    pytest.param(
        request(question(), aborted=True), ErrorCode.ASK_ABORTED, ABORTED, id="aborted-valid"
    ),
    pytest.param(request(), ErrorCode.EMPTY_QUESTIONS, EMPTY, id="empty"),
    pytest.param(
        AskUserQuestionRequest(()), ErrorCode.EMPTY_QUESTIONS, EMPTY, id="empty-no-signal"
    ),
    pytest.param(
        request(BAD_APPROVE), ErrorCode.BAD_INTENT, BAD_APPROVE_MESSAGE, id="approve-not-an-option"
    ),
    pytest.param(request(NO_DETAIL), ErrorCode.BAD_INTENT, NO_DETAIL_MESSAGE, id="no-detail"),
]


@pytest.mark.parametrize(("req", "code", "message"), CHECK_CASES)
async def test_failed_check_without_a_provider(
    req: AskUserQuestionRequest, code: ErrorCode, message: str
) -> None:
    error = await ask_error(UserInteractionService(), req)

    assert (error.code, str(error)) == (code, message)


@pytest.mark.parametrize(("req", "code", "message"), CHECK_CASES)
async def test_failed_check_with_a_provider_never_calls_it(
    req: AskUserQuestionRequest, code: ErrorCode, message: str
) -> None:
    service = UserInteractionService()
    provider = RecordingProvider()
    service.register_provider(provider)

    error = await ask_error(service, req)

    assert (error.code, str(error)) == (code, message)
    assert provider.requests == []


async def test_no_provider_comes_last_after_a_well_formed_request() -> None:
    error = await ask_error(UserInteractionService(), request(question(), REVIEWED))

    assert (error.code, str(error), error.reason) == (ErrorCode.NO_PROVIDER, NO_PROVIDER, None)


async def test_abort_before_ask_is_reported_with_reason_aborted() -> None:
    service = UserInteractionService()
    provider = RecordingProvider()
    service.register_provider(provider)

    error = await ask_error(service, request(question(), aborted=True))

    assert error.code == ErrorCode.ASK_ABORTED
    assert str(error) == ABORTED
    assert error.reason == "aborted"
    assert provider.requests == []


@pytest.mark.parametrize("code", [ErrorCode.EMPTY_QUESTIONS, ErrorCode.BAD_INTENT])
async def test_check_errors_other_than_abort_have_no_reason(code: ErrorCode) -> None:
    req = request() if code == ErrorCode.EMPTY_QUESTIONS else request(NO_DETAIL)

    error = await ask_error(UserInteractionService(), req)

    assert error.code == code
    assert error.reason is None


# --- intent checks in detail ---------------------------------------------------------------


async def test_intent_checks_run_per_question_in_order() -> None:
    first = await ask_error(UserInteractionService(), request(question(), BAD_APPROVE, NO_DETAIL))
    second = await ask_error(UserInteractionService(), request(NO_DETAIL, BAD_APPROVE))

    assert str(first) == BAD_APPROVE_MESSAGE
    assert str(second) == NO_DETAIL_MESSAGE


async def test_approve_is_checked_before_detail_on_the_same_question() -> None:
    both_wrong = question(
        "x", options=[{"label": "Yes"}], intent={"kind": "plan-review", "approve": "No"}
    )

    error = await ask_error(UserInteractionService(), request(both_wrong))

    assert str(error) == (
        'question x declares intent plan-review whose approve label "No" names none of its options'
    )


async def test_intent_on_a_question_without_options_fails_the_approve_check() -> None:
    no_options = question("bare", detail="# Plan", intent={"kind": "plan-review", "approve": "A"})

    error = await ask_error(UserInteractionService(), request(no_options))

    assert error.code == ErrorCode.BAD_INTENT
    assert str(error) == (
        'question bare declares intent plan-review whose approve label "A" names none of its'
        " options"
    )


async def test_approve_must_name_one_of_that_questions_own_options() -> None:
    other = question("other", options=[{"label": "Approve"}])
    borrowed = question(
        "mine",
        detail="# Plan",
        options=[{"label": "Yes"}],
        intent={"kind": "plan-review", "approve": "Approve"},
    )

    error = await ask_error(UserInteractionService(), request(other, borrowed))

    assert str(error) == (
        'question mine declares intent plan-review whose approve label "Approve" names none of'
        " its options"
    )


@pytest.mark.parametrize(
    ("approve", "shown"),
    [
        ('Say "yes"', '"Say \\"yes\\""'),
        ("Già", '"Gi\\u00e0"'),
        ("", '""'),
    ],
)
async def test_approve_label_is_quoted_as_json_dumps_does(approve: str, shown: str) -> None:
    item = AskUserQuestionItem(
        "q",
        "?",
        detail="d",
        options=(AskUserQuestionOption("Approve"),),
        intent=AskUserQuestionIntent(approve),
    )

    error = await ask_error(UserInteractionService(), request(item))

    assert str(error) == (
        f"question q declares intent plan-review whose approve label {shown} names none of its"
        " options"
    )


async def test_empty_detail_counts_as_detail() -> None:
    service = UserInteractionService()
    provider = RecordingProvider()
    service.register_provider(provider)
    item = question(
        "q", detail="", options=[{"label": "A"}], intent={"kind": "plan-review", "approve": "A"}
    )

    assert await service.ask(request(item)) is provider.answer


# --- handing over to the provider ----------------------------------------------------------


async def test_provider_gets_the_same_request_object_and_its_answer_is_returned_as_is() -> None:
    service = UserInteractionService()
    provider = RecordingProvider()
    service.register_provider(provider)
    req = request(question(), REVIEWED)

    answer = await service.ask(req)

    assert answer is provider.answer
    assert len(provider.requests) == 1
    assert provider.requests[0] is req


async def test_the_service_does_not_check_the_providers_answer() -> None:
    nonsense = AskUserQuestionAnswer(
        (AskUserQuestionAnswerItem("nope", ("a", "a"), custom=" "), AskUserQuestionAnswerItem(""))
    )
    service = UserInteractionService()
    service.register_provider(RecordingProvider(nonsense))

    assert await service.ask(request(question())) is nonsense


async def test_a_request_without_a_signal_is_asked() -> None:
    service = UserInteractionService()
    provider = RecordingProvider()
    service.register_provider(provider)

    assert await service.ask(AskUserQuestionRequest((question(),))) is provider.answer


async def test_provider_errors_propagate_unchanged() -> None:
    cancelled = UserInteractionError(
        ErrorCode.ASK_CANCELLED, "the user cancelled ask_user_question"
    )
    service = UserInteractionService()
    service.register_provider(FailingProvider(cancelled))

    error = await ask_error(service, request(question()))

    assert error is cancelled


# --- register_provider ---------------------------------------------------------------------


async def test_second_registration_raises_duplicate_and_the_first_stays_active() -> None:
    service = UserInteractionService()
    first, second = RecordingProvider(), RecordingProvider()
    service.register_provider(first)

    with pytest.raises(UserInteractionError) as info:
        service.register_provider(second)

    assert (info.value.code, str(info.value)) == (ErrorCode.DUPLICATE_PROVIDER, DUPLICATE)
    await service.ask(request(question()))
    assert len(first.requests) == 1
    assert second.requests == []


def test_registering_the_same_provider_twice_is_a_duplicate() -> None:
    service = UserInteractionService()
    provider = RecordingProvider()
    service.register_provider(provider)

    with pytest.raises(UserInteractionError) as info:
        service.register_provider(provider)

    assert info.value.code == ErrorCode.DUPLICATE_PROVIDER


async def test_disposer_unregisters_the_provider() -> None:
    service = UserInteractionService()
    provider = RecordingProvider()
    dispose = service.register_provider(provider)

    dispose()

    error = await ask_error(service, request(question()))
    assert (error.code, str(error)) == (ErrorCode.NO_PROVIDER, NO_PROVIDER)
    assert provider.requests == []


async def test_a_disposed_slot_takes_a_new_provider() -> None:
    service = UserInteractionService()
    service.register_provider(RecordingProvider())()
    replacement = RecordingProvider()

    service.register_provider(replacement)

    await service.ask(request(question()))
    assert len(replacement.requests) == 1


async def test_calling_a_disposer_twice_does_nothing() -> None:
    service = UserInteractionService()
    dispose = service.register_provider(RecordingProvider())

    dispose()
    dispose()

    assert (await ask_error(service, request(question()))).code == ErrorCode.NO_PROVIDER


@pytest.mark.parametrize("same_object", [False, True], ids=["other-provider", "same-provider"])
async def test_a_stale_disposer_never_unregisters_a_later_registration(same_object: bool) -> None:
    service = UserInteractionService()
    first = RecordingProvider()
    stale: Callable[[], None] = service.register_provider(first)
    stale()
    later = first if same_object else RecordingProvider()
    service.register_provider(later)

    stale()

    await service.ask(request(question()))
    assert len(later.requests) == 1
    with pytest.raises(UserInteractionError):
        service.register_provider(RecordingProvider())


# --- abort and cancellation while the question is pending ----------------------------------


async def test_provider_that_honours_abort_while_waiting_raises_ask_aborted() -> None:
    service = UserInteractionService()
    provider = PendingProvider()
    service.register_provider(provider)
    controller = AbortController()
    task = asyncio.create_task(
        service.ask(AskUserQuestionRequest((question(),), signal=controller.signal))
    )
    await asyncio.wait_for(provider.pending.wait(), TIMEOUT)

    controller.abort("user closed the tab")

    with pytest.raises(UserInteractionError) as info:
        await asyncio.wait_for(task, TIMEOUT)
    assert info.value.code == ErrorCode.ASK_ABORTED
    assert str(info.value) == ABORTED
    assert info.value.reason == "aborted"
    assert provider.withdrawn == ["aborted"]


async def test_pending_ask_returns_the_answer_when_the_human_answers_first() -> None:
    service = UserInteractionService()
    provider = PendingProvider()
    service.register_provider(provider)
    controller = AbortController()
    task = asyncio.create_task(
        service.ask(AskUserQuestionRequest((question(),), signal=controller.signal))
    )
    await asyncio.wait_for(provider.pending.wait(), TIMEOUT)

    provider.answer(ANSWER)

    assert await asyncio.wait_for(task, TIMEOUT) == ANSWER
    controller.abort()
    assert provider.withdrawn == []


async def test_service_checks_the_signal_only_before_asking() -> None:
    service = UserInteractionService()
    provider = PendingProvider(honour_abort=False)
    service.register_provider(provider)
    controller = AbortController()
    task = asyncio.create_task(
        service.ask(AskUserQuestionRequest((question(),), signal=controller.signal))
    )
    await asyncio.wait_for(provider.pending.wait(), TIMEOUT)

    controller.abort()
    provider.answer(ANSWER)

    # Withdrawing on abort is the provider's job: this one ignores the signal, so it answers.
    assert await asyncio.wait_for(task, TIMEOUT) == ANSWER


async def test_cancelling_the_awaiting_task_withdraws_and_propagates_cancelled_error() -> None:
    service = UserInteractionService()
    provider = PendingProvider()
    service.register_provider(provider)
    task = asyncio.create_task(service.ask(request(question())))
    await asyncio.wait_for(provider.pending.wait(), TIMEOUT)

    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, TIMEOUT)
    assert provider.withdrawn == ["cancelled"]
