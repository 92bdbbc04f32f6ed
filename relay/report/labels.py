"""Names for the calls a report lists: a receipt holds only the digest of what people were
shown, so a repeated call is named from an ask the relay still keeps (or an asks export),
and only when that ask's question hashes to the very digest the receipt signed
(``relay.receipts.payload``).

The name is the call's canonical form as the rules see it (``relay.canonical.match``): the
tool, the command as written or the normalised path, and the directory it ran in.
"""

from __future__ import annotations

import html
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from relay.canonical.match import subject
from relay.errors import HarnessError
from relay.receipts.jcs import canonical
from relay.receipts.payload import digest, subject_digest
from relay.report.figures import RepeatedCall
from relay.seam.questions import AskUserQuestionItem
from relay.store.record import AskRecord

__all__ = ["labels_for", "labels_from_asks"]

_LONGEST = 160
# A shell command as ``relay.gate.describe`` shows it: its code block, then where it runs.
_SHOWN = re.compile(r"^```sh\n(.*?)\n```(?:\nin `([^`\n]*)`)?", re.DOTALL | re.MULTILINE)

Lookup = Callable[[str], Awaitable[AskRecord | None]]


def call_label(record: AskRecord) -> str | None:
    """The canonical form of the call ``record`` asked about, or ``None`` for an ask that is
    no single tool approval (``question_label``)."""
    questions = record.request.questions
    return question_label(questions[0]) if len(questions) == 1 else None


def question_label(question: AskUserQuestionItem) -> str:
    """The call an approval's ``question`` shows: its tool and input in canonical form when
    the question carries them (an editable call), else as it showed them, else its text."""
    intent = question.intent
    edit = intent.edit if intent is not None else None
    if edit is None:
        return _as_shown(question.header, question.detail) or question.question[:_LONGEST]
    use = subject(edit.tool, edit.input)
    if use.command is not None:
        shown = use.command
    elif use.where is not None:
        shown = use.where.absolute or use.path or ""
    else:
        shown = next((f"{k}={v}" for k, v in sorted(edit.input.items())), "")
    where = f"  (in {use.cwd})" if use.cwd and use.command is not None else ""
    return f"{use.tool}: {shown}{where}"[:_LONGEST]


def labels_from_asks(asks: Iterable[Mapping[str, Any]], shown: Iterable[str]) -> dict[str, str]:
    """Labels for the ``shown`` digests from an asks export (``relay audit``'s items), each
    taken only from an ask whose questions hash to that very digest."""
    wanted = set(shown)
    found: dict[str, str] = {}
    for item in asks:
        questions = item.get("questions")
        if not isinstance(questions, list) or len(questions) != 1:
            continue
        try:
            signed = digest(canonical(questions))
            question = AskUserQuestionItem.from_dict(questions[0])
        except (ValueError, TypeError, HarnessError):
            continue  # (not a question this relay wrote: it names nothing)
        if signed in wanted and signed not in found:
            found[signed] = question_label(question)
    return found


def _as_shown(header: str | None, detail: str | None) -> str | None:
    """The call as its question showed it (no edit offered, so no input kept): the tool from
    the header, the command from the shown code block and the directory after it."""
    tool = (header or "").removesuffix(": permission request")
    shown = _SHOWN.search(detail or "")
    if not tool or shown is None:
        return None
    command = " ".join(html.unescape(shown.group(1)).split())
    where = f"  (in {html.unescape(shown.group(2))})" if shown.group(2) else ""
    return f"{tool}: {command}{where}"[:_LONGEST]


async def labels_for(calls: tuple[RepeatedCall, ...], lookup: Lookup) -> dict[str, str]:
    """A label for each of ``calls`` whose asks the relay still keeps (``lookup``: an ask by
    id), by shown digest; a kept ask whose question no longer hashes to it names nothing."""
    found: dict[str, str] = {}
    for call in calls:
        for ask_id in reversed(call.asks[-5:]):  # the newest are the likeliest kept
            record = await lookup(ask_id)
            if record is None or subject_digest(record) != call.shown:
                continue
            label = call_label(record)
            if label is not None:
                found[call.shown] = label
                break
    return found
