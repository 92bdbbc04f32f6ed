"""How the Redis store names its keys and reads its hashes back into records.

``Keys`` holds every key name; ``decode``/``decode_flat`` turn an ask's hash into an
``AskRecord``, reusing the decoded unchanging part (``Core``) of asks read moments ago
(``Cores``); the rest are the small conversions every part shares.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from relay.seam.questions import AskUserQuestionAnswerItem, AskUserQuestionRequest, Vote
from relay.store.record import AskError, AskRecord, AskStatus, MessageRef, Target, item_from_json

__all__ = [
    "CORE_CACHE",
    "NO_META",
    "Core",
    "Cores",
    "Keys",
    "as_text",
    "compact",
    "decode",
    "decode_flat",
    "epoch",
    "message_json",
    "votes_of",
    "wire",
]

CORE_CACHE = 256  # decoded record cores kept (see Cores): a click's read and claim, a post


class Keys:
    """Every key name the store uses, in one place.

    On a Redis Cluster the keys of one ask carry its id as hash tag and the structures across
    asks share the tag ``{<prefix>index}``, so that each script touches one slot; on one Redis
    the names are the plain ones they always were (no migration on upgrade). Another key of
    one ask is ``ask(id) + ":name"`` (same slot); another structure across asks is ``index``'s.
    """

    __slots__ = ("_cluster", "_prefix")

    def __init__(self, prefix: str, *, cluster: bool) -> None:
        self._prefix = prefix
        self._cluster = cluster

    def ask(self, ask_id: str) -> str:
        """The hash of ask ``ask_id``."""
        if self._cluster:
            return f"{self._prefix}ask:{{{ask_id}}}"
        return f"{self._prefix}ask:{ask_id}"

    def index(self, name: str) -> str:
        """A structure across asks (``deadlines``, ``owners``…): one slot for all of them."""
        if self._cluster:
            return f"{self._prefix}{{{self._prefix}index}}:{name}"
        return f"{self._prefix}{name}"

    def owned(self, owner: str) -> str:
        """``owner``'s audit index (``relay.store.listing``): one key, commands of its own."""
        return f"{self._prefix}owned:{owner}"

    def hooks(self, name: str) -> str:
        """A key of the webhook outbox (subscriptions, deliveries, the watch list and the
        queue): on a cluster one slot for all of them, since each script moves a delivery
        between several."""
        if self._cluster:
            return f"{self._prefix}{{{self._prefix}hooks}}:{name}"
        return f"{self._prefix}{name}"

    def receipts(self, name: str) -> str:
        """A key of the receipt chain (``relay.store.receipts``): on a cluster one slot for
        all of them, since its append checks and moves all three at once."""
        if self._cluster:
            return f"{self._prefix}{{{self._prefix}receipts}}:{name}"
        return f"{self._prefix}{name}"


def wire(text: str) -> str | bytes:
    """``text`` as Redis takes it: as it is, or, if it holds a lone surrogate (which UTF-8
    cannot encode, and which ``os.environ`` makes of bytes that are not UTF-8), its UTF-8
    bytes with the surrogates passed through: one name per text, whatever it holds."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


def epoch(at: datetime | None) -> float:
    """``at`` in epoch seconds (now, if unknown)."""
    return at.timestamp() if at is not None else time.time()


_COMPACT = json.JSONEncoder(separators=(",", ":"))  # (json.dumps makes one per call)


def compact(value: Any) -> str:
    """``value`` as JSON without spaces (``json.dumps`` with those separators)."""
    return _COMPACT.encode(value)


def message_json(message: MessageRef) -> str:
    """Where a message was posted, as the store keeps it: JSON ``[channel, ts]``."""
    return compact([message.channel, message.ts])


def as_text(value: Any) -> str:
    """A reply's value as text (the inverse of ``wire``)."""
    # (surrogatepass: the text ``wire`` sent comes back as it was)
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else str(value)


def _pairs(flat: list[Any]) -> dict[str, str]:
    it = iter(flat)
    return {as_text(k): as_text(v) for k, v in zip(it, it, strict=True)}


NO_META: dict[str, Any] = {}  # every core without meta shares it (never changed: records copy)


@dataclass(frozen=True, slots=True)
class Core:
    """The part of a record that never changes, decoded."""

    id: str
    request: AskUserQuestionRequest
    target: Target
    created_at: datetime
    deadline: float | None
    owner: str | None
    meta: dict[str, Any]
    digest: int = -1  # hash() of its JSON text (never -1): whether a reply's core is this one


class Cores:
    """Recently decoded cores by their JSON text, so that the record a click reads and the
    record its claim returns decode the request once, not twice; bounded (oldest first),
    small: it serves reads made moments apart, not the pending asks."""

    __slots__ = ("_by_id", "_by_text", "_size")

    def __init__(self, size: int = CORE_CACHE) -> None:
        self._by_text: dict[str, Core] = {}
        self._by_id: dict[str, Core] = {}
        self._size = size

    def of(self, ask_id: str) -> Core | None:
        """The core of ask ``ask_id`` if it is among the recent ones."""
        return self._by_id.get(ask_id)

    def get(self, text: str) -> Core:
        """The core whose JSON is ``text``, decoded once."""
        core = self._by_text.get(text)
        if core is None:
            data = json.loads(text)
            core = Core(
                id=data["id"],
                request=AskUserQuestionRequest.from_dict(data["request"]),
                target=Target.from_dict(data["target"]),
                created_at=datetime.fromisoformat(data["created_at"]),
                deadline=data.get("deadline"),
                owner=data.get("owner"),
                meta=data.get("meta") or NO_META,
                digest=hash(text),
            )
            self.put(text, core)
        return core

    def put(self, text: str, core: Core) -> None:
        """Remember ``core`` as the decoding of ``text`` (the oldest goes when full)."""
        if len(self._by_text) >= self._size:
            del self._by_text[next(iter(self._by_text))]
        self._by_text[text] = core
        self._by_id.pop(core.id, None)
        if len(self._by_id) >= self._size:
            del self._by_id[next(iter(self._by_id))]
        self._by_id[core.id] = core


def decode(
    fields: dict[Any, Any], cores: Cores | None = None, known: Core | None = None
) -> AskRecord | None:
    """The record an ask's hash (``HGETALL``) holds, or ``None`` if it is empty."""
    if not fields:
        return None
    return _record_of({as_text(k): as_text(v) for k, v in fields.items()}, cores, known)


def decode_flat(
    flat: list[Any],
    cores: Cores | None = None,
    known: Core | None = None,
    mine: tuple[int, AskUserQuestionAnswerItem] | None = None,
) -> AskRecord | None:
    """``decode`` of a script's ``HGETALL`` (a flat list); ``mine``: an answer this process
    just recorded, the item itself (its JSON in the reply is what it sent)."""
    if not flat:
        return None
    return _record_of(_pairs(flat), cores, known, mine)


def _record_of(
    data: dict[str, str],
    cores: Cores | None,
    known: Core | None,
    mine: tuple[int, AskUserQuestionAnswerItem] | None = None,
) -> AskRecord | None:
    text = data.get("core")
    if text is None:
        return None  # (not an ask)
    if known is not None and (text == "" or known.digest == hash(text)):
        core = known  # (the same ask's, held here: nothing to decode; "": left out for it)
    else:
        core = (cores or Cores(1)).get(text)
    n = int(data["n"])
    messages: list[MessageRef | None] = [None] * n
    responses: list[AskUserQuestionAnswerItem | None] = [None] * n
    for i in range(n):
        if (message := data.get(f"msg:{i}")) is not None:
            channel, ts = json.loads(message)
            messages[i] = MessageRef(channel, ts)
        if (answer := data.get(f"ans:{i}")) is not None:
            if mine is not None and mine[0] == i:
                responses[i] = mine[1]
            else:
                responses[i] = item_from_json(json.loads(answer))
    error = json.loads(data["error"]) if data.get("error") else None
    finished_at = data.get("finished_at")
    return AskRecord(
        id=core.id,
        request=core.request,
        target=core.target,
        created_at=core.created_at,
        deadline=core.deadline,
        status=AskStatus(data["status"]),
        messages=tuple(messages),
        responses=tuple(responses),
        error=AskError(error["code"], error["message"], error.get("reason")) if error else None,
        owner=core.owner,
        finished_at=datetime.fromisoformat(finished_at) if finished_at else None,
        meta=dict(core.meta),  # records share the rest, which is immutable
    )


def votes_of(raw: str) -> tuple[Vote, ...]:
    """A question's votes from their JSON list (``vote:{i}``)."""
    data = json.loads(raw)
    return tuple(Vote.from_dict(v) for v in data) if isinstance(data, list) else ()
