"""The seam for reviewers' edits: a ``CallVerdict`` with ``edited_args``
becomes each framework's edit where it has one, and a deny carrying the new arguments where
it has none, so nothing runs with arguments nobody approved."""

from __future__ import annotations

import json

from langgraph.types import Interrupt
from pydantic_ai.tools import ToolApproved, ToolDenied

from relay.gate.approval import Decision
from relay.gate.remote import approval_body
from relay.integrations import google_adk as relay_adk
from relay.integrations import langgraph as relay_lg
from relay.integrations import pydantic_ai as relay_pai
from relay.integrations.core import CallVerdict, PendingCall, approval_request, verdict
from relay.seam.parties import Responder
from relay.seam.questions import AgentRef

ALLOWED = Decision(
    behavior="allow",
    message="alice allowed this in Slack (allow once)",
    outcome="approved",
    by=Responder("U0ALICE", "alice"),
)
EDITED = CallVerdict(ALLOWED, edited_args={"path": "/srv/a/tmp"})


def test_pydantic_ai_takes_the_edit_as_override_args() -> None:
    results = relay_pai.results({"c1": EDITED, "c2": CallVerdict(Decision.deny("no"))})
    assert results.approvals == {
        "c1": ToolApproved(override_args={"path": "/srv/a/tmp"}),
        "c2": ToolDenied("no"),
    }
    assert results.answered_by == {"c1": "U0ALICE"}


def test_langgraph_takes_the_edit_as_an_edited_action_when_the_tool_allows_edits() -> None:
    batched = Interrupt(
        value={
            "action_requests": [{"name": "delete_file", "args": {"path": "/srv/a"}}],
            "review_configs": [
                {"action_name": "delete_file", "allowed_decisions": ["approve", "edit", "reject"]}
            ],
        },
        id="i1",
    )
    command = relay_lg.resume([batched], {"i1:0": EDITED})
    assert command.resume == {
        "i1": {
            "decisions": [
                {
                    "type": "edit",
                    "edited_action": {"name": "delete_file", "args": {"path": "/srv/a/tmp"}},
                }
            ]
        }
    }
    # A tool without "edit": the edit is a reject naming the reviewer's arguments.
    strict = Interrupt(
        value={
            **batched.value,
            "review_configs": [
                {"action_name": "delete_file", "allowed_decisions": ["approve", "reject"]}
            ],
        },
        id="i1",
    )
    decision = relay_lg.resume([strict], {"i1:0": EDITED}).resume["i1"]["decisions"][0]
    assert decision["type"] == "reject"
    assert json.dumps({"path": "/srv/a/tmp"}) in decision["message"]


def test_adk_has_no_edit_so_the_edit_is_a_rejection_naming_the_new_arguments() -> None:
    message = relay_adk.resume_message({"adk-1": EDITED})
    assert message.parts is not None
    response = message.parts[0].function_response
    assert response is not None
    assert response.response is not None
    assert response.response["confirmed"] is False
    said = response.response["payload"]["relay"]["message"]
    assert json.dumps({"path": "/srv/a/tmp"}) in said


def test_a_paused_run_asks_for_edits_where_its_framework_takes_them() -> None:
    # RelayApprovals posts this body; the relay's decision's updated_input comes back as
    # the verdict's edited_args.
    agent = AgentRef("ops-bot", "Ops bot")
    call = PendingCall("c1", "delete_file", {"path": "/srv/a"}, editable=True)
    assert approval_body(approval_request(call, agent))["editable"] is True
    plain = PendingCall("c1", "delete_file", {"path": "/srv/a"})
    assert "editable" not in approval_body(approval_request(plain, agent))
    edited = Decision.from_json({**ALLOWED.to_json(), "updated_input": {"path": "/srv/a/tmp"}})
    assert verdict(edited).edited_args == {"path": "/srv/a/tmp"}
    assert verdict(ALLOWED).edited_args is None
