"""A stdio MCP server with one ``echo`` tool, on the standard library alone.

For tests about when servers start and stop (directory switches, replacements), which start dozens
of them: it starts in a few milliseconds where the FastMCP server (``mcp_server.py``, the one that
checks the protocol against the official SDK) spends about a second of CPU importing the SDK.
"""

from __future__ import annotations

import json
import sys
from typing import Any

ECHO = {"name": "echo", "description": "Echo the text back.", "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of a request, None for a method this server does not have."""
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


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:  # notifications and answers need no reply
            continue
        result = answer(message["method"], message.get("params") or {})
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        reply.update({"result": result} if result is not None else
                     {"error": {"code": -32601, "message": f"Method not found: {message['method']}"}})
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
