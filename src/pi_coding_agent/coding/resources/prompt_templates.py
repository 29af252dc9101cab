"""Prompt templates: ``<name>.md`` files that ``/<name> args`` expands into a prompt."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.resources import resource_files as rf
from pi_coding_agent.coding.resources import resource_paths as rp
from pi_coding_agent.coding.resources.frontmatter import parse_frontmatter
from pi_coding_agent.coding.resources.settings import SettingsPath

DESCRIPTION_FALLBACK_LENGTH = 60


@dataclass
class PromptTemplate:
    """A prompt template file: ``/name args`` expands to its body."""

    name: str
    description: str
    argument_hint: str | None
    body: str
    path: Path
    source: str = "local"  # sourceInfo.source: "auto" | "local"
    scope: str = "temporary"  # sourceInfo.scope: "user" | "project" | "temporary"
    origin: str = "top-level"  # sourceInfo.origin: "package" for a package's file
    source_base_dir: Path | None = None  # sourceInfo.baseDir

    def source_info(self) -> JsonObject:
        """The ``sourceInfo`` object of get_commands."""
        return rf.source_info(self.path, self.source, self.scope, self.source_base_dir, self.origin)


def load_prompt_templates(agent_dir: Path, cwd: Path, trusted: bool, extra_paths: Sequence[str],
                          settings_paths: Sequence[SettingsPath | str],
                          include_defaults: bool = True) -> list[PromptTemplate]:
    """Templates in precedence order, first of a name wins. ``include_defaults=False`` is
    ``--no-prompt-templates``: only the ``--prompt-template`` paths load."""
    return read_templates(rf.template_candidates(agent_dir, cwd, trusted, extra_paths, settings_paths,
                                                 include_defaults))


def read_templates(candidates: Sequence[rp.ResourceFile]) -> list[PromptTemplate]:
    """The templates of ``candidates`` (``resource_files.template_candidates``), first of a name wins."""
    templates: dict[str, PromptTemplate] = {}
    for item in rp.dedupe_by_real_path(candidates):
        template = read_template(item)
        if template is not None and template.name not in templates:
            templates[template.name] = template
    return list(templates.values())


def read_template(item: rp.ResourceFile) -> PromptTemplate | None:
    """Parse one template file; None when it cannot be read or its frontmatter is broken."""
    try:
        meta, body = parse_frontmatter(item.path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    description = meta.get("description") if isinstance(meta.get("description"), str) else ""
    if not description:
        first = next((line for line in body.split("\n") if line.strip()), "")
        description = first[:DESCRIPTION_FALLBACK_LENGTH] + ("..." if len(first) > DESCRIPTION_FALLBACK_LENGTH else "")
    hint = meta.get("argument-hint")
    return PromptTemplate(
        name=item.path.name.removesuffix(".md"), description=description,
        argument_hint=hint if isinstance(hint, str) and hint else None, body=body, path=item.path,
        source=item.source, scope=item.scope, source_base_dir=item.base_dir, origin=item.origin,
    )


# ---------------------------------------------------------------------- expansion

@functools.cache
def _command() -> re.Pattern[str]:
    """Compiled with the first prompt (like ``_placeholder``), not at start-up."""
    return re.compile(r"^/(\S+)(?:\s+(.*))?$", re.DOTALL)


@functools.cache
def _placeholder() -> re.Pattern[str]:
    return re.compile(r"\$\{(\d+|ARGUMENTS|@):-([^}]*)\}|\$\{@:(\d+)(?::(\d+))?\}|\$(ARGUMENTS|@|\d+)")


def expand_prompt_template(text: str, templates: Sequence[PromptTemplate]) -> str:
    """``/<name> args`` -> the template body with arguments substituted; other text unchanged."""
    match = _command().match(text)
    if match is None:
        return text
    template = next((t for t in templates if t.name == match.group(1)), None)
    if template is None:
        return text
    return substitute_args(template.body, parse_command_args(match.group(2) or ""))


def parse_command_args(text: str) -> list[str]:
    """Shell-like split. Quotes open only at the start of an argument (so ``don't`` stays one word),
    ``\\"`` inside a quote is a literal quote, and an unclosed quote is literal text."""
    args: list[str] = []
    current = ""
    has_token = False
    quote: str | None = None
    quote_start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if quote is not None:
            if ch == "\\" and text[i + 1 : i + 2] == quote:
                current += quote
                i += 1
            elif ch == quote:
                quote = None
            else:
                current += ch
        elif ch in "\"'" and not has_token:
            quote, quote_start, has_token = ch, i, True
        elif ch.isspace():
            if has_token:
                args.append(current)
                current, has_token = "", False
        else:
            current += ch
            has_token = True
        if quote is not None and i == len(text) - 1:
            # Unclosed: the quote character becomes text and parsing resumes right after it.
            quote, current, i = None, text[quote_start], quote_start
        i += 1
    if has_token:
        args.append(current)
    return args


def substitute_args(body: str, args: list[str]) -> str:
    """Replace ``$1``, ``$@``/``$ARGUMENTS``, ``${N:-default}``, ``${@:-default}``, ``${@:N}``,
    ``${@:N:L}`` in one pass (values are never substituted again)."""
    joined = " ".join(args)

    def positional(number: str) -> str:
        index = int(number) - 1
        return args[index] if 0 <= index < len(args) else ""

    def replace(m: re.Match[str]) -> str:
        default_target, default, start, length, simple = m.groups()
        if default_target is not None:
            value = joined if default_target in ("@", "ARGUMENTS") else positional(default_target)
            return value or default
        if start is not None:
            first = max(int(start) - 1, 0)
            end = first + int(length) if length is not None else None
            return " ".join(args[first:end])
        if simple in ("@", "ARGUMENTS"):
            return joined
        return positional(simple)

    return _placeholder().sub(replace, body)
