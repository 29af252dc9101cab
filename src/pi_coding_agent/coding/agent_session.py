"""AgentSession: one Agent bound to a session file, settings, resources, retry and compaction.

Every RPC command is one method here; the modes (RPC, print, JSON) and the SDK are thin front ends.
The session turns agent-core events into session events (``services.event_relay``, which persists
each finished message first), and wraps each prompt in a *session-level run* that may hold several agent runs (auto-retry,
overflow recovery, queued continuations) and always ends with exactly one ``agent_settled``.

Ownership points one way: the session owns its ``SessionRuntime`` (collaborators and policies), its
compaction controller, tree navigator and extension runner; those see it only as a ``SessionHost``.
Replacing the store (new, resume, fork, clone) is ``session_replacement``'s, over the session as a
``ReplacementHost``; the retry series' events and back-off are ``retry.RetrySeries``.
"""

from __future__ import annotations

import asyncio
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pi_coding_agent.agent.agent import Agent
from pi_coding_agent.agent.events import BashExecutionMessage
from pi_coding_agent.agent.queues import QUEUE_MODES
from pi_coding_agent.ai.auth.keys import start_prompt
from pi_coding_agent.ai.models.virtual import is_virtual
from pi_coding_agent.ai.session_resources import close_all as close_provider_sessions
from pi_coding_agent.ai.types import Model
from pi_coding_agent.coding.commands import llama as llama_command
from pi_coding_agent.coding.compaction.controller import CompactionController
from pi_coding_agent.coding.errors import SessionError
from pi_coding_agent.coding.event_stream import EventStream
from pi_coding_agent.coding.events import AgentEvent, Message
from pi_coding_agent.coding.messages import last_assistant, last_assistant_text, user_message
from pi_coding_agent.coding.retry import RETRY_CANCELLED, RetrySeries
from pi_coding_agent.coding.runtime import SessionRuntime
from pi_coding_agent.coding.services.bash_runs import BashRuns
from pi_coding_agent.coding.services.event_relay import EventRelay
from pi_coding_agent.coding.services.model_selection import ModelSelection
from pi_coding_agent.coding.services.queue_mirror import QueueMirror
from pi_coding_agent.coding.services.tree_navigation import TreeNavigator
from pi_coding_agent.coding.services.virtual_routing import VirtualRouting
from pi_coding_agent.coding.session import SessionManager
from pi_coding_agent.coding.session.save_report import report_save
from pi_coding_agent.coding.session_host import Listener

if TYPE_CHECKING:
    from pi_coding_agent.coding.extensions.loader import ExtensionSource
    from pi_coding_agent.coding.extensions.runner import ExtensionRunner
    from pi_coding_agent.coding.options import PendingFlag

STREAMING_ERROR = (
    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
)


class AgentSession:
    """The operations behind the RPC commands, over one live session."""

    def __init__(self, runtime: SessionRuntime, extension_sources: Sequence[ExtensionSource] = ()) -> None:
        self.rt = runtime
        self.agent: Agent = runtime.agent
        self.relay = EventRelay(self)
        self.retry = RetrySeries(runtime.retry_settings(), self.emit)
        self.queues = QueueMirror(self.agent, self.emit)
        self._run_task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._settled.set()
        self._aborted = False
        self.bash_runs = BashRuns(runtime, self._record_bash, lambda: self.is_streaming)
        self._compaction_idle = asyncio.Event()
        self._compaction_idle.set()
        self._unsubscribe_agent = self.agent.subscribe(self.relay.on_agent_event)
        self.extensions: ExtensionRunner | None = None
        if extension_sources:  # the dispatch machinery is imported only when an extension exists
            from pi_coding_agent.coding.extensions.runner import ExtensionRunner

            self.extensions = ExtensionRunner(self, runtime, list(extension_sources))
        self.compaction = CompactionController(self, runtime, self.extensions)
        self.agent.hooks.prepare_next_turn = self.compaction.check_between_turns
        self.navigator = TreeNavigator(self, runtime, self.extensions)
        self.models = ModelSelection(runtime, self.emit, lambda: self.extensions)
        self.routing = VirtualRouting(runtime, self.emit, self.compaction.check_between_turns)
        self.agent.hooks.route_request = self.routing.route_request
        self._watch_saves(runtime.session_manager)

    async def load_extensions(self) -> None:
        """Run every extension's ``setup`` (before the model choice: they may register providers)."""
        if self.extensions is not None:
            await self.extensions.load()

    async def start(self, pending_flags: Sequence[PendingFlag] = ()) -> None:
        """Check the command-line flags extensions registered (``pending_flags``: the options only they
        can know); their ``session_start`` runs once the caller has subscribed."""
        if pending_flags:
            from pi_coding_agent.coding.extensions.flags import apply_cli_flags

            loaded = [] if self.extensions is None else self.extensions.extensions
            apply_cli_flags(pending_flags, loaded, self.rt.flag_values)
        if self.extensions is not None:
            self.extensions.start_soon()

    def _watch_saves(self, sm: SessionManager) -> None:
        """Failed session writes reach the user (stderr) and the client (a notify)."""
        sm.save_listener = lambda path, error: report_save(self.rt.ui.notify, path, error)

    @property
    def sm(self) -> SessionManager:
        """The live session store (the runtime's; replaced by new / resume / fork)."""
        return self.rt.session_manager

    # ----------------------------------------------------------------- events

    def events(self, until_settled: bool = False) -> EventStream:
        """The events from now on as an async iterator (``until_settled``: stop after ``agent_settled``)."""
        return self.relay.events(until_settled)

    def subscribe(self, listener: Listener, types: Iterable[str] | None = None) -> Callable[[], None]:
        """Call ``listener`` for every event, or for those whose ``type`` is in ``types``."""
        return self.relay.subscribe(listener, types)

    def emit(self, event: AgentEvent) -> None:
        self.relay.emit(event)

    @property
    def aborted(self) -> bool:
        """Whether the current (or last) run was aborted."""
        return self._aborted

    def entry_id_of(self, message: Message) -> str | None:
        """The entry a message of the current run was saved as (for extensions' ``turn_end``)."""
        return self.relay.entries.get(id(message))

    # ----------------------------------------------------------------- queues

    def _enqueue(self, kind: str, text: str, images: list[dict[str, Any]] | None) -> dict[str, Any]:
        self.queues.enqueue(kind, user_message(text, images), text, bool(images))
        return {"disposition": "queued"}

    def clear_queue(self) -> dict[str, Any]:
        return self.queues.clear()

    # ----------------------------------------------------------------- prompting

    @property
    def is_streaming(self) -> bool:
        return not self._settled.is_set()

    async def prompt(
        self, message: str, images: list[dict[str, Any]] | None = None, streaming_behavior: str | None = None
    ) -> dict[str, Any]:
        handled = await self._handle_input(message, images, streaming_behavior, allow_commands=True)
        if handled is not None:
            if "disposition" in handled:
                return handled
            message, images = handled["text"], handled["images"]  # an extension's transform
        text = self._expand_input(message)
        if self.is_streaming:
            if streaming_behavior not in ("steer", "followUp"):
                raise SessionError(STREAMING_ERROR)
            return self._enqueue("steer" if streaming_behavior == "steer" else "followUp", text, images)
        if self.is_compacting:
            raise SessionError(
                "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry."
            )
        return await self.start_run(user_message(text, images))

    async def start_run(self, message: Message) -> dict[str, Any]:
        """Start a session-level run from idle with ``message`` (a user, or an extension's custom message)."""
        start_prompt()  # models.json key commands run again for this prompt, off the loop
        await self._refresh_credential()
        self._check_model_ready()
        self._settled.clear()
        try:
            await self.compaction.check_before_prompt()  # its events precede the prompt response
            if self.rt.mcp is not None:
                await self.rt.mcp.before_prompt()  # waits (bounded) for servers with direct tools
            await self.relay.normalise_images(message)
            messages = self.rt.run_start_messages(message)
            if self.extensions is not None:
                messages = await self.extensions.before_agent_start(messages)
        except BaseException:
            self._settled.set()
            raise
        self._aborted = False
        self._run_task = asyncio.create_task(self._session_run(messages))
        return {"disposition": "started"}

    async def steer(self, message: str, images: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return await self._queue_command("steer", message, images)

    async def follow_up(self, message: str, images: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return await self._queue_command("followUp", message, images)

    async def _queue_command(self, kind: str, message: str, images: list[dict[str, Any]] | None) -> dict[str, Any]:
        handled = await self._handle_input(message, images, kind, allow_commands=False)
        if handled is not None:
            if "disposition" in handled:
                return handled
            message, images = handled["text"], handled["images"]  # an extension's transform
        return self._enqueue(kind, self._expand_input(message), images)

    async def _handle_input(self, text: str, images: list[dict[str, Any]] | None, streaming_behavior: str | None,
                            allow_commands: bool) -> dict[str, Any] | None:
        """The built-in ``/login``, ``/llama`` and ``/mcp``, extension commands and ``input`` hooks: a
        disposition, an ``{"action": "transform"}``, or None."""
        if allow_commands and self.rt.mode == "rpc" and text.startswith("/login"):  # elsewhere, pi's text
            from pi_coding_agent.coding.commands import login as login_ui  # sign-in code: only for /login

            if login_ui.is_invocation(text):
                await login_ui.run(self.rt, text, self.models.set_model)
                return {"disposition": "handled"}
        if allow_commands and llama_command.offered(self.rt.registry) and llama_command.is_invocation(text):
            await llama_command.run(self.rt)
            return {"disposition": "handled"}
        if self.rt.mcp is not None and (handled := await self.rt.mcp.handle_input(text)) is not None:
            return handled
        if self.extensions is None:
            return None
        return await self.extensions.handle_input(text, images, streaming_behavior, allow_commands)

    def _expand_input(self, text: str) -> str:
        def report(error: Exception) -> None:
            self.emit({"type": "extension_error", "extensionPath": "skill", "event": "skill_expansion",
                       "error": str(error)})

        return self.rt.expand_input(text, report)

    async def _refresh_credential(self) -> None:
        """Refresh a due sign-in before the run. One that fails does not refuse the prompt: as in pi,
        the run starts and its first request meets the same failure, so it ends with the error as
        the assistant message (the credential is kept as it was)."""
        try:
            await self.rt.auth.prepare(self.agent.model["provider"])
        except Exception as error:
            from pi_coding_agent.ai.auth.oauth.http import OAuthError  # loaded by what raised it

            if not isinstance(error, OAuthError):
                raise

    def _check_model_ready(self) -> None:
        model = self.agent.model
        if model["provider"] == "unknown":
            raise SessionError(self.rt.no_key_message("the selected model"))
        if self.rt.api_key_for(model) is None and not is_virtual(model):  # a virtual one: each route is checked
            failure = self.rt.auth.key_command_failure(model["provider"])
            raise SessionError(failure or self.rt.no_key_message(model["provider"]))

    async def _session_run(self, messages: list[Message]) -> None:
        """One session-level run: the agent run, then retries, recovery and continuations."""
        self.relay.entries.clear()  # only this run's messages can be omitted from the context
        try:
            await self.agent.prompt(messages)
            while await self._after_run() or await self._before_settle():
                await self.agent.continue_run()
        except Exception:  # a bug must not leave the session streaming forever
            print("pi: the run failed:", file=sys.stderr)
            traceback.print_exc()
        finally:
            self.bash_runs.flush()
            if self.extensions is not None:
                await self.extensions.agent_settled(self._aborted)
            self.emit({"type": "agent_settled", "aborted": self._aborted})
            self._settled.set()

    async def _after_run(self) -> bool:
        """Post-run decisions (retry, compaction, extension boundaries); True to continue with another agent run."""
        if self._aborted:
            self.retry.end(RETRY_CANCELLED)
            return False
        last = last_assistant(self.agent.messages)
        if self.retry.will_retry(last, False) or (not self.retry.attempt and await self.rt.recover_unauthorized(last)):
            assert last is not None
            return await self._schedule_retry(last)
        if last is not None and last.get("stopReason") == "error":
            self.retry.end(last.get("errorMessage"))
        if await self.compaction.check_after_run(last):  # threshold or overflow compaction
            return True
        return self.agent.has_queued_messages()

    async def _before_settle(self) -> bool:
        """Extensions' ``agent_before_settle``; True for one more agent run."""
        if self._aborted or self.extensions is None:
            return False
        return await self.extensions.before_settle() and not self._aborted

    async def _schedule_retry(self, failed: Any) -> bool:
        """Announce the attempt, hide the failure from the model, back off (abort / abort_retry end the series)."""
        delay = self.retry.announce(failed, self.agent.last_retry_after_ms)
        self.omit_from_context(failed)
        return await self.retry.back_off(delay, lambda: self._aborted)

    def omit_from_context(self, message: Message) -> None:
        """Hide a failed attempt from the model but keep it in the file (a ``context_edit``); a
        virtual model's router is told of the failed answer on the next request, its retry."""
        if message["role"] == "assistant":
            self.routing.failed = message
        entry_id = self.relay.entries.get(id(message))
        if entry_id is not None:
            entry = self.sm.append_context_edit(entry_id, None)
            self.emit({"type": "entry_appended", "entry": entry})
        self.agent.remove_message(message)

    async def abort(self) -> None:
        """Stop the run, a retry wait and a compaction; returns once all of them have ended."""
        self._aborted = True
        self.abort_retry()
        self.compaction.abort()
        self.navigator.abort()
        self.agent.abort()
        await self._compaction_idle.wait()
        await self._settled.wait()

    async def wait_for_idle(self) -> None:
        """Return once the run has settled and every other task reading ``events()`` has taken its
        ``agent_settled`` (a reader that stops early closes its stream, or leaves its ``async with``)."""
        await self._settled.wait()
        current = asyncio.current_task()
        for stream in [s for s in self.relay.readers if s.reader is not current]:
            await stream.caught_up()

    def abort_retry(self) -> None:
        self.retry.cancel()

    @property
    def is_compacting(self) -> bool:
        return not self._compaction_idle.is_set()

    @is_compacting.setter
    def is_compacting(self, value: bool) -> None:
        """Set by the compaction controller; ``abort`` waits for it to fall back to False."""
        if value:
            self._compaction_idle.clear()
        else:
            self._compaction_idle.set()

    # ----------------------------------------------------------------- state

    def get_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "model": self.agent.model,
            "thinkingLevel": self.agent.thinking_level,
            "isStreaming": self.is_streaming,
            "isCompacting": self.is_compacting,
            "steeringMode": self.agent.steering_mode,
            "followUpMode": self.agent.follow_up_mode,
        }
        if self.sm.session_file is not None:
            state["sessionFile"] = str(self.sm.session_file)
        state["sessionId"] = self.sm.session_id
        if self.sm.session_name:
            state["sessionName"] = self.sm.session_name
        state["autoCompactionEnabled"] = self.rt.auto_compaction_enabled
        state["messageCount"] = len(self.agent.messages)
        state["pendingMessageCount"] = len(self.queues)
        return state

    def get_messages(self) -> list[Message]:
        return self.agent.messages

    def set_steering_mode(self, mode: str) -> None:
        self._check_queue_mode(mode)
        self.agent.steering_mode = mode
        self.rt.settings.set_global("steeringMode", mode)

    def set_follow_up_mode(self, mode: str) -> None:
        self._check_queue_mode(mode)
        self.agent.follow_up_mode = mode
        self.rt.settings.set_global("followUpMode", mode)

    @staticmethod
    def _check_queue_mode(mode: str) -> None:
        if mode not in QUEUE_MODES:
            raise SessionError(f'Invalid mode: {mode}. Expected "all" or "one-at-a-time"')

    def set_auto_compaction(self, enabled: bool) -> None:
        self.rt.auto_compaction_enabled = enabled
        self.rt.settings.set_global("compaction.enabled", enabled)

    def set_auto_retry(self, enabled: bool) -> None:
        self.retry.settings.enabled = enabled
        self.rt.settings.set_global("retry.enabled", enabled)

    # ----------------------------------------------------------------- model and thinking

    def get_available_models(self) -> list[Model]:
        return self.models.available_models()

    async def set_model(self, provider: str, model_id: str) -> Model:
        return await self.models.set_model(provider, model_id)

    async def cycle_model(self) -> dict[str, Any] | None:
        return await self.models.cycle_model()

    def set_thinking_level(self, level: str) -> None:
        self.models.set_thinking_level(level)

    def cycle_thinking_level(self) -> dict[str, Any] | None:
        return self.models.cycle_thinking_level()

    @property
    def sandbox_mode(self) -> str:
        """The tools' sandbox mode (``docs/sandbox.md``)."""
        return "off" if self.rt.sandbox is None else self.rt.sandbox.mode

    def set_sandbox_mode(self, mode: str) -> None:
        self.rt.set_sandbox_mode(mode)

    def get_available_thinking_levels(self) -> list[str]:
        return self.models.available_thinking_levels()

    # ----------------------------------------------------------------- user bash

    async def bash(self, command: str, exclude_from_context: bool, on_delta: Callable[[str], None]) -> dict[str, Any]:
        intercept = None if self.extensions is None else self.extensions.user_bash
        return await self.bash_runs.run(command, exclude_from_context, on_delta, intercept)

    def _record_bash(self, record: BashExecutionMessage) -> None:
        self.relay.persist(record)
        self.agent.append_message(record)

    def abort_bash(self) -> None:
        self.bash_runs.abort()

    # ----------------------------------------------------------------- session data

    def get_session_stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = {}
        if self.sm.session_file is not None:
            stats["sessionFile"] = str(self.sm.session_file)
        stats["sessionId"] = self.sm.session_id
        stats.update(self.sm.stats())
        usage = self.context_usage()
        if usage is not None:
            stats["contextUsage"] = usage
        return stats

    def get_fork_messages(self) -> list[dict[str, Any]]:
        return self.sm.get_fork_messages()

    def get_entries(self, since: str | None = None) -> dict[str, Any]:
        return {"entries": _since(self.sm.get_entries, since), "leafId": self.sm.leaf_id}

    def get_entries_json(self, since: str | None = None) -> tuple[Iterator[bytes], str | None]:
        """``get_entries`` as JSON chunks of the entries list, for RPC to stream."""
        return _since(self.sm.iter_entries_json, since), self.sm.leaf_id

    def get_tree(self) -> dict[str, Any]:
        """``{"tree": [node...], "leafId"}``."""
        return {"tree": self.sm.get_tree(), "leafId": self.sm.leaf_id}

    def get_tree_json(self) -> tuple[Iterator[bytes], str | None]:
        """``get_tree`` as JSON chunks of the node list, for RPC to stream (one entry read at a time)."""
        return self.sm.iter_tree_json(), self.sm.leaf_id

    def get_last_assistant_text(self) -> str | None:
        return last_assistant_text(self.agent.messages)

    async def set_session_name(self, name: str) -> None:
        cleaned = " ".join(name.replace("\r", "\n").split("\n")).strip()
        if not cleaned:
            raise SessionError("Session name cannot be empty")
        self.sm.append_session_info(cleaned)
        self.emit({"type": "session_info_changed", "name": cleaned})
        if self.extensions is not None:
            await self.extensions.session_info_changed(cleaned)

    def get_commands(self) -> list[dict[str, Any]]:
        """Extension commands, the built-in ``/llama`` (when the router is configured) and ``/mcp``, then
        prompt templates and skills (pi's order: its built-ins are extensions loaded after the others)."""
        commands = [] if self.extensions is None else self.extensions.list_commands()
        if llama_command.offered(self.rt.registry):
            commands.append(dict(llama_command.COMMAND))
        if self.rt.mcp is not None:
            commands.append(self.rt.mcp.command_entry())
        return commands + self.rt.resource_commands()

    def context_usage(self) -> dict[str, Any] | None:
        return self.compaction.context_usage()

    # ----------------------------------------------------------------- replacing the session

    # ``session_replacement`` loads on first use: most processes never replace their session

    async def new_session(self, parent_session: str | None = None) -> dict[str, Any]:
        from pi_coding_agent.coding.services import replacement as session_replacement

        return await session_replacement.replace_session(self, "new", parent_session=parent_session)

    async def switch_session(self, session_path: str, cwd_override: str | None = None) -> dict[str, Any]:
        """Resume ``session_path`` in its recorded directory, or in ``cwd_override`` when given (a
        session whose directory is gone raises ``MissingSessionCwdError`` without it)."""
        from pi_coding_agent.coding.services import replacement as session_replacement

        return await session_replacement.replace_session(
            self, "resume", target=Path(session_path),
            cwd_override=None if cwd_override is None else Path(cwd_override))

    async def fork(self, entry_id: str) -> dict[str, Any]:
        from pi_coding_agent.coding.services import replacement as session_replacement

        return await session_replacement.fork_session(self, entry_id)

    async def clone(self) -> dict[str, Any]:
        from pi_coding_agent.coding.services import replacement as session_replacement

        return await session_replacement.clone_session(self)

    async def reload(self) -> None:
        from pi_coding_agent.coding.services import replacement as session_replacement

        await session_replacement.reload_session(self)

    async def navigate_tree(self, target_id: str, *, summarize: bool = False, custom_instructions: str | None = None,
                            replace_instructions: bool = False, label: str | None = None) -> dict[str, Any]:
        """Move within the session tree (extension commands' ``ctx.navigate_tree``)."""
        result, event = await self.navigator.navigate(
            target_id, summarize=summarize, custom_instructions=custom_instructions,
            replace_instructions=replace_instructions, label=label)
        if self.extensions is not None and event is not None:
            await self.extensions.notify(event)
        return result

    def use_extensions(self, runner: ExtensionRunner | None) -> None:
        """The runner of the directory a replacement entered (``session_replacement``)."""
        self.extensions = runner
        self.compaction.extensions = self.navigator.hooks = runner

    def rebind(self, session_manager: SessionManager) -> None:
        """Point this session at another store and reload its state from it."""
        self.rt.session_manager = session_manager
        self._watch_saves(session_manager)
        self.relay.entries.clear()
        self.bash_runs.forget()
        self.queues.reset()
        self.retry.reset()
        self.rt.load_transcript(session_manager)

    # ----------------------------------------------------------------- compaction, export, shutdown

    async def compact(self, custom_instructions: str | None = None) -> dict[str, Any]:
        if self.is_streaming:
            await self.abort()
        from pi_coding_agent.coding.compaction.prepare import CompactionError
        from pi_coding_agent.coding.compaction.summarize import CompactionCancelled

        try:
            return await self.compaction.compact("manual", custom_instructions)
        except CompactionCancelled:
            raise SessionError("Compaction cancelled") from None
        except CompactionError as exc:
            raise SessionError(str(exc)) from None

    async def export_html(self, output_path: str | None = None) -> str:
        return await self.rt.export_html(output_path)

    def set_shutdown_handler(self, stop: Callable[[], None]) -> None:
        """How the running mode ends the process when an extension calls ``ctx.shutdown()``."""
        self.rt.request_shutdown = stop

    async def shutdown(self) -> None:
        """Orderly stop: abort the run, kill tool process trees, close the store."""
        self.abort_bash()
        if self.is_streaming:
            await self.abort()
        if self.extensions is not None:
            await self.extensions.session_shutdown("quit")
        if self.rt.mcp is not None:
            await self.rt.mcp.close()
        self.rt.processes.kill_all()
        await close_provider_sessions()  # the Codex sockets pi keeps for the next turn
        self.sm.close()
        self._unsubscribe_agent()


_T = TypeVar("_T")


def _since(read: Callable[[str | None], _T], since: str | None) -> _T:
    """``read(since)``, an unknown ``since`` entry answered as a session error."""
    try:
        return read(since)
    except KeyError as exc:
        raise SessionError(str(exc.args[0]) if exc.args else str(exc)) from None
