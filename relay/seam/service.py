"""The interaction seam: one active provider, one call, ``ask(request)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from relay.errors import ErrorCode, UserInteractionError, ask_aborted

from .questions import AskUserQuestionAnswer, AskUserQuestionRequest, validate_request

__all__ = ["UserInteractionProvider", "UserInteractionService"]


@runtime_checkable
class UserInteractionProvider(Protocol):
    """A UI that can put a request to a human and return the answer (a seam ``Protocol``)."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Ask the human and wait for the answer; raise ``UserInteractionError`` on failure."""
        ...


class UserInteractionService:
    """Holds the one active provider and checks each request before handing it over."""

    def __init__(self) -> None:
        self._provider: UserInteractionProvider | None = None
        self._registration: object | None = None

    @property
    def provider(self) -> UserInteractionProvider | None:
        """The active provider, or ``None``."""
        return self._provider

    def register_provider(self, provider: UserInteractionProvider) -> Callable[[], None]:
        """Make ``provider`` the active one; returns a disposer that unregisters it once."""
        if self._provider is not None:
            raise UserInteractionError(
                ErrorCode.DUPLICATE_PROVIDER, "a user-interaction provider is already registered"
            )
        self._provider = provider
        # Each registration gets its own token: a stale disposer must never unregister a later
        # registration, even of the same provider object.
        token = object()
        self._registration = token

        def dispose() -> None:
            if self._registration is token:
                self._provider = None
                self._registration = None

        return dispose

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Check the request, then ask the active provider and return its answer unchanged."""
        if request.signal is not None and request.signal.aborted:
            raise ask_aborted()
        validate_request(request)
        provider = self._provider
        if provider is None:
            raise UserInteractionError(
                ErrorCode.NO_PROVIDER, "no user-interaction provider is registered"
            )
        return await provider.ask(request)
