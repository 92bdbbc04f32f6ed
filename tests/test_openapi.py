"""The OpenAPI document is valid and describes exactly the routes the server has."""

from __future__ import annotations

from openapi_spec_validator import validate
from slack_sdk.web.async_client import AsyncWebClient

from relay.server.app import build_app
from relay.server.openapi import openapi_document
from relay.slack import SlackProvider
from relay.slack.serving import SlackServing


def test_the_document_is_valid_openapi() -> None:
    validate(openapi_document())  # type: ignore[arg-type]


async def test_the_document_matches_the_routes() -> None:
    provider = SlackProvider(
        client=AsyncWebClient(token="xoxb-x"), signing_secret="s", channel="C1"
    )
    app = build_app(channel=SlackServing(provider), api_tokens=("t" * 20,))
    routes = {
        (route.method.lower(), route.resource.canonical)  # type: ignore[union-attr]
        for route in app.router.routes()
        if route.method != "HEAD"
    }
    documented = {
        (method, path.replace("{ask_id}", "{ask_id}"))
        for path, item in openapi_document()["paths"].items()
        for method in item
        if method != "parameters"
    }
    # /mcp speaks MCP (Streamable HTTP), not this REST API: the README documents it.
    mcp = {("get", "/mcp"), ("post", "/mcp"), ("delete", "/mcp")}
    assert documented | {("get", "/openapi.json"), ("post", "/slack/events"), *mcp} == routes
    await provider.aclose()
