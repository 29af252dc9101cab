"""A reopened session's messages (and the ``custom`` entries among them, which only an extension's
entry renderer draws) as the parts the live transcript would have drawn.

Restored messages cannot change any more (but for Ctrl+O / Ctrl+T): a chunk of them becomes one
transcript entry (``entries.HistoryEntry``) drawing these parts, each a renderable of
``blocks.py`` and the background it sits on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.text import Text

from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.coding.modes.interactive import blocks
from pi_coding_agent.coding.modes.interactive.blocks import Palette
from pi_coding_agent.coding.session.entries import Entry

if TYPE_CHECKING:
    from pi_coding_agent.coding.agent_session import AgentSession

Item = AgentMessage | Entry  # a message, or a ``custom`` entry (it has a ``type``, messages have a ``role``)
CustomRenderer = Callable[[Mapping[str, Any], bool], RenderableType | None]
Part = tuple[RenderableType, str | None]  # an entry's renderable and its background colour (None: none)


def _tool(name: str, args: dict[str, Any], result: dict[str, Any] | None, is_error: bool, expanded: bool,
          palette: Palette, drawing: blocks.ToolDrawing | None = None) -> Part:
    role = "toolPendingBg" if result is None else "toolErrorBg" if is_error else "toolSuccessBg"
    return blocks.tool_renderable(name, args, result, is_error, expanded, palette, drawing=drawing), palette.get(role)


def _assistant(message: Mapping[str, Any], results: Mapping[Any, Any], hide_thinking: bool,
               expanded: bool, palette: Palette, drawing: blocks.ToolDrawing | None) -> list[Part]:
    out: list[Part] = []
    for part in message.get("content") or []:
        kind = part.get("type")
        if kind == "text" and part.get("text", "").strip():
            out.append((blocks.markdown(part["text"], palette), None))
        elif kind == "thinking" and part.get("thinking", "").strip():
            shown = "Thinking… (ctrl+t to show)" if hide_thinking else part["thinking"].strip()
            out.append((Text(shown, style=f"italic {palette.get('thinkingText', '')}"), None))
        elif kind == "toolCall":
            result = results.get(part.get("id", ""))
            is_error = bool(result and result.get("isError"))
            out.append(_tool(part.get("name", ""), part.get("arguments") or {}, result, is_error, expanded, palette,
                             drawing))
    reason = message.get("stopReason")
    if reason == "aborted":
        out.append((blocks.notice("Operation aborted", "error", palette), None))
    elif reason == "error":
        out.append((blocks.notice(f"Error: {message.get('errorMessage') or 'unknown error'}", "error",
                                  palette), None))
    return out


def items(session: AgentSession) -> list[Item]:
    """The session's messages with the ``custom`` entries of its branch where they were appended (none
    when the messages are not the branch's: the agent's were replaced since)."""
    messages: list[Item] = list(session.get_messages())
    context = session.sm.build_context()
    if len(context.messages) != len(messages):
        return messages
    out: list[Item] = []
    shown = 0
    for position, entry in context.custom_entries:
        out += messages[shown:position]
        shown = max(shown, position)
        out.append(entry)
    return out + messages[shown:]


def parts(messages: Sequence[Item], palette: Palette, hide_thinking: bool,
          expanded: bool, render_custom: CustomRenderer | None = None,
          render_tool: blocks.ToolDrawing | None = None) -> list[Part]:
    """Every message as the live transcript would have shown it (``render_custom``, ``render_tool``:
    the extensions' drawings of custom messages and tool calls)."""
    results = {m.get("toolCallId", ""): m for m in messages if m.get("role") == "toolResult"}
    user_style = f"{palette.get('userMessageText', '')} on {palette.get('userMessageBg', '')}".strip()
    out: list[Part] = []
    for message in messages:
        role = message.get("role")
        if role is None and message.get("type") == "custom":  # an entry: drawn only by its renderer
            drawn = render_custom(message, expanded) if render_custom is not None else None
            out += [] if drawn is None else [(drawn, None)]
        elif role == "user":
            out.append((Text(blocks.message_text(message), style=user_style), palette.get("userMessageBg")))
        elif role == "assistant":
            out += _assistant(message, results, hide_thinking, expanded, palette, render_tool)
        elif role == "bashExecution":
            code = message.get("exitCode")
            output = str(message.get("output", "")) + ("" if code in (0, None) else f"\nexit code {code}")
            out.append(_tool("bash", {"command": message.get("command", "")},
                             {"content": [{"type": "text", "text": output}]}, code not in (0, None), expanded, palette))
        elif role in ("compactionSummary", "branchSummary"):
            out.append((blocks.notice(f"[{role}] " + str(message.get("summary", ""))[:500],
                                      "customMessageText", palette), None))
        elif role == "custom" and message.get("display", True):
            drawn = render_custom(message, expanded) if render_custom is not None else None
            if drawn is not None:
                out.append((drawn, None))
                continue
            out.append((blocks.notice(blocks.message_text(message) or str(message.get("customType", "")),
                                      "customMessageText", palette), None))
    return out

