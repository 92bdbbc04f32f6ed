"""A coding agent that asks a hosted relay (``relay serve``) to review its plan, through
``RelayProvider``: the same seam, the question travels over the relay's HTTP API.

    RELAY_URL=http://127.0.0.1:3000 RELAY_TOKEN=… python examples/remote_agent.py

Try it against the sandbox: ``bash scripts/serve`` prints both values, and the page at
http://127.0.0.1:3000/ is where you approve the plan or send feedback. Exit code 0 when
the plan is approved, 1 when the reviewer wants changes, 2 when no answer came.
"""

from __future__ import annotations

import asyncio
import os

from relay import AgentRef, UserInteractionError, UserInteractionService, review_plan
from relay.client import RelayProvider

PLAN = """# Plan: rotate the database credentials

1. Create the new credentials in the secret store.
2. Roll the API servers, one zone at a time.
3. Revoke the old credentials once no connection uses them.
"""


async def main() -> int:
    service = UserInteractionService()
    async with RelayProvider(
        os.environ["RELAY_URL"], os.environ["RELAY_TOKEN"], timeout=900.0
    ) as provider:
        service.register_provider(provider)
        try:
            verdict = await review_plan(service, PLAN, agent=AgentRef("coder", "Coding agent"))
        except UserInteractionError as exc:
            print(f"no review: {exc.code}: {exc}")
            return 2
    if verdict.approved:
        print("plan approved: carrying it out")
        return 0
    print(f"keep planning: {verdict.feedback or '(no feedback)'}")
    return 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
