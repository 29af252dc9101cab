"""Tool changes along a transcript, and where a request declares them.

A context holds the tools of its leading prompt in ``tools``; a later system message may carry
``toolsAdded``/``toolsRemoved`` (models whose ``compat.supportsMidConvoSystemMessages`` keeps those
messages in place). An API expresses them in one of pi's three ways:

* ``"none"``: one top-level list, the tools as they stand after every change;
* ``"additions"``: later additions declared where they happened; since a removal or a redefinition
  cannot be declared that way, the top-level list is the tool state right after the last such change
  and only additions after it stay in place;
* ``"changes"``: no top-level list; every system message, the leading one first, declares its
  additions in place and removals are announced as text.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from pi_coding_agent.ai.types import Context, Tool


class ToolChanges(TypedDict):
    """The part of a system message that declares and removes tools."""

    role: Literal["system"]
    toolsAdded: NotRequired[list[Tool]]
    toolsRemoved: NotRequired[list[dict[str, str]]]


def system_messages(context: Context) -> list[ToolChanges]:
    """The leading prompt (as a message holding ``tools``) followed by every later system message."""
    head: ToolChanges = {"role": "system", "toolsAdded": context.get("tools") or []}
    return [head, *(m for m in context["messages"] if m["role"] == "system")]


def current_tools(messages: list[ToolChanges]) -> list[Tool]:
    """The tools after replaying each message's removals and then its additions, in order."""
    tools: dict[str, Tool] = {}
    for message in messages:
        for removed in message.get("toolsRemoved") or []:
            tools.pop(removed["name"], None)
        for tool in message.get("toolsAdded") or []:
            tools[tool["name"]] = tool
    return list(tools.values())


def declared_tools(context: Context) -> list[Tool]:
    """Every tool the transcript declares, removed ones too (their calls stay in it), each by its
    latest definition in first-declaration order."""
    tools: dict[str, Tool] = {}
    for message in system_messages(context):
        for tool in message.get("toolsAdded") or []:
            tools[tool["name"]] = tool
    return list(tools.values())


def _last_non_additive(messages: list[ToolChanges]) -> int:
    """Index of the last message that removes or declares again a tool (-1 if none).

    A name declared once counts as declared again even after its removal (some models ignore a
    tool that comes back after being removed).
    """
    declared: set[str] = set()
    last = -1
    for index, message in enumerate(messages):
        if message.get("toolsRemoved"):
            last = index
        for tool in message.get("toolsAdded") or []:
            if tool["name"] in declared:
                last = index
            declared.add(tool["name"])
    return last


def plan(context: Context, support: str) -> tuple[list[Tool], int]:
    """The top-level tools and how many system messages (the leading prompt first) they stand for;
    the messages after those declare their additions in place."""
    messages = system_messages(context)
    if support == "changes":
        return [], 0
    if support == "additions":
        folded = max(1, _last_non_additive(messages) + 1)
        return current_tools(messages[:folded]), folded
    return current_tools(messages), len(messages)
