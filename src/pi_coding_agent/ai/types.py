"""Provider-neutral message, content, usage and model types.

These are JSON-shaped ``TypedDict``s whose keys are pi's wire names (camelCase): the same dicts
travel unchanged into RPC events and session files, so there is no per-event conversion cost.
Optional keys are ``NotRequired`` and are *omitted* when absent, never set to ``None``.
(No postponed annotations here: the ``TypedDict`` classes would turn every string annotation into a
compiled ``ForwardRef`` at import, a start-up cost of their own.)
"""

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")

StopReason: TypeAlias = Literal["pending", "stop", "length", "toolUse", "error", "aborted"]
Api: TypeAlias = str  # "anthropic-messages", "openai-completions", "openai-responses", ...

JsonObject: TypeAlias = dict[str, object]
"""Arbitrary JSON held as is (tool arguments and schemas, request bodies, extension data): built
and passed on freely, each value read only after a type check. The one name for such data."""


class TextContent(TypedDict):
    type: Literal["text"]
    text: str
    textSignature: NotRequired[str]


class ThinkingContent(TypedDict):
    type: Literal["thinking"]
    thinking: str
    thinkingSignature: NotRequired[str]
    redacted: NotRequired[bool]


class ImageContent(TypedDict):
    type: Literal["image"]
    data: str  # base64
    mimeType: str


class ToolCall(TypedDict):
    type: Literal["toolCall"]
    id: str
    name: str
    arguments: dict[str, Any]  # the model's JSON, validated against the tool's schema before use
    thoughtSignature: NotRequired[str]
    namespace: NotRequired[str]  # Responses: the namespace of a loaded or namespaced tool, replayed to its model
    argumentsError: NotRequired[str]  # the model sent arguments that are not valid JSON


AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCall
UserContent: TypeAlias = TextContent | ImageContent


class UsageCost(TypedDict):
    input: float
    output: float
    cacheRead: float
    cacheWrite: float
    total: float
    totalFromProvider: NotRequired[bool]


class Usage(TypedDict):
    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    totalTokens: int
    cost: UsageCost
    reasoning: NotRequired[int]
    cacheWrite1h: NotRequired[int]


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str | list[UserContent]
    timestamp: int  # epoch milliseconds


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: list[AssistantContent]
    api: str
    provider: str
    model: str
    usage: Usage
    stopReason: StopReason
    timestamp: int
    errorMessage: NotRequired[str]
    responseId: NotRequired[str]
    durationMs: NotRequired[int]
    thinkingLevel: NotRequired[str]
    rawStopReason: NotRequired[str]
    responseModel: NotRequired[str]
    providerThinkingLevel: NotRequired[str]


class ToolResultMessage(TypedDict):
    role: Literal["toolResult"]
    toolCallId: str
    toolName: str
    content: list[UserContent]
    isError: bool
    timestamp: int
    details: NotRequired[object]  # the tool's own record (never sent to the model)
    usage: NotRequired[JsonObject]  # tokens the tool itself spent (a sub-agent, a summariser)
    durationMs: NotRequired[int]
    nestedCalls: NotRequired[JsonObject]  # the calls a codemode run made inside this one


class Tool(TypedDict):
    """A tool declaration as the model sees it (JSON schema parameters)."""

    name: str
    description: str
    parameters: JsonObject
    constrainedSampling: NotRequired[JsonObject | Literal[False]]  # strict JSON schema or a grammar


class SystemMessage(TypedDict):
    """pi 1.6.0 keeps the system prompt in the transcript as (patch) system messages."""

    role: Literal["system"]
    content: str
    timestamp: int
    sections: NotRequired[dict[str, str | None]]
    toolsAdded: NotRequired[list[Tool]]
    toolsRemoved: NotRequired[list[dict[str, str]]]


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage | SystemMessage


class ModelCost(TypedDict):
    input: float
    output: float
    cacheRead: float
    cacheWrite: float
    tiers: NotRequired[list[dict[str, float]]]


class Model(TypedDict):
    id: str
    name: str
    api: str
    provider: str
    baseUrl: str
    reasoning: bool
    input: list[str]  # "text" | "image"
    cost: ModelCost
    contextWindow: int
    maxTokens: int
    type: NotRequired[str]  # "chat" (the default), "classifier" or "image" (ai/nonchat/models.py)
    headers: NotRequired[dict[str, str]]
    compat: NotRequired[dict[str, Any]]  # per-vendor switches read by the wire APIs (documented there)
    thinkingLevelMap: NotRequired[dict[str, str | None]]
    inputLimits: NotRequired[JsonObject]
    promptCache: NotRequired[dict[str, int]]
    samplingParams: NotRequired[JsonObject]


class StartEvent(TypedDict):
    type: Literal["start"]


class TextStartEvent(TypedDict):
    type: Literal["text_start"]
    contentIndex: int


class TextDeltaEvent(TypedDict):
    type: Literal["text_delta"]
    contentIndex: int
    delta: str


class TextEndEvent(TypedDict):
    type: Literal["text_end"]
    contentIndex: int
    content: str


class ThinkingStartEvent(TypedDict):
    type: Literal["thinking_start"]
    contentIndex: int


class ThinkingDeltaEvent(TypedDict):
    type: Literal["thinking_delta"]
    contentIndex: int
    delta: str


class ThinkingEndEvent(TypedDict):
    type: Literal["thinking_end"]
    contentIndex: int
    content: str


class ToolCallStartEvent(TypedDict):
    type: Literal["toolcall_start"]
    contentIndex: int
    id: str
    toolName: str


class ToolCallDeltaEvent(TypedDict):
    type: Literal["toolcall_delta"]
    contentIndex: int
    delta: str


class ToolCallEndEvent(TypedDict):
    type: Literal["toolcall_end"]
    contentIndex: int
    toolCall: ToolCall


class DoneEvent(TypedDict):
    type: Literal["done"]
    reason: StopReason
    message: AssistantMessage


class ErrorEvent(TypedDict):
    type: Literal["error"]
    reason: StopReason  # "error" or "aborted"
    error: AssistantMessage


BlockEvent: TypeAlias = (
    TextStartEvent | TextDeltaEvent | TextEndEvent | ThinkingStartEvent | ThinkingDeltaEvent | ThinkingEndEvent
    | ToolCallStartEvent | ToolCallDeltaEvent | ToolCallEndEvent
)
"""What a wire API yields: the events of one content block, each with its ``contentIndex``."""
AssistantMessageEvent: TypeAlias = StartEvent | BlockEvent | DoneEvent | ErrorEvent
"""What ``ai.stream`` yields: ``start``, the block events, then ``done`` or ``error``."""


class Context(TypedDict):
    """What one LLM request is built from."""

    systemPrompt: NotRequired[str]
    messages: list[Message]
    tools: NotRequired[list[Tool]]


def empty_usage() -> Usage:
    """A zeroed usage record (a fresh dict every call: usages are mutated while streaming)."""
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def now_ms() -> int:
    """Epoch milliseconds, the timestamp unit inside messages."""
    import time

    return int(time.time() * 1000)
