"""What a prompt's text meets before it becomes a prompt: extension commands, then ``input`` handlers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.errors import SessionError
from pi_coding_agent.coding.extensions.context import CommandContext
from pi_coding_agent.coding.extensions.dispatch import Dispatcher

if TYPE_CHECKING:
    from pi_coding_agent.coding.extensions.registry import Command, Extension

COMMAND_NOT_QUEUEABLE = (
    'Extension command "/{name}" cannot be queued. Use prompt() or execute the command when not streaming.'
)

# text, images, transformed, handled
_Input = tuple[str, list[JsonObject] | None, bool, bool]


class Commands(Dispatcher):
    """Extension commands by invocation name, and the ``input`` transform."""

    async def handle_input(
        self, text: str, images: list[JsonObject] | None, streaming_behavior: str | None, allow_commands: bool,
    ) -> JsonObject | None:
        """An extension command, else ``input`` handlers. Returns a prompt disposition (handled),
        ``{"action": "transform", "text", "images"}``, or None to go on unchanged."""
        if text.startswith("/"):
            name, _, args = text[1:].partition(" ")
            command = self.commands().get(name)
            if command is not None:
                if not allow_commands:
                    raise SessionError(COMMAND_NOT_QUEUEABLE.format(name=name))
                await self.run_command(name, command, args.strip())
                return {"disposition": "handled"}
        if not self.has_handlers("input"):
            return None
        return await self._input_event(text, images, streaming_behavior)

    async def _input_event(self, text: str, images: list[JsonObject] | None,
                           streaming_behavior: str | None) -> JsonObject | None:
        def event(state: _Input) -> JsonObject:
            out: JsonObject = {"type": "input", "text": state[0]}
            if state[1]:
                out["images"] = state[1]
            out["source"] = "rpc"
            if streaming_behavior is not None:
                out["streamingBehavior"] = streaming_behavior
            return out

        def step(state: _Input, result: Any, _: Extension) -> _Input:
            action = result.get("action") if isinstance(result, dict) else None
            if action == "handled":
                return (*state[:3], True)
            if action == "transform" and isinstance(result.get("text"), str):
                return result["text"], result.get("images", state[1]), True, False
            return state

        text, images, transformed, handled = await self.chain(
            "input", (text, images, False, False), event, step, lambda state: state[3])
        if handled:
            return {"disposition": "handled"}
        return {"action": "transform", "text": text, "images": images} if transformed else None

    def commands(self) -> dict[str, tuple[Extension, Command]]:
        """Invocation names: a name several extensions register becomes ``name:1``, ``name:2``... everywhere
        (skipping a suffixed name some extension already uses)."""
        registered = [(ext, cmd) for ext in self.extensions for cmd in ext.commands.values()]
        counts: dict[str, int] = {}
        for _, cmd in registered:
            counts[cmd.name] = counts.get(cmd.name, 0) + 1
        seen: dict[str, int] = {}
        out: dict[str, tuple[Extension, Command]] = {}
        for ext, cmd in registered:
            occurrence = seen[cmd.name] = seen.get(cmd.name, 0) + 1
            name = f"{cmd.name}:{occurrence}" if counts[cmd.name] > 1 else cmd.name
            while name in out:
                occurrence += 1
                name = f"{cmd.name}:{occurrence}"
            out[name] = (ext, cmd)
        return out

    async def run_command(self, name: str, entry: tuple[Extension, Command], args: str) -> None:
        _, command = entry
        try:
            await maybe_await(command.handler(args, CommandContext(self.handle, self.binding)))
        except Exception as exc:
            self.report_error(f"command:{name}", "command", exc)

    def list_commands(self) -> list[JsonObject]:
        items = []
        for name, (ext, command) in self.commands().items():
            item: JsonObject = {"name": name}
            if command.description:
                item["description"] = command.description
            item["source"] = "extension"
            item["sourceInfo"] = ext.source.source_info()
            items.append(item)
        return items
