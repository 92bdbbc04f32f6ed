"""A request body checked against its schema in the OpenAPI document, the one source of
its shape (``GET /openapi.json`` serves the same document).

The document's component schemas are JSON Schema 2020-12 (OpenAPI 3.1). One validator per
schema is built at its first use; a body that does not match is refused naming the field,
in words from the schema too: a property's ``x-relay-hint`` says what the field must be
(``"<field> must be <hint>"``). The refusal's code is ``BAD_REQUEST`` unless the schema names
another for the keyword that failed: ``"x-relay-code": {"minItems": "EMPTY_QUESTIONS"}``
beside ``minItems`` (each one an ``ErrorCode``, checked when the validator is built). What a
schema cannot say (a refused field, a rule across fields) the routes check after this step.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, cast

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator

from relay.errors import ErrorCode
from relay.server.errors import ApiError
from relay.server.openapi import openapi_document

__all__ = ["check_body"]

HINT = "x-relay-hint"  # a schema's words for what its value must be
CODE = "x-relay-code"  # a schema's error codes by keyword, where one is not BAD_REQUEST


def _whole_number(_checker: object, instance: object) -> bool:
    # JSON Schema counts 1.0 as an integer; a count of minutes or people is written 1.
    return isinstance(instance, int) and not isinstance(instance, bool)


def _finite_number(_checker: object, instance: object) -> bool:
    # A parsed body never holds NaN or an infinity (safejson refuses them), but a command
    # line's float does (``relay ask --timeout nan``), and NaN passes every bound.
    return (
        isinstance(instance, int | float)
        and not isinstance(instance, bool)
        and (math.isfinite(instance))
    )


_Strict = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _whole_number, "number": _finite_number}
    ),
)


@cache
def body_validator(schema: str) -> Validator:
    """The validator of the component schema ``schema`` (``ApprovalRequest`` …), built once
    from the served document, whose ``#/components/...`` references it resolves."""
    return _built(openapi_document()["components"], schema)


def _built(components: Mapping[str, Any], schema: str) -> Validator:
    """The validator of ``schema`` among ``components``, whose every ``x-relay-code`` names
    a keyword beside it and an ``ErrorCode`` (``ValueError`` at once otherwise)."""
    _check_codes(components, "components")
    validator: Validator = _Strict(
        {"$ref": f"#/components/schemas/{schema}", "components": components}
    )
    return validator


def _check_codes(node: object, where: str) -> None:
    if isinstance(node, list):
        for i, item in enumerate(node):
            _check_codes(item, f"{where}[{i}]")
    if not isinstance(node, Mapping):
        return
    codes = node.get(CODE)
    if codes is not None:
        if not isinstance(codes, Mapping):
            raise ValueError(f"{where}.{CODE} must map a keyword to an error code")
        for keyword, code in codes.items():
            if keyword not in node:
                raise ValueError(f"{where}.{CODE} names {keyword}, no keyword of its schema")
            if code not in ErrorCode.__members__:
                raise ValueError(f"{where}.{CODE} names {code}, which is no ErrorCode")
    for key, value in node.items():
        if key != CODE:
            _check_codes(value, f"{where}.{key}")


def check_body(
    body: object,
    schema: str,
    *,
    checked_after: Iterable[str] = (),
    within: tuple[str, ...] = (),
) -> None:
    """Refuse ``body`` unless it matches the component ``schema`` (``BAD_REQUEST``, or the
    schema's ``x-relay-code`` for the failed keyword); a mismatch under a top-level field in
    ``checked_after`` is left to the route's own step. ``within`` is where ``body`` sits in
    the body it came in (``("slack",)``), for the refusal's field names."""
    after = frozenset(checked_after)
    errors = [
        error
        for error in body_validator(schema).iter_errors(cast(Any, body))
        if not (error.absolute_path and error.absolute_path[0] in after)
    ]
    # A shape's mismatch first, as a reader that checks shapes before rules would find it:
    # a specific code (EMPTY_QUESTIONS) only for a body whose shape is otherwise right.
    error = best_match(e for e in errors if _code(e) is ErrorCode.BAD_REQUEST) or best_match(errors)
    if error is not None:
        raise ApiError(_code(error), _sentence(error, schema, within))


def _code(error: ValidationError) -> ErrorCode:
    """The schema's code for the keyword that failed, else ``BAD_REQUEST``."""
    codes: Any = error.schema.get(CODE) if isinstance(error.schema, Mapping) else None
    if isinstance(codes, Mapping) and error.validator in codes:
        return ErrorCode[codes[error.validator]]
    return ErrorCode.BAD_REQUEST


def _sentence(error: ValidationError, name: str, within: tuple[str, ...] = ()) -> str:
    """What is wrong, naming the field (under ``within``), and what to send instead."""
    root: Any = body_validator(name).schema
    path = list(error.absolute_path)

    def field(at: list[Any]) -> str:
        return _dotted([*within, *at])

    reached, hinted = _walk(root["components"]["schemas"], name, path)
    schema: Any = error.schema
    instance: Any = error.instance
    if error.validator == "required" and reached == schema:
        missing = next(p for p in cast(Any, error.validator_value) if p not in instance)
        hint = schema.get("properties", {}).get(missing, {}).get(HINT)
        return f"{field([*path, missing])} is required" + (f": {hint}" if hint else "")
    if error.validator == "additionalProperties" and reached == schema:
        known = list(schema.get("properties", {}))
        extra = next(k for k in instance if k not in known)
        camel = "".join(w if i == 0 else w.title() for i, w in enumerate(extra.split("_")))
        meant = f"did you mean {camel}? " if camel != extra and camel in known else ""
        return f"{field([*path, extra])} is not a known field ({meant}known: {', '.join(known)})"
    if hinted is not None and (hinted[0] > 0 or not path):  # (the body's hint is for it)
        at, hint = hinted
        return f"{field(path[:at])} must be {hint}" + (_size(error) if at == len(path) else "")
    return (
        f"{field(path)} does not match the {name} schema ({_why(error)}): send what"
        " GET /openapi.json describes"
    )


def _walk(
    schemas: Mapping[str, Any], name: str, path: list[Any]
) -> tuple[Any, tuple[int, str] | None]:
    """The schema at ``path`` under the component ``name`` (``None`` where a choice of
    schemas hides it), and the deepest hint on the way with how many steps down it is."""
    at: Any = schemas[name]
    hinted = (0, at[HINT]) if HINT in at else None
    for depth, key in enumerate(path, start=1):
        properties = at.get("properties", {})
        if isinstance(key, str) and key in properties:
            at = properties[key]
        elif isinstance(key, str) and isinstance(at.get("additionalProperties"), Mapping):
            at = at["additionalProperties"]
        elif isinstance(key, int) and isinstance(at.get("items"), Mapping):
            at = at["items"]
        else:
            return None, hinted
        ref = at.get("$ref")  # (another component: a question of the ask)
        if isinstance(ref, str) and ref.startswith(_COMPONENT):
            at = schemas[ref.removeprefix(_COMPONENT)]
        if HINT in at:
            hinted = (depth, at[HINT])
    return at, hinted


_COMPONENT = "#/components/schemas/"


def _size(error: ValidationError) -> str:
    """How far a list or a text is from its bound, when that is what failed."""
    instance: Any = error.instance
    if error.validator in ("minItems", "maxItems"):
        return f" (it has {len(instance)})"
    if error.validator == "maxLength":
        return f" (it has {len(instance)} characters)"
    return ""


def _dotted(path: list[Any]) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else f".{key}" if out else str(key)
    return out or "the body"


def _why(error: ValidationError) -> str:
    value: Any = error.validator_value
    if error.validator == "type":
        kinds = [value] if isinstance(value, str) else list(value)
        return "it must be " + " or ".join(kinds)
    if error.validator in ("minimum", "maximum", "minLength", "maxLength", "maxItems"):
        return f"{error.validator} {value}"
    return f"{error.validator} not met"
