"""The relay as an MCP server: ``ask_user_question`` and ``approve_tool_use``.

``relay mcp`` serves it over stdio; ``relay serve`` mounts it at ``/mcp`` (Streamable HTTP).
"""

from relay.mcp.server import Toolbox, build_server
from relay.mcp.tools import APPROVE_TOOL_USE, ASK_USER_QUESTION, TOOLS

__all__ = ["APPROVE_TOOL_USE", "ASK_USER_QUESTION", "TOOLS", "Toolbox", "build_server"]
