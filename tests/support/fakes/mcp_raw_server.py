"""A hand-written stdio MCP server that misbehaves on purpose: a tool with an invalid input schema,
one without any, and a ``tools/call`` answer that is not a ``CallToolResult``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

TOOLS = [{"name": "weird", "description": "Has a broken schema", "inputSchema": {"type": "object", "properties": {
    "x": {"type": 12}}}},
         {"name": "bare"},
         {"name": "liar", "description": "Answers with a non-result", "inputSchema": {"type": "object"}}]


def answer(message: dict[str, Any]) -> object:
    method = message.get("method")
    if method == "initialize":
        return {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "0"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        params = message.get("params") or {}
        if params.get("name") == "liar":  # type: ignore[union-attr]
            return {"content": "not a list"}
        return {"content": [{"type": "text", "text": f"called {json.dumps(params, sort_keys=True)}"}]}
    return None


def serve(answer: Callable[[dict[str, Any]], object]) -> None:
    """Answer each request on stdin with ``answer(message)`` (None: method not found); notifications
    get no reply. Also the loop of ``mcp_echo_server``."""
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        result = answer(message)
        reply = {"jsonrpc": "2.0", "id": message["id"]}
        reply.update({"result": result} if result is not None else
                     {"error": {"code": -32601, "message": f"Method not found: {message.get('method')}"}})
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve(answer)
