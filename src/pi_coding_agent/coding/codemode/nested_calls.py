"""The ``nestedCalls`` record a tool result carries for the tool calls made inside it.

Used by codemode scripts and by extension tools calling ``ctx.execute_tool``; a module of its own so
that extensions do not load codemode's script runner.
"""

from __future__ import annotations

import json

from pi_coding_agent.ai.types import JsonObject

ERROR_PREVIEW = 500


class NestedCalls:
    """The ``nestedCalls`` record of the result message: calls with their arguments, within pi's
    limits (256 calls, 8 KiB of arguments per call and 32 KiB in all); ``complete`` is false when
    anything was left out or a call never finished."""

    MAX_CALLS = 256
    MAX_ARGS_PER_CALL = 8 * 1024
    MAX_ARGS_TOTAL = 32 * 1024

    def __init__(self) -> None:
        self.calls: list[JsonObject] = []
        self.complete = True
        self.argument_bytes = 0

    def start(self, call_id: str, name: str, args: object) -> JsonObject | None:
        if len(self.calls) >= self.MAX_CALLS:
            self.complete = False
            return None
        record: JsonObject = {"id": call_id, "name": name, "status": "unfinished"}
        size = len(json.dumps({} if args is None else args, ensure_ascii=False, separators=(",", ":")).encode())
        if size > self.MAX_ARGS_PER_CALL or self.argument_bytes + size > self.MAX_ARGS_TOTAL:
            record["argumentsBytes"] = size
            self.complete = False
        else:
            record["arguments"] = {} if args is None else args
            self.argument_bytes += size
        self.calls.append(record)
        return record

    def finish(self, record: JsonObject | None, is_error: bool, text: str, duration_ms: float) -> None:
        if record is None:
            return
        record["status"] = "error" if is_error else "ok"
        record["durationMs"] = round(duration_ms)
        if is_error and text:
            record["error"] = text[:ERROR_PREVIEW]

    def snapshot(self) -> JsonObject | None:
        if not self.calls and self.complete:
            return None
        calls = [dict(c) for c in self.calls]
        return {"calls": calls, "complete": self.complete and all(c["status"] != "unfinished" for c in calls)}
