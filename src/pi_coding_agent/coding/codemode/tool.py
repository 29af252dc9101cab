"""The ``codemode`` tool: the model sends JavaScript that calls the session's other tools.

The script runs in a QuickJS VM in a worker process (``sandbox.py``); every ``tools.<name>()``
call is a real tool execution through the agent's pipeline (``CodemodeHost.execute_tool``), with
its own events and hooks. Only what the script outputs reaches the model. The description lists
the callable tools as TypeScript declarations within ``codemode.inlineBudget`` estimated tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from pi_coding_agent.agent.tool import AgentTool, ToolResult, UpdateCallback
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.codemode.activation import NAME

if TYPE_CHECKING:
    from pi_coding_agent.coding.codemode.host import (
        CatalogTool,
        CodemodeHost,
        SessionCodemodeHost,
        SessionRuntimeView,
    )
    from pi_coding_agent.coding.resources.settings import Settings
    from pi_coding_agent.coding.tools.process_groups import ProcessRegistry

DEFAULT_INLINE_BUDGET = 3000
_CHARS_PER_TOKEN = 4
PARAMETERS: JsonObject = {
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


def globals_text() -> str:
    from pi_coding_agent.coding.codemode.model_calls import docs_path

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


def _section(tool: CatalogTool) -> str:
    from pi_coding_agent.coding.codemode.declarations import (  # only while codemode is on
        sample,
        to_identifier,
    )

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


def settings_budget(settings: Settings) -> int:
    budget = settings.codemode_inline_budget
    return DEFAULT_INLINE_BUDGET if budget is None else budget


GRAMMAR_SAMPLING: JsonObject = {"type": "grammar", "variants": {"openai_lark": GRAMMAR}}


def session_codemode_tool(runtime: Callable[[], SessionRuntimeView], processes: ProcessRegistry) -> CodemodeTool:
    """A session's ``codemode`` tool (registered inactive unless ``defaultTools``/``--tools`` name it);
    its host is made with the first script, its workers are tracked in the session's ``processes``."""
    def host() -> SessionCodemodeHost:
        from pi_coding_agent.coding.codemode.host import SessionCodemodeHost

        return SessionCodemodeHost(runtime())

    return CodemodeTool(host, lambda: runtime().settings, processes)


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
    constrained_sampling = GRAMMAR_SAMPLING

    def __init__(self, host: Callable[[], CodemodeHost], settings: Callable[[], Settings],
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
        return describe(self._host().callable_tools(), settings_budget(settings), settings.codemode_mode)

    @description.setter
    def description(self, text: str) -> None:
        self._description = text  # an owner (SDK, extension) may pin a description

    def prepare_arguments(self, args: object) -> object:
        return args

    async def execute(self, tool_call_id: str, params: JsonObject, signal: AbortSignal,
                      on_update: UpdateCallback) -> ToolResult:
        from pi_coding_agent.coding.codemode.script_run import run_script  # the runner loads on first use

        return await run_script(self.name, self._host, self._processes, tool_call_id, params, signal, on_update)
