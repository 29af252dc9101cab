"""Extension UI (``ctx.ui``) over ACP: what has a mapping is mapped, the rest is refused quietly.

``confirm`` and ``select`` become ``session/request_permission`` with one option per answer (the
only question a v1 client is obliged to show); ``set_title`` becomes a ``session_info_update``.
ACP has no text input, editor, status bar or widget: ``input``/``editor`` answer None at once (as
a dismissed dialog would), the others are dropped, and ``notify`` goes to stderr.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.modes.acp.jsonrpc import ConnectionClosed, RpcError
from pi_coding_agent.coding.ui import RPC_THEME_ERROR, HeadlessThemes

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal

Request = Callable[[str, JsonObject], Awaitable[Any]]


class AcpExtensionUI(HeadlessThemes):
    """ctx.ui of one ACP session; ``bind`` names the session once it has an id."""

    has_ui = True
    theme_error = RPC_THEME_ERROR  # what pi answers behind the pi-acp adapter, which drives it over RPC

    def __init__(self, request: Request, send_update: Callable[[str, JsonObject], None]) -> None:
        self._request = request
        self._send_update = send_update
        self.session_id: str | None = None

    def bind(self, session_id: str) -> None:
        self.session_id = session_id

    async def confirm(self, title: str, message: str, timeout_ms: int | None = None,
                      signal: AbortSignal | None = None) -> bool:
        options = [{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                   {"optionId": "no", "name": "No", "kind": "reject_once"}]
        return await self._ask(title, message, options, timeout_ms, signal) == "yes"

    async def select(self, title: str, options: list[str], timeout_ms: int | None = None,
                     signal: AbortSignal | None = None) -> str | None:
        choices = [{"optionId": str(i), "name": label, "kind": "allow_once"} for i, label in enumerate(options)]
        chosen = await self._ask(title, None, choices, timeout_ms, signal)
        return options[int(chosen)] if chosen is not None and chosen.isdigit() and int(chosen) < len(options) else None

    async def input(self, title: str, placeholder: str | None = None, timeout_ms: int | None = None,
                    signal: AbortSignal | None = None) -> str | None:
        self._refused("input", title)
        return None

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        self._refused("editor", title)
        return None

    async def _ask(self, title: str, message: str | None, options: list[dict[str, Any]], timeout_ms: int | None,
                   signal: AbortSignal | None) -> str | None:
        """The chosen option id, or None (dismissed, timed out, aborted, no session or no client)."""
        if self.session_id is None or (signal is not None and signal.aborted):
            return None
        tool_call: JsonObject = {"toolCallId": f"ui-{uuid.uuid4()}", "title": title, "kind": "other",
                                     "status": "pending"}
        if message:
            tool_call["content"] = [{"type": "content", "content": {"type": "text", "text": message}}]
        ask = asyncio.ensure_future(self._request("session/request_permission",
                                                  {"sessionId": self.session_id, "toolCall": tool_call,
                                                   "options": options}))
        waits: set[asyncio.Future[object]] = {ask}
        if signal is not None:
            waits.add(asyncio.ensure_future(signal.wait()))
        try:
            await asyncio.wait(waits, timeout=timeout_ms / 1000 if timeout_ms else None,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                if waiting is not ask:
                    waiting.cancel()
        if not ask.done():
            ask.cancel()
            return None
        try:
            outcome = (ask.result() or {}).get("outcome") or {}
        except (RpcError, ConnectionClosed, AttributeError):
            return None
        chosen = outcome.get("optionId") if outcome.get("outcome") == "selected" else None
        return chosen if isinstance(chosen, str) else None

    def _refused(self, method: str, title: str) -> None:
        print(f"pi: extension {method} dialog {title!r} has no ACP equivalent; answered as dismissed",
              file=sys.stderr)

    # ------------------------------------------------------------ fire and forget

    def notify(self, message: str, notify_type: str | None = None) -> None:
        print(f"pi: [{notify_type or 'info'}] {message}", file=sys.stderr)

    def set_title(self, title: str) -> None:
        if self.session_id is not None:
            self._send_update(self.session_id, {"sessionUpdate": "session_info_update", "title": title})

    def set_status(self, key: str, text: str | None = None) -> None:
        """No status bar in ACP."""

    def set_widget(self, key: str, lines: list[str] | None = None, placement: str | None = None) -> None:
        """No widgets in ACP."""

    def set_editor_text(self, text: str) -> None:
        """The client owns its input box; ACP cannot set it."""

    def paste_to_editor(self, text: str) -> None:
        """The client owns its input box; ACP cannot paste into it."""

    def get_editor_text(self) -> str:
        return ""
