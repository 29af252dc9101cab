"""Turn bookkeeping and the boundary events (``turn_end``, ``agent_before_settle``) of a run.

A boundary handler may propose entry drafts and ask for one more model request (see ``boundary``
for how drafts are previewed and written); messages extensions held during a turn join the
transcript here, once the turn is over.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from pi_coding_agent.agent.events import CustomMessage, TurnEndEvent
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.extensions.boundary import apply_drafts, preview_context
from pi_coding_agent.coding.extensions.dispatch import Dispatcher

if TYPE_CHECKING:
    from pi_coding_agent.ai.types import AssistantMessage, ToolResultMessage
    from pi_coding_agent.coding.extensions.host import ExtensionHost
    from pi_coding_agent.coding.extensions.registry import Extension
    from pi_coding_agent.coding.runtime import SessionRuntime

# drafts so far, continue requested, the context they make, whether the drafts are valid
_Drafts = tuple[list[JsonObject], bool, JsonObject, bool]


class Boundaries(Dispatcher):
    """Turn index, outcome and held messages of the current run, and its boundary events."""

    def __init__(self, session: ExtensionHost, runtime: SessionRuntime) -> None:
        super().__init__(session, runtime)
        self._turn_index = 0
        self._outcome = "completed"  # of the last turn: the outcome agent_before_settle reports
        self._boundary_done: AssistantMessage | None = None  # the assistant message finish_turn dispatched
        self.held_messages: list[CustomMessage] = []  # send_message(trigger_turn=False) during a turn

    def append_custom(self, custom: CustomMessage) -> None:
        """Add a custom message to the transcript and the session file, with its message events."""
        session = self.session
        self.rt.agent.append_message(custom)
        session.sm.append_custom_message(custom["customType"], custom["content"], custom["display"],
                                         custom.get("details"))
        session.emit({"type": "message_start", "message": custom})
        session.emit({"type": "message_end", "message": custom})

    def _append_held(self) -> None:
        """Messages held during a turn join the transcript once it ended: never between a tool call and
        its result (the next event after ``turn_end`` comes only after ``turn_end`` went out)."""
        held, self.held_messages = self.held_messages, []
        for custom in held:
            self.append_custom(custom)

    def _turn_ended(self, event: TurnEndEvent) -> Awaitable[None] | None:
        """A turn that ended without ``finish_turn`` (the run failed) still gets its boundary."""
        message = event["message"]
        dispatched, self._boundary_done = self._boundary_done is message, None
        if dispatched or message.get("role") != "assistant":
            self._turn_index += 1
            return None
        return self._late_turn_end(message, event["toolResults"])

    async def _late_turn_end(self, message: AssistantMessage, results: list[ToolResultMessage]) -> None:
        await self._turn_end_boundary(message, results)
        self._turn_index += 1

    async def _turn_end_boundary(self, message: AssistantMessage, results: list[ToolResultMessage]) -> bool:
        """``turn_end`` handlers may propose entries and ask for one more request; True to continue."""
        stop = message.get("stopReason")
        self._outcome = stop if stop in ("aborted", "error") else "completed"
        if not self.has_handlers("turn_end"):
            return False
        entry_id = self.session.entry_id_of(message)
        if entry_id is None:
            self._boundary_error("turn_end", "turn_end could not resolve the persisted assistant entry ID")
            return False
        result_ids = [self.session.entry_id_of(r) for r in results]
        event = {"type": "turn_end", "turnIndex": self._turn_index, "message": message, "toolResults": results,
                 "messageEntryId": entry_id, "toolResultEntryIds": [i for i in result_ids if i is not None],
                 "outcome": self._outcome}
        drafts, proceed = await self._boundary(event)
        self._commit_drafts(drafts)
        if proceed and not self._preview([], "turn_end")["canContinue"]:
            self._boundary_error("turn_end", "turn_end requested continuation without runnable model context")
            return False
        return proceed

    async def before_settle(self) -> bool:
        """``agent_before_settle``, once nothing else would run: True when the session must make one more
        request (a handler asked to, or messages were queued meanwhile)."""
        agent = self.rt.agent
        if not self.has_handlers("agent_before_settle"):
            return agent.has_queued_messages()
        drafts, proceed = await self._boundary({"type": "agent_before_settle", "outcome": self._outcome})
        self._commit_drafts(drafts)
        self._append_held()
        if not (proceed or agent.has_queued_messages()):
            return False
        if not self._preview([], "agent_before_settle")["canContinue"]:
            if proceed:
                self._boundary_error("agent_before_settle",
                                     "agent_before_settle requested continuation without runnable model context")
            return False
        return True

    async def _boundary(self, base: dict[str, Any]) -> tuple[list[JsonObject], bool]:
        """Run a boundary event's handlers: each sees the drafts and decision so far and the context they
        make; a handler's ``entries``/``continue`` replace them. Drafts the store would refuse void all."""
        kind = base["type"]

        def event(state: _Drafts) -> JsonObject:
            drafts, proceed, context, _ = state
            return {**base, "entries": drafts, "continue": proceed, "context": context}

        def step(state: _Drafts, result: object, ext: Extension) -> _Drafts:
            drafts, proceed, context, _ = state
            if isinstance(result, dict):
                if result.get("entries") is not None:
                    drafts = list(result["entries"])
                if result.get("continue") is not None:
                    proceed = bool(result["continue"])
            try:
                return drafts, proceed, self._preview(drafts, kind), True
            except Exception as exc:
                self.report_error(ext.path, kind, ValueError(f"Invalid boundary entries: {_reason(exc)}"))
                return drafts, proceed, context, False

        start: _Drafts = ([], False, self._preview([], kind), True)
        drafts, proceed, _, valid = await self.chain(kind, start, event, step)
        return (drafts, proceed) if valid else ([], False)

    def _preview(self, drafts: list[JsonObject], boundary: str) -> JsonObject:
        return preview_context(self.session.sm, drafts, self.rt.agent, self.held_messages, boundary)

    def _commit_drafts(self, drafts: list[JsonObject]) -> None:
        """Write the drafts, give the agent the context they make, and announce each entry."""
        if not drafts:
            return
        sm = self.session.sm
        appended = apply_drafts(sm, drafts)
        self.rt.agent.replace_messages(sm.build_context().messages)
        for entry in appended:
            self.session.emit({"type": "entry_appended", "entry": entry})

    def _boundary_error(self, event: str, message: str) -> None:
        self.session.emit({"type": "extension_error", "extensionPath": "<boundary>", "event": event,
                           "error": message})


def _reason(exc: Exception) -> str:
    """An exception as a sentence: a missing draft key reads as the key, not as its repr."""
    if isinstance(exc, KeyError) and exc.args:
        return f"missing {exc.args[0]}"
    return str(exc) or type(exc).__name__
