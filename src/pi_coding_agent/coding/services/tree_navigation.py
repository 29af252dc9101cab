"""Moving within the session tree, optionally leaving a summary of the branch left behind.

pi reaches this through extension commands (``ctx.navigate_tree``); it is the only way a session
moves its leaf without appending, and the only place branch summaries are written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.errors import SessionError

if TYPE_CHECKING:
    from pi_coding_agent.coding.runtime import SessionRuntime
    from pi_coding_agent.coding.session_host import SessionHost


TREE_CHOICES = ("customInstructions", "replaceInstructions", "label")


class TreeHooks(Protocol):
    """What navigation asks the extensions (the runner implements it)."""

    async def before_tree(self, event: JsonObject) -> JsonObject | None: ...


class TreeNavigator:
    """Tree navigation for one session; ``abort`` cancels a branch summary in progress."""

    def __init__(self, host: SessionHost, runtime: SessionRuntime, hooks: TreeHooks | None = None) -> None:
        self.host = host
        self.rt = runtime
        self.hooks = hooks
        self._signal: AbortSignal | None = None

    def abort(self) -> None:
        if self._signal is not None:
            self._signal.abort()

    async def navigate(
        self, target_id: str, *, summarize: bool = False,
        custom_instructions: str | None = None, replace_instructions: bool = False, label: str | None = None,
    ) -> tuple[JsonObject, JsonObject | None]:
        """Move to another point of the session tree, optionally leaving a
        summary of the abandoned branch. A user or custom message is re-opened for editing: the leaf
        goes to its parent and its text comes back as ``editorText``. Returns the command result and
        the ``session_tree`` event for extensions (None when an extension cancelled)."""
        session = self.host
        sm = self.rt.session_manager
        entry = sm.get_entry(target_id)
        if entry is None:
            raise SessionError(f"Entry {target_id} not found")
        if session.is_streaming:
            await session.abort()
        message = entry.get("message") or {}
        editable = entry["type"] == "custom_message" or (entry["type"] == "message" and message.get("role") == "user")
        new_leaf = entry.get("parentId") if editable else target_id
        old_leaf = sm.leaf_id
        result: JsonObject = {"cancelled": False}
        if editable:
            content = entry.get("content") if entry["type"] == "custom_message" else message.get("content")
            result["editorText"] = content if isinstance(content, str) else "".join(
                b.get("text", "") for b in content or [] if b.get("type") == "text")
        summary_entry = None
        from pi_coding_agent.coding.compaction.branch_summary import collect_branch_entries  # with summaries

        branch = collect_branch_entries(sm.get_branch, old_leaf, new_leaf) if summarize or self.hooks else []
        choices: dict[str, Any] = {"customInstructions": custom_instructions,
                                   "replaceInstructions": replace_instructions, "label": label}
        answer = await self._before_tree(target_id, old_leaf, branch, summarize, choices)
        if answer.get("cancel"):
            return {"cancelled": True}, None
        choices.update((key, answer[key]) for key in TREE_CHOICES if answer.get(key) is not None)
        custom_instructions, label = choices["customInstructions"], choices["label"]
        supplied = answer.get("summary") if summarize and isinstance(answer.get("summary"), dict) else None
        if supplied is not None:
            summary_entry = sm.branch_with_summary(new_leaf, supplied.get("summary", ""),
                                                   details=supplied.get("details"), usage=supplied.get("usage"))
        elif summarize and branch:
            summary_entry = await self._summarize_branch(branch, new_leaf, custom_instructions,
                                                         bool(choices["replaceInstructions"]))
        else:
            sm.branch(new_leaf)
        if label and summary_entry is not None:
            sm.append_label(summary_entry["id"], label)
        self.rt.agent.replace_messages(sm.build_context().messages)
        event: JsonObject = {"type": "session_tree", "newLeafId": sm.leaf_id, "oldLeafId": old_leaf}
        if summary_entry is not None:
            event["summaryEntry"] = summary_entry
            event["fromExtension"] = supplied is not None
        return result, event

    async def _before_tree(self, target_id: str, old_leaf: str | None, branch: list[dict[str, Any]],
                           summarize: bool, choices: JsonObject) -> dict[str, Any]:
        """``session_before_tree``: the extensions may cancel, supply the summary or change the choices."""
        if self.hooks is None:
            return {}
        preparation = {"targetId": target_id, "oldLeafId": old_leaf,
                       "commonAncestorId": branch[0].get("parentId") if branch else old_leaf,
                       "entriesToSummarize": branch, "userWantsSummary": summarize, **choices}
        return await self.hooks.before_tree({"preparation": preparation, "signal": AbortSignal()}) or {}

    async def _summarize_branch(self, branch: list[JsonObject], new_leaf: str | None,
                                custom_instructions: str | None, replace_instructions: bool) -> JsonObject:
        """The ``branch_summary`` entry for the branch being left (``isCompacting`` meanwhile)."""
        from pi_coding_agent.coding.compaction.branch_summary import summarize_branch
        from pi_coding_agent.coding.compaction.prepare import CompactionError
        from pi_coding_agent.coding.compaction.summarize import CompactionCancelled

        model = self.rt.agent.model
        session = self.host
        signal = self._signal = AbortSignal()
        session.is_compacting = True
        try:
            summary, details, usage = await summarize_branch(
                branch, model, self.rt.api_key_for(model), signal, session.emit,
                thinking_level=self.rt.agent.thinking_level, retry=self.rt.retry_settings(),
                reserve_tokens=self.rt.settings.branch_summary_reserve_tokens,
                custom_instructions=custom_instructions, replace_instructions=replace_instructions,
                thinking_budgets=self.rt.settings.thinking_budgets)
        except CompactionCancelled:
            raise SessionError("Branch summarization cancelled") from None
        except CompactionError as exc:
            raise SessionError(str(exc)) from None
        finally:
            self._signal = None
            session.is_compacting = False
        return self.rt.session_manager.branch_with_summary(new_leaf, summary, details=details, usage=usage)
