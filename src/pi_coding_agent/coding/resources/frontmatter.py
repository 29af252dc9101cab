"""YAML frontmatter of skill and prompt-template markdown files.

pyyaml is imported only when a file actually has a frontmatter block, so sessions without skills
or templates never pay for it.
"""

from __future__ import annotations

from typing import Any

BOM = "\ufeff"


def normalize_text(text: str) -> str:
    """Drop a BOM and turn CRLF/CR line ends into LF, as every resource reader expects."""
    if text.startswith(BOM):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(yaml source or None, body). With a frontmatter block the body is stripped."""
    text = normalize_text(text)
    if not text.startswith("---"):
        return None, text
    end = text.find("\n---", 3)
    if end == -1:
        return None, text
    return text[4:end], text[end + 4 :].strip()


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """(frontmatter mapping, body). Raises ``ValueError`` with the YAML error on a broken block."""
    source, body = split_frontmatter(text)
    if not source:
        return {}, body
    import yaml

    try:
        data = yaml.safe_load(source)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None
    return (data if isinstance(data, dict) else {}), body


def strip_frontmatter(text: str) -> str:
    """The body without any frontmatter block (no YAML parsing needed)."""
    return split_frontmatter(text)[1]
