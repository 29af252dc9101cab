"""Turning the coding agent's own message roles into the user messages an LLM understands."""

from __future__ import annotations

from typing import cast

from pi_coding_agent.agent.events import BashExecutionMessage
from pi_coding_agent.ai.types import Message as LlmMessage
from pi_coding_agent.ai.types import UserMessage
from pi_coding_agent.coding.events import Message

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"

_PASS_THROUGH = frozenset({"system", "user", "assistant", "toolResult"})


def bash_execution_to_text(message: BashExecutionMessage) -> str:
    """How a user-run shell command reads to the model."""
    output = message.get("output")
    text = f"Ran `{message.get('command')}`\n" + (f"```\n{output}\n```" if output else "(no output)")
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0:
        text += f"\n\nCommand exited with code {exit_code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message.get('fullOutputPath')}]"
    return text


def _user_text(text: str, timestamp: int) -> UserMessage:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def _convert(message: Message) -> LlmMessage | None:
    if message["role"] in _PASS_THROUGH:  # nearly every message: user, assistant, toolResult
        return cast(LlmMessage, message)  # the roles an LLM message has
    if message["role"] == "bashExecution":
        if message.get("excludeFromContext"):
            return None
        return _user_text(bash_execution_to_text(message), message["timestamp"])
    if message["role"] == "custom":
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        return {"role": "user", "content": content, "timestamp": message["timestamp"]}
    if message["role"] == "branchSummary":
        text = BRANCH_SUMMARY_PREFIX + str(message.get("summary")) + BRANCH_SUMMARY_SUFFIX
        return _user_text(text, message["timestamp"])
    if message["role"] == "compactionSummary":
        text = COMPACTION_SUMMARY_PREFIX + str(message.get("summary")) + COMPACTION_SUMMARY_SUFFIX
        return _user_text(text, message["timestamp"])
    return None  # a role this version does not know: dropped


def convert_to_llm(messages: list[Message]) -> list[LlmMessage]:
    """Session messages -> LLM messages (custom roles become user text; unknown roles are dropped)."""
    converted = []
    for message in messages:
        result = _convert(message)
        if result is not None:
            converted.append(result)
    return converted
