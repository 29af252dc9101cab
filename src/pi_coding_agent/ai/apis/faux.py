"""The scripted in-process ``faux`` API, for tests, examples and demos without a network or key.

Responses come, in order, from a script: the one bound to the current context (``SCRIPT``, set by an
SDK session's ``faux_script=`` around its runs, so sessions in one process differ), else a JSON file,
the model's ``compat.script`` (a path) or the ``PI_FAUX_SCRIPT`` environment variable. Each response
is an object::

    {"content": [{"type": "text", "text": "..."},
                 {"type": "thinking", "thinking": "..."},
                 {"type": "toolCall", "name": "ls", "arguments": {"path": "."}}],
     "stopReason": "stop",            # optional; "toolUse" is implied by tool calls
     "error": "529: overloaded",      # optional; raise this provider error instead
     "delayMs": 0,                    # optional pause between chunks (abort tests)
     "usage": {"input": 10, "output": 5}}

The position in the script is kept in ``<script>.state`` beside the script so that a sequence of
processes (or runs) walks through it. Without a script, or once it is exhausted, the reply echoes
the last user text.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import orjson

from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.types import AssistantMessage, Context, JsonObject, Model


class Script:
    """A script held in memory, walked through by the runs of one session."""

    def __init__(self, responses: list[JsonObject]) -> None:
        self.responses = list(responses)
        self.position = 0

    def next(self) -> JsonObject | None:
        if self.position >= len(self.responses):
            return None
        self.position += 1
        return self.responses[self.position - 1]


SCRIPT: ContextVar[Script | None] = ContextVar("faux_script", default=None)


def _next_response(model: Model) -> dict[str, Any] | None:
    script = SCRIPT.get()
    if script is not None:
        return script.next()
    path = (model.get("compat") or {}).get("script") or os.environ.get("PI_FAUX_SCRIPT")
    if not path:
        return None
    script = orjson.loads(Path(path).read_bytes())
    state = Path(str(path) + ".state")
    index = int(state.read_text()) if state.exists() else 0
    if index >= len(script):
        return None
    state.write_text(str(index + 1))
    response: JsonObject = script[index]
    return response


def _last_user_text(context: Context) -> str:
    for message in reversed(context["messages"]):
        if message["role"] == "user":
            content = message["content"]
            if isinstance(content, str):
                return content
            return "".join(b["text"] for b in content if b["type"] == "text")
    return ""


def _chunks(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


async def stream(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncIterator[JsonObject]:
    response = _next_response(model) or {"content": [{"type": "text", "text": f"You said: {_last_user_text(context)}"}]}
    delay = response.get("delayMs", 0) / 1000
    if response.get("error"):
        if delay:
            await asyncio.sleep(delay)
        raise ProviderError(response["error"])
    has_tool_calls = False
    for block in response.get("content", []):
        index = len(output["content"])
        kind = block["type"]
        if kind == "toolCall":
            has_tool_calls = True
            call: Any = {"type": "toolCall", "id": block.get("id") or f"call_{uuid.uuid4().hex[:12]}",
                         "name": block["name"], "arguments": {}}
            output["content"].append(call)
            yield {"type": "toolcall_start", "contentIndex": index, "id": call["id"], "toolName": call["name"]}
            args_json = orjson.dumps(block.get("arguments", {})).decode()
            for piece in _chunks(args_json, 16):
                if delay:
                    await asyncio.sleep(delay)
                yield {"type": "toolcall_delta", "contentIndex": index, "delta": piece}
            call["arguments"] = block.get("arguments", {})
            yield {"type": "toolcall_end", "contentIndex": index, "toolCall": call}
            continue
        field = "text" if kind == "text" else "thinking"
        part: Any = {"type": kind, field: ""}
        output["content"].append(part)
        yield {"type": f"{field}_start", "contentIndex": index}
        for piece in _chunks(block[field]):
            if delay:
                await asyncio.sleep(delay)
            part[field] += piece
            yield {"type": f"{field}_delta", "contentIndex": index, "delta": piece}
        yield {"type": f"{field}_end", "contentIndex": index, "content": part[field]}
    usage = response.get("usage") or {}
    output["usage"]["input"] = usage.get("input", 0)
    output["usage"]["output"] = usage.get("output", 0)
    output["usage"]["cacheRead"] = usage.get("cacheRead", 0)
    output["usage"]["cacheWrite"] = usage.get("cacheWrite", 0)
    output["stopReason"] = response.get("stopReason") or ("toolUse" if has_tool_calls else "stop")
