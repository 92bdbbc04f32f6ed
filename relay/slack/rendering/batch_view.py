"""One message for a batch of tool approvals (``relay.asks.batches``). Pure: no I/O.

The message lists every call with its whole input and how it stands, and offers *Allow
all shown*, *Deny all shown* and *Review each* (each call with its own buttons and Edit…).
Which calls the batch buttons cover is decided here from the calls' own records, the same
way for the message and for the click (``covered``): a call whose approvers differ from the
batch's is never covered, and shows its own buttons from the start. The batch buttons only
ever stand for clicks on each call's own *Allow once* or *Deny*, checked call by call.

Slack's limits: a page holds as many calls as fit in ``MESSAGE_CHARS`` characters,
``MESSAGE_BYTES`` bytes and ``MAX_BLOCKS`` blocks with their buttons shown and their
longest status line, so pages never move as calls are decided; more calls page within the
message (*Next*, *Previous*). A call whose input does not fit ``CALL_CHARS`` is never
batched: it gets its own message, which continues a long input in its thread.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from relay.asks.batches import BatchRef
from relay.asks.terms import outcome_of
from relay.seam.questions import AskUserQuestionItem
from relay.slack.rendering import kit
from relay.slack.rendering.answered import answered_line
from relay.slack.rendering.inputs import block_id, input_blocks, option_listing
from relay.slack.rendering.reminders import escalation_note
from relay.slack.rendering.render import MESSAGE_CHARS, RenderedQuestion
from relay.slack.rendering.room import MAX_BLOCKS, MESSAGE_BYTES, blocks_bytes
from relay.slack.rendering.text import block_text_length, escape_within, inert_markdown, units
from relay.store import AskRecord, Target

__all__ = ["ACTION_BATCH", "Mode", "batchable", "covered", "pages", "render_batch"]

ACTION_BATCH = "relay.batch"
"""The batch buttons' action ids: ``relay.batch.{allow,deny,review,list,prev,next}``."""
CALL_CHARS = 1200
"""The longest input (as shown) a batched call may have: a longer one gets its own message."""
Mode = Literal["list", "review"]

_QUESTION_CHARS = 300
_STATUS_CHARS = 600
_FIXED_CHARS = 1500  # header, page line, batch buttons and the closing line
_FIXED_BYTES = 3000
_FIXED_BLOCKS = 5
_ENDINGS = {
    "timed_out": ":hourglass: *Timed out*: nobody answered in time; the agent was told so.",
    "aborted": ":no_entry_sign: *Withdrawn*: the agent no longer needs an answer.",
    "closed": ":no_entry_sign: *Withdrawn*: the relay shut down before anyone answered.",
    "failed": ":warning: *Not delivered*: the relay could not finish posting this call.",
}


def batchable(question: AskUserQuestionItem) -> bool:
    """Whether ``question`` can join a batch: a tool approval one person decides, whose
    whole input fits its place in the message."""
    intent = question.intent
    return (
        intent is not None
        and intent.kind == "tool-approval"
        and question.quorum <= 1
        and not question.multi_select
        and 0 < len(question.options or ()) <= 5
        and units(inert_markdown(question.detail or "")) <= CALL_CHARS
    )


def _approvers(target: Target) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    users = tuple(sorted(target.allowed_users)) if target.allowed_users is not None else None
    groups = tuple(sorted(target.allowed_groups)) if target.allowed_groups is not None else None
    return users, groups


def covered(records: Sequence[AskRecord | None]) -> frozenset[int]:
    """The positions of the calls the batch buttons cover: those whose approvers are the
    batch's own, which are the approvers most of its calls have (on a tie, the wider set,
    then the earlier call). The others need other approvers: never covered."""
    keys = [_approvers(r.target) if r is not None else None for r in records]
    counts = Counter(k for k in keys if k is not None)
    if not counts:
        return frozenset()

    def rank(key: tuple[tuple[str, ...] | None, tuple[str, ...] | None]) -> tuple[int, int, int]:
        users, groups = key
        width = 10**9 if users is None and groups is None else len(users or ()) + len(groups or ())
        return counts[key], width, -keys.index(key)

    base = max(counts, key=rank)
    return frozenset(i for i, k in enumerate(keys) if k == base)


def _call_blocks(
    record: AskRecord, position: int, status: str, *, buttons: bool
) -> list[dict[str, Any]]:
    question = record.request.questions[0]
    blocks = [kit.section(f"*{position + 1}.* {escape_within(question.question, _QUESTION_CHARS)}")]
    if question.detail and question.detail.strip():
        blocks.append({"type": "markdown", "text": inert_markdown(question.detail)})
    blocks.append(kit.context(kit.fit(status, _STATUS_CHARS)))
    if buttons:
        blocks.extend(option_listing(question))
        blocks.extend(input_blocks(question, record.id, 0, False))
    return blocks


@dataclass(frozen=True, slots=True)
class _Room:
    chars: int
    size: int
    blocks: int


def _room(record: AskRecord | None, position: int) -> _Room:
    """The most room call ``position`` ever takes: its buttons shown, its longest status."""
    if record is None:
        return _Room(200, 400, 1)
    blocks = _call_blocks(record, position, "x" * _STATUS_CHARS, buttons=True)
    return _Room(block_text_length(blocks), blocks_bytes(blocks), len(blocks))


def pages(records: Sequence[AskRecord | None]) -> list[range]:
    """The calls on each page, as positions: as many as fit, in order; fixed for good, since
    each call is given the most room it can ever take."""
    found: list[range] = []
    start, chars, size, count = 0, 0, 0, 0
    for position, record in enumerate(records):
        room = _room(record, position)
        full = (
            chars + room.chars > MESSAGE_CHARS - _FIXED_CHARS
            or size + room.size > MESSAGE_BYTES - _FIXED_BYTES
            or count + room.blocks > MAX_BLOCKS - _FIXED_BLOCKS
        )
        if full and position > start:
            found.append(range(start, position))
            start, chars, size, count = position, 0, 0, 0
        chars, size, count = chars + room.chars, size + room.size, count + room.blocks
    found.append(range(start, len(records)))
    return found


def _mentions(target: Target) -> list[str]:
    who = [f"<@{u}>" for u in sorted(target.allowed_users or ())]
    who += [f"<!subteam^{g}>" for g in sorted(target.allowed_groups or ())]
    return who


def _status(record: AskRecord, included: bool, now: float | None) -> str:
    response = record.responses[0] if record.responses else None
    if response is not None:
        return answered_line(response, record.request.questions[0])
    if not record.pending:
        return _ENDINGS.get(outcome_of(record), _ENDINGS["aborted"])
    # Who else may answer once escalated (the escalation widens each call on its own).
    note = escalation_note(record, now=now) if now is not None else None
    escalated = f" · {note}" if note else ""
    if included:
        return (
            ":hourglass_flowing_sand: Pending · included in *Allow all shown* and *Deny all"
            f" shown*{escalated}"
        )
    who = _mentions(record.target)
    by = kit.mention_list(who, 300) if who else "anyone in the channel"
    return (
        f":raised_hand: Pending · needs approval by {by}: *not* included in *Allow all shown*"
        f" or *Deny all shown*; decide it with its own buttons{escalated}"
    )


def _pending(record: AskRecord | None) -> bool:
    return record is not None and record.pending and not any(record.responses)


def render_batch(
    records: Sequence[AskRecord | None],
    ref: BatchRef,
    *,
    mode: Mode = "list",
    page: int = 0,
    now: float | None = None,
) -> RenderedQuestion:
    """The batch's message: page ``page`` of its calls (``records``, in order; ``None`` for
    one the store no longer holds), listed (``list``) or each with its buttons (``review``);
    with ``now``, the calls escalated by then say so."""
    shown_pages = pages(records)
    page = min(max(page, 0), len(shown_pages) - 1)
    on_page = shown_pages[page]
    included = covered(records)
    agent = next((r.request.agent for r in records if r is not None), None)
    who = agent.display_name if agent is not None else "an agent"
    left = sum(1 for r in records if _pending(r))
    title = (
        f"{len(records)} tool calls from {who}: {left} waiting"
        if left
        else f"{len(records)} tool calls from {who}: none waiting"
    )
    blocks: list[dict[str, Any]] = [kit.header(title)]
    where = f"calls {on_page.start + 1}–{on_page.stop} of {len(records)}"
    line = "Each call is decided on its own, with its own grant and receipt."
    if len(shown_pages) > 1:
        line += f" Page {page + 1} of {len(shown_pages)}: {where}."
    blocks.append(kit.context(line))
    covered_left = 0
    for position in on_page:
        record = records[position]
        if record is None:
            blocks.append(kit.context(f"*{position + 1}.* _(no longer known to the relay)_"))
            continue
        mine = position in included
        waiting = _pending(record)
        covered_left += waiting and mine
        buttons = waiting and (mode == "review" or not mine)
        blocks.extend(_call_blocks(record, position, _status(record, mine, now), buttons=buttons))
    actions: list[dict[str, Any]] = []
    any_left = any(_pending(records[p]) for p in on_page)
    if mode == "list" and covered_left:
        value = str(page)
        actions.append(
            kit.button(
                f"Allow all shown ({covered_left})", f"{ACTION_BATCH}.allow", value, "primary"
            )
        )
        actions.append(
            kit.button(f"Deny all shown ({covered_left})", f"{ACTION_BATCH}.deny", value, "danger")
        )
    if mode == "list" and any_left:
        actions.append(kit.button("Review each", f"{ACTION_BATCH}.review", str(page)))
    if mode == "review" and left:
        actions.append(kit.button("Back to the list", f"{ACTION_BATCH}.list", str(page)))
    if page > 0:
        actions.append(kit.button("◀ Previous", f"{ACTION_BATCH}.prev", str(page - 1)))
    if page + 1 < len(shown_pages):
        actions.append(kit.button("Next ▶", f"{ACTION_BATCH}.next", str(page + 1)))
    if actions:
        blocks.append(
            {"type": "actions", "block_id": block_id(ref.first, 0, "batch"), "elements": actions}
        )
    if left:
        blocks.append(
            kit.context(
                "*Allow all shown* allows only the calls on this page marked as included, each"
                " as its own *Allow once* by you, checked as if you had clicked it; a call that"
                " needs other approvers keeps its own buttons."
            )
        )
    text = escape_within(title, 3000)
    return RenderedQuestion(blocks=blocks, text=text)
