"""Read a JSON config file, validating it only when its content changed since the last success.

Schema validation means importing pydantic, which costs more than the whole start-up budget of
``pi --mode rpc``. The sha256 of the last successfully validated bytes of each file is kept in
``<cache_dir>/validated.json``; an unchanged file is parsed (orjson) and trusted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

FINGERPRINTS = "validated.json"


class ConfigError(Exception):
    """A config file problem; ``messages`` holds one line per problem, ``str()`` joins them."""

    def __init__(self, messages: str | list[str]) -> None:
        self.messages = [messages] if isinstance(messages, str) else list(messages)
        super().__init__("\n".join(self.messages))


def validated_json(path: Path, cache_dir: Path, validate: Callable[[Any], None]) -> Any:
    """Parsed JSON of ``path`` (None when the file does not exist).

    ``validate(data)`` runs only when the content's fingerprint differs from the last validated one;
    it raises ``ConfigError`` to reject the file. Unreadable or malformed files raise ``ConfigError``.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path.name}: cannot read {path}: {exc.strerror}") from None
    data = parse_json(raw, path.name)
    digest = fingerprint(raw)
    fingerprints = _read_fingerprints(cache_dir)
    key = str(path.resolve())
    if fingerprints.get(key) != digest:
        validate(data)
        fingerprints[key] = digest
        _write_fingerprints(cache_dir, fingerprints)
    return data


def fingerprint(raw: bytes) -> str:
    """What identifies a validated content: its length and two zlib checksums (64 bits). Not a
    defence against a crafted file (it is the user's own); sha256 would load OpenSSL's libcrypto,
    3.7 MiB of resident memory and 11 M instructions of every start with a models.json."""
    import zlib  # only when the file exists

    return f"{len(raw)}-{zlib.crc32(raw):08x}-{zlib.adler32(raw):08x}"


def parse_json(raw: bytes, label: str) -> Any:
    """Parse JSON bytes, accepting a BOM and ``//``/``/* */`` comments as pi does."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as first:
        stripped = strip_json_comments(raw.decode("utf-8", "replace"))
        try:
            return orjson.loads(stripped)
        except orjson.JSONDecodeError:
            raise ConfigError(f"{label}: invalid JSON: {first}") from None


def strip_json_comments(text: str) -> str:
    """Blank out comments outside strings (positions kept so error offsets still point right)."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join(c if c == "\n" else " " for c in text[i:end]))
            i = end
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def format_location(loc: tuple[Any, ...]) -> str:
    """``("providers", "x", "models", 0, "id")`` -> ``providers.x.models[0].id``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "root"


def pydantic_messages(label: str, exc: Any) -> list[str]:
    """One ``<label>: <path>: <message>`` line per error of a pydantic ``ValidationError``."""
    return [f"{label}: {format_location(tuple(err['loc']))}: {err['msg']}" for err in exc.errors()]


def _read_fingerprints(cache_dir: Path) -> dict[str, str]:
    try:
        data = orjson.loads((cache_dir / FINGERPRINTS).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_fingerprints(cache_dir: Path, fingerprints: dict[str, str]) -> None:
    """Replaced whole (``atomic_file``), so a concurrent reader never sees half a file; failures only
    cost a re-check."""
    from pi_coding_agent.ai.atomic_file import write_atomic

    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(cache_dir / FINGERPRINTS, orjson.dumps(fingerprints))
    except OSError:
        pass
