"""The tool policy of an ACP session: which calls run, which ask the client, which are refused.

In ``full-access`` (pi's behaviour, the default) every call runs. In ``ask`` the calls that change
files or run commands (``write``, ``edit``, ``bash``) wait for ``session/request_permission``:
allow once, allow always (this tool, for the rest of the session), or reject. ``read-only``
refuses them without asking. A client that cannot answer (gone, or an error) means "rejected".
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.modes.acp.config import ASK, READ_ONLY
from pi_coding_agent.coding.modes.acp.jsonrpc import ConnectionClosed, RpcError
from pi_coding_agent.coding.modes.acp.tool_calls import start_update

GUARDED_TOOLS = frozenset({"write", "edit", "bash"})
ALLOW_ONCE, ALLOW_ALWAYS, REJECT = "allow-once", "allow-always", "reject-once"
OPTIONS = [
    {"optionId": ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"},
    {"optionId": ALLOW_ALWAYS, "name": "Always allow", "kind": "allow_always"},
    {"optionId": REJECT, "name": "Reject", "kind": "reject_once"},
]

Ask = Callable[[JsonObject], Awaitable[object]]  # request_permission params -> result


class PermissionGate:
    """The ``before_tool_call`` gate of one session; ``mode`` is changed by session/set_mode."""

    def __init__(self, session_id: str, cwd: str, mode: str, ask: Ask, on_allowed: Callable[[str], None]) -> None:
        self.session_id = session_id
        self.mode = mode
        self._cwd = cwd
        self._ask = ask
        self._on_allowed = on_allowed
        self._always: set[str] = set()

    async def __call__(self, call: dict[str, Any], args: dict[str, Any]) -> JsonObject | None:
        name = call["name"]
        if name in GUARDED_TOOLS:
            if self.mode == READ_ONLY:
                return {"block": True, "reason": f"The {name} tool is not allowed in read-only mode."}
            if self.mode == ASK and name not in self._always:
                refusal = await self._request(call, args)
                if refusal is not None:
                    return refusal
        self._on_allowed(call["id"])
        return None

    async def _request(self, call: dict[str, Any], args: dict[str, Any]) -> JsonObject | None:
        tool_call = start_update(call["id"], call["name"], args, self._cwd, "pending")
        del tool_call["sessionUpdate"]
        try:
            result = await self._ask({"sessionId": self.session_id, "toolCall": tool_call, "options": OPTIONS})
        except (ConnectionClosed, RpcError) as err:
            print(f"pi: permission request failed: {err}", file=sys.stderr)
            return {"block": True, "reason": "Permission was not granted (the client did not answer)."}
        outcome = result.get("outcome") if isinstance(result, dict) else None
        chosen = outcome.get("optionId") if isinstance(outcome, dict) and outcome.get("outcome") == "selected" else None
        if chosen == ALLOW_ALWAYS:
            self._always.add(call["name"])
        if chosen in (ALLOW_ONCE, ALLOW_ALWAYS):
            return None
        if chosen is None:  # the client cancelled the turn while asking
            return {"block": True, "reason": "Operation aborted"}
        return {"block": True, "reason": "The user rejected this tool call."}
