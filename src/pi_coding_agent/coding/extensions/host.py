"""The two narrow views the extension objects work through.

``ExtensionHost`` is the session as extensions see it (a ``SessionHost`` plus the operations ``pi``
and ``ctx`` expose); ``RunnerHandle`` is what ``pi`` and ``ctx`` need from the runner. The session
satisfies the first and ``ExtensionRunner`` the second, so ``api`` and ``context`` import neither.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from pi_coding_agent.agent.events import AgentMessage, CustomMessage
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.session_host import SessionHost

if TYPE_CHECKING:
    from pi_coding_agent.agent.tool import AgentTool
    from pi_coding_agent.coding.extensions.event_bus import EventBus
    from pi_coding_agent.coding.extensions.registry import Binding, Extension, Registration
    from pi_coding_agent.coding.runtime import SessionRuntime


class ExtensionHost(SessionHost, Protocol):
    """Session operations reachable from ``pi`` and ``ctx``."""

    async def prompt(self, message: str, images: list[JsonObject] | None = None,
                     streaming_behavior: str | None = None) -> JsonObject: ...

    async def steer(self, message: str, images: list[JsonObject] | None = None) -> JsonObject: ...

    async def follow_up(self, message: str, images: list[JsonObject] | None = None) -> JsonObject: ...

    async def start_run(self, message: AgentMessage) -> JsonObject: ...

    async def compact(self, custom_instructions: str | None = None) -> JsonObject: ...

    async def wait_for_idle(self) -> None: ...

    async def new_session(self, parent_session: str | None = None) -> JsonObject: ...

    async def fork(self, entry_id: str) -> JsonObject: ...

    async def switch_session(self, session_path: str) -> JsonObject: ...

    async def reload(self) -> None: ...

    async def navigate_tree(self, target_id: str, *, summarize: bool = False, custom_instructions: str | None = None,
                            replace_instructions: bool = False, label: str | None = None) -> JsonObject: ...

    async def set_session_name(self, name: str) -> None: ...

    async def set_model(self, provider: str, model_id: str) -> object: ...

    def set_thinking_level(self, level: str) -> None: ...

    def entry_id_of(self, message: AgentMessage) -> str | None: ...

    def context_usage(self) -> JsonObject | None: ...

    def get_commands(self) -> list[JsonObject]: ...


class RunnerHandle(Protocol):
    """The runner state and actions ``pi`` and ``ctx`` objects reach through their binding."""

    session: ExtensionHost
    rt: SessionRuntime
    binding: Binding
    events: EventBus
    extensions: list[Extension]
    settling: bool
    held_messages: list[CustomMessage]
    next_turn_messages: list[CustomMessage]
    providers: dict[str, Registration]  # pi.register_provider names -> what each registration added
    virtual_models: set[tuple[str, str]]  # (provider, id) of each pi.register_virtual_model
    loaded: bool  # every extension's setup ran (later registrations refresh their models at once)

    @property
    def context(self) -> object: ...

    def spawn(self, coroutine: Awaitable[object]) -> None: ...

    def defer(self, start: Callable[[], Awaitable[object]]) -> None: ...

    def activate_tool(self, tool: AgentTool) -> None: ...

    def append_custom(self, custom: CustomMessage) -> None: ...

    async def request_shutdown(self) -> None: ...
