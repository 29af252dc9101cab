"""Turning a finished script into the tool result the model reads.

Layout as pi's: text and image items in order; with several text items each starts with a
``==> text N/M <==`` line; console lines follow in one ``<console_output>`` block; a failure adds
``Script error:`` with the error and the calls made before it. Over ``max_output_tokens`` the text
keeps its start and end and the whole text goes to a temp file; images are saved to temp files
whose paths stand before them.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.codemode.sandbox import ScriptRun
from pi_coding_agent.coding.tools.truncate import format_size

DEFAULT_MAX_OUTPUT_TOKENS = 10_000
CHARS_PER_TOKEN = 4
_IMAGE_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}


def write_output_file(extension: str, data: bytes) -> str:
    """A new file ``pi-codemode-<16 hex><ext>`` in the temp directory, never following a link."""
    import secrets  # with tempfile, ~10 ms of imports (hashlib, shutil, random): not for start-up
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"pi-codemode-{secrets.token_hex(8)}{extension}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return path


def value_text(result: Any) -> str:
    """A returned value as the result shows it: a string as it is, anything else as the sandbox's
    ``JSON.stringify`` wrote it (so ``0.0000504`` is not re-written as ``5.04e-05``)."""
    return result.value if isinstance(result.value, str) else result.value_json


def format_items(output: list[dict[str, Any]]) -> list[JsonObject]:
    total = sum(1 for item in output if item["type"] == "text" and not item.get("console"))
    items: list[JsonObject] = []
    console: list[str] = []
    index = 0
    for item in output:
        if item["type"] == "image":
            items.append(item)
        elif item.get("console"):
            console.append(item["text"])
        else:
            index += 1
            text = f"==> text {index}/{total} <==\n{item['text']}" if total > 1 else item["text"]
            items.append({"type": "text", "text": text})
    if console:
        items.append({"type": "text", "text": "<console_output>\n" + "\n".join(console) + "\n</console_output>"})
    return items


def join_text(items: list[dict[str, Any]]) -> list[JsonObject]:
    """Adjacent text items become one, each part starting on its own line."""
    joined: list[JsonObject] = []
    parts: list[str] = []
    last = ""
    for item in items:
        if item["type"] != "text":
            if parts:
                joined.append({"type": "text", "text": "".join(parts)})
            parts, last = [], ""
            joined.append(item)
            continue
        if last and not last.endswith("\n"):
            parts.append("\n")
            last = "\n"
        parts.append(item["text"])
        if item["text"]:
            last = item["text"]
    if parts:
        joined.append({"type": "text", "text": "".join(parts)})
    return joined


def call_summary(calls: list[JsonObject]) -> str:
    if not calls:
        return "No tool calls were made."
    listed = ", ".join(f"{c['name']} ({c['status']})" for c in calls)
    return f"Tool calls made before the failure (they are not undone): {listed}"


def error_text(run: ScriptRun, calls: list[JsonObject]) -> str:
    error = run.error
    assert error is not None
    if error.kind == "script":
        head = error.stack or f"{error.name or 'Error'}: {error.message}"
    else:
        head = {"timeout": "Script timed out: ", "aborted": "Script aborted: "}.get(
            error.kind, "Script sandbox failed: ") + error.message
    return f"{head}\n\n{call_summary(calls)}"


def truncate(items: list[dict[str, Any]], max_tokens: int) -> tuple[list[dict[str, Any]], str | None]:
    texts = [item["text"] for item in items if item["type"] == "text"]
    combined = "\n".join(texts)
    budget = max_tokens * CHARS_PER_TOKEN
    if not texts or len(combined) <= budget:
        return items, None
    head_chars = budget // 2
    tail_chars = budget - head_chars
    removed = len(combined) - head_chars - tail_chars
    head, tail = combined[:head_chars], combined[len(combined) - tail_chars:] if tail_chars else ""
    text = (f"Warning: truncated output (original token count: {-(-len(combined) // CHARS_PER_TOKEN)})\n"
            f"Total output lines: {combined.count(chr(10)) + 1}\n\n"
            f"{head}…{-(-removed // CHARS_PER_TOKEN)} tokens truncated…{tail}")
    path: str | None = None
    try:
        path = write_output_file(".txt", combined.encode())
        text += f"\n\n[Full output: {path} (read with offset/limit)]"
    except OSError as exc:
        text += f"\n\n[Could not save the full output: {exc}]"
    return [{"type": "text", "text": text}, *(item for item in items if item["type"] == "image")], path


def save_images(items: list[dict[str, Any]]) -> list[JsonObject]:
    """Each image gets a text item naming the temp file it was saved to; repeats are saved once."""
    labels: dict[str, str] = {}
    out: list[JsonObject] = []
    for item in items:
        if item["type"] != "image":
            out.append(item)
            continue
        if item["data"] not in labels:
            data = base64.b64decode(item["data"])
            kind = f"{item['mimeType']}, {format_size(len(data))}"
            try:
                path = write_output_file(_IMAGE_EXTENSIONS[item["mimeType"]], data)
                labels[item["data"]] = f"[Image saved to {path} ({kind})]"
            except OSError as exc:
                labels[item["data"]] = f"[Image ({kind}) could not be saved: {exc}]"
        out.extend([{"type": "text", "text": labels[item["data"]]}, item])
    return out


def read_store(branch: list[JsonObject], entry_type: str) -> JsonObject:
    """``load()`` values: the store entries on the branch applied from the root."""
    store: JsonObject = {}
    for entry in branch:
        data = entry.get("data")
        if entry.get("type") != "custom" or entry.get("customType") != entry_type or not isinstance(data, dict):
            continue
        if not isinstance(data.get("set"), dict) or not isinstance(data.get("delete"), list):
            continue
        for key in data["delete"]:
            store.pop(key, None)
        store.update(data["set"])
    return store
