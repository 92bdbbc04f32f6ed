"""stdin and stdout for the MCP server, read and written by the event loop itself.

The SDK's ``stdio_server`` reads stdin in a worker thread, which nothing can interrupt: a
``relay mcp`` told to stop (SIGTERM) while its client keeps stdin open would withdraw its
questions and then hang in that read forever. Pipes read through asyncio stop at once. The
SDK's transport takes any stream with ``async for line`` and ``write``/``flush``; these are
handed to it. When stdin is not a pipe (a file, a terminal), the SDK's own is used.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from relay.mcp.boundary import refused_message

__all__ = ["serve_stdio"]


class _Lines:
    """``async for line in stdin``, from an asyncio reader; a message the boundary refuses
    (``refused_message``) is answered on ``out`` and never handed to the SDK, which would
    drop it unanswered."""

    def __init__(self, reader: asyncio.StreamReader, out: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._out = out

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._reader.readline()
            if not line:
                raise StopAsyncIteration
            refused = refused_message(line)
            if refused is None:
                return line.decode("utf-8", errors="replace")
            # One whole line in one write: it cannot interleave with the SDK's.
            self._out.write(json.dumps(refused).encode("ascii") + b"\n")
            await self._out.drain()


class _Out:
    """``await stdout.write(text)`` and ``flush()``, through an asyncio writer."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


@asynccontextmanager
async def serve_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport over this process's stdin and stdout."""
    from mcp.server.stdio import stdio_server

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, sys.stdout
        )
    except (OSError, ValueError):
        async with stdio_server() as streams:  # not a pipe: the SDK's thread-backed files
            yield streams
        return
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    try:
        async with stdio_server(_Lines(reader, writer), _Out(writer)) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        writer.close()
