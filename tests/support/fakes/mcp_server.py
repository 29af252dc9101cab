"""A real MCP server for the tests, written with the official SDK (FastMCP).

``python -m tests.support.fakes.mcp_server stdio`` or ``... http <port>`` (streamable HTTP on 127.0.0.1).
Tools cover what the client must handle: plain and structured results, a 200 KB text, an image,
``isError``, progress, server logging, a call that hangs (abort and timeout), a crash mid-call and a
tool list that changes. A line of garbage on stdout is printed at start when ``MCP_FAKE_GARBAGE``
is set.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import time

from mcp.server.fastmcp import Context, FastMCP, Image
from mcp.types import ImageContent, TextContent

PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

server = FastMCP("fake", instructions="Fake tools for tests.\nSecond line.", host="127.0.0.1")
STARTED = os.environ.get("MCP_FAKE_MARKER")


@server.tool(annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@server.tool()
def add(a: int, b: int) -> dict[str, int]:
    """Add two numbers (structured result)."""
    return {"sum": a + b}


@server.tool()
def big() -> str:
    """A 200 KB text."""
    return "".join(f"line {i:06d} " + "x" * 88 + "\n" for i in range(2000))


@server.tool()
def huge(megabytes: int = 50) -> str:
    """A text of the given size."""
    return "y" * (megabytes * 1024 * 1024)


@server.tool(structured_output=False)
def picture() -> list[TextContent | ImageContent]:
    """A caption and an image."""
    image = Image(data=PNG_1PX, format="png").to_image_content()
    return [TextContent(type="text", text="a red pixel"), image]


@server.tool()
def fail() -> str:
    """Always fails (isError)."""
    raise ValueError("deliberate failure")


@server.tool()
async def hang(ctx: Context, seconds: float = 600) -> str:  # type: ignore[type-arg]
    """Sleep; writes a marker file when cancelled."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        if STARTED:
            with open(STARTED, "a") as handle:
                handle.write("cancelled\n")
        raise
    return "woke"


@server.tool()
async def progress(ctx: Context, steps: int = 3, delay: float = 0.3) -> str:  # type: ignore[type-arg]
    """Report progress while working (each report resets the client's timeout)."""
    for step in range(steps):
        await ctx.report_progress(step + 1, steps, f"step {step + 1}")
        await asyncio.sleep(delay)
    return "done"


@server.tool()
async def shout(ctx: Context, text: str) -> str:  # type: ignore[type-arg]
    """Log the text as a server log message, then return it."""
    await ctx.warning(f"shouting:\n{text}")
    return text.upper()


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


@server.tool()
async def grow(ctx: Context) -> str:  # type: ignore[type-arg]
    """Add the tool ``extra``, remove ``add``, and announce the changed list."""

    def extra() -> str:
        """Added at run time."""
        return "extra!"

    server.add_tool(extra)
    server._tool_manager._tools.pop("add", None)
    _answer_lists_late()
    await ctx.session.send_tool_list_changed()
    return "grown"


def _answer_lists_late() -> None:
    """From now on ``tools/list`` answers half a second late, as a busy server may: a client that
    does not wait for the changed list before going on races it (and loses)."""
    listing = server._tool_manager.list_tools

    def late():  # type: ignore[no-untyped-def]
        time.sleep(0.5)
        return listing()

    server._tool_manager.list_tools = late  # type: ignore[method-assign]


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if pid_file := os.environ.get("MCP_FAKE_PIDFILE"):
        with open(pid_file, "w") as handle:
            handle.write(str(os.getpid()))
    if os.environ.get("MCP_FAKE_GARBAGE"):
        print("this is not json", flush=True)
    if mode == "http":
        server.settings.port = int(sys.argv[2])
        server.settings.log_level = "WARNING"
        server.run("streamable-http")
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
