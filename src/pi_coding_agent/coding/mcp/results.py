"""An MCP ``CallToolResult`` as the model and the transcript see it, shaped as pi shapes it.

Model-facing text over 20 KB keeps its first and last 10 KB around a ``…N chars truncated…`` marker
(Codex's format) and the whole text goes to a private temp file named in the result. Non-image
binary resources are saved to temp files too; resource links name ``read_mcp_resource``. The whole
result minus ``_meta`` is kept as ``structuredContent`` for programmatic callers (codemode).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any
from urllib.parse import urlsplit

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.tools.truncate import format_size

MAX_OUTPUT_BYTES = 20 * 1024
# Past this the raw result is not repeated as structuredContent on the RPC stream (pi repeats it
# whatever its size; a 50 MB result would become a 50 MB event line). The full text is in the file.
MAX_STRUCTURED_BYTES = 1024 * 1024
READ_RESOURCE_TOOL = "read_mcp_resource"


def save_output(data: bytes | str, extension: str) -> str:
    """A new 0600 file ``<tmp>/pi-mcp-<16 hex><ext>`` (never following someone else's link)."""
    import secrets  # with tempfile, loaded by the first saved output: neither is needed at start-up
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"pi-mcp-{secrets.token_hex(8)}{extension}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def _is_text_mime(mime: str | None) -> bool:
    if not mime:
        return False
    kind = mime.split(";", 1)[0].strip().lower()
    return kind.startswith("text/") or kind == "application/json" or kind.endswith(("+json", "+xml"))


def _extension_of(uri: str) -> str:
    path = urlsplit(uri).path or uri
    match = re.search(r"\.[A-Za-z0-9]{1,8}$", path)
    return match.group(0) if match else ".bin"


def _text(text: str) -> JsonObject:
    return {"type": "text", "text": text}


def _binary_resource(uri: str, mime: str | None, blob: str) -> JsonObject:
    import base64

    data = base64.b64decode(blob)
    if _is_text_mime(mime):
        return _text(data.decode("utf-8", "replace"))
    kind = f"{mime or 'unknown type'}, {format_size(len(data))}"
    try:
        return _text(f"[Binary resource {uri} ({kind}) saved to {save_output(data, _extension_of(uri))}]")
    except OSError as exc:
        return _text(f"[Binary resource {uri} ({kind}) could not be saved: {exc}]")


def block_to_content(server: str, block: dict[str, Any], readable_resources: bool) -> dict[str, Any]:
    """One MCP content block as a text or image block for the model."""
    kind = block.get("type")
    if kind == "text":
        return _text(str(block.get("text", "")))
    if kind == "image":
        return {"type": "image", "data": block.get("data", ""), "mimeType": block.get("mimeType", "")}
    if kind == "audio":
        return _text(f"[audio {block.get('mimeType')} omitted]")
    if kind == "resource_link":
        return _text(_resource_link(server, block, readable_resources))
    if kind == "resource" and isinstance(block.get("resource"), dict):
        resource = block["resource"]
        mime = resource.get("mimeType")
        if "text" in resource:
            return _text(str(resource["text"]))
        if isinstance(mime, str) and mime.startswith("image/"):
            return {"type": "image", "data": resource.get("blob", ""), "mimeType": mime}
        return _binary_resource(str(resource.get("uri", "")), mime, str(resource.get("blob", "")))
    return _text(f"[unsupported MCP content {kind}]")


def _resource_link(server: str, block: dict[str, Any], readable: bool) -> str:
    facts = [block["mimeType"]] if block.get("mimeType") else []
    if isinstance(block.get("size"), int):
        facts.append(format_size(block["size"]))
    title = block.get("title") or block.get("name")
    extra = f" ({', '.join(facts)})" if facts else ""
    description = f": {block['description']}" if block.get("description") else ""
    read = f'. Read it with {READ_RESOURCE_TOOL} (server "{server}")' if readable else ""
    return f'[Resource {block.get("uri")} "{title}"{extra}{description}{read}]'


def truncate_middle(text: str, max_bytes: int = MAX_OUTPUT_BYTES) -> tuple[str, int, int] | None:
    """``(cut text, total bytes, total lines)``, or None when ``text`` fits; cuts at character bounds."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return None

    def boundary(i: int) -> bool:
        return i >= len(data) or (data[i] & 0xC0) != 0x80

    head_end = max_bytes // 2
    while head_end > 0 and not boundary(head_end):
        head_end -= 1
    tail_start = len(data) - (max_bytes - max_bytes // 2)
    while tail_start < len(data) and not boundary(tail_start):
        tail_start += 1
    removed = len(data[head_end:tail_start].decode("utf-8"))
    lines = text.count("\n") + 1 - (1 if text.endswith("\n") else 0)
    cut = f"{data[:head_end].decode('utf-8')}…{removed} chars truncated…{data[tail_start:].decode('utf-8')}"
    return cut, len(data), lines


def limit_content(content: list[dict[str, Any]]) -> tuple[list[JsonObject], str | None]:
    """Content within the output limit, and the path of the full text when it was cut."""
    combined = "\n".join(b["text"] for b in content if b.get("type") == "text")
    truncation = truncate_middle(combined)
    if truncation is None:
        return content, None
    cut, total_bytes, total_lines = truncation
    path: str | None = None
    try:
        path = save_output(combined, ".txt")
        where = f"\n\n[Full output: {path} (read it with offset/limit)]"
    except OSError as exc:
        where = f"\n\n[Could not save the full output: {exc}]"
    tokens = -(-total_bytes // 4)
    text = f"Warning: truncated output (original token count: {tokens})\nTotal output lines: {total_lines}\n\n{cut}{where}"
    return [_text(text), *(b for b in content if b.get("type") == "image")], path


def convert_result(server: str, tool: str, result: dict[str, Any], readable_resources: bool = False,
                   ) -> tuple[list[JsonObject], JsonObject, JsonObject | None, bool]:
    """``(content, details, structuredContent, is_error)`` of one ``tools/call`` answer."""
    blocks = [b for b in result.get("content") or [] if isinstance(b, dict)]
    if blocks:
        converted = [block_to_content(server, b, readable_resources) for b in blocks]
    elif "structuredContent" in result:
        converted = [_text(json.dumps(result["structuredContent"], indent=2, ensure_ascii=False))]
    else:
        converted = []
    is_error = result.get("isError") is True
    if is_error and not "".join(b.get("text", "") for b in converted if b.get("type") == "text"):
        converted.append(_text(f"MCP tool {server}/{tool} returned an error"))
    content, full_path = limit_content(converted)
    details: JsonObject = {"server": server, "tool": tool}
    if full_path:
        details["fullOutputPath"] = full_path
    structured: JsonObject | None = {k: v for k, v in result.items() if k != "_meta"}
    if full_path and _rough_size(blocks) > MAX_STRUCTURED_BYTES:
        structured = None
    return content, details, structured, is_error


def _rough_size(blocks: list[JsonObject]) -> int:
    return sum(len(str(b.get("text") or b.get("data") or "")) for b in blocks)
