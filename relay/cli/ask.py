"""``relay ask``: ask a question from a script or CI job and print the answer.

Through a hosted relay (``--relay-url``/``RELAY_URL`` and ``RELAY_TOKEN``), or directly with
Slack credentials over Socket Mode (``SLACK_BOT_TOKEN``, ``SLACK_APP_TOKEN``).

Who may answer: ``--allowed-users U1,U2`` and ``--allowed-groups S1,S2``, ``--requester U…``
with ``--prevent-self-approval``; or the API's ``slack`` section in ``--file`` (flags win over
it).

``--default LABEL`` is the option taken when nobody answers before ``--timeout``; the answer
then carries ``"defaulted": true``, and ``--approve`` never counts a default as approved.
``--approvals N`` makes N different people vote for an option before it is the answer, and
``--veto LABEL`` names an option one vote decides at once.

``--remind-after SECONDS`` (with ``--reminders N``) reminds who may answer in the thread;
``--escalate-after SECONDS`` lets ``--escalate-to U1,S2`` answer from then on and mentions
them in ``--escalate-channel`` (with a link back) or in the thread.

Exit codes: 0 answered (with ``--approve``: a person chose that label), 1 answered otherwise
(``--approve`` only, also when the answer is a default), 2 bad usage or configuration, 3
timed out, 4 aborted or withdrawn
(also when stopped by SIGTERM, as CI cancels a job, or Ctrl-C: the question is withdrawn
from Slack first), 5 failed (Slack or the relay could not be reached or refused).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from relay.cli.backend import add_allowlist_flags, id_list
from relay.cli.common import (
    USAGE,
    CommandError,
    Commands,
    error_line,
    parse_json,
    plain,
    read_text,
)
from relay.errors import ErrorCode, UserInteractionError
from relay.seam.questions import (
    AgentRef,
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
)
from relay.seam.tool import js_json

if TYPE_CHECKING:
    from relay.client import RelayProvider
    from relay.slack import SlackProvider

# The clients and the API's checks (slack-sdk, aiohttp, the server) are imported where a
# question is asked, not with the parser: every other ``relay`` command starts without them.

__all__ = ["EXIT_ABORTED", "EXIT_FAILED", "EXIT_NOT_APPROVED", "EXIT_TIMED_OUT", "add_ask"]

EXIT_NOT_APPROVED = 1
EXIT_TIMED_OUT = 3
EXIT_ABORTED = 4
EXIT_FAILED = 5


def add_ask(commands: Commands) -> None:
    """Register ``relay ask``."""
    parser = commands.add_parser(
        "ask",
        help="ask a question in Slack and print the answer (a CI gate with --approve)",
        description=plain(__doc__),
    )
    what = parser.add_argument_group("the question (or --file)")
    what.add_argument("--question", "-q", help="the question to ask")
    what.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="LABEL",
        help="an option to offer (repeat for more)",
    )
    what.add_argument("--multi", action="store_true", help="allow choosing several options")
    what.add_argument(
        "--default",
        metavar="LABEL",
        help="the option taken if nobody answers in time (never counts for --approve)",
    )
    what.add_argument(
        "--approvals",
        type=int,
        metavar="N",
        help="N different people must choose an option before it is the answer (default 1)",
    )
    what.add_argument(
        "--veto",
        action="append",
        metavar="LABEL",
        help="an option one person's vote decides at once (with --approvals; repeatable)",
    )
    what.add_argument("--header", help="a short title above the question")
    detail = what.add_mutually_exclusive_group()
    detail.add_argument("--detail", help="markdown shown with the question")
    detail.add_argument("--detail-file", metavar="PATH", help="read the detail from a file")
    what.add_argument(
        "--id", default="answer", help="the question id in the answer JSON (default: answer)"
    )
    what.add_argument(
        "--file",
        "-f",
        metavar="PATH",
        help="a request in the JSON wire form instead of the flags above (- for stdin)",
    )
    what.add_argument(
        "--agent", default="relay-cli", help="who is asking, shown in Slack (default: relay-cli)"
    )
    where = parser.add_argument_group("where and how long")
    where.add_argument(
        "--channel",
        metavar="C…|U…",
        help="channel id, or user id for a DM, to ask in (default: the relay's RELAY_CHANNEL)",
    )
    where.add_argument("--thread-ts", metavar="TS", help="post in this thread (default: not)")
    where.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="give up after this long (default: the relay's RELAY_TIMEOUT, 900 unless set)",
    )
    where.add_argument(
        "--remind-after",
        type=float,
        metavar="SECONDS",
        help="remind who may answer, in the thread, after this long (and again, see"
        " --reminders; default: no reminders)",
    )
    where.add_argument("--reminders", type=int, metavar="N", help="at most N reminders (default 1)")
    where.add_argument(
        "--escalate-after",
        type=float,
        metavar="SECONDS",
        help="escalate after this long with no answer (to --escalate-to / --escalate-channel;"
        " default: never)",
    )
    where.add_argument(
        "--escalate-to",
        action="append",
        metavar="U1,S2",
        help="user (U…) and user group (S…) ids who may answer once escalated,"
        " comma-separated (default: none)",
    )
    where.add_argument(
        "--escalate-channel",
        metavar="C…|U…",
        help="post the escalation here, with a link back (default: the question's thread)",
    )
    who = parser.add_argument_group("who may answer (default: the relay's own allowlist)")
    add_allowlist_flags(who, default="the relay's RELAY_ALLOWED_USERS")
    who.add_argument(
        "--requester", metavar="U…", help="the person the ask is made for (default: nobody)"
    )
    who.add_argument(
        "--prevent-self-approval",
        action="store_true",
        help="the --requester may not answer their own ask",
    )
    where.add_argument(
        "--approve",
        metavar="LABEL",
        help="exit 0 only if LABEL was chosen, 1 otherwise (a CI gate)",
    )
    via = parser.add_argument_group("through a hosted relay (else Slack directly, Socket Mode)")
    via.add_argument(
        "--relay-url",
        metavar="URL",
        help="the hosted relay (default: RELAY_URL, if set; else Slack directly)",
    )
    parser.set_defaults(handler=_run_ask)


def _request(args: argparse.Namespace) -> tuple[AskUserQuestionRequest, dict[str, Any]]:
    """The request, and the API's ``slack`` section (from ``--file``, then the flags)."""
    from relay.server.api import read_slack_section as read_slack

    agent = AgentRef(id=args.agent)
    if args.file is not None:
        if args.question or args.option or args.default or args.approvals or args.veto:
            raise CommandError(USAGE, "use --file or the question's flags (-q, -o…), not both")
        source = "stdin" if args.file == "-" else args.file
        data = parse_json(read_text(args.file), source)
        slack: dict[str, Any] = {}
        if isinstance(data, dict) and "slack" in data:
            data = dict(data)
            section = data.pop("slack")
            if section is not None:
                read_slack(section)  # the API's own checks: a bad field is an error here
                slack = dict(section)
        request = AskUserQuestionRequest.from_dict(data, strict=True)
        request = AskUserQuestionRequest(request.questions, agent=request.agent or agent)
        return request, _with_flags(slack, args)
    if not args.question:
        raise CommandError(USAGE, "say what to ask: --question TEXT (or --file request.json)")
    detail = args.detail
    if args.detail_file is not None:
        detail = read_text(args.detail_file)
    options = tuple(AskUserQuestionOption(label) for label in args.option) or None
    item = AskUserQuestionItem(
        id=args.id,
        question=args.question,
        header=args.header,
        detail=detail,
        options=options,
        multi_select=args.multi,
        default=args.default,
        approvals_required=args.approvals,
        veto=tuple(args.veto) if args.veto else None,
    )
    return AskUserQuestionRequest((item,), agent=agent), _with_flags({}, args)


def _with_flags(slack: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The ``slack`` section with the command line's routing flags laid over it."""
    from relay.server.api import read_slack_section as read_slack

    flags: dict[str, Any] = {
        "channel": args.channel,
        "thread_ts": args.thread_ts,
        "timeout_s": args.timeout,
        "remind_after_s": args.remind_after,
        "reminders": args.reminders,
        "escalate_after_s": args.escalate_after,
        "escalate_users": _escalate(args, group=False),
        "escalate_groups": _escalate(args, group=True),
        "escalate_channel": args.escalate_channel,
        "allowed_users": _list(id_list(args.allowed_users, "--allowed-users")),
        "allowed_groups": _list(id_list(args.allowed_groups, "--allowed-groups")),
        "requester": args.requester,
        "prevent_self_approval": True if args.prevent_self_approval else None,
    }
    merged = {**slack, **{k: v for k, v in flags.items() if v is not None}}
    read_slack(merged)
    return merged


def _provider(args: argparse.Namespace, slack: dict[str, Any]) -> RelayProvider | SlackProvider:
    from slack_sdk.web.async_client import AsyncWebClient

    from relay.client import RelayProvider
    from relay.config.settings import TeamDefaults
    from relay.server.api import read_slack_section as read_slack
    from relay.slack import SlackProvider

    url = args.relay_url or os.environ.get("RELAY_URL")
    if url:
        token = os.environ.get("RELAY_TOKEN", "")
        if not token:
            raise CommandError(USAGE, "set RELAY_TOKEN to one of the relay's API tokens")
        return RelayProvider(url, token, slack=slack)
    bot, app = os.environ.get("SLACK_BOT_TOKEN"), os.environ.get("SLACK_APP_TOKEN")
    if not bot or not app:
        raise CommandError(
            USAGE,
            "say how to reach Slack: --relay-url (or RELAY_URL) with RELAY_TOKEN, or"
            " SLACK_BOT_TOKEN and SLACK_APP_TOKEN to ask directly over Socket Mode",
        )
    channel = slack.get("channel") or os.environ.get("RELAY_CHANNEL")
    if not channel:
        raise CommandError(USAGE, "say where to ask: --channel C… (or RELAY_CHANNEL)")
    base_url = os.environ.get("SLACK_API_URL") or AsyncWebClient.BASE_URL
    target = replace(read_slack(slack), channel=channel)
    return SlackProvider(
        client=AsyncWebClient(token=bot, base_url=base_url),
        channel=channel,
        route=lambda _: target,
        timeout=900.0,
        **TeamDefaults.from_env(os.environ).provider_kwargs(),
    )


async def _ask(
    args: argparse.Namespace, request: AskUserQuestionRequest, slack: dict[str, Any]
) -> AskUserQuestionAnswer:
    from relay.seam.service import UserInteractionService
    from relay.slack import SlackProvider

    provider = _provider(args, slack)
    service = UserInteractionService()
    service.register_provider(provider)
    app_token = os.environ.get("SLACK_APP_TOKEN", "")
    with _Interruptible() as interrupt:
        try:
            try:
                if isinstance(provider, SlackProvider):
                    await provider.connect_socket_mode(app_token)
                return await service.ask(request)
            finally:
                # Cancelled by a signal, the provider has aborted the ask; closing it sends
                # the withdrawal (chat.update, or the relay API's DELETE) before we exit.
                await provider.aclose()
        except asyncio.CancelledError:
            if interrupt.by is None:
                raise
            raise UserInteractionError(
                ErrorCode.ASK_ABORTED,
                f"stopped by {interrupt.by}; the question is withdrawn, nothing is left"
                " waiting in Slack",
                reason="aborted",
            ) from None


class _Interruptible:
    """SIGTERM (how CI cancels a job) and SIGINT (Ctrl-C) cancel the running task, once:
    the ask is then aborted and withdrawn like any cancelled ask, and ``by`` names the
    signal. A second signal while withdrawing is ignored."""

    def __init__(self) -> None:
        self.by: str | None = None
        self._signals: list[signal.Signals] = []

    def __enter__(self) -> _Interruptible:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._interrupt, sig, task)
                self._signals.append(sig)
        return self

    def _interrupt(self, sig: signal.Signals, task: asyncio.Task[Any] | None) -> None:
        if self.by is None and task is not None:
            self.by = sig.name
            task.cancel()

    def __exit__(self, *exc: object) -> None:
        loop = asyncio.get_running_loop()
        for sig in self._signals:
            loop.remove_signal_handler(sig)


def _run_ask(args: argparse.Namespace) -> int:
    request, slack = _request(args)
    if args.approve is not None and args.approve not in request.questions[0].labels:
        raise CommandError(
            USAGE, f"--approve {args.approve!r} is not one of the options of the first question"
        )
    try:
        answer = asyncio.run(_ask(args, request, slack))
    except UserInteractionError as exc:
        sys.stderr.write(error_line(exc.code, str(exc)))
        return _exit_code(exc)
    except KeyboardInterrupt:  # Ctrl-C before or after the ask ran: nothing was left live
        sys.stderr.write(error_line(ErrorCode.ASK_ABORTED, "interrupted"))
        return EXIT_ABORTED
    sys.stdout.write(js_json(answer.to_dict()) + "\n")
    if args.approve is None:
        return 0
    first = answer.answers[0]
    if first.defaulted:
        sys.stderr.write(
            f"relay: nobody answered in time; the default {', '.join(first.selected)!r} is no"
            " approval\n"
        )
        return EXIT_NOT_APPROVED
    approved = tuple(first.selected) == (args.approve,) and first.custom is None
    return 0 if approved else EXIT_NOT_APPROVED


def _exit_code(exc: UserInteractionError) -> int:
    if exc.code == ErrorCode.ASK_ABORTED:
        return EXIT_TIMED_OUT if exc.reason == "timed_out" else EXIT_ABORTED
    if exc.code in (ErrorCode.BAD_REQUEST, ErrorCode.EMPTY_QUESTIONS, ErrorCode.BAD_INTENT):
        return 2
    return EXIT_FAILED


def _escalate(args: argparse.Namespace, *, group: bool) -> list[str] | None:
    """The ``--escalate-to`` ids that are user groups (S…), or the others (users)."""
    ids = id_list(args.escalate_to, "--escalate-to") or ()
    chosen = [i for i in ids if i.startswith("S") == group]
    return chosen or None


def _list(ids: tuple[str, ...] | None) -> list[str] | None:
    return list(ids) if ids is not None else None
