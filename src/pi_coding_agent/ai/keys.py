"""API keys: ``auth.json``, models.json ``apiKey`` values, provider environment variables.

Config values (keys and header values) are literals with ``$NAME``/``${NAME}`` interpolation
(``$$`` is a literal ``$``, ``$!`` a literal ``!``), or ``!command`` whose trimmed stdout is the
value. Resolved keys are secrets: they never appear in errors, logs or ``repr()``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from pi_coding_agent.ai.catalog import catalog_index, provider_env_vars
from pi_coding_agent.ai.cloud_auth import ambient_key

COMMAND_TIMEOUT_S = 10.0
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Results of ``!command`` values from auth.json, kept for the life of the process.
_command_cache: dict[str, str | None] = {}


class _EnvRef:
    """An environment variable reference inside a config value."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _parse_template(value: str) -> list[str | _EnvRef]:
    """Split a non-command value into literal text and environment references."""
    parts: list[str | _EnvRef] = []
    literal = ""
    i = 0
    while i < len(value):
        ch = value[i]
        nxt = value[i + 1] if i + 1 < len(value) else ""
        if ch != "$":
            literal += ch
            i += 1
        elif nxt in ("$", "!"):
            literal += nxt
            i += 2
        elif nxt == "{" and (end := value.find("}", i + 2)) >= 0:
            name = value[i + 2 : end]
            if _ENV_NAME.fullmatch(name):
                parts.extend([literal, _EnvRef(name)] if literal else [_EnvRef(name)])
                literal = ""
            else:
                literal += value[i : end + 1]
            i = end + 1
        elif match := _ENV_NAME.match(value, i + 1):
            parts.extend([literal, _EnvRef(match.group())] if literal else [_EnvRef(match.group())])
            literal = ""
            i = match.end()
        else:
            literal += "$"
            i += 1
    if literal:
        parts.append(literal)
    return parts


def is_command(value: str) -> bool:
    return value.startswith("!")


def env_names(value: str) -> list[str]:
    """Environment variables a (non-command) value refers to, in order, without repeats."""
    if is_command(value):
        return []
    names = [p.name for p in _parse_template(value) if isinstance(p, _EnvRef)]
    return list(dict.fromkeys(names))


def _env(name: str, env: Mapping[str, str] | None) -> str | None:
    return (env or {}).get(name) or os.environ.get(name) or None


def is_configured(value: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether a value can resolve without running anything (commands count as configured)."""
    return all(_env(name, env) is not None for name in env_names(value))


def run_command(command: str) -> str | None:
    """Trimmed stdout of a shell command, or None on failure, non-zero exit or timeout."""
    import subprocess

    try:
        done = subprocess.run(
            command, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, timeout=COMMAND_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "replace").strip() or None


def resolve_value(value: str, env: Mapping[str, str] | None = None, cache: bool = False) -> str | None:
    """The value a config string stands for, or None when a variable is unset or a command fails."""
    if is_command(value):
        if not cache:
            return run_command(value[1:])
        if value not in _command_cache:
            _command_cache[value] = run_command(value[1:])
        return _command_cache[value]
    out = ""
    for part in _parse_template(value):
        if isinstance(part, _EnvRef):
            resolved = _env(part.name, env)
            if resolved is None:
                return None
            out += resolved
        else:
            out += part
    return out


def resolve_or_raise(value: str, description: str, env: Mapping[str, str] | None = None) -> str:
    """Like ``resolve_value`` (uncached) but failing with a message that names the source, not the value."""
    resolved = resolve_value(value, env)
    if resolved is not None:
        return resolved
    if is_command(value):
        raise ValueError(f"Failed to resolve {description} from shell command: {value[1:]}")
    missing = [name for name in env_names(value) if _env(name, env) is None]
    if len(missing) == 1:
        raise ValueError(f"Failed to resolve {description} from environment variable: {missing[0]}")
    if missing:
        raise ValueError(f"Failed to resolve {description} from environment variables: {', '.join(missing)}")
    raise ValueError(f"Failed to resolve {description}")


class AuthStorage:
    """Credentials of ``<agentDir>/auth.json`` plus the key sources of config.md §4, in order."""

    def __init__(self, agent_dir: Path, create_missing: bool = True) -> None:
        self.path = Path(agent_dir) / "auth.json"
        self.errors: list[str] = []
        self._credentials = self._load() if create_missing or self.path.exists() else {}
        self._config_keys: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"AuthStorage(path={str(self.path)!r}, providers={sorted(self._credentials)!r})"

    def _load(self) -> dict[str, dict[str, Any]]:
        """Read auth.json, creating ``{}`` (mode 0600) when missing; a broken file counts as empty."""
        try:
            if not self.path.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as handle:
                    handle.write("{}")
                return {}
            raw = self.path.read_bytes()
        except FileExistsError:
            return self._load()
        except OSError as exc:
            self.errors.append(f"auth.json: cannot read {self.path}: {exc.strerror}")
            return {}
        try:
            data = orjson.loads(raw.removeprefix(b"\xef\xbb\xbf"))
        except orjson.JSONDecodeError as exc:
            self.errors.append(f"auth.json: invalid JSON: {exc}")
            return {}
        if not isinstance(data, dict):
            self.errors.append("auth.json: expected an object")
            return {}
        valid = {p: c for p, c in data.items() if isinstance(c, dict)}
        self.errors.extend(f'auth.json: invalid credential for provider "{p}"' for p in data if p not in valid)
        return valid

    def set_config_keys(self, keys: Mapping[str, str]) -> None:
        """Raw ``apiKey`` values from models.json (resolved per request, after auth.json)."""
        self._config_keys = dict(keys)

    def set_api_key(self, provider: str, key: str) -> None:
        """Store an API key credential for a provider in auth.json."""
        self._credentials[provider] = {"type": "api_key", "key": key}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(orjson.dumps(self._credentials, option=orjson.OPT_INDENT_2))

    def _credential_env(self, provider: str) -> dict[str, str]:
        env = self._credentials.get(provider, {}).get("env")
        return {k: v for k, v in env.items() if isinstance(v, str)} if isinstance(env, dict) else {}

    def _stored_key(self, provider: str) -> str | None:
        """The auth.json credential: an API key (may be ``!command``/``$VAR``) or an OAuth access token."""
        cred = self._credentials.get(provider)
        if not cred:
            return None
        if cred.get("type") == "oauth":
            access = cred.get("access")
            return access if isinstance(access, str) and access else None
        key = cred.get("key")
        return key if isinstance(key, str) and key else None

    def _env_key(self, provider: str) -> str | None:
        env = self._credential_env(provider)
        for name in provider_env_vars(provider):
            value = _env(name, env)
            if value:
                return value
        return ambient_key(provider, env)

    def api_key(self, provider: str, runtime_override: str | None = None) -> str | None:
        """The key for a request: --api-key, auth.json, models.json apiKey, then env vars.

        None means no key is available; ``""`` means the provider needs none (the faux API).
        """
        if runtime_override:
            return runtime_override
        env = self._credential_env(provider)
        stored = self._stored_key(provider)
        if stored is not None:
            resolved = resolve_value(stored, env, cache=True)
            if resolved:
                return resolved
        configured = self._config_keys.get(provider)
        if configured is not None:
            resolved = resolve_value(configured, env)
            if resolved:
                return resolved
        found = self._env_key(provider)
        if found:
            return found
        return "" if _is_keyless(provider) else None

    def has_auth(self, provider: str) -> bool:
        """Whether a key source is configured (cheap: commands are not run)."""
        if _is_keyless(provider) or self._stored_key(provider) is not None:
            return True
        configured = self._config_keys.get(provider)
        if configured is not None and is_configured(configured, self._credential_env(provider)):
            return True
        return self._env_key(provider) is not None


def _is_keyless(provider: str) -> bool:
    return bool(catalog_index()["providers"].get(provider, {}).get("keyless"))
