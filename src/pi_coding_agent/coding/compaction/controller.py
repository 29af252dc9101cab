"""When a session compacts, and what it tells clients while doing so.

The controller is the session's compaction policy: manual ``compact``, threshold checks after a run,
before a prompt and between turns, and overflow recovery (omit the failed attempt, compact, retry
once per user message). The session that owns it is seen as a ``SessionHost`` (events, the live
store, omitting a message, the compacting flag); the ``SessionRuntime`` supplies the agent, the
settings, ``auto_compaction_enabled``, keys and retry settings. The planning (``prepare``) and the
branch projection load with the first check after a run, not with the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.errors import is_context_overflow
from pi_coding_agent.ai.models.virtual import is_virtual
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.compaction.tokens import (
    context_usage,
    estimate_context_tokens,
    has_valid_usage,
    last_usage_index,
    sum_tokens,
    usage_tokens,
)
from pi_coding_agent.coding.events import AgentEvent, CompactionEndEvent, Message
from pi_coding_agent.coding.messages import last_assistant
from pi_coding_agent.coding.session.entries import Entry

if TYPE_CHECKING:
    from pi_coding_agent.agent.agent import Agent
    from pi_coding_agent.ai.types import AssistantMessage, Model
    from pi_coding_agent.coding.compaction.prepare import CompactionPreparation
    from pi_coding_agent.coding.compaction.summarize import SummaryRequest
    from pi_coding_agent.coding.runtime import SessionRuntime
    from pi_coding_agent.coding.session import SessionManager
    from pi_coding_agent.coding.session_host import SessionHost


FAILURE_PREFIX = {
    "manual": "Compaction failed: ",
    "threshold": "Auto-compaction failed: ",
    "overflow": "Context overflow recovery failed: ",
}
OVERFLOW_RETRY_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)
LENGTH_RETRY_FAILED = "Truncated response recovery failed after one compact-and-retry attempt."


class CompactionHooks(Protocol):
    """The extension hook points of a compaction (the session's extension runner, when it has one)."""

    async def before_compact(self, event: JsonObject) -> dict[str, Any] | None: ...

    async def notify(self, event: JsonObject) -> None: ...


class CompactionController:
    """Compaction for one AgentSession (see the module docstring for what it needs from it)."""

    def __init__(self, session: SessionHost, runtime: SessionRuntime, extensions: CompactionHooks | None = None) -> None:
        self.session = session
        self.runtime = runtime
        self.extensions = extensions
        self._signal: AbortSignal | None = None
        self._overflow_recovery_attempted = False
        self._from_extension = False  # the running compaction uses a summary an extension supplied
        session.subscribe(self._on_event, ("message_start", "message_end"))

    # ----------------------------------------------------------------- state

    @property
    def _sm(self) -> SessionManager:
        return self.session.sm

    @property
    def _agent(self) -> Agent:
        return self.runtime.agent

    def _on_event(self, event: AgentEvent) -> None:
        """One compact-and-retry per user message: a new user message or a good reply re-arms it."""
        if event["type"] not in ("message_start", "message_end"):
            return
        etype = event["type"]
        message = event["message"]
        role = message.get("role")
        if (etype == "message_start" and role == "user") or (
            etype == "message_end" and role == "assistant" and message.get("stopReason") not in ("error", "length")
        ):
            self._overflow_recovery_attempted = False

    def _setting(self, name: str) -> int:
        model = self._agent.model
        return int(self.runtime.settings.compaction_tokens_for(name, model["provider"], model["id"]))

    def _limits_model(self, answer: AssistantMessage | None = None) -> Model:
        """The model whose context limits apply. Under a virtual selection (as in pi): the physical
        model of ``answer`` (the reply being checked), else of the latest response, else the limits
        the virtual model declares."""
        model = self._agent.model
        if not is_virtual(model):
            return model
        latest = answer or _last_answer(self._agent.messages)
        found = latest and self.runtime.registry.find(latest["provider"], latest["model"])
        return found if found and not is_virtual(found) else model

    def abort(self) -> None:
        """Cancel the running compaction, if any (it ends with ``aborted: true``)."""
        if self._signal is not None:
            self._signal.abort()

    # ----------------------------------------------------------------- running a compaction

    async def compact(self, reason: str = "manual", custom_instructions: str | None = None,
                      will_retry: bool = False) -> JsonObject:
        """Compact now: ``compaction_start`` … ``compaction_end``; returns the CompactionResult.

        Raises ``CompactionError`` (``str`` is the response error, without the event's prefix).
        """
        return await self._run(reason, custom_instructions, will_retry, None)

    async def _run(self, reason: str, custom_instructions: str | None, will_retry: bool,
                   preparation: CompactionPreparation | None) -> JsonObject:
        from pi_coding_agent.coding.compaction.prepare import CompactionCancelled

        signal = self._signal = AbortSignal()
        self._from_extension = False
        self.session.is_compacting = True
        self.session.emit({"type": "compaction_start", "reason": reason})
        try:
            result = await self._compact(signal, reason, custom_instructions, preparation)
        except Exception as exc:
            aborted = signal.aborted or isinstance(exc, CompactionCancelled)
            self._finish()  # listeners of compaction_end may already prompt again
            end: CompactionEndEvent = {"type": "compaction_end", "reason": reason, "aborted": aborted, "willRetry": False}
            if not aborted:
                end["errorMessage"] = FAILURE_PREFIX.get(reason, FAILURE_PREFIX["manual"]) + str(exc)
            self.session.emit(end)
            await self._notify_extensions({"type": "session_compact_failed", "reason": reason,
                                           **({"errorMessage": end["errorMessage"]} if not aborted else {}),
                                           "aborted": aborted, "willRetry": False,
                                           "fromExtension": self._from_extension})
            if aborted and not isinstance(exc, CompactionCancelled):
                raise CompactionCancelled() from exc
            raise
        finally:
            self._finish()
        self.session.emit({"type": "compaction_end", "reason": reason, "result": result, "aborted": False,
                           "willRetry": will_retry})
        return result

    def _finish(self) -> None:
        self._signal = None
        self.session.is_compacting = False

    async def _compact(self, signal: AbortSignal, reason: str, custom_instructions: str | None,
                       preparation: CompactionPreparation | None) -> JsonObject:
        from pi_coding_agent.coding.compaction.prepare import (
            CompactionCancelled,
            prepare_compaction,
            raise_unpreparable,
        )

        if preparation is None:
            branch = self._sm.get_context_branch()  # plans the same as the whole branch (see context_start)
            preparation = prepare_compaction(branch, self._setting("keepRecentTokens"))
            if preparation is None:
                raise_unpreparable(branch)
            assert preparation is not None
        supplied = await self._extension_compaction(preparation, reason, custom_instructions, signal)
        if supplied is not None:
            self._from_extension = True
            summary, usage, details = supplied["summary"], supplied.get("usage"), supplied.get("details")
            first_kept = supplied.get("firstKeptEntryId", preparation.first_kept_entry_id)
            tokens_before = supplied.get("tokensBefore", preparation.tokens_before)
        else:
            from pi_coding_agent.coding.compaction.summarize import (
                summarize_with,  # the LLM part: on first use
            )

            summary, usage = await summarize_with(await self._summary_request(signal, reason), preparation,
                                                  custom_instructions)
            read_files, modified_files = preparation.file_ops.file_lists()
            details = {"readFiles": read_files, "modifiedFiles": modified_files}
            first_kept, tokens_before = preparation.first_kept_entry_id, preparation.tokens_before
        if signal.aborted:
            raise CompactionCancelled()
        entry = self._sm.append_compaction(summary, first_kept, tokens_before, details=details, usage=usage,
                                           from_hook=supplied is not None)
        await self._notify_extensions({"type": "session_compact", "compactionEntry": entry,
                                       "fromExtension": supplied is not None, "reason": reason,
                                       "willRetry": reason == "overflow"})
        messages = self._sm.build_context().messages
        self._agent.messages[:] = messages
        result: JsonObject = {"summary": summary, "firstKeptEntryId": first_kept,
                                  "tokensBefore": tokens_before,
                                  "estimatedTokensAfter": sum_tokens(messages)}
        if usage is not None:
            result["usage"] = usage
        if details is not None:
            result["details"] = details
        return result

    async def _extension_compaction(self, preparation: CompactionPreparation, reason: str,
                                    custom_instructions: str | None, signal: AbortSignal) -> dict[str, Any] | None:
        """``session_before_compact``: an extension may cancel, or supply the summary itself.

        Only extensions get the whole branch: reading a long history at every compaction raised the
        process's memory high-water mark a little more each time.
        """
        if self.extensions is None:
            return None
        answer = await self.extensions.before_compact({
            "preparation": preparation.to_event(), "branchEntries": self._sm.get_branch(), "reason": reason,
            "willRetry": reason == "overflow", "signal": signal,
            **({"customInstructions": custom_instructions} if custom_instructions else {}),
        })
        if answer is None:
            return None
        if answer.get("cancel"):
            from pi_coding_agent.coding.compaction.prepare import CompactionCancelled

            raise CompactionCancelled()
        supplied: JsonObject = answer["compaction"]
        return supplied

    async def _notify_extensions(self, event: JsonObject) -> None:
        if self.extensions is not None:
            await self.extensions.notify(event)

    async def _summary_request(self, signal: AbortSignal, reason: str) -> SummaryRequest:
        from pi_coding_agent.coding.compaction.summarize import SummaryRequest

        agent = self._agent
        model, level = agent.model, agent.thinking_level
        if is_virtual(model):  # the summary is a ``direct`` request of the router
            route = await self.runtime.virtual_models.resolve(model, agent.messages, "direct",
                                                              level, signal)
            model, level = route.model, route.thinking_level
        api_key = self.runtime.api_key_for(model)
        if api_key is None:
            from pi_coding_agent.coding.compaction.prepare import CompactionError

            provider = model["provider"]
            raise CompactionError(self.runtime.no_key_message("the selected model" if provider == "unknown"
                                                              else provider))
        return SummaryRequest(model, api_key, level, signal, self.session.emit,
                              self.runtime.retry_settings(), {"source": "compaction", "reason": reason},
                              self.runtime.settings.thinking_budgets)

    async def _auto(self, reason: str, will_retry: bool) -> bool:
        """Threshold/overflow compaction; True when the run should continue (retry or queued input)."""
        if self._agent.model["provider"] == "unknown":
            return False
        from pi_coding_agent.coding.compaction.prepare import prepare_compaction

        preparation = prepare_compaction(self._sm.get_context_branch(), self._setting("keepRecentTokens"))
        if preparation is None:
            return False  # nothing to summarise: no events at all
        try:
            await self._run(reason, None, will_retry, preparation)
        except Exception:  # already reported by compaction_end; the run just does not continue
            return False
        return will_retry or bool(self._agent.has_queued_messages())

    # ----------------------------------------------------------------- when to compact

    def _over_threshold(self, tokens: int, context_window: int) -> bool:
        return tokens > context_window - self._setting("reserveTokens")

    async def check_after_run(self, reply: AssistantMessage | None) -> bool:
        """Post-run check of the last reply; True when the session must continue the run."""
        if reply is None:
            return False
        return await self._check(reply, skip_aborted=True)

    async def check_before_prompt(self) -> None:
        """Pre-prompt check (aborted replies count too); the new prompt follows, nothing continues."""
        last = last_assistant(self._agent.messages)
        if last is not None:
            await self._check(last, skip_aborted=False)

    async def check_between_turns(self, routed: Model | None = None) -> None:
        """Before the next request of a run: compact when the projected context is over the threshold.
        A virtual selection is checked once its request is routed, against the ``routed`` model."""
        if routed is None and is_virtual(self._agent.model):
            return
        model = routed or self._agent.model
        window = model.get("contextWindow", 0)
        if not self.runtime.auto_compaction_enabled or window <= 0 or model["provider"] == "unknown":
            return
        from pi_coding_agent.coding.compaction.projection import project, projected_tokens

        branch = self._sm.get_context_branch()
        if self._over_threshold(projected_tokens(project(branch), branch), window):
            await self._auto("threshold", False)

    async def _check(self, message: AssistantMessage, skip_aborted: bool) -> bool:
        from pi_coding_agent.coding.compaction.projection import latest_compaction, project

        if not self.runtime.auto_compaction_enabled:
            return False
        if skip_aborted and message.get("stopReason") == "aborted":
            return False
        model = self._limits_model(message)
        same_model = model["provider"] == message.get("provider") and model["id"] == message.get("model")
        window = model.get("contextWindow", 0)
        if window <= 0 and is_virtual(model):  # no response yet and no declared limits: nothing to check
            return False
        branch = self._sm.get_context_branch()
        compaction = latest_compaction(branch)
        if compaction is not None and _predates(branch, message, compaction):
            return False  # a reply from before the latest compaction says nothing about the context now
        projected = project(branch)
        if same_model:
            recovery = self._overflow_kind(message, branch, projected, window, model.get("maxTokens", 0))
            if recovery is not None:
                return await self._recover(message, recovery)
        return await self._check_threshold(message, branch, projected, window, compaction)

    def _overflow_kind(self, message: AssistantMessage, branch: list[Entry], projected: list[Any], window: int,
                       max_tokens: int) -> str | None:
        """"overflow" / "length" when the reply calls for overflow compaction, else None."""
        entry_id = _entry_id_of(branch, message)
        projected_here = entry_id is None or any(
            p.entry.get("id") == entry_id and any(m.get("role") == "assistant" for m in p.messages) for p in projected)
        after = _entries_after(branch, entry_id)
        edits_of_message = [e for e in after if e.get("type") == "context_edit" and e.get("targetId") == entry_id]
        retained = entry_id is None or (
            not any(e.get("type") == "compaction" for e in after)
            and (not edits_of_message or edits_of_message[-1].get("replacement") is not None))
        usage_matches = projected_here and not any(e.get("type") == "context_edit" for e in after)
        explicit = message.get("stopReason") == "error" and is_context_overflow(message)
        if (explicit and retained) or (usage_matches and is_context_overflow(message, window)):
            return "overflow"
        usage = message.get("usage") or {}
        if (projected_here and message.get("stopReason") == "length" and max_tokens > 0
                and (usage.get("output") or 0) < max_tokens):
            return "length"
        return None

    async def _recover(self, message: AssistantMessage, kind: str) -> bool:
        if message.get("stopReason") == "stop":
            return await self._auto("overflow", False)  # a complete reply cannot be retried, only compacted
        if self._overflow_recovery_attempted:
            self.session.emit({"type": "compaction_end", "reason": "overflow", "aborted": False, "willRetry": False,
                               "errorMessage": OVERFLOW_RETRY_FAILED if kind == "overflow" else LENGTH_RETRY_FAILED})
            return False
        self._overflow_recovery_attempted = True
        self._omit_attempt(message)
        return await self._auto("overflow", True)

    def _omit_attempt(self, message: AssistantMessage) -> None:
        """Hide the failed reply and its tool results from the model (they stay in the file)."""
        messages = self._agent.messages
        call_ids = {b["id"] for b in message.get("content") or [] if b["type"] == "toolCall"}
        index = next((i for i, m in enumerate(messages) if m is message), None)
        results: list[Message] = []
        for later in messages[index + 1 :] if index is not None else []:
            if later["role"] == "assistant":
                break
            if later["role"] == "toolResult" and later.get("toolCallId") in call_ids:
                results.append(later)
        for target in (message, *results):
            self.session.omit_from_context(target)

    async def _check_threshold(self, message: AssistantMessage, branch: list[Entry], projected: list[Any], window: int,
                               compaction: Entry | None) -> bool:
        direct = usage_tokens(message.get("usage"))
        if any(p.entry.get("type") == "context_edit" for p in projected):
            from pi_coding_agent.coding.compaction.projection import projected_tokens

            tokens = projected_tokens(projected, branch)
        elif message.get("stopReason") == "error" or direct == 0:
            messages = self._agent.messages
            index = last_usage_index(messages)
            if index is not None and compaction is not None and _predates(branch, messages[index], compaction):
                return False  # the only usage predates the compaction: it measures the old context
            tokens = estimate_context_tokens(messages)
        else:
            tokens = direct
        if self._over_threshold(tokens, window):
            return await self._auto("threshold", False)
        return False

    # ----------------------------------------------------------------- stats

    def context_usage(self) -> JsonObject | None:
        """``contextUsage`` of get_session_stats."""
        window = self._limits_model().get("contextWindow", 0)
        if window <= 0:
            return None
        from pi_coding_agent.coding.compaction.projection import (
            latest_compaction,
            project,
            projected_messages,
            usage_is_current,
        )

        branch = self._sm.get_context_branch()
        projected = project(branch)
        compaction = latest_compaction(branch)
        unknown = False
        if compaction is not None:
            answered = {p.entry.get("id") for p in projected if any(has_valid_usage(m) for m in p.messages)}
            unknown = not any(e.get("id") in answered for e in _entries_after(branch, compaction.get("id")))
        return context_usage(projected_messages(projected), window, unknown,
                             usage_stale=not usage_is_current(projected, branch))


def _last_answer(messages: list[Message]) -> AssistantMessage | None:
    """The latest reply that did not fail."""
    for message in reversed(messages):
        if message["role"] == "assistant" and message["stopReason"] not in ("error", "aborted"):
            return message
    return None


def _entry_id_of(branch: list[Entry], message: Message) -> str | None:
    """The id of the entry that persisted ``message`` (the same object), searching from the leaf."""
    for entry in reversed(branch):
        if entry.get("message") is message:
            return entry.get("id")
    return None


def _predates(branch: list[Entry], message: Message, compaction: Entry) -> bool:
    """True when ``message`` was recorded before ``compaction``.

    The branch order decides when the message is on it: a reply that follows a compaction within the
    same millisecond must not pass for an old one. Timestamps only decide for unrecorded messages.
    """
    entry_id = _entry_id_of(branch, message)
    if entry_id is None:
        from pi_coding_agent.coding.compaction.projection import entry_time_ms

        return int(message.get("timestamp", 0)) <= entry_time_ms(compaction)
    ids = [entry.get("id") for entry in branch]
    return ids.index(entry_id) < ids.index(compaction.get("id"))


def _entries_after(branch: list[Entry], entry_id: str | None) -> list[Entry]:
    if entry_id is None:
        return []
    for index, entry in enumerate(branch):
        if entry.get("id") == entry_id:
            return branch[index + 1 :]
    return []
