"""``ctx``: what a handler may read and do in the live session (docs/extensions.md).

Every context and ``pi`` object belongs to one *binding*; replacing the session (new, resume, fork)
marks the binding stale, and any later use of a captured handle raises ``StaleContextError``
instead of silently acting on the wrong session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.extensions.model_access import ModelRegistryView
from pi_coding_agent.coding.extensions.registry import Binding

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.ai.types import Model
    from pi_coding_agent.coding.extensions.host import RunnerHandle
    from pi_coding_agent.coding.session import SessionManager
    from pi_coding_agent.coding.ui import ExtensionUI

class SessionView:
    """Read-only access to the session store (entries, branch, tree, labels, header)."""

    def __init__(self, sm: SessionManager) -> None:
        self._sm = sm

    @property
    def session_id(self) -> str:
        return self._sm.session_id

    @property
    def session_file(self) -> str | None:
        return None if self._sm.session_file is None else str(self._sm.session_file)

    @property
    def session_name(self) -> str | None:
        return self._sm.session_name

    @property
    def cwd(self) -> str:
        return str(self._sm.cwd)

    @property
    def session_dir(self) -> str | None:
        return None if self._sm.session_dir is None else str(self._sm.session_dir)

    @property
    def header(self) -> JsonObject:
        return dict(self._sm.header)

    @property
    def leaf_id(self) -> str | None:
        return self._sm.leaf_id

    def get_entries(self) -> list[JsonObject]:
        return list(self._sm.get_entries())

    def get_leaf_entry(self) -> JsonObject | None:
        leaf = self._sm.leaf_id
        return None if leaf is None else self._sm.get_entry(leaf)

    def build_context_entries(self) -> list[JsonObject]:
        """The current branch as the model sees it: from the latest compaction on."""
        from pi_coding_agent.coding.session.context import select_context_entries

        return list(select_context_entries(self._sm.get_branch()))

    def get_entry(self, entry_id: str) -> JsonObject | None:
        return self._sm.get_entry(entry_id)

    def get_branch(self, leaf_id: str | None = None) -> list[JsonObject]:
        return list(self._sm.get_branch(leaf_id))

    def get_tree(self) -> list[JsonObject]:
        return self._sm.get_tree()

    def get_label(self, entry_id: str) -> str | None:
        label = self._sm.labels.get(entry_id)
        return None if label is None else label.get("label")


class ExtensionContext:
    """``ctx`` for event handlers and tools."""

    def __init__(self, runner: RunnerHandle, binding: Binding) -> None:
        self._runner = runner
        self._binding = binding

    def _live(self) -> RunnerHandle:
        self._binding.check()
        return self._runner

    @property
    def ui(self) -> ExtensionUI:
        return self._live().rt.ui

    @property
    def mode(self) -> str:
        return self._live().rt.mode

    @property
    def has_ui(self) -> bool:
        return self.ui.has_ui

    @property
    def cwd(self) -> str:
        return str(self._live().rt.cwd)

    @property
    def session_manager(self) -> SessionView:
        return SessionView(self._live().session.sm)

    @property
    def model_registry(self) -> ModelRegistryView:
        return ModelRegistryView(self._live().rt)

    @property
    def scoped_models(self) -> list[JsonObject]:
        """``--models`` / ``enabledModels``: ``{"model", "thinkingLevel"?}`` each (empty: no scoping)."""
        return [{"model": m, **({"thinkingLevel": level} if level else {})} for m, level in self._live().rt.scoped]

    @property
    def model(self) -> Model:
        return self._live().rt.agent.model

    @property
    def thinking_level(self) -> str:
        return self._live().rt.agent.thinking_level

    @property
    def signal(self) -> AbortSignal | None:
        return self._live().rt.agent.signal

    def is_project_trusted(self) -> bool:
        """Whether this directory's project resources are honoured (saved, ``-a``/``-na`` or default trust)."""
        return self._live().rt.project_trusted

    def is_idle(self) -> bool:
        """True in ``agent_settled`` handlers too: the run is over, only the record is still to come."""
        runner = self._live()
        return runner.settling or not runner.session.is_streaming

    def has_pending_messages(self) -> bool:
        return self._live().rt.agent.has_queued_messages()

    def get_context_usage(self) -> JsonObject | None:
        runner = self._live()
        return runner.session.context_usage()

    def get_system_prompt(self) -> str:
        runner = self._live()
        return runner.rt.build_context(runner.rt.agent.messages).get("systemPrompt", "")

    def abort(self) -> None:
        """Fire and forget: a handler inside the run cannot wait for the run to end."""
        runner = self._live()
        runner.spawn(runner.session.abort())

    def compact(self, custom_instructions: str | None = None,
                on_complete: Callable[[JsonObject], object] | None = None,
                on_error: Callable[[Exception], object] | None = None) -> None:
        """Fire and forget, like ``abort``; the callbacks report the outcome."""
        runner = self._live()

        async def run() -> None:
            try:
                result = await runner.session.compact(custom_instructions)
            except Exception as exc:
                if on_error is not None:
                    on_error(exc)
                return
            if on_complete is not None:
                on_complete(result)

        runner.spawn(run())

    def shutdown(self) -> None:
        """Ask the mode to exit once the session is idle."""
        runner = self._live()
        runner.spawn(runner.request_shutdown())


WithSession = Callable[["CommandContext"], Awaitable[object] | object]


class CommandContext(ExtensionContext):
    """``ctx`` for command handlers: may also wait for idle and replace the session. Work meant for
    the new session goes in ``with_session``, which receives a fresh ctx."""

    async def wait_for_idle(self) -> None:
        await self._live().session.wait_for_idle()

    def get_system_prompt_options(self) -> JsonObject:
        """The base inputs of the system prompt, in ``before_agent_start``'s ``systemPromptOptions``
        shape (context files included: keep it out of logs and command lists)."""
        return self._live().rt.system_prompt_options()

    async def reload(self) -> None:
        """``/reload``: ``session_shutdown``, settings, resources and extensions loaded again, then
        ``session_start`` with reason ``reload``. This handler goes on running the old code: return
        right after it."""
        await self._live().session.reload()

    async def new_session(self, parent_session: str | None = None,
                          with_session: WithSession | None = None) -> JsonObject:
        runner = self._live()
        return await self._replaced(runner, await runner.session.new_session(parent_session), with_session)

    async def fork(self, entry_id: str, with_session: WithSession | None = None) -> JsonObject:
        runner = self._live()
        return await self._replaced(runner, await runner.session.fork(entry_id), with_session)

    async def navigate_tree(self, target_id: str, *, summarize: bool = False,
                            custom_instructions: str | None = None, replace_instructions: bool = False,
                            label: str | None = None) -> JsonObject:
        """Move to another entry of the tree; ``summarize`` records a summary of the branch left."""
        return await self._live().session.navigate_tree(
            target_id, summarize=summarize, custom_instructions=custom_instructions,
            replace_instructions=replace_instructions, label=label)

    async def switch_session(self, session_path: str, with_session: WithSession | None = None) -> JsonObject:
        runner = self._live()
        return await self._replaced(runner, await runner.session.switch_session(session_path), with_session)

    @staticmethod
    async def _replaced(runner: RunnerHandle, result: JsonObject,
                        with_session: WithSession | None) -> JsonObject:
        if not result.get("cancelled") and with_session is not None:
            await maybe_await(with_session(CommandContext(runner, runner.binding)))
        return result
