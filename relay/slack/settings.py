"""``SlackSettings``: how a ``SlackProvider`` reaches Slack and what every ask inherits.

``SlackProvider(SlackSettings(...), lifecycle=...)`` is the composition root's form. The
older keyword form, ``SlackProvider(token=..., channel=..., store=...)``, still works: the
keywords named here become a ``SlackSettings``, and ``store``, ``events``,
``sweep_interval``, ``reminder_lease`` and ``settling`` build the provider's own
``AskLifecycle`` (``LIFECYCLE_OPTIONS``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypedDict

from slack_sdk.web.async_client import AsyncWebClient

from relay.asks.edit_review import EditReview
from relay.asks.events import Events
from relay.asks.lifecycle import AskLifecycle
from relay.asks.names import NamePolicy
from relay.asks.plan_door import PlanDoor
from relay.asks.target import Route, TargetDefaults, check_reminders, ids
from relay.asks.terms import QuestionDefaults, capped, check_timeout
from relay.errors import RelayConfigError
from relay.slack.credentials import check_credentials
from relay.slack.webapi.retries import default_retry_handlers
from relay.store import AskStore, MemoryStore

if TYPE_CHECKING:
    from relay.asks.expiry import Settling

__all__ = ["SlackOptions", "SlackSettings", "lifecycle_of", "settings_of"]

# The keywords that configure the ask's lifecycle, not Slack (AskLifecycle's own).
LIFECYCLE_OPTIONS = ("store", "events", "sweep_interval", "reminder_lease", "settling")


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackSettings:
    """A ``SlackProvider``'s settings: the connection, where asks go, their defaults.

    Connection: exactly one of ``client`` (an ``AsyncWebClient``) or ``token`` (the
    ``xoxb-`` bot token, with ``base_url`` for another Web API address);
    ``signing_secret`` for HTTP mode. Where: ``channel`` (a channel id, or a user id for a
    DM) or ``route`` (a function of the request returning a ``SlackTarget``).

    ``allowed_users``/``allowed_groups`` are each ask's default allowlist, which a
    ``SlackTarget`` may replace; ``policy_users``/``policy_groups`` are a ceiling no ask can
    lift (``relay serve`` sets both from ``RELAY_ALLOWED_USERS``/``RELAY_ALLOWED_GROUPS``).
    ``timeout`` is each ask's (seconds, ``None`` waits); ``max_timeout`` a ceiling on every
    ask's (a longer one, or none, becomes it). ``remind_after``/``reminders`` and
    ``escalate_*``: each ask's default reminders and escalation (see ``SlackTarget``).
    ``default_option``, ``approvals_required`` and ``veto``: each question's, where it sets
    none. ``names``: what a client's ``target`` may name; ``edit_review``: rules for an edit;
    ``plans``: the Decider's plan decisions a plan's message reaches (stop, narrow).
    ``batch_window``: seconds a tool approval waits for others of its agent session to share
    its message (``relay.slack.webapi.batch``); 0 (the default here) posts each alone.
    """

    client: AsyncWebClient | None = None
    token: str | None = field(default=None, repr=False)
    base_url: str | None = None
    signing_secret: str | None = field(default=None, repr=False)
    channel: str | None = None
    route: Route | None = None
    timeout: float | None = 900.0
    max_timeout: float | None = None
    allowed_users: Collection[str] | None = None
    allowed_groups: Collection[str] | None = None
    prevent_self_approval: bool = False
    policy_users: Collection[str] | None = None
    policy_groups: Collection[str] | None = None
    remind_after: float | None = None
    reminders: int = 1
    escalate_after: float | None = None
    escalate_users: Collection[str] | None = None
    escalate_groups: Collection[str] | None = None
    escalate_channel: str | None = None
    default_option: str | None = None
    approvals_required: int | None = None
    veto: Collection[str] | None = None
    names: NamePolicy | None = None
    edit_review: EditReview | None = None
    plans: PlanDoor | None = None
    batch_window: float = 0.0

    def checked(self) -> None:
        """Refuse settings that name no way to call Slack, or no place to ask."""
        check_credentials(self.client, self.token, self.signing_secret)
        if not 0 <= self.batch_window <= 10:
            raise RelayConfigError(
                "batch_window must be from 0 (each approval posted alone) to 10 seconds",
                setting="batch_window",
            )
        if self.channel is None and self.route is None:
            raise RelayConfigError(
                "pass channel= (a channel id, or a user id for a DM) or a route= function",
                setting="channel",
            )

    def web_client(self) -> AsyncWebClient:
        """The Web API client: the one given, or one for ``token``; with relay's retries."""
        client = self.client
        if client is None:
            kwargs: dict[str, Any] = {"token": self.token}
            if self.base_url is not None:
                kwargs["base_url"] = self.base_url
            client = AsyncWebClient(**kwargs)
        default_retry_handlers(client)
        return client

    def target_defaults(
        self, policy_users: frozenset[str] | None, policy_groups: frozenset[str] | None
    ) -> TargetDefaults:
        """Every ask's defaults, checked, under the operator's ceiling (``policy_*``)."""
        ceiling = check_timeout(self.max_timeout, "max_timeout")
        return TargetDefaults(
            channel=self.channel,
            route=self.route,
            timeout=capped(check_timeout(self.timeout, "timeout"), ceiling),
            max_timeout=ceiling,
            allowed_users=ids(self.allowed_users, "allowed_users"),
            allowed_groups=ids(self.allowed_groups, "allowed_groups"),
            prevent_self_approval=self.prevent_self_approval,
            policy_users=policy_users,
            policy_groups=policy_groups,
            remind_after=check_timeout(self.remind_after, "remind_after"),
            reminders=check_reminders(self.reminders),
            escalate_after=check_timeout(self.escalate_after, "escalate_after"),
            escalate_users=ids(self.escalate_users, "escalate_users"),
            escalate_groups=ids(self.escalate_groups, "escalate_groups"),
            escalate_channel=self.escalate_channel or None,
            names=self.names,
        )

    def question_defaults(self) -> QuestionDefaults:
        """Each question's defaults (``default_option``, ``approvals_required``, ``veto``)."""
        return QuestionDefaults.checked(self.default_option, self.approvals_required, self.veto)


class SlackOptions(TypedDict, total=False):
    """The older keyword form of ``SlackProvider(...)``, typed: ``SlackSettings``' fields and
    the lifecycle's options (``LIFECYCLE_OPTIONS``). A test keeps it equal to both."""

    client: AsyncWebClient | None
    token: str | None
    base_url: str | None
    signing_secret: str | None
    channel: str | None
    route: Route | None
    timeout: float | None
    max_timeout: float | None
    allowed_users: Collection[str] | None
    allowed_groups: Collection[str] | None
    prevent_self_approval: bool
    policy_users: Collection[str] | None
    policy_groups: Collection[str] | None
    remind_after: float | None
    reminders: int
    escalate_after: float | None
    escalate_users: Collection[str] | None
    escalate_groups: Collection[str] | None
    escalate_channel: str | None
    default_option: str | None
    approvals_required: int | None
    veto: Collection[str] | None
    names: NamePolicy | None
    edit_review: EditReview | None
    plans: PlanDoor | None
    batch_window: float
    store: AskStore | None
    events: Events | None
    sweep_interval: float | None
    reminder_lease: float
    settling: Settling | None


_SLACK_FIELDS = frozenset(f.name for f in fields(SlackSettings))


def settings_of(
    settings: SlackSettings | None, options: Mapping[str, Any]
) -> tuple[SlackSettings, dict[str, Any]]:
    """``settings``, or the older keyword form's; and the keywords left for the lifecycle."""
    unknown = sorted(set(options) - _SLACK_FIELDS - set(LIFECYCLE_OPTIONS))
    if unknown:
        raise TypeError(f"SlackProvider() got unexpected keyword arguments: {', '.join(unknown)}")
    given = {k: v for k, v in options.items() if k in _SLACK_FIELDS}
    if settings is not None and given:
        raise TypeError(
            "SlackProvider() takes a SlackSettings or its fields as keywords, not both:"
            f" move {', '.join(sorted(given))} into the SlackSettings"
        )
    life = {k: v for k, v in options.items() if k in LIFECYCLE_OPTIONS}
    return (settings if settings is not None else SlackSettings(**given)), life


def lifecycle_of(lifecycle: AskLifecycle | None, options: Mapping[str, Any]) -> AskLifecycle:
    """``lifecycle``, or one built from the older keywords (the in-process composition root:
    a memory store unless ``store`` names one)."""
    if lifecycle is not None:
        if options:
            raise RelayConfigError(
                f"{', '.join(sorted(options))}: set these on the AskLifecycle passed as"
                " lifecycle=, not on the provider",
                setting="lifecycle",
            )
        return lifecycle
    store = options.get("store")
    events = options.get("events")
    return AskLifecycle(
        store=store if store is not None else MemoryStore(),
        events=events if events is not None else Events(),
        sweep_interval=options.get("sweep_interval"),
        reminder_lease=options.get("reminder_lease", 30.0),
        settling=options.get("settling"),
    )
