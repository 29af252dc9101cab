"""The system prompt as named sections, and its replay/patch state in the transcript.

Sections are kept in their persisted form: ``preamble`` bare, every other section wrapped as
``<name>\\n...\\n</name>``. That is what system messages store, so replaying
a transcript and building the prompt afresh give directly comparable values, and rendering is a
plain join.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.ai.types import SystemMessage, Tool
from pi_coding_agent.coding.paths import project_root
from pi_coding_agent.coding.resources.skills import Skill, skills_index

PREAMBLE = (
    "You are a coding assistant working inside pi, a harness for coding agents. "
    "You help users examine files, run commands, and change code."
)
SECTION_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
FILE_TOOL_NAMES = ("grep", "find", "ls")
CLOSING_RULES = ("Be concise in your responses", "Show file paths clearly when working with files")
SKILL_READERS = ("read", "bash")

ToolEntry = tuple[str, str | None, list[str]]  # (name, prompt snippet or None, guideline bullets)


@dataclass
class PromptInputs:
    """Everything the system prompt's sections are built from."""

    tools: list[ToolEntry]  # the active tools declared to the model, in order
    custom_prompt: str | None
    append_texts: list[str]
    context_files: list[tuple[Path, str]]
    skills: list[Skill]
    cwd: Path
    extra_sections: dict[str, str] = field(default_factory=dict)  # extension sections: name -> content
    prompt_guidelines: list[str] = field(default_factory=list)  # extension rule bullets
    hidden_tools: list[str] = field(default_factory=list)  # active but not declared (reachable indirectly)


def build_sections(inputs: PromptInputs) -> dict[str, str]:
    """Ordered sections: preamble, tools, rules, docs, addendum, project_context, skills, cwd, custom.

    Raises ``ValueError`` for an extension section name that is not ``^[a-z][a-z0-9_-]*$`` or is
    ``preamble``.
    """
    for name in inputs.extra_sections:
        if not SECTION_NAME.match(name) or name == "preamble":
            raise ValueError(f"Invalid system prompt section name: {name}")
    names = [name for name, _, _ in inputs.tools]
    content: dict[str, str] = {}
    if inputs.custom_prompt:
        content["preamble"] = inputs.custom_prompt
    else:
        content["preamble"] = PREAMBLE
        content["tools"] = tools_section(inputs.tools)
        content["rules"] = rules_section(inputs.tools, inputs.prompt_guidelines)
        content["docs"] = docs_section()
    addendum = "\n\n".join(t for t in inputs.append_texts if t)
    if addendum:
        content["addendum"] = addendum
    if inputs.context_files:
        content["project_context"] = project_context_section(inputs.context_files)
    reader = skill_reader(names, inputs.hidden_tools)
    index = skills_index(inputs.skills, reader).strip() if reader else ""
    if index:
        content["skills"] = index
    content["cwd"] = str(inputs.cwd).replace("\\", "/")
    for name, text in inputs.extra_sections.items():
        if text:
            content[name] = text
    return {name: text if name == "preamble" else wrap_section(name, text) for name, text in content.items()}


def wrap_section(name: str, content: str) -> str:
    return f"<{name}>\n{content}\n</{name}>"


def render_system_prompt(sections: Mapping[str, str | None], content: str = "") -> str:
    """The prompt text the model receives: any forced ``content`` then the sections, blank-line joined."""
    parts = [content, *(text for text in sections.values() if text is not None)]
    return "\n\n".join(p for p in parts if p)


def tools_section(tools: Sequence[ToolEntry]) -> str:
    lines = [f"- {name}: {snippet}" for name, snippet, _ in tools if snippet]
    listing = "\n".join(lines) if lines else "(none)"
    return f"{listing}\n\nAdditional tools may be available."


def rules_section(tools: Sequence[ToolEntry], prompt_guidelines: Sequence[str]) -> str:
    """Bullets: the shell hint, each tool's guidelines, extension guidelines, two closing rules."""
    names = {name for name, _, _ in tools}
    rules: list[str] = []
    shell_hint = _shell_hint("bash" in names, "powershell" in names)
    if shell_hint and not names & set(FILE_TOOL_NAMES):
        rules.append(shell_hint)
    for _, _, guidelines in tools:
        rules += guidelines
    rules += [*prompt_guidelines, *CLOSING_RULES]
    unique: list[str] = []
    for rule in (r.strip() for r in rules):
        if rule and rule not in unique:
            unique.append(rule)
    return "\n".join(f"- {rule}" for rule in unique)


def _shell_hint(bash: bool, powershell: bool) -> str | None:
    if bash and powershell:
        return "Use bash or PowerShell for file operations like listing, searching, and finding files"
    if powershell:
        return "Use PowerShell for file operations like listing, searching, and finding files"
    return "Use bash for file operations like ls, rg, find" if bash else None


def docs_section() -> str:
    """Where this implementation's own documentation lives, for questions about the harness itself."""
    root = project_root()
    return "\n".join([
        "Harness documentation (consult it only when the user asks about pi itself: its settings, "
        "skills, prompt templates, extensions, sessions or RPC protocol):",
        f"- Overview: {root / 'README.md'}",
        f"- Documentation directory: {root / 'docs'}",
        f"- Examples: {root / 'examples'} (extensions and RPC clients)",
        "- Resolve docs/... and examples/... against the paths above, never against the working directory",
        "- Read the relevant documents in full before changing harness configuration or writing extensions.",
    ])


def project_context_section(files: Sequence[tuple[Path, str]]) -> str:
    blocks = [f'<project_instructions path="{path}">\n{text}\n</project_instructions>' for path, text in files]
    return "\n\n".join(["Project-specific instructions and guidelines:", *blocks])


def skill_reader(declared: Sequence[str], hidden: Sequence[str]) -> str | None:
    """How the model can load skill files: ``read``, ``bash``, ``indirect`` (hidden reader) or None."""
    for reader in SKILL_READERS:
        if reader in declared:
            return reader
    return "indirect" if any(r in hidden for r in SKILL_READERS) else None


# ---------------------------------------------------------------------- transcript state


def now_ms() -> int:
    return int(time.time() * 1000)


class SystemState:
    """The prompt sections and declared tools after replaying a transcript's system messages."""

    def __init__(self) -> None:
        self.content = ""  # forced (opaque) prompt text, if any message carried one
        self.sections: dict[str, str] = {}
        self.tools: dict[str, Tool] = {}  # name -> declaration, in declaration order

    @classmethod
    def replay(cls, messages: Sequence[AgentMessage]) -> SystemState:
        state = cls()
        for message in messages:
            if message["role"] == "system":
                state.apply(message)
        return state

    def apply(self, message: SystemMessage) -> None:
        """Fold one system message in: content appends, sections patch by name, tools remove then add."""
        text = message.get("content") or ""
        if isinstance(text, str) and text:
            self.content = f"{self.content}\n\n{text}" if self.content else text
        for name, value in (message.get("sections") or {}).items():
            if value is None:
                self.sections.pop(name, None)
            else:
                self.sections[name] = value
        for removed in message.get("toolsRemoved") or []:
            self.tools.pop(removed["name"], None)
        for tool in message.get("toolsAdded") or []:
            self.tools[tool["name"]] = tool

    def render(self) -> str:
        return render_system_prompt(self.sections, self.content)

    def patch_to(self, sections: Mapping[str, str], tools: Sequence[Tool]) -> SystemMessage | None:
        """The system message that turns this state into (sections, tools), or None if nothing changed.

        Against an empty state it is the full message. A changed tool declaration is a removal plus
        an addition. The state itself is not modified: ``apply`` the message once it is appended.
        """
        patch: dict[str, str | None] = {n: t for n, t in sections.items() if self.sections.get(n) != t}
        patch.update({n: None for n in self.sections if n not in sections})
        wanted = {t["name"]: t for t in tools}
        added = [t for name, t in wanted.items() if self.tools.get(name) != t]
        removed = [{"name": n} for n, t in self.tools.items() if wanted.get(n) != t]
        if not patch and not added and not removed:
            return None
        message = cast(SystemMessage, {"role": "system", "content": ""})  # built key by key in pi's order
        if patch:
            message["sections"] = patch
        message["timestamp"] = now_ms()  # before the tool fields, the key order pi writes
        if added:
            message["toolsAdded"] = added
        if removed:
            message["toolsRemoved"] = removed
        return message
