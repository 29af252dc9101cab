"""``before_agent_start``'s ``systemPromptOptions``: what the prompt is built from, editable in place.

pi renders the system prompt from these options, so a handler that appends a guideline, a context
file or a section, or narrows ``selectedTools``, changes the prompt of that run (and later handlers
see the new ``systemPrompt``). The options are turned back into the prompt builder's inputs here;
unchanged options keep the prompt exactly as the session built it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent.coding.resources.skills import Skill
from pi_coding_agent.coding.resources.system_prompt import SKILL_READERS, PromptInputs, build_sections

if TYPE_CHECKING:
    from pi_coding_agent.coding.runtime import SessionRuntime


def sections_from_options(options: dict[str, Any], runtime: SessionRuntime) -> dict[str, str]:
    """The prompt sections ``options`` describe (MCP's own sections kept; the options' ``sections`` win)."""
    selected = [n for n in options.get("selectedTools") or [] if isinstance(n, str)]
    snippets, guidelines = options.get("toolSnippets") or {}, options.get("toolGuidelines") or {}
    skills = [_skill(s) for s in options.get("skills") or [] if isinstance(s, dict) and s.get("name")]
    readable = bool(set(selected) & set(SKILL_READERS))
    append = options.get("appendSystemPrompt")
    inputs = PromptInputs(
        tools=[(name, snippets.get(name), list(guidelines.get(name) or [])) for name in selected],
        custom_prompt=options.get("customPrompt"),
        append_texts=[append] if isinstance(append, str) and append else [],
        context_files=[(Path(f["path"]), str(f.get("content", ""))) for f in options.get("contextFiles") or []
                       if isinstance(f, dict) and f.get("path")],
        skills=[s for s in skills if not s.disable_model_invocation] if readable else [],
        cwd=Path(options.get("cwd") or runtime.cwd),
        extra_sections={**(runtime.mcp.prompt_sections() if runtime.mcp is not None else {}),
                        **(options.get("sections") or {})},
        prompt_guidelines=[g for g in options.get("promptGuidelines") or [] if isinstance(g, str)],
        hidden_tools=[n for n in options.get("hiddenTools") or [] if isinstance(n, str)],
    )
    return build_sections(inputs)


def _skill(entry: dict[str, Any]) -> Skill:
    path = Path(entry.get("filePath") or entry["name"])
    return Skill(name=entry["name"], description=str(entry.get("description", "")), path=path,
                 base_dir=Path(entry.get("baseDir") or path.parent),
                 disable_model_invocation=bool(entry.get("disableModelInvocation")))
