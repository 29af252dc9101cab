"""Routing each request of a virtual selection (the agent's ``route_request`` hook).

The selection (agent state, ``model_change`` entries) keeps the virtual model; only the request
uses the routed one, so each assistant message names the physical model and level that answered.
The reason given to the router follows pi: ``retry`` after a failed attempt the session retries,
``user`` when a message the user wrote follows the last response, else ``continuation``. State a
router returns is kept on the session branch as a ``pi.virtual-model-state`` custom entry. Once
routed, the request is checked against the routed model's window (compacting first when needed).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.ai.models.virtual import STATE_ENTRY, is_virtual
from pi_coding_agent.ai.types import AssistantMessage, Model
from pi_coding_agent.coding.events import AgentEvent

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.coding.runtime import SessionRuntime
    from pi_coding_agent.coding.session.entries import Entry


class VirtualRouting:
    """Per-request routing of one session; ``failed`` is the answer the session just hid from the
    model (``omit_from_context``): the next request is its retry."""

    def __init__(self, runtime: SessionRuntime, emit: Callable[[AgentEvent], None],
                 compact_for: Callable[[Model], Awaitable[None]]) -> None:
        self.rt = runtime
        self._emit = emit
        self._compact_for = compact_for  # the threshold check against the routed model's window
        self.failed: AssistantMessage | None = None

    async def route_request(self, transcript: list[AgentMessage], signal: AbortSignal) -> tuple[Model, str]:
        """The request's model and level; the runtime builds the request for that model."""
        agent = self.rt.agent
        model, level = agent.model, agent.thinking_level
        failed, self.failed = self.failed, None
        self.rt.routed_model = None
        if not is_virtual(model):
            return model, level
        # only messages the user wrote start a turn (an extension's custom message does not)
        last_response = max((i for i, m in enumerate(transcript) if m["role"] == "assistant"), default=-1)
        user_turn = any(m["role"] == "user" for m in transcript[last_response + 1:])
        sm = self.rt.session_manager
        state = branch_state(sm.get_branch(), model)
        route = await self.rt.virtual_models.resolve(
            model, transcript, "retry" if failed else "user" if user_turn else "continuation", level, signal,
            failed, state)
        if route.state is not None and route.state is not state:  # stored before the request is sent
            entry = sm.append_custom(STATE_ENTRY, {"provider": model["provider"], "modelId": model["id"],
                                                   "state": route.state})
            self._emit({"type": "entry_appended", "entry": entry})
        await self._compact_for(route.model)  # the route stands: the router already decided this request
        self.rt.routed_model = route.model
        return route.model, route.thinking_level


def branch_state(branch: list[Entry], model: Model) -> object:
    """The router state the branch last stored for this virtual model (None: none yet)."""
    for entry in reversed(branch):
        data = entry.get("data") if entry.get("type") == "custom" and entry.get("customType") == STATE_ENTRY else None
        if isinstance(data, dict) and data.get("provider") == model["provider"] and data.get("modelId") == model["id"]:
            return data.get("state")
    return None
