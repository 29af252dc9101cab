"""Running one ``codemode`` call: admission to a worker, the script's job, its nested calls, the result.

Split from ``tool.py`` so that a session registers the tool without importing the worker pool, the
source parser and the output shaping: they load with the first script.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from typing import Any

from pi_coding_agent.agent.tool import ToolResult, UpdateCallback
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.cost import combine_usage
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.codemode import output as out
from pi_coding_agent.coding.codemode.declarations import sample, to_identifier
from pi_coding_agent.coding.codemode.host import STORE_ENTRY_TYPE, CatalogTool, CodemodeHost
from pi_coding_agent.coding.codemode.model_calls import preview
from pi_coding_agent.coding.codemode.nested_calls import ERROR_PREVIEW, NestedCalls
from pi_coding_agent.coding.codemode.sandbox import (
    WORKER_WAIT_S,
    CallRejected,
    Execution,
    Job,
    ScriptRun,
    abort_reason,
    max_workers,
    slots,
)
from pi_coding_agent.coding.codemode.scope import script_globals
from pi_coding_agent.coding.codemode.source import SourceError, parse_source
from pi_coding_agent.coding.tools.process_groups import ProcessRegistry

_ARGS_PREVIEW = 200
_DISCOVERY = re.compile(r"\b(searchTools|describeNamespace|describeTool|ALL_TOOLS)\b")


async def run_script(own_name: str, host_factory: Callable[[], CodemodeHost], processes: ProcessRegistry,
                     tool_call_id: str, params: dict[str, Any], signal: AbortSignal,
                     on_update: UpdateCallback) -> ToolResult:
    """One call of the tool ``own_name`` (``codemode``, which scripts cannot call): parse the source,
    wait for a worker slot, run the job, shape the result."""
    started = time.monotonic()
    try:
        source = parse_source(params["code"])
    except SourceError as exc:
        return ToolResult(content=[{"type": "text", "text": str(exc)}], details={}, is_error=True)
    host = host_factory()
    run = _Run(host, own_name, tool_call_id, on_update)
    await _wait_for_reach(host, params["code"], signal)
    deadline = None if source.timeout_ms is None else source.timeout_ms / 1000
    waiting = time.monotonic()
    admission = await slots.reserve(signal, WORKER_WAIT_S if deadline is None else min(deadline, WORKER_WAIT_S))
    if admission != "reserved":
        return run.not_started(admission, deadline, started, signal)
    try:
        # the wait for a worker counts toward the deadline
        waited_ms = (time.monotonic() - waiting) * 1000
        remaining = None if deadline is None else max(1, round(deadline * 1000 - waited_ms)) / 1000
        job = run.job(source.code, remaining)
        result = await Execution(job, signal, processes).run()
    finally:
        slots.release()
    if result.ok and (result.writes["set"] or result.writes["delete"]):
        await host.append_custom(STORE_ENTRY_TYPE, result.writes)  # announced before the tool's end, as pi
    return run.finish(result, source.max_output_tokens, started)


def script_reach(code: str) -> str | list[str]:
    """The tools a script may call: every tool when it uses a discovery global, else the words of its
    source, so ``tools.mcp__docs__search`` and ``tools["mcp__docs__" + name]`` both name ``mcp__docs``."""
    return "all" if _DISCOVERY.search(code) else re.findall(r"\w+", code, re.ASCII)


async def _wait_for_reach(host: CodemodeHost, code: str, signal: AbortSignal) -> None:
    """Wait for the tool sources the script names; an abort stops the wait (the admission that
    follows reports it), never the connections."""
    waiting = asyncio.ensure_future(host.wait_for_reach(script_reach(code)))
    remove = signal.cancel_task_on_abort(waiting)
    try:
        await waiting
    except asyncio.CancelledError:
        if not signal.aborted:
            raise
    finally:
        remove()


def _blocks(result: ToolResult) -> list[JsonObject]:
    return [dict(b) for b in result.content or []]


def _text_of(result: ToolResult) -> str:
    return "\n".join(str(b.get("text", "")) for b in _blocks(result) if b.get("type") == "text")


def script_value(tool: CatalogTool, result: ToolResult) -> object:
    """What ``await tools.x()`` resolves to (see docs/codemode.md); failures reject."""
    if tool.output_schema is not None and result.structured_content is not None:
        return result.structured_content
    image = next((b for b in _blocks(result) if b.get("type") == "image"), None)
    if tool.name == "read" and image is not None and not result.is_error:
        return {"type": "image", "data": image["data"], "mimeType": image["mimeType"], "note": _text_of(result)}
    text = _text_of(result)
    if result.is_error:
        raise CallRejected(text or f'Tool "{tool.name}" failed')
    return text


def _preview(args: object) -> str:
    try:
        text = json.dumps(args, ensure_ascii=False, separators=(",", ":")) if args is not None else ""
    except (TypeError, ValueError):
        return ""
    return text if len(text) <= _ARGS_PREVIEW else text[: _ARGS_PREVIEW - 3] + "..."




class _Run:
    """The call records and script-facing executors of one codemode call."""

    def __init__(self, host: CodemodeHost, own_name: str, tool_call_id: str, on_update: UpdateCallback) -> None:
        self.host = host
        self.own_name = own_name
        self.id = tool_call_id
        self.on_update = on_update
        self.calls: list[JsonObject] = []
        self.nested = NestedCalls()
        self.next_call = 0
        self.model_calls = 0
        self.usage: JsonObject | None = None  # of the script's classifier and image calls
        self.generated_images = 0
        self.on_update(ToolResult(content=[], details=self.details()))

    def details(self) -> JsonObject:
        return {"calls": [dict(c) for c in self.calls]}

    def publish(self) -> None:
        self.on_update(ToolResult(content=[], details=self.details()))

    def job(self, code: str, timeout_s: float | None) -> Job:
        tools = [t for t in self.host.callable_tools() if t.name != self.own_name]
        samples = {t.name: sample(t) for t in tools}
        return Job(
            code=code,
            tools=[{"name": t.name, "jsName": to_identifier(t.name), "description": samples[t.name]} for t in tools],
            tool_executors={t.name: self._executor(t) for t in tools},
            global_executors=script_globals(self.host, tools, samples, self),
            store=out.read_store(self.host.branch_entries(), STORE_ENTRY_TYPE),
            timeout_s=timeout_s,
        )

    def _executor(self, tool: CatalogTool) -> Any:
        async def execute(args: object, signal: AbortSignal) -> object:
            self.next_call += 1
            call_id = f"{self.id}/{self.next_call}"
            record: dict[str, Any] = {"id": call_id, "name": tool.name, "args": _preview(args), "status": "running"}
            self.calls.append(record)
            nested = self.nested.start(call_id, tool.name, args)
            self.publish()
            started = time.monotonic()
            outcome = await self.host.execute_tool(self.id, call_id, tool.name, args, signal)
            record["durationMs"] = round((time.monotonic() - started) * 1000, 3)
            self.nested.finish(nested, outcome.result.is_error, _text_of(outcome.result), record["durationMs"])
            if outcome.result.is_error:
                record["status"] = "cancelled" if signal.aborted else "error"
                text = _text_of(outcome.result) or f'Tool "{tool.name}" failed'
                record["error"] = text if len(text) <= ERROR_PREVIEW else text[: ERROR_PREVIEW - 3] + "..."
            else:
                record["status"] = "ok"
            self.publish()
            return script_value(tool, outcome.result)
        return execute

    def start_model_call(self, name: str, model: str) -> JsonObject:
        """A ``models.*`` call's row; ids count the script's model calls together (pi's numbering)."""
        self.model_calls += 1
        record: JsonObject = {"id": f"{self.id}/{name}/{self.model_calls}", "name": name, "args": model,
                                  "status": "running"}
        self.calls.append(record)
        self.publish()
        return record

    def finish_model_call(self, record: JsonObject, result: JsonObject, duration_ms: float,
                          images: int) -> None:
        stop = result.get("stopReason")
        record["durationMs"] = round(duration_ms, 3)
        record["status"] = "ok" if stop == "stop" else "cancelled" if stop == "aborted" else "error"
        if result.get("errorMessage"):
            record["error"] = preview(str(result["errorMessage"]))
        usage = result.get("usage")
        if isinstance(usage, dict):
            record["cost"] = usage["cost"]["total"]
            self.usage = combine_usage(self.usage, usage)
        self.generated_images += images
        self.publish()

    def not_started(self, admission: str, deadline: float | None, started: float, signal: AbortSignal) -> ToolResult:
        waited = f"{time.monotonic() - started:.1f}"
        if admission == "aborted":
            error = f"Script aborted: {abort_reason(signal)}"
        elif deadline is not None and deadline <= WORKER_WAIT_S:
            error = (f"Script timed out: Execution timed out after {round(deadline * 1000)} ms while waiting for "
                     "a free codemode worker")
        else:
            error = (f"No codemode worker became free within {round(WORKER_WAIT_S)} seconds. All {max_workers()} "
                     "workers, shared by every session in this process, are held by other scripts. Retry after "
                     "they finish.")
        return ToolResult(content=[
            {"type": "text", "text": f"Script failed\nWall time {waited} seconds\nOutput:\n"},
            {"type": "text", "text": f"Script error:\n{error}\n\nThe script did not start."},
        ], details=self.details(), is_error=True)

    def finish(self, result: ScriptRun, max_tokens: int | None, started: float) -> ToolResult:
        for call in self.calls:
            if call["status"] == "running":
                call["status"] = "cancelled"
        produced = list(result.output)
        if result.ok and result.has_value:
            produced.append({"type": "text", "text": out.value_text(result)})
        items = out.format_items(produced)
        if not result.ok:
            items.append({"type": "text", "text": "Script error:\n" + out.error_text(result, self.calls)})
        if self.generated_images and not any(item["type"] == "image" for item in items):
            count = self.generated_images
            items.append({"type": "text", "text": f"Note: models.generateImages() returned {count} "
                          f"image{'' if count == 1 else 's'} that the script did not show. Show each image block "
                          "of result.output with image(block)."})
        items, full_path = out.truncate(out.join_text(items), out.DEFAULT_MAX_OUTPUT_TOKENS
                                        if max_tokens is None else max_tokens)
        content = out.join_text(out.save_images(items))
        header = (f"{'Script completed' if result.ok else 'Script failed'}\n"
                  f"Wall time {time.monotonic() - started:.1f} seconds\nOutput:\n")
        details = self.details()
        if full_path:
            details["fullOutputPath"] = full_path
        return ToolResult(content=[{"type": "text", "text": header}, *content], details=details,  # type: ignore[list-item]
                          is_error=not result.ok, nested_calls=self.nested.snapshot(), usage=self.usage)
