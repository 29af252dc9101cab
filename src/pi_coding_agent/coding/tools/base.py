"""What every built-in tool shares: the environment it runs in and the declaration fields."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

from pi_coding_agent.agent.tool import AgentTool, ToolError, ToolResult, UpdateCallback
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.records import record
from pi_coding_agent.ai.types import JsonObject

from .declarations import DECLARATIONS
from .process_groups import ProcessRegistry

if TYPE_CHECKING:
    from pi_coding_agent.coding.sandbox.policy import SandboxPolicy, SandboxRefusal

    from .backend import CommandBackend, FileBackend
    from .images import ImagePolicy


def _default_image_policy() -> ImagePolicy:
    from .images import ImagePolicy  # with the first image a tool meets

    return ImagePolicy()


@record
class ToolEnv:
    """The session facts a tool needs; the callables are read per call so they follow the session."""

    cwd: Path
    shell_path: str | None = None
    shell_command_prefix: str | None = None
    session_env: Callable[[], dict[str, str]] = field(default=lambda: {})
    model_accepts_images: Callable[[], bool] = field(default=lambda: True)
    image_policy: Callable[[], ImagePolicy] = field(default=_default_image_policy)
    agent_dir: Path | None = None
    processes: ProcessRegistry = field(default_factory=ProcessRegistry)  # the session's, killed at its shutdown
    files: FileBackend | None = None  # None: this machine's files (see backend.py)
    commands: CommandBackend | None = None  # None: this machine's shell
    sandbox: SandboxPolicy | None = None
    # asks the user (extension UI confirm) whether a refused operation may run outside the sandbox
    confirm: Callable[[str, str], Awaitable[bool]] | None = None

    async def allowed_outside_sandbox(self, refusal: SandboxRefusal) -> bool:
        """Whether the user lets a refused operation go ahead (only with ``sandbox.onRefusal: "ask"``)."""
        if self.sandbox is None or not self.sandbox.ask_on_refusal or self.confirm is None:
            return False
        return await self.confirm("Run outside the sandbox?", str(refusal))

    async def check_write(self, path: str) -> SandboxPolicy | None:
        """Raise the sandbox's refusal of a file-tool write unless the user allows it; the policy the
        file must then be opened through (None: no sandbox, or the user let this one out)."""
        if self.sandbox is None:
            return None
        return await self._checked(self.sandbox.check_write, path)

    async def check_read(self, path: str, recursive: bool = False) -> SandboxPolicy | None:
        """As :meth:`check_write`, for a read."""
        if self.sandbox is None:
            return None
        return await self._checked(self.sandbox.check_read, path, recursive)

    async def _checked(self, check: Callable[..., None], *args: object) -> SandboxPolicy | None:
        from pi_coding_agent.coding.sandbox.policy import SandboxRefusal  # loaded with the sandbox itself

        try:
            check(*args)
        except SandboxRefusal as refusal:
            if not await self.allowed_outside_sandbox(refusal):
                raise
            return None
        return self.sandbox if self.sandbox is not None and self.sandbox.active else None


def aborted_error() -> ToolError:
    return ToolError("Operation aborted")


def check_aborted(signal: AbortSignal | None) -> None:
    if signal is not None and signal.aborted:
        raise aborted_error()


P = TypeVar("P")


class BuiltinTool(AgentTool, Generic[P]):
    """Base of the built-in tools: class-level declaration plus an ``env`` bound per session; ``P``
    is the ``TypedDict`` of the tool's parameters (what ``execute`` gets once they are valid)."""

    name: str
    label: str
    description: str
    parameters: JsonObject
    prompt_snippet: str
    prompt_guidelines: list[str]
    GUIDELINES: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A built-in tool's declaration fields come from ``declarations.py`` (``LazyTool`` reads them
        there before its tool's module is loaded)."""
        super().__init_subclass__(**kwargs)
        for attr, value in DECLARATIONS.get(cls.name, {}).items():
            setattr(cls, attr, value)

    def __init__(self, env: ToolEnv) -> None:
        self.env = env
        self.prompt_guidelines = list(self.GUIDELINES)

    async def execute(
        self, tool_call_id: str, params: P, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        raise NotImplementedError
