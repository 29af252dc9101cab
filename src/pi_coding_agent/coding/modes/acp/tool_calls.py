"""How a pi tool call looks to an ACP client: kind, title, locations and content (diffs for edits).

Used for live calls and for replaying saved ones, so both render identically.
"""

from __future__ import annotations

import os
from typing import Any

from pi_coding_agent.ai.types import JsonObject

KINDS = {"read": "read", "write": "edit", "edit": "edit", "bash": "execute", "grep": "search", "find": "search",
         "ls": "search"}
TITLE_MAX = 120
OLD_TEXT_MAX_BYTES = 1 << 20  # a write's previous content is shown as the diff's old side up to this size


def tool_kind(name: str) -> str:
    return KINDS.get(name, "other")


def _absolute(path: object, cwd: str) -> str | None:
    if not isinstance(path, str) or not path:
        return None
    from pi_coding_agent.coding.tools.paths import resolve_to_cwd

    return resolve_to_cwd(path, cwd)


def _clip(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= TITLE_MAX else first[: TITLE_MAX - 1] + "…"


def tool_title(name: str, args: dict[str, Any]) -> str:
    path = args.get("path")
    if name == "bash" and isinstance(args.get("command"), str):
        return f"`{_clip(args['command'])}`"
    if name in ("read", "write", "edit") and isinstance(path, str):
        title = f"{name.capitalize()} {path}"
        offset, limit = args.get("offset"), args.get("limit")
        if name == "read" and isinstance(offset, int | float):
            title += f" (from line {offset:g}" + (f", {limit:g} lines)" if isinstance(limit, int | float) else ")")
        return title
    if name in ("grep", "find") and isinstance(args.get("pattern"), str):
        return _clip(f"{name} {args['pattern']}" + (f" in {path}" if isinstance(path, str) else ""))
    if name == "ls":
        return f"ls {path}" if isinstance(path, str) else "ls"
    return name


def tool_locations(name: str, args: JsonObject, cwd: str) -> list[JsonObject]:
    path = _absolute(args.get("path"), cwd)
    if path is None:
        return [{"path": cwd}] if name in ("ls", "grep", "find") else []
    location: JsonObject = {"path": path}
    offset = args.get("offset")
    if name == "read" and isinstance(offset, int) and offset > 0:
        location["line"] = offset
    return [location]


def _previous_text(path: str) -> str | None:
    """A file's current text for the old side of a write's diff (None when new, binary or huge)."""
    try:
        if os.path.getsize(path) > OLD_TEXT_MAX_BYTES:
            return None
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def diff_content(name: str, args: JsonObject, cwd: str, before_write: bool) -> list[JsonObject]:
    """ACP diffs of an edit (one per replacement) or a write (the whole file)."""
    path = _absolute(args.get("path"), cwd)
    if path is None:
        return []
    if name == "write" and isinstance(args.get("content"), str):
        diff: JsonObject = {"type": "diff", "path": path}
        old = _previous_text(path) if before_write else None
        if old is not None:
            diff["oldText"] = old
        diff["newText"] = args["content"]
        return [diff]
    edits = args.get("edits")
    if name == "edit" and not isinstance(edits, list) and isinstance(args.get("oldText"), str):
        edits = [args]  # the legacy single-edit form the edit tool still accepts
    if name != "edit" or not isinstance(edits, list):
        return []
    return [{"type": "diff", "path": path, "oldText": e["oldText"], "newText": e["newText"]}
            for e in edits if isinstance(e, dict) and isinstance(e.get("oldText"), str)
            and isinstance(e.get("newText"), str)]


def block_content(blocks: object) -> list[dict[str, Any]]:
    """pi content blocks (text, image) as ACP tool-call content."""
    out: list[JsonObject] = []
    for block in blocks if isinstance(blocks, list) else []:
        if block.get("type") == "text" and block.get("text"):
            out.append({"type": "content", "content": {"type": "text", "text": block["text"]}})
        elif block.get("type") == "image":
            out.append({"type": "content", "content": {"type": "image", "data": block.get("data", ""),
                                                        "mimeType": block.get("mimeType", "image/png")}})
    return out


def start_update(call_id: str, name: str, args: JsonObject, cwd: str, status: str) -> dict[str, Any]:
    """The ``tool_call`` update announcing a call."""
    update: JsonObject = {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": tool_title(name, args),
                              "kind": tool_kind(name), "status": status}
    content = diff_content(name, args, cwd, before_write=status == "pending")
    if content:
        update["content"] = content
    locations = tool_locations(name, args, cwd)
    if locations:
        update["locations"] = locations
    update["rawInput"] = args
    return update


def end_update(call_id: str, name: str, args: JsonObject, result: JsonObject, is_error: bool,
               cwd: str, diffs: list[dict[str, Any]], terminal_id: str | None = None) -> dict[str, Any]:
    """The final ``tool_call_update`` of a call: status, content (the announced diffs for a successful
    edit/write, the embedded terminal for a command the client ran)."""
    if terminal_id is not None:
        content = [{"type": "terminal", "terminalId": terminal_id}]
    elif not is_error and diffs:
        content = diffs
    else:
        content = block_content(result.get("content"))
    update: JsonObject = {"sessionUpdate": "tool_call_update", "toolCallId": call_id,
                              "status": "failed" if is_error else "completed", "content": content}
    details = result.get("details")
    if name == "edit" and isinstance(details, dict) and isinstance(details.get("firstChangedLine"), int):
        path = _absolute(args.get("path"), cwd)
        if path is not None:
            update["locations"] = [{"path": path, "line": details["firstChangedLine"]}]
    update["rawOutput"] = result
    return update
