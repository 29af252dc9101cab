"""What extensions registered, and the generation they were bound to: plain data shared by ``pi``,
``ctx`` and the runner, so none of them has to import another to know its shape."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar, cast

from pi_coding_agent.agent.events import CustomMessage
from pi_coding_agent.agent.tool import AgentTool
from pi_coding_agent.ai.types import JsonObject, now_ms
from pi_coding_agent.coding.extensions.loader import ExtensionSource

_T = TypeVar("_T")

Handler = Callable[[JsonObject, object], object]

STALE_MESSAGE = (
    "This extension context is stale: the session was replaced (new session, fork or switch) after it was "
    "created. Use the ctx passed to the with_session callback, or the ctx of a later event, instead."
)


class StaleContextError(RuntimeError):
    """A ``pi`` or ``ctx`` captured before a session replacement was used after it."""


@dataclass
class Binding:
    """One generation of the extension runtime; ``stale`` once the session was replaced."""

    stale: bool = False

    def check(self) -> None:
        if self.stale:
            raise StaleContextError(STALE_MESSAGE)


@dataclass
class Command:
    """An extension's slash command."""

    name: str
    description: str | None
    handler: Callable[[str, object], object]


@dataclass
class Shortcut:
    """An extension's key (pi's ``registerShortcut``), run by the terminal UI."""

    key: str
    description: str | None
    handler: Callable[[object], object]


@dataclass
class ToolRenderer:
    """An extension's drawing of one tool's row in the terminal UI (pi's ``renderCall``/``renderResult``);
    a slot left None keeps the default drawing."""

    render_call: Callable[[JsonObject, dict[str, str]], object] | None
    render_result: Callable[[JsonObject, JsonObject, dict[str, str]], object] | None


@dataclass
class Extension:
    """One loaded extension and what it registered."""

    source: ExtensionSource
    handlers: dict[str, list[Handler]] = field(default_factory=dict)
    commands: dict[str, Command] = field(default_factory=dict)  # a name registered again replaces, in place
    tools: dict[str, AgentTool] = field(default_factory=dict)
    flags: dict[str, JsonObject] = field(default_factory=dict)  # register_flag options, by flag name
    shortcuts: dict[str, Shortcut] = field(default_factory=dict)  # by key as registered
    message_renderers: dict[str, Callable[..., Any]] = field(default_factory=dict)  # by customType
    entry_renderers: dict[str, Callable[..., Any]] = field(default_factory=dict)  # by customType
    tool_renderers: dict[str, ToolRenderer] = field(default_factory=dict)  # by tool name

    @property
    def path(self) -> str:
        return str(self.source.path)


def custom_message(message: JsonObject) -> CustomMessage:
    """An extension's ``{customType, content, display, details?}`` as a ``custom`` transcript message."""
    content = message.get("content", "")
    out: JsonObject = {"role": "custom", "customType": message.get("customType", "extension"),
                           "content": content, "display": bool(message.get("display", True))}
    if message.get("details") is not None:
        out["details"] = message["details"]
    out["timestamp"] = now_ms()
    return cast(CustomMessage, out)  # built key by key in pi's order, from the extension's fields


@dataclass
class Registration:
    """What one ``pi.register_provider`` brought (``extensions/providers.py``): its entry and the
    functions beside it, kept so that it can be merged into, refreshed and removed."""

    config: dict[str, Any]
    stream: Callable[..., Any] | None = None
    oauth: Any = None  # a ProviderOAuth
    refresh_models: Callable[[Any], Any] | None = None
    filter_models: Callable[..., Any] | None = None
    native: bool = False  # registered as a Provider object (a later one replaces it, never merges)
    extension_path: str = ""
    fetch_models: Callable[[Any], Any] | None = None  # a Provider's createProvider-style fetch
    api_key_auth: Any = None  # a Provider's auth.api_key (an ApiKeyAuth)

    @property
    def refreshes(self) -> bool:
        """Whether it has a model refresh (``refresh_models`` or ``fetch_models``)."""
        return self.refresh_models is not None or self.fetch_models is not None

    @property
    def stream_api(self) -> str | None:
        """The api its own stream serves (None without one)."""
        return self.config.get("api") if self.stream is not None else None


def from_fields(cls: type[_T], value: _T | Mapping[str, object], label: str) -> _T:
    """A dataclass ``cls`` from itself or a dict of its fields; ValueError naming ``label`` otherwise."""
    if isinstance(value, cls):
        return value
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    if not isinstance(value, Mapping) or set(value) - known:
        raise ValueError(f"{label} must be a {cls.__name__} or a dict of {', '.join(sorted(known))}")
    try:
        return cls(**value)
    except TypeError as exc:
        raise ValueError(f"{label}: {exc}") from None
