"""The session's model and thinking level: what ``set_model``, ``cycle_model`` and the thinking commands share.

A change is applied to the agent, recorded in the session file (``model_change``,
``thinking_level_change``) and then announced (extensions' ``model_select``, the
``thinking_level_changed`` event), in that order, as pi does. A model switch also re-clamps the
thinking level, since the new model may support fewer levels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pi_coding_agent.ai.thinking import clamp_thinking_level, supported_thinking_levels
from pi_coding_agent.ai.types import JsonObject, Model
from pi_coding_agent.coding.errors import SessionError
from pi_coding_agent.coding.events import AgentEvent

if TYPE_CHECKING:
    from pi_coding_agent.coding.extensions.runner import ExtensionRunner
    from pi_coding_agent.coding.runtime import SessionRuntime


class ModelSelection:
    """Model and thinking-level changes of one session.

    ``extensions`` is read at each change: the session replaces its runner when it enters another project.
    """

    def __init__(self, runtime: SessionRuntime, emit: Callable[[AgentEvent], None],
                 extensions: Callable[[], ExtensionRunner | None]) -> None:
        self.rt = runtime
        self.agent = runtime.agent
        self._emit = emit
        self._extensions = extensions

    def available_models(self) -> list[Model]:
        return self.rt.available_models()

    async def set_model(self, provider: str, model_id: str) -> Model:
        model = next((m for m in self.available_models()
                      if m["provider"] == provider and m["id"] == model_id), None)
        if model is None:  # pi looks only among models with credentials, whatever the reason
            raise SessionError(f"Model not found: {provider}/{model_id}")
        await self._switch(model, "set")
        return model

    async def cycle_model(self) -> JsonObject | None:
        scoped = self.rt.scoped_models
        candidates = scoped or self.available_models()
        if len(candidates) <= 1 and (not candidates or candidates[0] is self.agent.model):
            return None
        current = self.agent.model
        index = next((i for i, m in enumerate(candidates)
                      if m["provider"] == current["provider"] and m["id"] == current["id"]), -1)
        model = candidates[(index + 1) % len(candidates)] if index >= 0 else candidates[0]
        await self._switch(model, "cycle")
        return {"model": model, "thinkingLevel": self.agent.thinking_level, "isScoped": bool(scoped)}

    async def _switch(self, model: Model, source: str) -> None:
        previous = self.agent.model
        self.agent.set_model(model)
        self.rt.session_manager.append_model_change(model["provider"], model["id"])
        extensions = self._extensions()
        if extensions is not None:
            await extensions.model_select(model, previous, source)
        self.set_thinking_level(self.rt.thinking_level_for(model, self.agent.thinking_level))

    def set_thinking_level(self, level: str) -> None:
        effective = clamp_thinking_level(self.agent.model, level)
        if effective == self.agent.thinking_level:
            return
        self.agent.set_thinking_level(effective)
        self.rt.session_manager.append_thinking_level_change(effective)
        self._emit({"type": "thinking_level_changed", "level": effective})

    def cycle_thinking_level(self) -> JsonObject | None:
        if not self.agent.model.get("reasoning"):
            return None
        levels = supported_thinking_levels(self.agent.model)
        current = self.agent.thinking_level
        index = levels.index(current) if current in levels else -1
        self.set_thinking_level(levels[(index + 1) % len(levels)])
        return {"level": self.agent.thinking_level}

    def available_thinking_levels(self) -> list[str]:
        return supported_thinking_levels(self.agent.model)
