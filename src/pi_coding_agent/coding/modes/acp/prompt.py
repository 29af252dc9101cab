"""ACP prompt content blocks as one pi user message: text with inlined resources, plus images.

Mentions stay where the user put them: text blocks and resource links are joined in order, an
embedded text resource becomes a ``<file name="...">`` block (the form pi uses for ``@file``
arguments), image blocks and image blobs become pi image blocks.
"""

from __future__ import annotations

from urllib.parse import unquote, urlparse

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.modes.acp.jsonrpc import INVALID_PARAMS, RpcError


def _uri_name(uri: str) -> str:
    """A ``file://`` URI as its path; any other URI as it is."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def _image(data: object, mime: object) -> JsonObject:
    if not isinstance(data, str) or not isinstance(mime, str) or not mime.startswith("image/"):
        raise RpcError(INVALID_PARAMS, "Invalid params", "an image needs base64 data and an image/* mimeType")
    return {"type": "image", "data": data, "mimeType": mime}


def _resource(resource: object, images: list[JsonObject]) -> str:
    if not isinstance(resource, dict) or not isinstance(resource.get("uri"), str):
        raise RpcError(INVALID_PARAMS, "Invalid params", "a resource needs a uri")
    name = _uri_name(resource["uri"])
    if isinstance(resource.get("text"), str):
        return f'\n<file name="{name}">\n{resource["text"]}\n</file>\n'
    mime = resource.get("mimeType")
    if isinstance(resource.get("blob"), str) and isinstance(mime, str) and mime.startswith("image/"):
        images.append(_image(resource["blob"], mime))
        return f"[image: {name}]"
    return f"[binary resource {name} ({mime or 'unknown type'}) not included]"


def _link(block: JsonObject) -> str:
    uri = block.get("uri")
    if not isinstance(uri, str):
        raise RpcError(INVALID_PARAMS, "Invalid params", "a resource_link needs a uri")
    name = block.get("name") if isinstance(block.get("name"), str) else uri
    return f"[@{name}]({_uri_name(uri)})"


def to_pi_prompt(blocks: object) -> tuple[str, list[JsonObject]]:
    """(text, images) for ``session.prompt``; raises ``RpcError`` (invalid params) on bad blocks."""
    if not isinstance(blocks, list) or not blocks:
        raise RpcError(INVALID_PARAMS, "Invalid params", "prompt must be a non-empty array of content blocks")
    parts: list[str] = []
    images: list[JsonObject] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "image":
            images.append(_image(block.get("data"), block.get("mimeType")))
        elif kind == "resource":
            parts.append(_resource(block.get("resource"), images))
        elif kind == "resource_link":
            parts.append(_link(block))
        else:
            raise RpcError(INVALID_PARAMS, "Invalid params", f"unsupported prompt content: {kind!r}")
    return "".join(parts).strip("\n") if parts else "", images
