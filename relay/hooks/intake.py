"""The hook's stdin read into a JSON object, or refused with one line saying why.

A hook runs before every tool call its harness matches, on input an agent shapes: whatever
arrives (deep, huge, not JSON, not UTF-8, lone surrogates, ``NaN``), the hook must answer
with its harness's deny rather than crash. Everything here is iterative, so no input can
exhaust the interpreter's stack, and standard-library only, ``relay.seam.safejson`` too (it runs on
every call).
"""

from __future__ import annotations

import json
from typing import Any

from relay.hooks.common import BadHookInput, shown
from relay.seam.safejson import refusal

__all__ = ["MAX_BYTES", "MAX_DEPTH", "load_event", "parse_object"]

MAX_DEPTH = 64
"""The deepest nesting of objects and arrays a hook input may have (the top object is 1):
far beyond any harness's tool input, far below what would strain a parser."""

MAX_BYTES = 64 * 1024 * 1024
"""The largest hook input read (64 MiB): a larger one is refused unread."""


class _Refused(Exception):
    """Raised from inside the JSON parser's hooks; turned into ``BadHookInput``."""


def load_event(raw: bytes) -> dict[str, Any]:
    """The hook's stdin ``raw`` as a JSON object; raises ``BadHookInput`` (one line) for
    anything else."""
    if len(raw) > MAX_BYTES:
        raise BadHookInput(f"the hook input is larger than {MAX_BYTES // 2**20} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadHookInput(f"the hook input is not UTF-8 (byte {exc.start})") from None
    return parse_object(text, "the hook input")


def parse_object(text: str, what: str) -> dict[str, Any]:
    """``text`` (called ``what`` in the error) as a JSON object within the bounds above: no
    ``NaN``, no key twice, nothing ``relay.seam.safejson.refusal`` refuses (a lone surrogate, an
    infinity, an integer no double holds), at most ``MAX_DEPTH`` levels deep."""
    try:
        data = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except _Refused as exc:
        raise BadHookInput(f"{what} {exc}") from None
    except RecursionError:
        raise _too_deep(what) from None
    except ValueError as exc:
        raise BadHookInput(f"{what} is not JSON ({_first_line(exc)})") from None
    if not isinstance(data, dict):
        raise BadHookInput(f"{what} is not a JSON object")
    # The one check every door makes (iterative): what enters can be signed exactly.
    if (refused := refusal(data, max_depth=MAX_DEPTH)) is not None:
        raise BadHookInput(f"{refused.sentence(what)} ({refused.code})")
    return data


def _no_constant(name: str) -> Any:
    # Python reads NaN and Infinity; JSON (and every harness) has no such values.
    raise _Refused(f"holds {name}, which is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Two values for one key are read differently by different parsers: ask about neither.
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"has the key {shown(key)} twice")
            seen.add(key)
    return data


def _too_deep(what: str) -> BadHookInput:
    return BadHookInput(f"{what} nests deeper than {MAX_DEPTH} levels (relay's bound)")


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]
