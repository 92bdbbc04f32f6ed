"""The seam's types, their camelCase JSON wire form, and the rules an answer must follow.

Everything here is pure: no I/O, no clock. ``from_dict`` reads the wire form and names the
path of the first bad field; ``validate_request`` and ``validate_answer`` check the seam's rules.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self

from relay.errors import ErrorCode, UserInteractionError, bad_request

from .intents import AskUserQuestionIntent, ToolEdit
from .labels import Answers as Answers
from .labels import Labels as Labels
from .labels import equal_or_wire
from .limits import MAX_APPROVALS as MAX_APPROVALS
from .parties import AgentRef, Responder, Vote
from .wire_reader import Reader as _Reader
from .wire_reader import path_of as _prefix

if TYPE_CHECKING:
    from .abort import AbortSignal

__all__ = [
    "MAX_QUESTIONS",
    "AgentRef",
    "AskUserQuestionAnswer",
    "AskUserQuestionAnswerItem",
    "AskUserQuestionIntent",
    "AskUserQuestionItem",
    "AskUserQuestionOption",
    "AskUserQuestionRequest",
    "Responder",
    "ToolEdit",
    "Vote",
    "validate_answer",
    "validate_request",
]

# What one person can answer in one go: Slack's own batch forms stop at a few dozen inputs.
MAX_QUESTIONS = 25


@dataclass(frozen=True, slots=True)
class AskUserQuestionOption:
    """One choice offered with a question: its exact label and an optional description."""

    label: str
    description: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form; unset fields are omitted."""
        out: dict[str, Any] = {"label": self.label}
        if self.description is not None:
            out["description"] = self.description
        return out

    @classmethod
    def from_dict(cls, data: object, *, strict: bool = False, path: str = "") -> Self:
        """Read the wire form; raises ``BAD_REQUEST`` naming the bad field."""
        r = _Reader(data, path, frozenset({"label", "description"}), strict=strict)
        return cls(label=r.text("label"), description=r.opt_str("description"))


@dataclass(frozen=True, slots=True)
class AskUserQuestionItem:
    """One question: what to ask, optional supporting detail, and the options offered.

    ``default`` names the option taken when nobody answers before the ask times out; the
    answer then says it was a default (``AskUserQuestionAnswerItem.defaulted``).
    ``approvals_required`` (2 or more) makes each option wait for that many votes from
    distinct people, except the ``veto`` labels, which one vote decides at once.
    """

    id: str
    question: str
    detail: str | None = None
    header: str | None = None
    options: Sequence[AskUserQuestionOption] | None = None
    multi_select: bool = False
    intent: AskUserQuestionIntent | None = None
    default: str | None = None
    approvals_required: int | None = None
    veto: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if self.options is not None and not isinstance(self.options, tuple):
            object.__setattr__(self, "options", tuple(self.options))
        if self.veto is not None and not isinstance(self.veto, tuple):
            object.__setattr__(self, "veto", tuple(self.veto))

    @property
    def quorum(self) -> int:
        """How many distinct people's votes decide a (non-veto) option: 1 unless set."""
        return self.approvals_required or 1

    @property
    def labels(self) -> tuple[str, ...]:
        """The option labels, in order (empty when there are no options)."""
        return tuple(o.label for o in self.options or ())

    def to_dict(self) -> dict[str, Any]:
        """The wire form; unset fields are omitted, ``multiSelect`` only when true."""
        out: dict[str, Any] = {"id": self.id, "question": self.question}
        if self.header is not None:
            out["header"] = self.header
        if self.detail is not None:
            out["detail"] = self.detail
        if self.options is not None:
            out["options"] = [o.to_dict() for o in self.options]
        if self.multi_select:
            out["multiSelect"] = True
        if self.intent is not None:
            out["intent"] = self.intent.to_dict()
        if self.default is not None:
            out["default"] = self.default
        if self.approvals_required is not None:
            out["approvalsRequired"] = self.approvals_required
        if self.veto is not None:
            out["veto"] = list(self.veto)
        return out

    @classmethod
    def from_dict(cls, data: object, *, strict: bool = False, path: str = "") -> Self:
        """Read the wire form; raises ``BAD_REQUEST`` naming the bad field."""
        known = frozenset(
            {
                "id",
                "question",
                "detail",
                "header",
                "options",
                "multiSelect",
                "intent",
                "default",
                "approvalsRequired",
                "veto",
            }
        )
        r = _Reader(data, path, known, strict=strict)
        raw_options = r.array("options", required=False)
        options = None
        if raw_options is not None:
            options = tuple(
                AskUserQuestionOption.from_dict(
                    o, strict=strict, path=f"{_prefix(path, 'options')}[{i}]"
                )
                for i, o in enumerate(raw_options)
            )
        raw_intent = r.data.get("intent")
        intent = None
        if raw_intent is not None:
            intent = AskUserQuestionIntent.from_dict(
                raw_intent, strict=strict, path=_prefix(path, "intent")
            )
        return cls(
            id=r.text("id"),
            question=r.text("question"),
            detail=r.opt_str("detail"),
            header=r.opt_str("header"),
            options=options,
            multi_select=r.flag("multiSelect"),
            intent=intent,
            default=r.opt_str("default"),
            approvals_required=r.opt_int("approvalsRequired"),
            veto=r.opt_labels("veto"),
        )


@dataclass(frozen=True, slots=True)
class AskUserQuestionRequest:
    """A batch of questions to put to the human, who is asking, and an optional abort signal."""

    questions: Sequence[AskUserQuestionItem]
    agent: AgentRef | None = None
    signal: AbortSignal | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.questions, tuple):
            object.__setattr__(self, "questions", tuple(self.questions))

    def to_dict(self) -> dict[str, Any]:
        """The wire form (the signal is not part of it)."""
        out: dict[str, Any] = {"questions": [q.to_dict() for q in self.questions]}
        if self.agent is not None:
            out["agent"] = self.agent.to_dict()
        return out

    @classmethod
    def from_dict(
        cls,
        data: object,
        *,
        strict: bool = False,
        path: str = "",
        signal: AbortSignal | None = None,
    ) -> Self:
        """Read the wire form; raises ``BAD_REQUEST`` naming the bad field."""
        r = _Reader(data, path, frozenset({"questions", "agent"}), strict=strict)
        raw = r.array("questions", required=True) or []
        questions = tuple(
            AskUserQuestionItem.from_dict(
                q, strict=strict, path=f"{_prefix(path, 'questions')}[{i}]"
            )
            for i, q in enumerate(raw)
        )
        raw_agent = r.data.get("agent")
        agent = None
        if raw_agent is not None:
            agent = AgentRef.from_dict(raw_agent, strict=strict, path=_prefix(path, "agent"))
        return cls(questions=questions, agent=agent, signal=signal)


@dataclass(frozen=True, slots=True)
class AskUserQuestionAnswerItem:
    """The answer to one question; ``answered_by``/``answered_at`` are audit metadata only.

    ``selected`` compares equal to a list of the same labels (see ``Labels``); the item
    equals its wire form too (``{"id": "go", "selected": ["Deploy"]}``).
    ``defaulted``: nobody answered in time and this is the question's ``default``, never a
    person's choice (``answered_by`` is then ``None``). ``skipped``: the person pressed
    Skip (no option, no text, not a default). ``votes``: on a question that needed
    several, every vote counted (audit metadata; ``answered_by`` cast the deciding one).
    """

    id: str
    selected: Sequence[str] = ()
    custom: str | None = None
    answered_by: Responder | None = field(default=None, compare=False)
    answered_at: datetime | None = field(default=None, compare=False)
    defaulted: bool = False
    votes: Sequence[Vote] = field(default=(), compare=False)
    __eq__ = equal_or_wire

    def __post_init__(self) -> None:
        if not isinstance(self.selected, Labels):
            object.__setattr__(self, "selected", Labels(self.selected))
        if not isinstance(self.votes, tuple):
            object.__setattr__(self, "votes", tuple(self.votes))

    @property
    def skipped(self) -> bool:
        """Left unanswered on purpose: nothing selected, no text, not a default. (The wire
        form shows it as ``"selected": []`` with no ``custom``; it adds no field.)"""
        return not self.selected and self.custom is None and not self.defaulted

    def to_dict(self) -> dict[str, Any]:
        """The wire form: ``id``, ``selected``, ``custom`` when there is one, and
        ``defaulted: true`` when nobody answered and this is the question's default."""
        out: dict[str, Any] = {"id": self.id, "selected": list(self.selected)}
        if self.custom is not None:
            out["custom"] = self.custom
        if self.defaulted:
            out["defaulted"] = True
        return out

    @classmethod
    def from_dict(cls, data: object, *, strict: bool = False, path: str = "") -> Self:
        """Read the wire form; raises ``BAD_REQUEST`` naming the bad field."""
        known = frozenset({"id", "selected", "custom", "defaulted"})
        r = _Reader(data, path, known, strict=strict)
        raw = r.array("selected", required=False) or []
        for i, label in enumerate(raw):
            if not isinstance(label, str):
                raise bad_request(f"{r.at('selected')}[{i}] must be a string")
        return cls(
            id=r.text("id"),
            selected=tuple(raw),
            custom=r.opt_str("custom"),
            defaulted=r.flag("defaulted"),
        )


@dataclass(frozen=True, slots=True)
class AskUserQuestionAnswer:
    """The answers to a batch, one item per question in the question order. ``answers``
    equals a list of the items or of their wire forms (see ``Answers``), and the answer
    its wire form (``{"answers": [...]}``)."""

    answers: Sequence[AskUserQuestionAnswerItem]
    __eq__ = equal_or_wire

    def __post_init__(self) -> None:
        if not isinstance(self.answers, Answers):
            object.__setattr__(self, "answers", Answers(self.answers))

    @property
    def skipped(self) -> bool:
        """Every question was skipped: the person answered none of them."""
        return bool(self.answers) and all(a.skipped for a in self.answers)

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        return {"answers": [a.to_dict() for a in self.answers]}

    @classmethod
    def from_dict(cls, data: object, *, strict: bool = False, path: str = "") -> Self:
        """Read the wire form; raises ``BAD_REQUEST`` naming the bad field."""
        r = _Reader(data, path, frozenset({"answers"}), strict=strict)
        raw = r.array("answers", required=True) or []
        return cls(
            answers=tuple(
                AskUserQuestionAnswerItem.from_dict(
                    a, strict=strict, path=f"{_prefix(path, 'answers')}[{i}]"
                )
                for i, a in enumerate(raw)
            )
        )


def validate_request(request: AskUserQuestionRequest) -> None:
    """Apply the seam's request checks 2 and 3 (questions present, intents well-formed),
    then refuse what would make an answer ambiguous or flood a channel (``BAD_REQUEST``):
    more than ``MAX_QUESTIONS`` questions, two questions with one id, two options of one
    question with one label, a ``default`` that is none of the question's labels."""
    if not request.questions:
        raise UserInteractionError(
            ErrorCode.EMPTY_QUESTIONS, "ask_user_question requires at least one question"
        )
    _validate_intents(request)
    if len(request.questions) > MAX_QUESTIONS:
        raise bad_request(
            f"the request has {len(request.questions)} questions; ask at most {MAX_QUESTIONS}"
            " at once (split the rest into another ask)"
        )
    ids: set[str] = set()
    for i, q in enumerate(request.questions):
        if not q.question.strip():  # nobody could answer it: it would wait out its timeout
            raise bad_request(f"questions[{i}].question is blank; write what to ask")
        if q.id in ids:
            raise bad_request(
                f"questions[{i}].id {json.dumps(q.id)} is used by an earlier question; each"
                " question needs its own id (the answer names questions by id)"
            )
        ids.add(q.id)
        labels: set[str] = set()
        for j, label in enumerate(q.labels):
            if label in labels:
                raise bad_request(
                    f"questions[{i}].options[{j}].label {json.dumps(label)} repeats an earlier"
                    f" option of question {q.id}; each option needs its own label (the"
                    " answer names options by label)"
                )
            labels.add(label)
        if q.default is not None and q.default not in labels:
            raise bad_request(
                f"questions[{i}].default {json.dumps(q.default)} names none of the options of"
                f" question {q.id}; name one of their labels (or leave default out)"
            )
        _validate_quorum(q, i, labels)


def _validate_quorum(q: AskUserQuestionItem, i: int, labels: set[str]) -> None:
    where = f"questions[{i}]"
    if q.approvals_required is not None:
        if not 1 <= q.approvals_required <= MAX_APPROVALS:
            raise bad_request(
                f"{where}.approvalsRequired is {q.approvals_required}; it must be 1 to"
                f" {MAX_APPROVALS} (distinct people who must vote for an option)"
            )
        if q.quorum > 1 and (not labels or q.multi_select):
            raise bad_request(
                f"{where}.approvalsRequired needs a single-select question with options:"
                " people vote for one option each"
            )
    for label in q.veto or ():
        if label not in labels:
            raise bad_request(
                f"{where}.veto names {json.dumps(label)}, which is none of the options of"
                f" question {q.id}"
            )
    if labels and q.veto is not None and set(q.veto) >= labels:
        raise bad_request(
            f"{where}.veto names every option; leave at least one to be approved by votes"
        )


def _validate_intents(request: AskUserQuestionRequest) -> None:
    for q in request.questions:
        if q.intent is None:
            continue
        if q.intent.approve not in q.labels:
            raise UserInteractionError(
                ErrorCode.BAD_INTENT,
                f"question {q.id} declares intent {q.intent.kind} whose approve label"
                f" {json.dumps(q.intent.approve)} names none of its options",
            )
        if q.detail is None:
            raise UserInteractionError(
                ErrorCode.BAD_INTENT,
                f"question {q.id} declares intent {q.intent.kind} without the detail it reviews",
            )


def validate_answer(request: AskUserQuestionRequest, answer: AskUserQuestionAnswer) -> None:
    """Raise ``BAD_REQUEST`` naming the broken rule unless ``answer`` fits ``request`` exactly."""
    questions, answers = request.questions, answer.answers
    if len(answers) != len(questions):
        raise bad_request(
            f"the answer has {len(answers)} items but the request has {len(questions)} questions"
        )
    for i, (q, a) in enumerate(zip(questions, answers, strict=True)):
        validate_answer_item(q, a, index=i)


def validate_answer_item(
    question: AskUserQuestionItem, item: AskUserQuestionAnswerItem, *, index: int
) -> None:
    """Check one answer item against its question (see ``validate_answer``)."""
    where = f"answers[{index}]"
    if item.id != question.id:
        raise bad_request(
            f"{where}.id is {json.dumps(item.id)} but question {index} has id"
            f" {json.dumps(question.id)}; answer the questions in order"
        )
    labels = question.labels
    seen: set[str] = set()
    for label in item.selected:
        if label in seen:
            raise bad_request(f"{where}.selected repeats the label {json.dumps(label)}")
        seen.add(label)
        if label not in labels:
            raise bad_request(
                f"{where}.selected has {json.dumps(label)}, which is not one of the options"
                f" of question {question.id}"
            )
    if not question.multi_select:
        if len(item.selected) > 1:
            raise bad_request(
                f"{where}.selected has {len(item.selected)} labels but question"
                f" {question.id} takes one"
            )
        if item.custom is not None and item.selected:
            raise bad_request(
                f"{where} has both a selected label and custom text, but on single-select"
                f" question {question.id} custom text replaces the choice: leave selected empty"
            )
    if item.custom is not None and not item.custom.strip():
        raise bad_request(f"{where}.custom is blank; omit it when there is no text")
