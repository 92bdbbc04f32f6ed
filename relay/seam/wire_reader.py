"""Reading the wire form strictly: one JSON object at a time, naming the path of whatever is
wrong (``BAD_REQUEST``), with a hint when a key is snake_case for a camelCase field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relay.errors import bad_request

__all__ = ["Reader", "path_of"]


class Reader:
    """Reads one JSON object of the wire form, naming the path of whatever is wrong."""

    def __init__(self, data: object, path: str, known: frozenset[str], *, strict: bool) -> None:
        if not isinstance(data, Mapping):
            raise bad_request(f"{path or 'the body'} must be an object")
        self.data = data
        self.path = path
        if strict:
            for key in data:
                if key not in known:
                    raise bad_request(f"{self.at(str(key))} is not a known field{_hint(str(key))}")

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def text(self, key: str) -> str:
        value = self.data.get(key)
        if value is None:
            raise bad_request(f"{self.at(key)} is required")
        if not isinstance(value, str):
            raise bad_request(f"{self.at(key)} must be a string")
        return value

    def opt_str(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is not None and not isinstance(value, str):
            raise bad_request(f"{self.at(key)} must be a string")
        return value

    def flag(self, key: str) -> bool:
        value = self.data.get(key, False)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise bad_request(f"{self.at(key)} must be a boolean")
        return value

    def opt_int(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise bad_request(f"{self.at(key)} must be a whole number")
        return value

    def opt_labels(self, key: str) -> tuple[str, ...] | None:
        value = self.array(key, required=False)
        if value is None:
            return None
        for i, label in enumerate(value):
            if not isinstance(label, str):
                raise bad_request(f"{self.at(key)}[{i}] must be a string")
        return tuple(value)

    def array(self, key: str, *, required: bool) -> list[Any] | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise bad_request(f"{self.at(key)} is required")
            return None
        if not isinstance(value, list):
            raise bad_request(f"{self.at(key)} must be a list")
        return value


def _hint(key: str) -> str:
    camel = "".join(part if i == 0 else part.title() for i, part in enumerate(key.split("_")))
    if camel != key:
        return f" (the wire form is camelCase: did you mean {camel}?)"
    return ""


def path_of(path: str, key: str) -> str:
    """The path of field ``key`` inside the object at ``path``."""
    return f"{path}.{key}" if path else key
