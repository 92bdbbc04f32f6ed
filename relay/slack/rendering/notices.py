"""What the relay tells a clicker privately when a click answers nothing. Pure."""

from __future__ import annotations

from relay.seam.questions import AskUserQuestionAnswerItem, AskUserQuestionItem
from relay.slack.intake.parse import Notice
from relay.slack.rendering.render import escape, mention
from relay.store.record import AskRecord, AskStatus

__all__ = [
    "already_answered",
    "cannot_check_groups",
    "cannot_record",
    "foreign_installation",
    "no_longer_pending",
    "not_allowed",
    "not_recorded",
    "notice_text",
    "own_ask",
]


def notice_text(notice: Notice, question: AskUserQuestionItem, *, batch: bool) -> str:
    """The private hint for a click that could not be turned into an answer."""
    skip = ", or press *Skip* to leave it unanswered" if batch else ""
    if notice is Notice.TEXT_PENDING:
        return (
            "You have typed text in the answer field, so nothing was recorded yet. Press *Enter*"
            " in the field to send the text as your answer, or clear the field and click again"
            " to choose the option."
        )
    if notice is Notice.BLANK_TEXT:
        what = "choose an option" if question.options else "type your answer"
        return f"The answer field is empty: type an answer before pressing Enter, or {what}{skip}."
    if notice is Notice.NOTHING_CHOSEN:
        return (
            "Nothing is ticked and no text was typed: tick at least one option or type"
            f" an answer{skip}."
        )
    if notice is Notice.EDIT_TYPED:
        return (
            "That text reads as an edited tool call or a narrowed plan, which is made with"
            " *Edit…* (so the message shows it), never typed. Nothing was recorded."
        )
    return "This message is out of date; reload it and answer again. Nothing was recorded."


def edit_not_opened(error: str) -> str:
    """For an "Edit…" click whose form Slack would not open (``expired_trigger_id``: the
    relay took longer than Slack's 3 s)."""
    return (
        f"The edit form could not open ({error}), so nothing changed: click *Edit…* again,"
        " or answer with the buttons."
    )


def edit_unavailable(reason: str) -> str:
    """For an "Edit…" click on a call no field of which a Slack form can edit
    (``reason``: ``edit_fields.unavailable``'s clause)."""
    return (
        f"This call cannot be edited in Slack: {escape(reason)}. No form opened: allow or"
        " deny it, or type a reason and *Deny*."
    )


def not_allowed() -> str:
    """For someone who may not answer this question."""
    return (
        "You are not allowed to answer this question, so your click was not recorded."
        " It stays open for the people who may answer it."
    )


def own_ask() -> str:
    """For the requester clicking on their own ask when self-approval is prevented."""
    return (
        "You asked for this approval, so someone else has to answer it; your click was"
        " not recorded."
    )


def cannot_check_groups() -> str:
    """For a click whose user-group membership could not be checked with Slack."""
    return (
        "The relay could not check your user group membership with Slack, so your click was"
        " not recorded. Try again in a minute."
    )


def already_answered(item: AskUserQuestionAnswerItem) -> str:
    """For a second click on a question someone already answered (or that took its default)."""
    if item.defaulted:
        return (
            "Nobody answered this question in time, so it took its default; your click changed"
            " nothing."
        )
    who = mention(item.answered_by.id) if item.answered_by else "someone"
    return f"{who} already answered this question; your click changed nothing."


def closed(record: AskRecord | None, answer: AskUserQuestionAnswerItem | None) -> str:
    """For a click on a question that is closed: who answered it, or that its ask ended."""
    return already_answered(answer) if answer is not None else no_longer_pending(record)


def no_longer_pending(record: AskRecord | None) -> str:
    """For a click on a question whose ask has ended, or that this relay does not know."""
    if record is None:
        return (
            "This question is no longer pending (it was answered, it expired, or the relay"
            " lost it), so your click was not recorded."
        )
    if record.status is AskStatus.ANSWERED:
        answered = [r for r in record.responses if r is not None and r.answered_by is not None]
        if not answered and record.defaulted:
            return (
                "Nobody answered this question in time, so it took its default; your click"
                " changed nothing."
            )
        who = ", ".join(sorted({mention(r.answered_by.id) for r in answered if r.answered_by}))
        return (
            f"This question was already answered by {who or 'someone'}; your click changed nothing."
        )
    why = {
        AskStatus.TIMED_OUT: "it timed out",
        AskStatus.ABORTED: "the agent withdrew it",
        AskStatus.FAILED: "it could not be delivered",
    }.get(record.status, "it has ended")
    return f"This question is no longer pending ({escape(why)}), so your click was not recorded."


def foreign_installation() -> str:
    """For a click that came through another installation of the app (another workspace or
    Enterprise Grid organisation) than the one this relay serves."""
    return (
        "This question belongs to another Slack organisation or workspace than the one this"
        " relay serves, so your click was not recorded."
    )


def not_recorded(reason: str) -> str:
    """For an answer the relay refused (``reason`` may quote labels or typed text)."""
    return f"That answer was not recorded: {escape(reason)}"


def cannot_record() -> str:
    """For a click that arrived while the relay's store was unreachable."""
    return "The relay cannot record answers right now; nothing was recorded. Try again in a minute."


def vote_counted(question: AskUserQuestionItem, label: str, votes: int) -> str:
    """For a vote that was counted and does not decide the question yet."""
    return (
        f"Your vote for *{escape(label)}* is counted ({votes} so far; {question.quorum} decide)."
        " A second click does not change it."
    )


def already_voted(label: str) -> str:
    """For a second vote by the same person: the first one stands."""
    return (
        f"You already voted *{escape(label)}* on this question; a vote cannot be changed, so"
        " your click changed nothing."
    )


def stale_version(version: int) -> str:
    """For a vote or an edit on a version of a tool call that another edit replaced."""
    return (
        f"This call was edited meanwhile (now version {version}), so your vote on the version"
        " you saw was not counted: read the message as it shows now, and vote on that."
    )


def vote_needs_an_option(question: AskUserQuestionItem) -> str:
    """For typed text or a skip on a question decided by votes."""
    return (
        f"This question is decided by votes ({question.quorum} people for an option): choose"
        " one of its options. Typed text and skips are not votes, so nothing was recorded."
    )
