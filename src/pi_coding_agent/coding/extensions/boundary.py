"""Boundary events (``turn_end``, ``agent_before_settle``): entry drafts and the context they would make.

A boundary handler proposes *drafts* (``custom``, ``custom_message``, ``context_edit``,
``compaction``) and may ask for one more model request. Before each handler, and to judge a request
to continue, the drafts so far are applied to a throw-away copy of the branch, so every handler sees
the context the drafts would produce and an invalid draft is caught before anything is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pi_coding_agent.agent.events import CustomMessage
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.session import SessionManager, convert_to_llm
from pi_coding_agent.coding.session.entries import Entry

if TYPE_CHECKING:
    from pi_coding_agent.agent.agent import Agent



def apply_drafts(sm: SessionManager, drafts: list[dict[str, Any]]) -> list[Entry]:
    """Append the drafts to ``sm`` in order; raises ValueError on a draft the store refuses.
    A draft of an unknown type is skipped, as pi does."""
    appended = []
    for draft in drafts:
        kind = draft.get("type")
        if kind == "custom":
            entry = sm.append_custom(draft["customType"], draft.get("data"))
        elif kind == "custom_message":
            entry = sm.append_custom_message(draft["customType"], draft.get("content"), bool(draft.get("display")),
                                             draft.get("details"))
        elif kind == "context_edit":
            entry = sm.append_context_edit(draft["targetId"], draft.get("replacement"))
        elif kind == "compaction":
            entry = sm.append_compaction(draft["summary"], draft.get("firstKeptEntryId") or "", _tokens_now(sm),
                                         details=draft.get("details"), usage=draft.get("usage"), from_hook=True)
        else:
            continue
        appended.append(entry)
    return appended


def _tokens_now(sm: SessionManager) -> int:
    """``tokensBefore`` of a drafted compaction: the projected context as it stands."""
    from pi_coding_agent.coding.compaction.projection import project, projected_tokens

    branch = sm.get_branch()
    return projected_tokens(project(branch), branch)


def preview_context(sm: SessionManager, drafts: list[JsonObject], agent: Agent,
                    held: list[CustomMessage], boundary: str) -> JsonObject:
    """The ``context`` a boundary handler sees: what the model would get once the drafts were written,
    the messages still waiting, and whether one more request could run."""
    from pi_coding_agent.coding.compaction.projection import project, projected_messages

    preview = SessionManager(cwd=sm.cwd, session_dir=None, persist=False, header=sm.header,
                             entries=list(sm.get_branch()), session_file=None, flushed=False)
    apply_drafts(preview, drafts)
    projected = project(preview.get_branch())
    messages = projected_messages(projected)
    llm_messages = convert_to_llm(messages)
    final_role = llm_messages[-1].get("role") if llm_messages else None
    runnable = any(m.get("role") != "system" for m in llm_messages) and final_role != "assistant"
    queued = agent.has_queued_messages()
    return {
        "contextEntries": [{"sourceEntry": p.entry, "messages": p.messages} for p in projected],
        "contextMessages": messages,
        "llmMessages": llm_messages,
        "pendingMessages": [*agent.steering_queue, *agent.follow_up_queue, *held],
        "canContinue": runnable or bool(held) or (
            queued if boundary == "turn_end" else final_role == "assistant" and queued),
    }
