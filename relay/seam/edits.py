"""Edit, then approve: a reviewer's edited tool input, carried in the seam's ``custom``. Pure.

The seam stays as it is: a tool approval is a question whose intent says so
(``{"kind": "tool-approval", "approve": "Allow once", "edit": {...}}``; ``edit`` only when the
harness can take an edited call), and an edited call comes back as the answer's ``custom``,
holding one JSON object (documented in docs/edit-then-approve.md)::

    {"relay": "edit", "choice": "Allow once", "version": 2,
     "input": {"command": "terraform apply -target=module.staging"}, "edited_by": "U0BOB"}

``selected`` is then empty, as the seam wants when ``custom`` is set. A UI that knows no
edits answers as ever: a label, or text that denies with it. A text that reads as an edit is
taken as one only where the question offered edits; a UI must not let a person type one (the
Slack provider refuses typed text that parses as an edit: an edit is made in its form, where
the message then shows it).

An edited input is strict JSON, or it is no edit: ``NaN``, ``Infinity`` and numbers past a
double's range are not JSON (a harness would read invalid JSON), and nothing nests deeper
than ``MAX_DEPTH``. ``read_edit`` refuses a ``custom`` that breaks either, ``edit_custom``
never writes one, and ``unfit`` says why an input cannot be carried (the form then offers
no edit of it).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from relay.seam import safejson

__all__ = ["EDIT_TAG", "Edit", "edit_custom", "read_edit", "same_json", "unfit"]

EDIT_TAG = "edit"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Edit:
    """An edited tool input, the option chosen for it, its version (the original is 1), and
    the Slack id of whoever edited it."""

    input: Mapping[str, Any]
    choice: str
    version: int
    edited_by: str

    def to_json(self) -> dict[str, Any]:
        """The JSON object carried in ``custom``."""
        return {
            "relay": EDIT_TAG,
            "choice": self.choice,
            "version": self.version,
            "input": dict(self.input),
            "edited_by": self.edited_by,
        }


def edit_custom(edit: Edit) -> str:
    """The answer's ``custom`` text for ``edit``: compact JSON, keys in a fixed order.
    Raises ``ValueError`` for an input ``unfit`` refuses (it would not be JSON)."""
    problem = unfit(edit.input)
    if problem is not None:
        raise ValueError(f"an edited input must be JSON, but this one {problem}")
    text = json.dumps(edit.to_json(), ensure_ascii=False, separators=(",", ":"))
    if not text.isascii() and _LONE_SURROGATE.search(text):
        # A lone surrogate (an agent's "\ud800") has no UTF-8 form: keep it as its escape.
        text = json.dumps(edit.to_json(), separators=(",", ":"))
    return text


def same_json(a: object, b: object) -> bool:
    """Whether ``a`` and ``b`` are the same JSON, key order aside: ``1`` is neither ``true``
    nor ``1.0`` (Python's ``==`` holds them equal, and would lose such an edit)."""
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError):
        return False


def unfit(value: object) -> str | None:
    """Why ``value`` cannot be carried as an edited input's JSON, as a clause ("holds NaN
    …", "nests deeper than 100 levels"), else ``None``: the doors' own check
    (``safejson.unfit``), so that an edit carries only what any door would let in."""
    return safejson.unfit(value)


def _constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:20]} is beyond a double's range")
    return number


# Built once: json.loads given hooks builds a decoder on every call, and edits are read on
# every render of a voted question.
_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_finite)


def read_edit(custom: str | None) -> Edit | None:
    """The edit ``custom`` carries, or ``None`` when it is anything else (a typed reason)."""
    if custom is None or not custom.lstrip().startswith("{"):
        return None
    try:
        # Strict: what an edit carries is passed on as JSON, which has no NaN or Infinity.
        data = _DECODER.decode(custom)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("relay") != EDIT_TAG:
        return None
    value, choice, version, by = (
        data.get("input"),
        data.get("choice"),
        data.get("version"),
        data.get("edited_by"),
    )
    if (
        not isinstance(value, dict)
        or not isinstance(choice, str)
        or isinstance(version, bool)
        or not isinstance(version, int)
        or version < 2
        or not isinstance(by, str)
        or unfit(value) is not None
    ):
        return None
    return Edit(input=value, choice=choice, version=version, edited_by=by)
