"""Extension UI over RPC: the ``ExtensionUI`` (``extensions/ui.py``) of ``pi --mode rpc``.

``RpcExtensionUI`` turns ``ctx.ui`` calls into ``extension_ui_request`` records: dialogs wait for the ``extension_ui_response`` carrying the same id, fire-and-forget methods
just write. Headless modes use ``NoUI`` from the same protocol's module.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.ui import RPC_THEME_ERROR, HeadlessThemes

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal

Send = Callable[[dict[str, Any]], None]
Parse = Callable[[JsonObject], object]


def _value(response: JsonObject) -> str | None:
    if response.get("cancelled"):
        return None
    value = response.get("value")
    return value if isinstance(value, str) else None


def _confirmed(response: JsonObject) -> bool:
    return not response.get("cancelled") and response.get("confirmed") is True


class RpcExtensionUI(HeadlessThemes):
    """ctx.ui over the RPC stream; ``resolve`` is fed every ``extension_ui_response`` record."""

    has_ui = True
    theme_error = RPC_THEME_ERROR

    def __init__(self, send: Send) -> None:
        self._send = send
        self._pending: dict[str, tuple[asyncio.Future[object], Parse]] = {}

    # ------------------------------------------------------------------ dialogs

    async def select(self, title: str, options: list[str], timeout_ms: int | None = None,
                     signal: AbortSignal | None = None) -> str | None:
        request = {"method": "select", "title": title, "options": options, "timeout": timeout_ms}
        result: str | None = await self._dialog(request, None, _value, timeout_ms, signal)
        return result

    async def confirm(self, title: str, message: str, timeout_ms: int | None = None,
                      signal: AbortSignal | None = None) -> bool:
        request = {"method": "confirm", "title": title, "message": message, "timeout": timeout_ms}
        result: bool = await self._dialog(request, False, _confirmed, timeout_ms, signal)
        return result

    async def input(self, title: str, placeholder: str | None = None, timeout_ms: int | None = None,
                    signal: AbortSignal | None = None) -> str | None:
        request = {"method": "input", "title": title, "placeholder": placeholder, "timeout": timeout_ms}
        result: str | None = await self._dialog(request, None, _value, timeout_ms, signal)
        return result

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        """No timeout: pi's editor dialog has none either."""
        result: str | None = await self._dialog({"method": "editor", "title": title, "prefill": prefill}, None, _value)
        return result

    def resolve(self, response: JsonObject) -> None:
        """Complete the dialog a client answered; unknown or expired ids are ignored silently."""
        request_id = response.get("id")
        entry = self._pending.pop(request_id, None) if isinstance(request_id, str) else None
        if entry is not None and not entry[0].done():
            future, parse = entry
            future.set_result(parse(response))

    async def _dialog(
        self, request: dict[str, Any], default: object, parse: Parse, timeout_ms: int | None = None,
        signal: AbortSignal | None = None,
    ) -> Any:
        """A fired ``signal`` (before or during the dialog) resolves it to ``default``, like a timeout."""
        if signal is not None and signal.aborted:
            return default  # nothing is asked
        request_id = str(uuid.uuid4())
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (future, parse)

        def dismiss() -> None:
            if not future.done():
                future.set_result(default)

        remove = signal.on_abort(dismiss) if signal is not None else None
        self._write(request_id, request)
        try:
            if timeout_ms:
                return await asyncio.wait_for(future, timeout_ms / 1000)
            return await future
        except TimeoutError:
            return default
        finally:
            self._pending.pop(request_id, None)
            if remove is not None:
                remove()

    # ------------------------------------------------------------ fire and forget

    def notify(self, message: str, notify_type: str | None = None) -> None:
        self._request({"method": "notify", "message": message, "notifyType": notify_type})

    def set_status(self, key: str, text: str | None = None) -> None:
        self._request({"method": "setStatus", "statusKey": key, "statusText": text})

    def set_widget(self, key: str, lines: list[str] | None = None, placement: str | None = None) -> None:
        self._request({"method": "setWidget", "widgetKey": key, "widgetLines": lines, "widgetPlacement": placement})

    def set_title(self, title: str) -> None:
        self._request({"method": "setTitle", "title": title})

    def set_editor_text(self, text: str) -> None:
        self._request({"method": "set_editor_text", "text": text})

    def paste_to_editor(self, text: str) -> None:
        """A client has no paste target, so pasting replaces the editor text as in pi."""
        self.set_editor_text(text)

    def get_editor_text(self) -> str:
        """The client owns the editor; a synchronous call cannot ask it."""
        return ""

    def _request(self, request: JsonObject) -> None:
        self._write(str(uuid.uuid4()), request)

    def _write(self, request_id: str, request: dict[str, Any]) -> None:
        record = {"type": "extension_ui_request", "id": request_id}
        record.update((key, value) for key, value in request.items() if value is not None)
        self._send(record)
