"""The built-in tools' declarations: what the model and the system prompt see of them, apart from their code.

Every request declares the active tools, but a run may call none of them: a one-shot answer then
loads no tool module (the four default tools with their helpers are about 18 M instructions).
``builtin.LazyTool`` answers these fields from here without loading its tool, and each tool class
takes them from here as it is defined (``BuiltinTool.__init_subclass__``).
"""

from __future__ import annotations

from typing import Any

from pi_coding_agent.ai.types import JsonObject


def string_param(description: str) -> JsonObject:
    return {"type": "string", "description": description}


def number_param(description: str) -> JsonObject:
    return {"type": "number", "description": description}


def object_schema(properties: JsonObject, required: list[str]) -> JsonObject:
    """A JSON schema object laid out as pi's TypeBox schemas serialise (``required`` omitted when empty)."""
    schema: JsonObject = {"type": "object"}
    if required:
        schema["required"] = required
    schema["properties"] = properties
    return schema


STRICT_PREFERRED: JsonObject = {"type": "json_schema", "strict": "prefer"}  # pi's declaration for its file/shell tools


DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024
GREP_MAX_LINE_LENGTH = 500
GREP_LIMIT, FIND_LIMIT, LS_LIMIT = 100, 1000, 500  # default ``limit`` of the listing tools

_EDIT_ITEM = object_schema(
    {
        "oldText": string_param(
            "Text to replace, copied exactly. It must occur once in the original file and must not overlap "
            "the oldText of any other edit in this call."
        ),
        "newText": string_param("The text that replaces oldText."),
    },
    ["oldText", "newText"],
)

# tool name -> its class attributes (``GUIDELINES`` becomes each instance's ``prompt_guidelines``);
# every field ``tool_declaration`` reads is given, so declaring a handle never loads its tool
DECLARATIONS: dict[str, dict[str, Any]] = {
    "read": {
        "label": "read",
        "description": (
            "Read a file's contents. Text files and images (jpg, png, gif, webp, bmp) are supported; images are "
            f"attached to the result. Text output stops after {DEFAULT_MAX_LINES} lines or "
            f"{DEFAULT_MAX_BYTES // 1024}KB, whichever comes first: use offset and limit on large files, and keep "
            "reading with a higher offset until you have what you need."
        ),
        "parameters": object_schema(
            {
                "path": string_param("File to read, relative to the working directory or absolute"),
                "offset": number_param("First line to read, counting from 1"),
                "limit": number_param("How many lines to read at most"),
            },
            ["path"],
        ),
        "prompt_snippet": "Read file contents",
        "constrained_sampling": STRICT_PREFERRED,
        "GUIDELINES": ("Use read to examine files instead of cat or sed.",),
    },
    "bash": {
        "label": "bash",
        "description": (
            f"Run a bash command in the current working directory and return its combined stdout and stderr. "
            f"Only the last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB of output are returned "
            f"(whichever limit comes first); when output is cut, the complete output is written to a temp file. "
            f"A timeout in seconds may be given."
        ),
        "parameters": object_schema(
            {
                "command": string_param("The bash command to run"),
                "timeout": number_param("Timeout in seconds (optional; no timeout by default)"),
            },
            ["command"],
        ),
        "prompt_snippet": "Execute bash commands (ls, grep, find, etc.)",
        "constrained_sampling": STRICT_PREFERRED,
        "GUIDELINES": ("You can inspect PI_* environment variables for current model and session details.",),
    },
    "edit": {
        "label": "edit",
        "description": (
            "Change one file by replacing exact text. Each edits[].oldText must match one unique region of the "
            "original file, and no two edits may overlap. Changes that touch the same block or neighbouring "
            "lines belong in a single edit; do not pad edits with long unchanged stretches to join distant changes."
        ),
        "parameters": object_schema(
            {
                "path": string_param("File to edit, relative to the working directory or absolute"),
                "edits": {
                    "type": "array",
                    "items": _EDIT_ITEM,
                    "description": (
                        "One or more replacements, each matched against the original file (not one after "
                        "another). No overlapping or nested edits: merge changes to the same or nearby lines "
                        "into one edit."
                    ),
                },
            },
            ["path", "edits"],
        ),
        "prompt_snippet": (
            "Make precise file edits with exact text replacement, including multiple disjoint edits in one call"
        ),
        "constrained_sampling": STRICT_PREFERRED,
        "GUIDELINES": (
            "Use edit for targeted changes. Batch changes to one file in a single call.",
            "Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and "
            "non-overlapping; merge nearby changes without including large unchanged regions.",
        ),
    },
    "write": {
        "label": "write",
        "description": (
            "Write content to a file: the file is created when missing and replaced when present. "
            "Missing parent directories are created."
        ),
        "parameters": object_schema(
            {
                "path": string_param("File to write, relative to the working directory or absolute"),
                "content": string_param("The complete new content of the file"),
            },
            ["path", "content"],
        ),
        "prompt_snippet": "Create or overwrite files",
        "constrained_sampling": STRICT_PREFERRED,
        "GUIDELINES": ("Use write only for new files or complete rewrites.",),
    },
    "grep": {
        "label": "grep",
        "description": (
            "Search file contents for a pattern and return the matching lines with their file paths and line "
            f"numbers. Files ignored by .gitignore are skipped. At most {GREP_LIMIT} matches or "
            f"{DEFAULT_MAX_BYTES // 1024}KB are returned (whichever comes first), and lines longer than "
            f"{GREP_MAX_LINE_LENGTH} characters are cut."
        ),
        "parameters": object_schema(
            {
                "pattern": string_param("Regular expression (or literal text) to search for"),
                "path": string_param("Directory or file to search (defaults to the working directory)"),
                "glob": string_param(
                    "Only search files matching this glob, relative to path, e.g. 'src/**/*.ts'. A glob without "
                    "'/', such as '*.ts', matches file names at any depth"
                ),
                "ignoreCase": {"type": "boolean", "description": "Match case-insensitively (default: false)"},
                "literal": {"type": "boolean", "description": "Treat pattern as plain text, not a regex (default: false)"},
                "context": number_param("Lines of context to show before and after each match (default: 0)"),
                "limit": number_param(f"Maximum number of matches to return (default: {GREP_LIMIT})"),
            },
            ["pattern"],
        ),
        "prompt_snippet": "Search file contents for patterns (respects .gitignore)",
        "constrained_sampling": None,
    },
    "find": {
        "label": "find",
        "description": (
            "Find files by glob pattern and return their paths relative to the search directory. Files ignored "
            f"by .gitignore are skipped. At most {FIND_LIMIT} results or {DEFAULT_MAX_BYTES // 1024}KB are "
            "returned (whichever comes first)."
        ),
        "parameters": object_schema(
            {
                "pattern": string_param(
                    "Glob relative to the search directory, e.g. 'src/**/*.ts'. A pattern without '/', such as "
                    "'*.ts', matches file names at any depth"
                ),
                "path": string_param("Directory to search (defaults to the working directory)"),
                "limit": number_param(f"Maximum number of results (default: {FIND_LIMIT})"),
            },
            ["pattern"],
        ),
        "prompt_snippet": "Find files by glob pattern (respects .gitignore)",
        "constrained_sampling": None,
    },
    "ls": {
        "label": "ls",
        "description": (
            "List a directory's entries in alphabetical order, directories marked with a trailing '/', dotfiles "
            f"included. At most {LS_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB are returned (whichever "
            "comes first)."
        ),
        "parameters": object_schema(
            {
                "path": string_param("Directory to list (defaults to the working directory)"),
                "limit": number_param(f"Maximum number of entries to return (default: {LS_LIMIT})"),
            },
            [],
        ),
        "prompt_snippet": "List directory contents",
        "constrained_sampling": None,
    },
}
