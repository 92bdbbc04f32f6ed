"""``relay serve --sandbox``: try relay with no Slack workspace.

The production relay (the same provider, store, API and ``/slack/events`` click path) runs
against an embedded Slack stand-in built on ``relay.testing.FakeSlack``, and serves a page at
``/`` that shows what the relay posted as Slack would render it and lets a visitor answer as
one of a few simulated people. See ``relay.sandbox.run``.
"""

from relay.sandbox.directory import CHANNELS, DEFAULT_CHANNEL, GROUPS, PEOPLE, Person
from relay.sandbox.page import CONTENT_SECURITY_POLICY, SandboxPage
from relay.sandbox.run import run_sandbox, sandbox_settings, serve_sandbox
from relay.sandbox.samples import SAMPLES, sample_request
from relay.sandbox.standin import ActionRefused, Sandbox

__all__ = [
    "CHANNELS",
    "CONTENT_SECURITY_POLICY",
    "DEFAULT_CHANNEL",
    "GROUPS",
    "PEOPLE",
    "SAMPLES",
    "ActionRefused",
    "Person",
    "Sandbox",
    "SandboxPage",
    "run_sandbox",
    "sample_request",
    "sandbox_settings",
    "serve_sandbox",
]
