"""The three resource tools Codex and opencode use, over every connected server with resources:
``list_mcp_resources``, ``list_mcp_resource_templates`` and ``read_mcp_resource``.

Listings are JSON (``{server?, resources: [{server, ...}], nextCursor?, errors?}``): one page of one
server with ``server``, every page of every server without. MCP App resources (``ui://``, HTML with
``profile=mcp-app``) and icons are left out. Read contents become text and images; other binaries
go to temp files. Tool names, descriptions and schemas are pi's, because models know them.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pi_coding_agent.agent.tool import AgentTool, ToolResult, UpdateCallback
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.mcp.results import READ_RESOURCE_TOOL, block_to_content, limit_content

if TYPE_CHECKING:  # the connection stack loads when servers connect, not with the session's tools
    from pi_coding_agent.coding.mcp.connection import ServerConnection

LIST_RESOURCES_TOOL = "list_mcp_resources"
LIST_TEMPLATES_TOOL = "list_mcp_resource_templates"
RESOURCE_TOOLS = (LIST_RESOURCES_TOOL, LIST_TEMPLATES_TOOL, READ_RESOURCE_TOOL)


def _string(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


LIST_PARAMETERS = {"type": "object", "properties": {
    "server": _string("MCP server name. Omit to list every server with resources."),
    "cursor": _string("Opaque cursor from a previous call with the same server; omit for the first page.")},
    "additionalProperties": False}
READ_PARAMETERS = {"type": "object", "properties": {
    "server": _string("MCP server name exactly as configured. Must match the 'server' field returned by "
                      "list_mcp_resources."),
    "uri": _string("Resource URI to read. Must be one of the URIs returned by list_mcp_resources.")},
    "required": ["server", "uri"], "additionalProperties": False}
DESCRIPTIONS = {
    LIST_RESOURCES_TOOL: "Lists resources provided by MCP servers. Resources allow servers to share data that "
    "provides context to language models, such as files, database schemas, or application-specific information. "
    "Prefer resources over web search when possible.",
    LIST_TEMPLATES_TOOL: "Lists resource templates provided by MCP servers. Parameterized resource templates "
    "allow servers to share data that takes parameters and provides context to language models, such as files, "
    "database schemas, or application-specific information. Prefer resource templates over web search when possible.",
    READ_RESOURCE_TOOL: "Read a specific resource from an MCP server given the server name and resource URI.",
}
_KEYS = {LIST_RESOURCES_TOOL: ("resources/list", "resources"),
         LIST_TEMPLATES_TOOL: ("resources/templates/list", "resourceTemplates")}
_APP_PROFILE = re.compile(r";\s*profile\s*=\s*\"?mcp-app\"?", re.IGNORECASE)


def is_app_resource(item: JsonObject) -> bool:
    uri = str(item.get("uri") or item.get("uriTemplate") or "")
    return uri.startswith("ui://") or bool(_APP_PROFILE.search(str(item.get("mimeType") or "")))


def _listed(server: str, item: JsonObject) -> JsonObject:
    return {"server": server, **{k: v for k, v in item.items() if k not in ("_meta", "icons")}}


def _argument(params: JsonObject, key: str) -> str | None:
    value = params.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string")
    return value.strip() or None


class ResourceTool(AgentTool):
    """One of the three tools; ``servers()`` gives the connected servers with resources at call time."""

    execution_mode: Literal["parallel", "sequential"] = "parallel"
    namespace = None

    def __init__(self, name: str, exposure: str, servers: Callable[[], list[ServerConnection]]) -> None:
        self.name = self.label = name
        self.description = DESCRIPTIONS[name]
        self.parameters = READ_PARAMETERS if name == READ_RESOURCE_TOOL else LIST_PARAMETERS
        self.exposure = exposure
        self.annotations = {"readOnlyHint": True}
        self.servers = servers
        self.available = True

    def _find(self, name: str) -> ServerConnection:
        servers = self.servers()
        for server in servers:
            if server.name == name:
                return server
        available = ", ".join(s.name for s in servers)
        raise ValueError(f'MCP server "{name}" has no resources' + (f". Servers with resources: {available}"
                                                                    if available else ""))

    async def execute(self, tool_call_id: str, params: JsonObject, signal: AbortSignal,
                      on_update: UpdateCallback) -> ToolResult:
        params = params or {}
        if self.name == READ_RESOURCE_TOOL:
            return await self._read(params)
        payload = await self._list(params)
        content, path = limit_content([{"type": "text", "text": json.dumps(payload, ensure_ascii=False,
                                                                          separators=(",", ":"))}])
        details = {"server": _argument(params, "server") or "", "tool": self.name, **({"fullOutputPath": path} if path else {})}
        return ToolResult(content=content, details=details, structured_content=payload)  # type: ignore[arg-type]

    async def _list(self, params: JsonObject) -> JsonObject:
        method, key = _KEYS[self.name]
        server_name, cursor = _argument(params, "server"), _argument(params, "cursor")
        if server_name:
            server = self._find(server_name)
            page = await _page(server, method, key, cursor)
            items = [_listed(server.name, i) for i in page.get(key) or [] if isinstance(i, dict) and not is_app_resource(i)]
            out: JsonObject = {"server": server.name, key: items}
            if isinstance(page.get("nextCursor"), str):
                out["nextCursor"] = page["nextCursor"]
            return out
        if cursor:
            raise ValueError("cursor can only be used when a server is specified")
        servers = sorted(self.servers(), key=lambda s: s.name)
        results = await asyncio.gather(*(_all(s, method, key) for s in servers), return_exceptions=True)
        items, errors = [], []
        for server, result in zip(servers, results, strict=True):
            if isinstance(result, BaseException):
                errors.append({"server": server.name, "error": str(result)})
            else:
                items += [_listed(server.name, i) for i in result if not is_app_resource(i)]
        return {key: items, **({"errors": errors} if errors else {})}

    async def _read(self, params: JsonObject) -> ToolResult:
        server_name, uri = _argument(params, "server"), _argument(params, "uri")
        if not server_name:
            raise ValueError("server must be provided")
        if not uri:
            raise ValueError("uri must be provided")
        server = self._find(server_name)
        result = await (await server.client()).request("resources/read", {"uri": uri})
        contents = [c for c in (result or {}).get("contents") or [] if isinstance(c, dict)]
        blocks: list[JsonObject] = []
        for item in contents:
            if len(contents) > 1:
                blocks.append({"type": "text", "text": f"{item.get('uri')}:"})
            blocks.append(block_to_content(server.name, {"type": "resource", "resource": item}, False))
        content, path = limit_content(blocks or [{"type": "text", "text": f"Resource {uri} is empty."}])
        details = {"server": server.name, "tool": READ_RESOURCE_TOOL, **({"fullOutputPath": path} if path else {})}
        structured = {"server": server.name, "uri": uri,
                      "contents": [{k: v for k, v in c.items() if k != "_meta"} for c in contents]}
        return ToolResult(content=content, details=details, structured_content=structured)  # type: ignore[arg-type]


async def _page(server: ServerConnection, method: str, key: str, cursor: str | None) -> dict[str, Any]:
    try:
        page = await (await server.client()).request(method, {"cursor": cursor} if cursor else None)
    except Exception as exc:
        if _no_templates(exc, key):
            return {key: []}
        raise
    return page if isinstance(page, dict) else {}


async def _all(server: ServerConnection, method: str, key: str) -> list[JsonObject]:
    try:
        return await (await server.client()).list_all(method, key)
    except Exception as exc:
        if _no_templates(exc, key):
            return []
        raise


def _no_templates(exc: Exception, key: str) -> bool:
    """A server without resource templates answers their listing with "method not found"."""
    from pi_coding_agent.coding.mcp.client import McpError
    from pi_coding_agent.coding.mcp.connection import METHOD_NOT_FOUND

    return isinstance(exc, McpError) and exc.code == METHOD_NOT_FOUND and key == "resourceTemplates"


def resource_exposure(exposures: set[str]) -> str:
    """The widest exposure among the servers the tools reach: direct, then codemode, then deferred."""
    return next((e for e in ("direct", "codemode", "deferred") if e in exposures), "hidden")
