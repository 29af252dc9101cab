"""The codemode input: JavaScript, optionally led by one ``// @options: {...}`` line."""

from __future__ import annotations

import json
from dataclasses import dataclass

OPTIONS_PREFIX = "// @options:"
_FIELDS = ("max_output_tokens", "timeout_ms")
_FIELDS_TEXT = "`max_output_tokens` and `timeout_ms`"
_MAX_TIMEOUT_MS = 2_147_483_647
_MAX_SAFE_INTEGER = 2**53 - 1


class SourceError(ValueError):
    """Empty input or a bad options line: the call fails before any script runs."""


@dataclass
class Source:
    """A codemode script with the options of its ``// @options`` line."""

    code: str
    max_output_tokens: int | None = None
    timeout_ms: int | None = None


def _safe_integer(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return float(value).is_integer() and 0 <= value <= _MAX_SAFE_INTEGER


def _options(directive: str) -> dict[str, int]:
    if directive == "":
        raise SourceError(f"@options must be a JSON object with supported fields {_FIELDS_TEXT}")
    try:
        value = json.loads(directive)
    except json.JSONDecodeError as exc:
        raise SourceError(f"@options must be valid JSON with supported fields {_FIELDS_TEXT}: {exc}") from None
    if not isinstance(value, dict):
        raise SourceError(f"@options must be a JSON object with supported fields {_FIELDS_TEXT}")
    for key in value:
        if key not in _FIELDS:
            raise SourceError(f"@options only supports {_FIELDS_TEXT}; got `{key}`")
    tokens, timeout = value.get("max_output_tokens"), value.get("timeout_ms")
    options: dict[str, int] = {}
    if tokens is not None:
        if not _safe_integer(tokens):
            raise SourceError("@options field `max_output_tokens` must be a non-negative safe integer")
        options["max_output_tokens"] = int(tokens)
    if timeout is not None:
        if not _safe_integer(timeout) or timeout == 0 or timeout > _MAX_TIMEOUT_MS:
            raise SourceError(f"@options field `timeout_ms` must be a positive integer up to {_MAX_TIMEOUT_MS}")
        options["timeout_ms"] = int(timeout)
    return options


def parse_source(text: str) -> Source:
    """Split off the options line; an options line anywhere but first is an error, not ignored."""
    if text.strip() == "":
        raise SourceError('Expected JavaScript source text (non-empty). Provide JS only, optionally with a first '
                          'line `// @options: {"max_output_tokens": 1000}`.')
    lines = text.split("\n")
    for number, line in enumerate(lines[1:], start=2):
        if line.lstrip().startswith(OPTIONS_PREFIX):
            raise SourceError(f"The {OPTIONS_PREFIX} line must be the first line of the input; found one on line "
                              f"{number}")
    first = lines[0].removesuffix("\r").lstrip()
    if not first.startswith(OPTIONS_PREFIX):
        return Source(text)
    newline = text.find("\n")
    code = "" if newline == -1 else text[newline:]
    if code.strip() == "":
        raise SourceError("The @options line must be followed by JavaScript source on subsequent lines")
    options = _options(first[len(OPTIONS_PREFIX):].strip())
    return Source(code, options.get("max_output_tokens"), options.get("timeout_ms"))
