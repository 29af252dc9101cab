"""``mcp.json`` as pi reads it: the user file, then (trusted projects only) ``.pi/mcp.json``.

Entries stay the plain dicts of the file (camelCase, unknown keys kept) so a config written back by
``pi mcp add`` or an exposure change is the user's file with one edit. Validation returns pi's error
texts; an invalid entry is skipped and reported, the others still load.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.mcp.naming import SERVER_NAME, namespace, pattern_regex

EXPOSURES = ("codemode", "deferred", "direct", "hidden")
EXPOSURE_ALIASES = {"codemode-deferred": "codemode"}
OVERRIDE_KEYS = ("enabled", "exposure", "toolExposure")
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")
DEFAULT_TIMEOUT_S = 60.0


class ServerEntry(NamedTuple):
    """One server: its validated config, where it came from, and a project override if any (a
    NamedTuple: entries are never changed in place, and a dataclass costs 2 M instructions of every
    start with an mcp.json)."""

    name: str
    config: dict[str, Any]
    source: str  # the file path, or the extension that registered it
    scope: str  # "global" | "project" | "extension"
    override: str | None = None

    @property
    def enabled(self) -> bool:
        return self.config.get("enabled") is not False

    @property
    def exposure(self) -> str:
        return str(self.config.get("exposure") or "codemode")

    @property
    def is_http(self) -> bool:
        return "url" in self.config

    @property
    def timeout_s(self) -> float:
        return float(self.config.get("timeout") or DEFAULT_TIMEOUT_S)

    @property
    def uses_oauth(self) -> bool:
        """HTTP servers without an ``Authorization`` header (or ``auth``) sign in with OAuth."""
        headers = self.config.get("headers") or {}
        return self.is_http and not self.config.get("auth") and not any(h.lower() == "authorization" for h in headers)

    def configured_exposures(self) -> set[str]:
        """Exposures its tools can have, known before it connects."""
        return {self.exposure, *(self.config.get("toolExposure") or {}).values()}

    def tool_exposure(self, tool: str) -> str:
        """``toolExposure`` exact name, else the first matching ``*`` pattern, else the server's."""
        overrides: dict[str, str] = self.config.get("toolExposure") or {}
        if tool in overrides:
            return overrides[tool]
        for pattern, exposure in overrides.items():
            if "*" in pattern and pattern_regex(pattern).match(tool):
                return exposure
        return self.exposure


class McpConfig:
    """The merged mcp.json files: servers, problems found, and the codemode switch."""

    def __init__(self) -> None:
        self.servers: list[ServerEntry] = []
        self.errors: list[str] = []
        self.auto_enable_codemode: bool | None = None
        self.project_config: str | None = None


def config_paths(agent_dir: Path, cwd: Path, trusted: bool) -> list[tuple[Path, str]]:
    paths = [(agent_dir / "mcp.json", "global")]
    if trusted:
        paths.append((cwd / ".pi" / "mcp.json", "project"))
    return paths


def load_config(agent_dir: Path, cwd: Path, trusted: bool) -> McpConfig:
    """Both files merged: a project entry replaces the global one, an override patches it."""
    state = McpConfig()
    servers: dict[str, ServerEntry] = {}
    for path, scope in config_paths(agent_dir, cwd, trusted):
        _read_file(path, scope, servers, state)
    if trusted:
        state.project_config = str(cwd / ".pi" / "mcp.json")
    state.servers = list(servers.values())
    return state


def _is_record(value: object) -> bool:
    return isinstance(value, dict)


def is_override(entry: JsonObject) -> bool:
    """No ``command``, ``url`` or ``type``: the entry patches a server defined elsewhere."""
    return "command" not in entry and "url" not in entry and "type" not in entry


def read_json(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    return json.loads(text[1:] if text.startswith("\ufeff") else text)


def _read_file(path: Path, scope: str, servers: dict[str, ServerEntry], state: McpConfig) -> None:
    if not path.exists():
        return
    try:
        parsed = read_json(path)
    except (OSError, ValueError) as exc:
        state.errors.append(f"{path}: {exc}")
        return
    if not _is_record(parsed) or ("mcpServers" in parsed and not _is_record(parsed["mcpServers"])):
        state.errors.append(f'{path}: expected an object with an "mcpServers" object')
        return
    auto = parsed.get("autoEnableCodemode")
    if isinstance(auto, bool):
        state.auto_enable_codemode = auto
    elif auto is not None:
        state.errors.append(f"{path}: autoEnableCodemode must be a boolean")
    for name, value in (parsed.get("mcpServers") or {}).items():
        error = _add_entry(path, scope, name, value, servers)
        if error:
            state.errors.append(f"{path}: {error}")


def _add_entry(path: Path, scope: str, name: str, value: Any, servers: dict[str, ServerEntry]) -> str | None:
    if scope == "project" and _is_record(value) and is_override(value):
        base = servers.get(name)
        if base is None:
            return f'server "{name}" needs "command" or "url", or a global server to override'
        if any(key not in OVERRIDE_KEYS for key in value):
            return f'server "{name}": an override can only set {", ".join(OVERRIDE_KEYS)}'
        merged = validate_server(name, {**base.config, **value})
        if isinstance(merged, str):
            return merged
        servers[name] = ServerEntry(name, merged, base.source, base.scope, override=str(path))
        return None
    config = validate_server(name, value)
    if isinstance(config, str):
        return config
    clash = next((other for other in servers if other != name and namespace(other) == namespace(name)), None)
    if clash:
        return f'server "{name}" conflicts with "{clash}"'
    if scope == "project" and "url" in config and config.get("auth"):
        return f'server "{name}": auth is only allowed in the global mcp.json'
    servers[name] = ServerEntry(name, config, str(path), scope)
    return None


def _resolve_aliases(raw: dict[str, Any]) -> JsonObject:
    resolved = dict(raw)
    if "exposure" in raw:
        resolved["exposure"] = EXPOSURE_ALIASES.get(raw["exposure"], raw["exposure"])
    if _is_record(raw.get("toolExposure")):
        resolved["toolExposure"] = {k: EXPOSURE_ALIASES.get(v, v) for k, v in raw["toolExposure"].items()}
    return resolved


def validate_server(name: str, raw: Any) -> JsonObject | str:
    """The entry with exposure aliases resolved, or pi's error message for it."""
    if not SERVER_NAME.match(name):
        return f'invalid server name "{name}" (use letters, digits, "_" and "-")'
    if not _is_record(raw):
        return f'server "{name}" must be an object'
    entry = _resolve_aliases(raw)
    error = _base_error(entry) or _transport_error(name, entry) or _exposure_error(entry)
    if error:
        return error if error.startswith(("server ", "invalid ")) else f'server "{name}": {error}'
    return entry


def _base_error(entry: JsonObject) -> str | None:
    if "enabled" in entry and not isinstance(entry["enabled"], bool):
        return "enabled must be a boolean"
    if "description" in entry and not isinstance(entry["description"], str):
        return "description must be a string"
    timeout = entry.get("timeout")
    if "timeout" in entry and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        return "timeout must be a positive number of seconds"
    return None


def _transport_error(name: str, entry: JsonObject) -> str | None:
    kind, url, command = entry.get("type"), entry.get("url"), entry.get("command")
    if kind == "sse":
        return f'server "{name}": legacy SSE transport is not supported; use the streamable HTTP URL'
    if isinstance(url, str) and kind in (None, "http", "streamable-http"):
        return _http_error(entry, url)
    if isinstance(command, str) and kind in (None, "stdio"):
        return _stdio_error(entry)
    return f'server "{name}" needs either "command" (stdio) or "url" (streamable HTTP)'


def _is_string_map(value: Any) -> bool:
    return _is_record(value) and all(isinstance(v, str) for v in value.values())


def _http_error(entry: dict[str, Any], url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "url must be an http or https URL"
    if "headers" in entry and not _is_string_map(entry["headers"]):
        return "headers must map names to strings"
    oauth = entry.get("oauth")
    if oauth is not None and not _is_record(oauth):
        return "oauth must be an object"
    for key in ("clientId", "clientSecret", "scope"):
        if oauth and key in oauth and not isinstance(oauth[key], str):
            return f"oauth.{key} must be a string"
    auth = entry.get("auth")
    if auth is not None:
        if not _is_record(auth) or not isinstance(auth.get("provider"), str) or not auth["provider"]:
            return "auth.provider must be a provider name"
        if parts.scheme != "https" and parts.hostname not in LOOPBACK_HOSTS:
            return "auth requires an https URL, or http on localhost, 127.0.0.1, or [::1]"
    return None


def _stdio_error(entry: JsonObject) -> str | None:
    args = entry.get("args")
    if "args" in entry and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
        return "args must be an array of strings"
    if "env" in entry and not _is_string_map(entry["env"]):
        return "env must map names to strings"
    if "cwd" in entry and not isinstance(entry["cwd"], str):
        return "cwd must be a string"
    return None


def _exposure_error(entry: dict[str, Any]) -> str | None:
    allowed = ", ".join(f'"{e}"' for e in EXPOSURES)
    if "exposure" in entry and entry["exposure"] not in EXPOSURES:
        return f"exposure must be one of {allowed}"
    overrides = entry.get("toolExposure")
    if overrides is None:
        return None
    if not _is_record(overrides):
        return "toolExposure must map tool names to exposures"
    for tool, value in overrides.items():
        if value not in EXPOSURES:
            return f'toolExposure "{tool}" must be one of {allowed}'
    return None


def edit_servers(path: Path, edit: Any) -> bool:
    """Read ``path`` (empty when missing), let ``edit(servers, parsed)`` change it, write it back with
    its indentation when ``edit`` returns True. Other content of the file is kept."""
    text = path.read_text(encoding="utf-8").lstrip("\ufeff") if path.exists() else None
    parsed = {} if text is None else json.loads(text)
    if not _is_record(parsed) or ("mcpServers" in parsed and not _is_record(parsed["mcpServers"])):
        raise ValueError(f'{path}: expected an object with an "mcpServers" object')
    servers = parsed.setdefault("mcpServers", {}) if text is None else parsed.get("mcpServers")
    if not edit(servers, parsed):
        return False
    indent = "  "
    for line in (text or "").splitlines():
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            indent = line[: len(line) - len(stripped)]
            break
    from pi_coding_agent.ai.atomic_file import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(parsed, indent=indent, ensure_ascii=False) + "\n").encode())
    return True


def add_server(path: Path, name: str, config: JsonObject) -> bool:
    """Put ``name`` into ``path``'s ``mcpServers`` (creating the file); whether it replaced an entry."""
    replaced: list[bool] = []

    def put(servers: JsonObject | None, parsed: JsonObject) -> bool:
        target = servers if servers is not None else {}
        replaced.append(name in target)
        target[name] = config
        parsed["mcpServers"] = target
        return True

    edit_servers(path, put)
    return replaced[0]
