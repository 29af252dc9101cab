"""The ``codemode`` tool: the model sends JavaScript that calls the session's other tools.

The script runs in a QuickJS VM in a worker process (``sandbox.py``); every ``tools.<name>()``
call is a real tool execution through the agent's pipeline (``CodemodeHost.execute_tool``), with
its own events and hooks. Only what the script outputs reaches the model. The description lists
the callable tools as TypeScript declarations within ``codemode.inlineBudget`` estimated tokens.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pi_coding_agent.agent.tool import AgentTool, ToolResult, UpdateCallback
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.coding.codemode import output as out
from pi_coding_agent.coding.codemode.declarations import describe_output, to_identifier, tool_sample
from pi_coding_agent.coding.codemode.host import STORE_ENTRY_TYPE, CatalogTool, CodemodeHost
from pi_coding_agent.coding.codemode.sandbox import (
    WORKER_WAIT_S,
    CallRejected,
    Execution,
    Job,
    ScriptRun,
    max_workers,
    slots,
)
from pi_coding_agent.coding.codemode.scope import script_globals
from pi_coding_agent.coding.codemode.source import SourceError, parse_source
from pi_coding_agent.coding.tools.process_groups import ProcessRegistry

NAME = "codemode"
DEFAULT_INLINE_BUDGET = 3000
_CHARS_PER_TOKEN = 4
_ARGS_PREVIEW = 200
_ERROR_PREVIEW = 500
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "Raw JavaScript source."}},
    "required": ["code"],
}
GRAMMAR = r"""
start: options_source | plain_source
options_source: OPTIONS_LINE NEWLINE SOURCE
plain_source: SOURCE

OPTIONS_LINE: /[ \t]*\/\/ @options:[^\r\n]*/
NEWLINE: /\r?\n/
SOURCE: /[\s\S]+/
"""
INTRO = (
    "Run a JavaScript program that calls the other tools. Send plain JavaScript source (no JSON wrapping, no "
    "markdown fence); it becomes the body of an async function in a QuickJS sandbox, so `await` and `return` "
    "work at the top level. There is no Node, no file system, no network and no timers.\n"
    "- `await tools.<name>({ ...args })` gives a string, or an object when the tool's declaration returns one, "
    "and throws an Error when the call fails. A tool declared to return an object may also return that object "
    "on failure, so look at its fields. Calls that are still running when the script finishes are cancelled.\n"
    '- The first line may set options: `// @options: {"max_output_tokens": 10000, "timeout_ms": 60000}`'
)


def docs_path() -> str:
    from pi_coding_agent.coding.resources.system_prompt import project_root

    return str(project_root() / "docs" / "codemode.md")


def globals_text() -> str:
    return "\n".join([
        "Globals:",
        "- Output comes from `text(value)`, `image(dataUrlOrImageBlock)`, `console.log(...)` and a top-level "
        "`return`; `exit()` stops the script. When there is more than one text item, each opens with a "
        "`==> text N/M <==` line; `console` lines come after everything else in a single `<console_output>` block. "
        "Every `image()` is also written to a temp file whose path the result gives.",
        "- `store(key, value)` and `load(key)` carry JSON values from one codemode call to the next.",
        "- To find tools that are not listed here (MCP tools, for example): `ALL_TOOLS`, "
        "`await searchTools(query, { limit?, namespace? })`, `await describeTool(name)`, "
        "`await describeNamespace(name)`.",
        f"- `models`: classifier and image models; read {docs_path()} before using it.",
    ])


def sample(tool: CatalogTool) -> str:
    """Description (with prompt guidelines) and declaration, as listings and ``ALL_TOOLS`` show it."""
    bullets = [f"- {g.strip()}" for g in tool.guidelines if g.strip()]
    description = f"{tool.description.strip()}\n\n" + "\n".join(bullets) if bullets else tool.description
    return tool_sample(tool.name, description, tool.parameters, tool.output_schema or {"type": "string"})


def _section(tool: CatalogTool) -> str:
    ident = to_identifier(tool.name)
    heading = f"### `{ident}`" if ident == tool.name else f"### `{ident}` (`{tool.name}`)"
    return f"{heading}\n{sample(tool).strip()}"


def _select(groups: list[list[tuple[str, int]]], budget: int) -> set[str]:
    """Round-robin over groups, cheapest first: each round every group places one more tool while
    it fits, so every namespace shows up before any is complete."""
    queues = [sorted(group, key=lambda entry: entry[1]) for group in groups]
    shown: set[str] = set()
    remaining = budget
    active = [q for q in queues if q]
    while active:
        still = []
        for queue in active:
            name, cost = queue[0]
            if cost > remaining:
                continue
            remaining -= cost
            shown.add(name)
            queue.pop(0)
            if queue:
                still.append(queue)
        active = still
    return shown


def describe(tools: list[CatalogTool], budget: int | None, mode: str = "on") -> str:
    """The model-facing description: intro, globals, then the listed tools grouped by namespace.

    Mode ``on`` lists only tools that are not declared to the model (not ``direct``); ``only``
    lists every callable tool. ``deferred`` tools are never listed, so the description does not
    change while such tools (MCP servers) connect.
    """
    listed = [t for t in tools if t.name != NAME and t.exposure != "deferred"
              and (mode == "only" or t.exposure != "direct")]
    sections = [INTRO, globals_text()]
    if not listed:
        return "\n\n".join(sections)
    groups: dict[str, tuple[CatalogTool | None, list[tuple[str, str, int]]]] = {"": (None, [])}
    for tool in listed:
        key = f"ns:{tool.namespace.name}" if tool.namespace else ""
        groups.setdefault(key, (tool, []))
        text = _section(tool)
        groups[key][1].append((tool.name, text, -(-len(text) // _CHARS_PER_TOKEN)))
    ordered = [groups[""]] + [groups[k] for k in sorted(k for k in groups if k)]
    costs = [[(n, c) for n, _, c in entries] for _, entries in ordered]
    shown = {n for group in costs for n, _ in group} if budget is None else _select(costs, budget)
    parts = ["Nested tools:"]
    for owner, entries in ordered:
        visible = [e for e in entries if e[0] in shown]
        if owner is not None and owner.namespace is not None:
            note = "" if len(visible) == len(entries) else (
                " (tools not listed)" if not visible else " (some tools not listed)")
            desc = (owner.namespace.description or "").strip()
            parts.append(f"## {owner.namespace.name}{note}" + (f"\n{desc}" if desc else ""))
        parts.extend(text for _, text, _ in visible)
    sections.append("\n\n".join(parts))
    return "\n\n".join(sections)


def script_call_note(tool: CatalogTool) -> str:
    """Appended (mode ``on``) to a declared tool's description: how a script calls it."""
    return (f"{tool.description.strip()}\n\nCodemode: `tools.{to_identifier(tool.name)}(args)` resolves to "
            f"{describe_output(tool.name, tool.output_schema or {'type': 'string'})}.")


def _blocks(result: ToolResult) -> list[dict[str, Any]]:
    return [dict(b) for b in result.content or []]


def _text_of(result: ToolResult) -> str:
    return "\n".join(str(b.get("text", "")) for b in _blocks(result) if b.get("type") == "text")


def script_value(tool: CatalogTool, result: ToolResult) -> Any:
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


def _preview(args: Any) -> str:
    try:
        text = json.dumps(args, ensure_ascii=False, separators=(",", ":")) if args is not None else ""
    except (TypeError, ValueError):
        return ""
    return text if len(text) <= _ARGS_PREVIEW else text[: _ARGS_PREVIEW - 3] + "..."


def settings_mode(settings: Any) -> str:
    return "only" if settings.get("codemode.mode") == "only" else "on"


def settings_budget(settings: Any) -> int:
    value = settings.get("codemode.inlineBudget")
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 and value == value
    return int(value) if ok else DEFAULT_INLINE_BUDGET


def presented_declarations(tools: list[Any], settings: Any) -> list[Any]:
    """The declarations of the active tools while ``codemode`` is one of them: mode ``on`` tells
    each declared tool how scripts call it, mode ``only`` hides the declared tools, so the model
    reaches them through scripts. Without codemode the declarations are unchanged."""
    from pi_coding_agent.agent.tool import tool_declaration
    from pi_coding_agent.coding.codemode.host import catalog_entry

    declarations = [tool_declaration(t) for t in tools]
    if not any(t.name == NAME for t in tools):
        return declarations
    if settings_mode(settings) == "only":
        return [d for d, t in zip(declarations, tools, strict=True)
                if t.name == NAME or getattr(t, "exposure", "direct") != "direct"]
    for declaration, tool in zip(declarations, tools, strict=True):
        if tool.name != NAME:
            declaration["description"] = script_call_note(catalog_entry(tool))
    return declarations


class CodemodeTool(AgentTool):
    """The ``codemode`` tool over a :class:`CodemodeHost` (created lazily: the session comes later)."""

    name = NAME
    label = NAME
    parameters = PARAMETERS
    execution_mode: Literal["parallel", "sequential"] = "parallel"
    handles_abort = True  # an abort ends the script with a "Script aborted" result
    prompt_snippet = "Run JavaScript that calls other tools"
    prompt_guidelines = (
        "Prefer one codemode script over many separate calls when calls are independent (Promise.allSettled), "
        "depend on each other, or return large output to filter.",)
    constrained_sampling: ClassVar[dict[str, Any]] = {"type": "grammar", "variants": {"openai_lark": GRAMMAR}}

    def __init__(self, host: Callable[[], CodemodeHost], settings: Callable[[], Any],
                 processes: ProcessRegistry) -> None:
        self._host = host
        self._settings = settings
        self._processes = processes  # the session's: its shutdown kills a worker still running
        self._description: str | None = None

    @property
    def description(self) -> str:
        """Computed per request: it lists the tools callable at that moment."""
        if self._description is not None:
            return self._description
        settings = self._settings()
        return describe(self._host().callable_tools(), settings_budget(settings), settings_mode(settings))

    @description.setter
    def description(self, text: str) -> None:
        self._description = text  # an owner (SDK, extension) may pin a description

    def prepare_arguments(self, args: Any) -> Any:
        return args

    async def execute(self, tool_call_id: str, params: dict[str, Any], signal: AbortSignal,
                      on_update: UpdateCallback) -> ToolResult:
        started = time.monotonic()
        try:
            source = parse_source(params["code"])
        except SourceError as exc:
            return ToolResult(content=[{"type": "text", "text": str(exc)}], details={}, is_error=True)
        host = self._host()
        run = _Run(host, tool_call_id, on_update)
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
            result = await Execution(job, signal, self._processes).run()
        finally:
            slots.release()
        return run.finish(result, source.max_output_tokens, started)


class NestedCalls:
    """The ``nestedCalls`` record of the result message: calls with their arguments, within pi's
    limits (256 calls, 8 KiB of arguments per call and 32 KiB in all); ``complete`` is false when
    anything was left out or a call never finished."""

    MAX_CALLS = 256
    MAX_ARGS_PER_CALL = 8 * 1024
    MAX_ARGS_TOTAL = 32 * 1024

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.complete = True
        self.argument_bytes = 0

    def start(self, call_id: str, name: str, args: Any) -> dict[str, Any] | None:
        if len(self.calls) >= self.MAX_CALLS:
            self.complete = False
            return None
        record: dict[str, Any] = {"id": call_id, "name": name, "status": "unfinished"}
        size = len(json.dumps({} if args is None else args, ensure_ascii=False, separators=(",", ":")).encode())
        if size > self.MAX_ARGS_PER_CALL or self.argument_bytes + size > self.MAX_ARGS_TOTAL:
            record["argumentsBytes"] = size
            self.complete = False
        else:
            record["arguments"] = {} if args is None else args
            self.argument_bytes += size
        self.calls.append(record)
        return record

    def finish(self, record: dict[str, Any] | None, is_error: bool, text: str, duration_ms: float) -> None:
        if record is None:
            return
        record["status"] = "error" if is_error else "ok"
        record["durationMs"] = round(duration_ms)
        if is_error and text:
            record["error"] = text[:_ERROR_PREVIEW]

    def snapshot(self) -> dict[str, Any] | None:
        if not self.calls and self.complete:
            return None
        calls = [dict(c) for c in self.calls]
        return {"calls": calls, "complete": self.complete and all(c["status"] != "unfinished" for c in calls)}


class _Run:
    """The call records and script-facing executors of one codemode call."""

    def __init__(self, host: CodemodeHost, tool_call_id: str, on_update: UpdateCallback) -> None:
        self.host = host
        self.id = tool_call_id
        self.on_update = on_update
        self.calls: list[dict[str, Any]] = []
        self.nested = NestedCalls()
        self.next_call = 0
        self.on_update(ToolResult(content=[], details=self.details()))

    def details(self) -> dict[str, Any]:
        return {"calls": [dict(c) for c in self.calls]}

    def publish(self) -> None:
        self.on_update(ToolResult(content=[], details=self.details()))

    def job(self, code: str, timeout_s: float | None) -> Job:
        tools = [t for t in self.host.callable_tools() if t.name != NAME]
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
        async def execute(args: Any, signal: AbortSignal) -> Any:
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
                record["error"] = text if len(text) <= _ERROR_PREVIEW else text[: _ERROR_PREVIEW - 3] + "..."
            else:
                record["status"] = "ok"
            self.publish()
            return script_value(tool, outcome.result)
        return execute

    def record_model_call(self, name: str, model: str, error: str) -> None:
        count = sum(1 for c in self.calls if c["name"] == name) + 1
        self.calls.append({"id": f"{self.id}/{name}/{count}", "name": name, "args": model, "status": "error",
                           "durationMs": 0, "error": error})
        self.publish()

    def not_started(self, admission: str, deadline: float | None, started: float, signal: AbortSignal) -> ToolResult:
        waited = f"{time.monotonic() - started:.1f}"
        if admission == "aborted":
            error = f"Script aborted: {signal.reason or 'Execution aborted'}"
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
        if result.ok:
            if result.writes["set"] or result.writes["delete"]:
                self.host.append_custom(STORE_ENTRY_TYPE, result.writes)
            if result.has_value:
                produced.append({"type": "text", "text": out.value_text(result.value)})
        items = out.format_items(produced)
        if not result.ok:
            items.append({"type": "text", "text": "Script error:\n" + out.error_text(result, self.calls)})
        items, full_path = out.truncate(out.join_text(items), out.DEFAULT_MAX_OUTPUT_TOKENS
                                        if max_tokens is None else max_tokens)
        content = out.join_text(out.save_images(items))
        header = (f"{'Script completed' if result.ok else 'Script failed'}\n"
                  f"Wall time {time.monotonic() - started:.1f} seconds\nOutput:\n")
        details = self.details()
        if full_path:
            details["fullOutputPath"] = full_path
        return ToolResult(content=[{"type": "text", "text": header}, *content], details=details,  # type: ignore[list-item]
                          is_error=not result.ok, nested_calls=self.nested.snapshot())
