"""settings.json on disk: reading one file (validated, migrated), and changing it in place.

``Settings`` merges what these read; the package and trust commands write through them too, so a
file keeps every key it has and is replaced atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from pi_coding_agent.ai.config_validation import ConfigError, parse_json, validated_json
from pi_coding_agent.ai.types import JsonObject


def read_settings_file(path: Path, cache_dir: Path, warnings: list[str]) -> tuple[JsonObject, bool]:
    """(settings, parsed_ok). Problems become ``Warning: Invalid settings file <path>: ...`` lines.

    Values of the wrong type drop their top-level key only; the file is not recorded as validated,
    so the warning repeats until the file is fixed.
    """
    try:
        data = validated_json(path, cache_dir, _validate)
    except ConfigError as exc:
        _add_warnings(path, exc, warnings)
        bad_keys: set[str] = getattr(exc, "bad_keys", set())
        if not bad_keys:
            return {}, False
        data = {k: v for k, v in parse_json(path.read_bytes(), path.name).items() if k not in bad_keys}
    if not isinstance(data, dict):
        return {}, data is None
    return migrate_settings(data), True


def _validate(data: object) -> None:
    from pi_coding_agent.coding.resources.settings_schema import validate_settings

    validate_settings(data)


def _add_warnings(path: Path, exc: ConfigError, warnings: list[str]) -> None:
    """One warning per problem, without repeating the file-name label ``validated_json`` adds."""
    label = f"{path.name}: "
    for message in exc.messages:
        text = message[len(label):] if message.startswith(label) else message
        line = f"Warning: Invalid settings file {path}: {text}"
        if line not in warnings:
            warnings.append(line)


def migrate_settings(data: JsonObject) -> JsonObject:
    """Older spellings pi still accepts: ``queueMode``, boolean ``websockets``, object ``skills``."""
    if "queueMode" in data and "steeringMode" not in data:
        data["steeringMode"] = data.pop("queueMode")
    if "transport" not in data and isinstance(data.get("websockets"), bool):
        data["transport"] = "websocket" if data.pop("websockets") else "sse"
    skills = data.get("skills")
    if isinstance(skills, dict) and "enableSkillCommands" in skills and "enableSkillCommands" not in data:
        data["enableSkillCommands"] = skills["enableSkillCommands"]
    return data


def read_for_update(path: Path) -> JsonObject | None:
    """Current file content for a read-modify-write ({} when absent, None when not a JSON object)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        data = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError:
        return None
    return migrate_settings(data) if isinstance(data, dict) else None


def set_dotted(data: JsonObject, dotted_key: str, value: object) -> None:
    *parents, leaf = dotted_key.split(".")
    node = data
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[leaf] = value


def pop_dotted(data: JsonObject, dotted_key: str) -> bool:
    """Remove ``a.b.c``; True when it was there."""
    *parents, leaf = dotted_key.split(".")
    node: Any = data
    for part in parents:
        node = node.get(part)
        if not isinstance(node, dict):
            return False
    return node.pop(leaf, None) is not None


def write_json_atomic(path: Path, data: object) -> None:
    """Write pretty JSON (2-space indent, as pi writes it) all at once, through a symlink to its
    target (``ai.atomic_file``: a link a dotfile manager made stays a link)."""
    from pi_coding_agent.ai.atomic_file import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, orjson.dumps(data, option=orjson.OPT_INDENT_2))
