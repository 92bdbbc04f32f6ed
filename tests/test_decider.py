"""One decision for every door (``relay.gate.decider``): the operator's rules, approvers and
quorum hold on ``/v1/approvals`` as on ``/mcp``, and an edit is a new proposal, decided again
as the reviewer who made it. Through a real ``relay serve`` and FakeSlack's modals, and the
pure rulings on their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relay.gate.approval import ApprovalRequest, Decision
from relay.gate.client_gate import ClientGate, ToolUse
from relay.gate.decider import Proposal
from relay.gate.rules import parse_rules
from relay.gate.rulings import Rulings
from relay.seam.abort import AbortSignal
from relay.seam.questions import AgentRef
from relay.testing import FakeSlack
from tests.server_env import SECRET, Relay, relay_server
from tests.test_approvals_api import decided

AGENT = {"id": "claude-code:s1", "name": "Claude Code"}
OPERATOR = """
[[rules]]
action = "deny"
commands = ["rm -rf *"]
reason = "recursive deletes are never allowed"

[[rules]]
action = "ask"
commands = ["terraform *"]
approvers = ["U0LEAD", "U0BOB"]
approvals = 2
"""


def body(command: str, *, editable: bool = True) -> dict[str, Any]:
    return {
        "tool": "Bash",
        "input": {"command": command},
        "agent": AGENT,
        "editable": editable,
    }


def operator_file(tmp: Path) -> str:
    path = tmp / "operator.toml"
    path.write_text(OPERATOR)
    return str(path)


def people(slack: FakeSlack) -> None:
    for user, name in (("U0ALICE", "alice"), ("U0BOB", "bob"), ("U0LEAD", "lead")):
        slack.add_user(user, name=name)


async def edit_form(slack: FakeSlack, relay: Relay, command: str, user: str = "U0ALICE") -> Any:
    status, created = await relay.request("POST", "/v1/approvals", json=body(command))
    assert status == 201, created
    message = await slack.wait_for_message(timeout=15)
    await slack.click(message, "Edit…", user=user)
    return created, message, await slack.wait_for_modal(user=user, timeout=10)


async def test_an_edit_into_what_the_operator_denies_is_refused_in_the_form(
    tmp_path: Path,
) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=operator_file(tmp_path)) as relay,
    ):
        people(slack)
        created, _message, modal = await edit_form(slack, relay, "ls")
        modal.fill("command", "rm -rf /srv/data")
        result = await slack.submit_view(modal)
        assert result.outcome == "errors", result
        assert "recursive deletes are never allowed" in next(iter(result.errors.values()))
        assert modal.is_open
        _status, pending = await relay.request("GET", f"/v1/approvals/{created['id']}")
        assert pending["status"] == "pending"
        # A permitted edit then goes through, and the agent is given exactly it.
        modal.fill("command", "ls -la")
        assert (await slack.submit_view(modal)).outcome == "closed"
        decision = (await decided(relay, created["id"]))["decision"]
        assert decision["behavior"] == "allow"
        assert decision["updated_input"] == {"command": "ls -la"}


async def test_an_edit_needing_other_approvers_makes_no_grant_and_allows_nothing(
    tmp_path: Path,
) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=operator_file(tmp_path)) as relay,
    ):
        people(slack)
        created, _message, modal = await edit_form(slack, relay, "ls")
        modal.fill("command", "terraform apply -auto-approve")
        modal.choose("Then", "Allow for this session")
        result = await slack.submit_view(modal)
        assert result.outcome == "errors", result
        _status, pending = await relay.request("GET", f"/v1/approvals/{created['id']}")
        assert pending["status"] == "pending"
        # No grant was made: the agent's own terraform apply is put to its approvers.
        status, direct = await relay.request(
            "POST", "/v1/approvals", json=body("terraform apply -auto-approve")
        )
        assert (status, direct["decision"]) == (201, None)


async def test_an_edit_needing_more_people_than_the_question_is_refused(tmp_path: Path) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=operator_file(tmp_path)) as relay,
    ):
        people(slack)
        # Bob is one of terraform's approvers, but terraform needs two people.
        _created, _message, modal = await edit_form(slack, relay, "ls", user="U0BOB")
        modal.fill("command", "terraform plan")
        result = await slack.submit_view(modal)
        assert result.outcome == "errors", result
        assert "need 2 people" in next(iter(result.errors.values()))


async def test_an_edit_with_a_grant_runs_the_edited_call() -> None:
    for then in ("Allow for this session", "Allow for 30 minutes"):
        async with FakeSlack(signing_secret=SECRET) as slack, relay_server(slack) as relay:
            people(slack)
            created, _message, modal = await edit_form(slack, relay, "make build")
            modal.fill("command", "make test")
            modal.choose("Then", then)
            assert (await slack.submit_view(modal)).outcome == "closed"
            decision = (await decided(relay, created["id"]))["decision"]
            assert decision["outcome"] == "granted", decision
            # The grant never turns the edit back into the original: the edited call runs.
            assert decision["updated_input"] == {"command": "make test"}
            assert decision["edited_by"] == "U0ALICE"


async def test_the_operators_quorum_holds_on_v1_approvals(tmp_path: Path) -> None:
    async with (
        FakeSlack(signing_secret=SECRET) as slack,
        relay_server(slack, RELAY_RULES_FILE=operator_file(tmp_path)) as relay,
    ):
        people(slack)
        status, created = await relay.request(
            "POST", "/v1/approvals", json=body("terraform apply", editable=False)
        )
        assert status == 201, created
        message = await slack.wait_for_message(timeout=15)
        shown = str(message.blocks)
        assert "Allow for this session" not in shown  # no grant when two must allow
        await slack.click(message, "Allow once", user="U0BOB")
        _status, still = await relay.request("GET", f"/v1/approvals/{created['id']}")
        assert still["status"] == "pending"
        # Someone who is not one of the rule's approvers is not counted.
        await slack.click(message, "Allow once", user="U0ALICE")
        _status, still = await relay.request("GET", f"/v1/approvals/{created['id']}")
        assert still["status"] == "pending"
        await slack.click(message, "Allow once", user="U0LEAD")
        decision = (await decided(relay, created["id"]))["decision"]
        assert decision["behavior"] == "allow"
        assert "bob and lead" in decision["message"]


def rulings(text: str, min_approvals: int | None = None) -> Rulings:
    rules = parse_rules(__import__("tomllib").loads(text), source="operator.toml")
    return Rulings(rules=lambda _: rules, min_approvals=min_approvals)


def request(command: str, **fields: Any) -> ApprovalRequest:
    return ApprovalRequest(
        tool="Bash", input={"command": command}, agent=AgentRef(id="a"), **fields
    )


def test_a_client_may_only_make_the_request_stricter() -> None:
    judged = rulings(OPERATOR).judge(
        Proposal(
            request(
                "terraform apply",
                approvals=1,
                approvers=("U0EVE",),
                session_grants=True,
                grant_minutes=600,
                timeout=10_000.0,
            ),
            owner="o",
        )
    )
    assert isinstance(judged, ApprovalRequest)
    assert judged.quorum == 2
    assert judged.approvers == ("U0LEAD", "U0BOB")  # the client named someone else
    assert judged.grants_offered == (False, 0)
    assert judged.timeout == 10_000.0  # the operator's file sets no time: the client's
    timed = rulings("timeout = 600\n" + OPERATOR).judge(
        Proposal(request("terraform apply", timeout=10_000.0), owner="o")
    )
    assert isinstance(timed, ApprovalRequest)
    assert timed.timeout == 600.0
    # The grant scope is the operator's rule's (a client's pattern never reaches a grant).
    assert judged.pattern is not None
    assert judged.pattern.commands == ("terraform *",)
    narrowed = rulings(OPERATOR).judge(
        Proposal(request("terraform plan", approvers=("U0BOB",), approvals=3), owner="o")
    )
    assert isinstance(narrowed, ApprovalRequest)
    assert (narrowed.approvers, narrowed.quorum) == (("U0BOB",), 3)


def test_the_operators_floor_and_a_client_allow() -> None:
    floor = rulings('default = "ask"', min_approvals=2).judge(Proposal(request("ls"), owner="o"))
    assert isinstance(floor, ApprovalRequest)
    assert floor.quorum == 2
    # The client's allow is only stricter-combined: the operator's ask stands.
    asked = rulings('default = "ask"').judge(Proposal(request("ls", rules_allow=True), owner="o"))
    assert isinstance(asked, ApprovalRequest)
    denied = rulings(OPERATOR).judge(Proposal(request("rm -rf /", rules_allow=True), owner="o"))
    assert isinstance(denied, Decision)
    assert not denied.allowed


async def test_a_clients_own_deny_holds_against_an_edit() -> None:
    client = parse_rules(
        {"rules": [{"action": "deny", "commands": ["rm *"]}], "default": "ask"}, source="own"
    )

    class Edited:
        async def approve(
            self, request: ApprovalRequest, *, signal: AbortSignal | None = None
        ) -> Decision:
            return Decision(
                behavior="allow",
                message="ok",
                outcome="approved",
                updated_input={"command": "rm x"},
            )

        async def aclose(self) -> None:
            return None

    use = ToolUse(tool="Bash", input={"command": "ls"}, agent=AgentRef(id="a"), editable=True)
    decision = await ClientGate(rules=client, approver=Edited()).decide(use)
    assert decision is not None
    assert not decision.allowed
    assert "edited this call into one these rules deny" in decision.message
