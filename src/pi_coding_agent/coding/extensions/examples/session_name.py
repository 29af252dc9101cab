"""Name the session: a ``/session-name [name]`` command and a ``set_session_name`` tool for the model.

``/session-name`` without a name asks for one (``ctx.ui.input``); the command reports the result
with a notification. The tool lets the model name the session after it understood the task.
"""

from __future__ import annotations

from typing import Any

from pi_coding_agent.ai.types import JsonObject

TOOL_PARAMETERS = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string", "description": "A short title for this session (a few words)"}},
}


def setup(pi: Any) -> None:
    async def command(args: str, ctx: Any) -> None:
        name = args.strip() or (await ctx.ui.input("Session name", "a few words") or "").strip()
        if not name:
            ctx.ui.notify("Session name unchanged", "warning")
            return
        await pi.set_session_name(name)
        ctx.ui.notify(f"Session name: {pi.get_session_name()}")

    async def execute(tool_call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any) -> JsonObject:
        name = params["name"].strip()
        if not name:
            return {"content": [{"type": "text", "text": "The name must not be empty"}], "isError": True}
        await pi.set_session_name(name)
        return {"content": [{"type": "text", "text": f"Session named: {pi.get_session_name()}"}]}

    pi.register_command("session-name", description="Name this session", handler=command)
    pi.register_tool(name="set_session_name", label="Set session name",
                     description="Give the current session a short descriptive name.",
                     parameters=TOOL_PARAMETERS, execute=execute)
