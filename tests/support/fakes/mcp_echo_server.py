"""A stdio MCP server with one ``echo`` tool, on the standard library alone.

For tests about when servers start and stop (directory switches, replacements), which start dozens
of them: it starts in a few milliseconds where the FastMCP server (``mcp_server.py``, the one that
checks the protocol against the official SDK) spends about a second of CPU importing the SDK.
"""

from __future__ import annotations

from typing import Any

from tests.support.fakes.mcp_raw_server import serve

ECHO = {"name": "echo", "description": "Echo the text back.", "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The result of a request, None for a method this server does not have."""
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "echo", "version": "1"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [ECHO]}
    if method == "tools/call" and params.get("name") == "echo":
        text = (params.get("arguments") or {}).get("text", "")
        return {"content": [{"type": "text", "text": f"echo: {text}"}], "isError": False}
    return None


if __name__ == "__main__":
    serve(answer)
