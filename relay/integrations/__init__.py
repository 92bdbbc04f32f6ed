"""Adapters for the Python agent frameworks' own approval contracts.

Each framework has a module of its own, importable only with its extra installed
(``pip install 'slack-relay[pydantic-ai]'``, ``[openai-agents]``, ``[langgraph]``,
``[google-adk]``); ``relay.integrations.core`` holds what they share. Nothing here is
imported by ``import relay``.
"""

__all__: list[str] = []
