"""Later system messages sent where they stand, for models whose ``compat`` says they take them.

pi folds every system message of the transcript into the leading prompt unless the model's
``compat.supportsMidConvoSystemMessages`` is true; then (for the OpenAI Chat Completions and
Responses APIs and Anthropic's Messages API) the first system message is the prompt and each
later one is sent in place, its text followed by its section changes framed by name
(``Updated system prompt section "tools":`` and the section, or ``Removed system prompt section "x".``). Tool changes stay on the messages
(``toolsAdded``/``toolsRemoved``) and the context's ``tools`` are then the leading prompt's: each
adapter declares the changes as its API can (``ai/tool_changes.py``), a message without text
sending nothing else.
"""

from __future__ import annotations

from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.ai.types import Model, SystemMessage, Tool
from pi_coding_agent.coding.resources.system_prompt import render_system_prompt

# APIs whose adapters send a system message where it stands in the conversation
IN_PLACE_APIS = frozenset({"openai-completions", "openai-responses", "azure-openai-responses",
                           "openai-codex-responses", "anthropic-messages"})
TOOL_FIELDS = ("toolsAdded", "toolsRemoved")


def keeps_system_messages(model: Model) -> bool:
    """Whether later system messages go to this model in place instead of into the leading prompt."""
    return model["api"] in IN_PLACE_APIS and bool((model.get("compat") or {}).get("supportsMidConvoSystemMessages"))


def update_text(message: SystemMessage) -> str:
    """A later system message as the model reads it (pi's framing of section changes)."""
    parts = [text] if isinstance(text := message.get("content") or "", str) and text else []
    for name, value in (message.get("sections") or {}).items():
        parts.append(f'Removed system prompt section "{name}".' if value is None
                     else f'Updated system prompt section "{name}":\n\n{value}')
    return "\n\n".join(parts)


def split_transcript(messages: list[AgentMessage]) -> tuple[str, list[AgentMessage]]:
    """The leading system message as the prompt, and the rest with later system messages rendered
    in place (empty ones dropped)."""
    first = messages[0] if messages else None
    if first is None or first["role"] != "system":
        return "", [m for m in messages if m["role"] != "system" or update_text(m)]
    prompt = render_system_prompt(first.get("sections") or {}, first.get("content") or "")
    rest: list[AgentMessage] = []
    for message in messages[1:]:
        if message["role"] != "system":
            rest.append(message)
            continue
        text = update_text(message)
        if not text and not any(message.get(key) for key in TOOL_FIELDS):
            continue
        rendered: SystemMessage = {"role": "system", "content": text, "timestamp": message.get("timestamp", 0)}
        if tools_added := message.get("toolsAdded"):
            rendered["toolsAdded"] = tools_added
        if tools_removed := message.get("toolsRemoved"):
            rendered["toolsRemoved"] = tools_removed
        rest.append(rendered)
    return prompt, rest


def leading_tools(messages: list[AgentMessage]) -> list[Tool] | None:
    """The leading system message's tools when a later one changes them (else None: no changes)."""
    if not any(m["role"] == "system" and any(m.get(k) for k in TOOL_FIELDS) for m in messages[1:]):
        return None
    first = messages[0] if messages else None
    return list(first.get("toolsAdded") or []) if first is not None and first["role"] == "system" else []
