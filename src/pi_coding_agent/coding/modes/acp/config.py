"""Session modes and config options: ACP's selectors mapped onto pi's model, thinking level, tool policy
and the sandbox (``sandbox``: off, read-only, workspace-write).

The mode is the tool policy of the session (``permissions.PermissionGate`` enforces it); it is
offered both as the legacy ``modes`` state and as the ``mode`` config option, kept in sync, as the
spec asks during the transition. ``model`` and ``thought_level`` map to ``set_model`` and
``set_thinking_level``; the session records those changes in its file as pi does.
"""

from __future__ import annotations

from typing import Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.errors import UserError
from pi_coding_agent.coding.modes.acp.jsonrpc import INVALID_PARAMS, RpcError
from pi_coding_agent.coding.modes.acp.port import SessionPort
from pi_coding_agent.coding.sandbox.policy import MODES as SANDBOX_MODES

FULL_ACCESS = "full-access"
ASK = "ask"
READ_ONLY = "read-only"
MODES: dict[str, tuple[str, str]] = {
    FULL_ACCESS: ("Full access", "Tools run without asking, as in pi"),
    ASK: ("Ask", "Ask before every edit, write and command"),
    READ_ONLY: ("Read only", "Edits, writes and commands are refused"),
}


def initial_mode(setting: str | None) -> str:
    """``acp.defaultMode`` in settings.json: the mode new ACP sessions start in."""
    return setting if setting in MODES else FULL_ACCESS


def mode_state(current: str) -> JsonObject:
    """The legacy ``modes`` object of session/new and session/load."""
    return {"currentModeId": current,
            "availableModes": [{"id": mode_id, "name": name, "description": description}
                               for mode_id, (name, description) in MODES.items()]}


def _model_key(model: Any) -> str:
    return f"{model['provider']}/{model['id']}"


def config_options(session: SessionPort, mode: str) -> list[JsonObject]:
    """The complete option list (every response and ``config_option_update`` carries all of them)."""
    options: list[JsonObject] = [{
        "id": "mode", "name": "Mode", "description": "When tools may change files or run commands",
        "category": "mode", "type": "select", "currentValue": mode,
        "options": [{"value": mode_id, "name": name, "description": description}
                    for mode_id, (name, description) in MODES.items()],
    }]
    state = session.get_state()
    models = session.get_available_models()
    current = state.get("model")
    if models and isinstance(current, dict):
        choices = [{"value": _model_key(m), "name": m.get("name") or m["id"], "description": m["provider"]}
                   for m in models]
        if all(choice["value"] != _model_key(current) for choice in choices):
            choices.insert(0, {"value": _model_key(current), "name": current.get("name") or current["id"]})
        options.append({"id": "model", "name": "Model", "category": "model", "type": "select",
                        "currentValue": _model_key(current), "options": choices})
    options.append({"id": "sandbox", "name": "Sandbox", "description": "What the model's commands and file tools "
                    "may touch (docs/sandbox.md)", "type": "select",
                    "currentValue": session.sandbox_mode,
                    "options": [{"value": value, "name": value} for value in SANDBOX_MODES]})
    levels = session.get_available_thinking_levels()
    if levels:
        options.append({"id": "thought_level", "name": "Thinking", "category": "thought_level", "type": "select",
                        "currentValue": state.get("thinkingLevel", levels[0]),
                        "options": [{"value": level, "name": level} for level in levels]})
    return options


def _choice(value: object, allowed: list[str], option: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise RpcError(INVALID_PARAMS, "Invalid params", f"{option}: {value!r} is not one of {allowed}")
    return value


async def apply_option(session: SessionPort, config_id: object, value: object) -> str | None:
    """Apply ``model`` or ``thought_level``; returns the new mode for ``mode`` (the caller owns it)."""
    if config_id == "mode":
        return _choice(value, list(MODES), "mode")
    if config_id == "model":
        models = {_model_key(m): m for m in session.get_available_models()}
        chosen = models[_choice(value, list(models), "model")]
        await session.set_model(chosen["provider"], chosen["id"])
        return None
    if config_id == "sandbox":
        try:
            session.set_sandbox_mode(_choice(value, list(SANDBOX_MODES), "sandbox"))
        except UserError as exc:
            raise RpcError(INVALID_PARAMS, "Invalid params", str(exc)) from None
        return None
    if config_id == "thought_level":
        session.set_thinking_level(_choice(value, session.get_available_thinking_levels(), "thought_level"))
        return None
    raise RpcError(INVALID_PARAMS, "Invalid params", f"unknown config option: {config_id!r}")
