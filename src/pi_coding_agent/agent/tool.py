"""The tool protocol of the agent core: what a tool declares and what ``execute`` returns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject, Tool, UserContent


@dataclass
class ToolResult:
    """What a tool returns; becomes the ``toolResult`` message (``details`` omitted when None)."""

    content: list[UserContent] = field(default_factory=list)
    details: object = None
    is_error: bool = False
    terminate: bool = False
    structured_content: object = None  # machine-readable output for programmatic callers (not sent to the model)
    usage: JsonObject | None = None  # tokens the tool itself spent (a sub-agent, a summariser)
    nested_calls: JsonObject | None = None  # calls the tool made itself (codemode), kept on its result message
    # The tool itself returned an error result (bash's non-zero exit): pi keeps that ``isError`` inside
    # ``result`` too, whatever an after-hook later decides. Thrown errors do not carry it.
    returned_error: bool = False

    def to_wire(self) -> JsonObject:
        """The ``result`` object of ``tool_execution_end`` / ``partialResult`` of updates."""
        out: JsonObject = {"content": self.content}
        if self.details is not None:
            out["details"] = self.details
        if self.structured_content is not None:
            out["structuredContent"] = self.structured_content
        if self.usage is not None:
            out["usage"] = self.usage
        if self.returned_error:
            out["isError"] = True
        return out


class ToolError(Exception):
    """Raised by a tool to produce an error result whose text is the message."""


UpdateCallback = Callable[[ToolResult], None]


@runtime_checkable
class AgentTool(Protocol):
    """A tool the agent can call. ``parameters`` is a JSON schema (what the model sees).

    The members after ``parameters`` are optional: a class that subclasses ``AgentTool`` inherits the
    defaults given here, one that implements the protocol structurally declares them itself.

    On abort the agent cancels a running ``execute`` (the call then reports ``Operation aborted``).
    A tool that watches ``signal`` itself and ends promptly with its own text (bash: ``Command
    aborted``) sets ``handles_abort = True`` and is not cancelled.
    """

    name: str
    description: str
    parameters: JsonObject
    label: str = ""
    execution_mode: Literal["parallel", "sequential"] = "parallel"  # "sequential": the batch runs one by one
    handles_abort: bool = False
    prompt_snippet: str | None = None  # its line in the system prompt's tool list
    prompt_guidelines: Sequence[str] = ()  # rule bullets the system prompt adds while it is active
    # ``constrainedSampling`` of its declaration: strict JSON schema or a grammar (``ai/apis/grammar_tools``);
    # False says "none" explicitly and is kept in the declaration, as pi keeps it
    constrained_sampling: JsonObject | Literal[False] | None = None

    def prepare_arguments(self, args: Any) -> object:
        """Repair common model mistakes before validation (identity by default)."""
        return args

    def execute(
        self, tool_call_id: str, params: Any, signal: AbortSignal, on_update: UpdateCallback
    ) -> Awaitable[ToolResult]:
        """``params``: the arguments once valid against ``parameters``. Their shape is the tool's own
        (a built-in tool declares it as a ``TypedDict``); the core passes them on unread, so here
        they are any JSON object."""
        ...


def tool_declaration(tool: AgentTool) -> Tool:
    """The declaration sent to the model and stored in system messages' ``toolsAdded``."""
    declaration: Tool = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    if tool.constrained_sampling is not None:
        declaration["constrainedSampling"] = tool.constrained_sampling
    return declaration


def text_result(text: str, details: object = None, is_error: bool = False) -> ToolResult:
    return ToolResult(content=[{"type": "text", "text": text}], details=details, is_error=is_error)
