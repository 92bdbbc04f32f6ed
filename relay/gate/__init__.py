"""The team's gate for coding agents: rules, approvals, and how a tool use is shown.

``relay.gate.client_gate.ClientGate`` applies a rules file (``relay.gate.rules.load_rules``)
and asks an approver (``relay.gate.local.LocalApprover`` in this process,
``relay.gate.remote.RemoteApprover`` through a hosted relay) when a human must decide. The
submodules are imported by name: ``relay.grants`` sits between the pure ones and the rest.
"""

__all__: list[str] = []
