"""One open ACP session: a pi session plus its update stream, tool policy and client-side tools.

A prompt turn is one session-level run of pi: ``session/prompt`` is answered when the session
emits ``agent_settled``, with the stop reason read from the last assistant message. A prompt sent
while a turn runs is queued as a follow-up and answered at the same settle.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.events import AgentEvent
from pi_coding_agent.coding.modes.acp.client_tools import ClientFiles, ClientTerminals
from pi_coding_agent.coding.modes.acp.config import config_options, initial_mode
from pi_coding_agent.coding.modes.acp.jsonrpc import AUTH_REQUIRED, INTERNAL_ERROR, JsonRpcPeer, RpcError
from pi_coding_agent.coding.modes.acp.permissions import PermissionGate
from pi_coding_agent.coding.modes.acp.port import SessionHost, SessionPort
from pi_coding_agent.coding.modes.acp.prompt import to_pi_prompt
from pi_coding_agent.coding.modes.acp.updates import HANDLED, UpdateStream, branch_messages, replay

NO_KEY_PREFIX = "No API key found"


class ClientCapabilities:
    """The parts of ``clientCapabilities`` that change how tools work."""

    def __init__(self, raw: object) -> None:
        caps = raw if isinstance(raw, dict) else {}
        fs: JsonObject = caps["fs"] if isinstance(caps.get("fs"), dict) else {}
        self.files = fs.get("readTextFile") is True and fs.get("writeTextFile") is True
        self.terminal = caps.get("terminal") is True


class LiveSession:
    def __init__(self, session_id: str, session: SessionPort, cwd: Path, peer: JsonRpcPeer, host: SessionHost,
                 caps: ClientCapabilities) -> None:
        self.session_id = session_id
        self.session = session
        self.cwd = str(cwd)
        self._peer = peer
        self.mode = initial_mode(host.default_mode(session))
        terminals = ClientTerminals(peer.request, session_id, self.send) if caps.terminal else None
        files = ClientFiles(peer.request, session_id) if caps.files else None
        host.install_tool_backends(session, files, terminals)
        self.stream = UpdateStream(self.send, self.cwd, terminals.terminal_of if terminals else lambda _: None,
                                   self.send_config)
        self.gate = PermissionGate(session_id, self.cwd, self.mode,
                                   lambda params: peer.request("session/request_permission", params),
                                   self.stream.started)
        host.install_tool_gate(session, self.gate)
        self._waiters: list[asyncio.Future[bool]] = []
        self._closing = False
        self._unsubscribe = [session.subscribe(self.stream.on_message_update, ("message_update",)),
                             session.subscribe(self._on_event, (*HANDLED, "agent_settled"))]

    # ------------------------------------------------------------------ notifications

    def send(self, update: JsonObject) -> None:
        self._peer.notify("session/update", {"sessionId": self.session_id, "update": update})

    def send_config(self) -> None:
        self.send({"sessionUpdate": "config_option_update", "configOptions": self.config_options()})

    def config_options(self) -> list[JsonObject]:
        return config_options(self.session, self.mode)

    def set_mode(self, mode: str) -> None:
        self.mode = self.gate.mode = mode

    def send_commands(self) -> None:
        commands = []
        for command in self.session.get_commands():
            item: JsonObject = {"name": command["name"],
                                    "description": command.get("description") or f"{command.get('source')} command"}
            if command.get("source") != "skill":
                item["input"] = {"hint": "arguments"}
            commands.append(item)
        self.send({"sessionUpdate": "available_commands_update", "availableCommands": commands})

    def replay(self) -> None:
        saved = self.session.get_entries()
        replay(branch_messages(saved["entries"], saved["leafId"]), self.cwd, self.send)

    def _on_event(self, event: AgentEvent) -> None:
        self.stream.on_event(event)
        if event["type"] == "agent_settled":
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(bool(event.get("aborted")))

    # ------------------------------------------------------------------ turns

    async def prompt(self, blocks: object) -> JsonObject:
        text, images = to_pi_prompt(blocks)
        settled: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiters.append(settled)  # before prompting: the settle must not slip past us
        try:
            result = await self.session.prompt(text, images or None, "followUp" if self.session.is_streaming else None)
        except Exception as err:
            self._waiters.remove(settled)
            message = str(err) or type(err).__name__
            raise RpcError(AUTH_REQUIRED if message.startswith(NO_KEY_PREFIX) else INTERNAL_ERROR, message) from None
        if result.get("disposition") == "handled":  # an extension command ran without a model turn
            self._waiters.remove(settled)
            return {"stopReason": "end_turn"}
        try:
            aborted = await settled
        except asyncio.CancelledError:  # $/cancel_request for the prompt: cancel the turn itself
            await self.session.abort()
            raise
        if not self._closing:
            self._send_usage()
        return {"stopReason": self._stop_reason(aborted)}

    def _stop_reason(self, aborted: bool) -> str:
        if aborted:
            return "cancelled"
        last = next((m for m in reversed(self.session.get_messages()) if m.get("role") == "assistant"), None)
        reason = last.get("stopReason") if last else None
        if reason == "aborted":
            return "cancelled"
        if reason == "length":
            return "max_tokens"
        if reason == "error":
            assert last is not None
            raise RpcError(INTERNAL_ERROR, str(last.get("errorMessage") or "The model request failed"))
        return "end_turn"

    def _send_usage(self) -> None:
        stats = self.session.get_session_stats()
        usage = stats.get("contextUsage") or {}
        if not isinstance(usage.get("tokens"), int | float) or not usage.get("contextWindow"):
            return
        update: JsonObject = {"sessionUpdate": "usage_update", "used": int(usage["tokens"]),
                                  "size": int(usage["contextWindow"])}
        if isinstance(stats.get("cost"), int | float):
            update["cost"] = {"amount": stats["cost"], "currency": "USD"}
        self.send(update)

    async def cancel(self) -> None:
        if self.session.is_streaming:
            await self.session.abort()

    async def close(self) -> None:
        """Shut the pi session down (a running turn is aborted and answered ``cancelled``)."""
        self._closing = True
        try:
            await self.session.shutdown()
        finally:
            for unsubscribe in self._unsubscribe:
                unsubscribe()
            for waiter in self._waiters:
                if not waiter.done():
                    waiter.set_result(True)
