"""API keys: ``auth.json``, models.json ``apiKey`` values, provider environment variables.

Config values (keys and header values) are literals with ``$NAME``/``${NAME}`` interpolation
(``$$`` is a literal ``$``, ``$!`` a literal ``!``), or ``!command`` whose trimmed stdout is the
value. Resolved keys are secrets: they never appear in errors, logs or ``repr()``.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from pi_coding_agent.ai.atomic_file import create_new, describe_os_error
from pi_coding_agent.ai.auth.cloud import ambient_key
from pi_coding_agent.ai.auth.provider_env import FEDERATION_ENV
from pi_coding_agent.ai.auth.provider_env import env_value as _env
from pi_coding_agent.ai.env_limits import env_seconds
from pi_coding_agent.ai.models.index import catalog_index, provider_env_vars
from pi_coding_agent.ai.providers.vendor import builtin_spec, vendor
from pi_coding_agent.ai.records import record
from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from pi_coding_agent.ai.auth.oauth.flows import LoginUI
    from pi_coding_agent.ai.auth.oauth.providers import OAuthProvider
    from pi_coding_agent.ai.auth.oauth.store import CredentialFile
    from pi_coding_agent.ai.types import Model

COMMAND_TIMEOUT_S = 10.0  # pi's limit on a key command; PI_KEY_COMMAND_TIMEOUT_S changes it
ANTHROPIC_AUTH_TOKEN = "ANTHROPIC_AUTH_TOKEN"
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


def is_configured(value: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether a value can resolve without running anything (commands count as configured)."""
    return all(_env(name, env) is not None for name in env_names(value))


def command_timeout_s() -> float:
    return env_seconds("PI_KEY_COMMAND_TIMEOUT_S", COMMAND_TIMEOUT_S)


def run_command(command: str) -> str | None:
    """Trimmed stdout of a shell command, or None on failure, non-zero exit or timeout."""
    import subprocess

    try:
        done = subprocess.run(
            command, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, timeout=command_timeout_s(), check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "replace").strip() or None


_command_failures: dict[str, str] = {}  # "!command" value -> why it gave no key (exit status, timeout)
_prompt_values: dict[str, str | None] = {}  # models.json commands, run once for the current prompt


async def prepare_command(value: str, for_process: bool) -> None:
    """Run a ``!command`` value off the event loop (cancellable by abort), so that the synchronous
    reads of the key that follow use its result: for the process lifetime (auth.json, as pi caches
    it) or for the current prompt (models.json, which pi runs at request time)."""
    store = _command_cache if for_process else _prompt_values
    if value in store:
        return
    output, failure = await _run_command_async(value[1:])
    store[value] = output
    _command_failures.pop(value, None)
    if failure is not None:
        _command_failures[value] = failure


def start_prompt() -> None:
    """A new prompt runs the models.json key commands again."""
    _prompt_values.clear()


def command_failure(value: str | None) -> str | None:
    """Why a ``!command`` value gave no key, when it ran and failed (never its output)."""
    return None if value is None else _command_failures.get(value)


async def _run_command_async(command: str) -> tuple[str | None, str | None]:
    import asyncio
    import os
    import signal

    proc = await asyncio.create_subprocess_shell(
        command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, start_new_session=True)

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    limit = command_timeout_s()
    try:
        stdout, _ = await asyncio.wait_for(proc.communicate(), limit)
    except TimeoutError:
        kill()
        await proc.wait()
        return None, f"timed out after {limit:g} s"
    except asyncio.CancelledError:  # an abort: nothing the command started may outlive it
        kill()
        raise
    if proc.returncode != 0:
        return None, f"exited with status {proc.returncode}"
    return stdout.decode("utf-8", "replace").strip() or None, None


def resolve_value(value: str, env: Mapping[str, str] | None = None, cache: bool = False) -> str | None:
    """The value a config string stands for, or None when a variable is unset or a command fails."""
    if is_command(value):
        if not cache:
            return _prompt_values[value] if value in _prompt_values else run_command(value[1:])
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


@record
class ResolvedKey:
    """What a provider's own key resolution gave for its requests (pi's ``AuthResult``)."""

    key: str | None
    headers: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    base_url: str | None = None  # where the requests go instead of the model's baseUrl

    def __repr__(self) -> str:
        return f"ResolvedKey(headers={sorted(self.headers)!r}, env={sorted(self.env)!r})"  # never the secrets


class KeySource(Protocol):
    """A provider that resolves its API key itself (an extension ``Provider``'s ``auth.api_key``).
    ``credential`` is the stored ``api_key`` entry, or the configured ``apiKey`` as one, or None."""

    can_login: bool

    async def resolve(self, credential: JsonObject | None) -> ResolvedKey | None: ...
    async def check(self, credential: JsonObject | None) -> bool: ...
    async def login(self, ui: LoginUI) -> JsonObject: ...


class AuthStorage:
    """Credentials of ``<agentDir>/auth.json`` plus the other key sources, in order (docs/models.md, Keys)."""

    def __init__(self, agent_dir: Path, create_missing: bool = True) -> None:
        self.path = Path(agent_dir) / "auth.json"
        self.errors: list[str] = []
        self._credentials = self._load() if create_missing or self.path.exists() else {}
        self._config_keys: dict[str, str] = {}
        self._gateway_logins: dict[str, tuple[str, str, str]] = {}  # models.json provider -> (vendor, baseUrl, name)
        self._extension_oauth: dict[str, OAuthProvider] = {}  # sign-ins extensions registered
        self._key_sources: dict[str, KeySource] = {}  # providers that resolve their own key (extensions)
        self._resolved: dict[str, ResolvedKey | None] = {}  # their last resolution (``prepare``)
        self._checked: dict[str, bool] = {}  # whether each is configured (``check_key_source``)

    def __repr__(self) -> str:
        return f"AuthStorage(path={str(self.path)!r}, providers={sorted(self._credentials)!r})"

    def _load(self) -> dict[str, JsonObject]:
        """Read auth.json, creating ``{}`` (mode 0600) when missing; a broken or unreadable file
        (a dangling or looping symlink too) counts as empty and is named in ``errors``."""
        try:
            raw = self._read_or_create()
        except OSError as exc:
            dangling = f" (a symlink to the missing {os.readlink(self.path)})" if isinstance(
                exc, FileNotFoundError) and self.path.is_symlink() else ""
            self.errors.append(f"auth.json: cannot read {self.path}: {describe_os_error(exc)}{dangling}")
            return {}
        try:
            data = orjson.loads(raw.removeprefix(b"\xef\xbb\xbf"))
        except orjson.JSONDecodeError as exc:
            self.errors.append(f"Warning: {self.path}: invalid JSON ({exc}); its credentials are ignored")
            return {}
        if not isinstance(data, dict):
            self.errors.append("auth.json: expected an object")
            return {}
        valid = {p: c for p, c in data.items() if isinstance(c, dict)}
        self.errors.extend(f'auth.json: invalid credential for provider "{p}"' for p in data if p not in valid)
        return valid

    def _read_or_create(self) -> bytes:
        """The file's bytes; a missing file (not a link: a dangling one is reported) is created."""
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            if self.path.is_symlink():
                raise
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        return b"{}" if create_new(self.path, b"{}", 0o600) else self.path.read_bytes()

    def set_config_keys(self, keys: Mapping[str, str]) -> None:
        """Raw ``apiKey`` values from models.json (resolved per request, after auth.json)."""
        self._config_keys = dict(keys)

    def set_gateway_logins(self, logins: Mapping[str, tuple[str, str, str]]) -> None:
        """models.json providers with ``"oauth": "<vendor>"``: that vendor's sign-in and refresh at their
        own ``baseUrl``, as (vendor, baseUrl, name)."""
        self._gateway_logins = dict(logins)

    def set_extension_oauth(self, provider: str, spec: OAuthProvider | None) -> None:
        """An extension's sign-in for ``provider`` (None removes it): ``/login``, refresh and request
        keys use it before the built-in one."""
        if spec is None:
            self._extension_oauth.pop(provider, None)
        else:
            self._extension_oauth[provider] = spec

    def set_key_source(self, provider: str, source: KeySource | None) -> None:
        """A provider's own key resolution (None removes it); ``check_key_source`` then says whether
        it is configured (until then it is not)."""
        self._resolved.pop(provider, None)
        self._checked.pop(provider, None)
        if source is None:
            self._key_sources.pop(provider, None)
        else:
            self._key_sources[provider] = source

    def key_source(self, provider: str) -> KeySource | None:
        return self._key_sources.get(provider)

    def _owns_key(self, provider: str) -> KeySource | None:
        """The provider's key source when it decides the key (an OAuth sign-in decides instead)."""
        return None if self.stored_type(provider) == "oauth" else self._key_sources.get(provider)

    def _source_credential(self, provider: str) -> JsonObject | None:
        """What a key source resolves from, as pi composes it: the stored entry, else the configured key."""
        if (stored := self._credentials.get(provider)) is not None:
            return dict(stored)
        configured = self._config_keys.get(provider)
        key = resolve_value(configured, cache=False) if configured is not None else None
        return {"type": "api_key", "key": key} if key else None

    async def check_key_source(self, provider: str) -> None:
        """Ask the provider's key source whether it is configured (availability, the start-up model)."""
        if (source := self._key_sources.get(provider)) is not None:
            configured = provider not in self._credentials and provider in self._config_keys and is_configured(
                self._config_keys[provider])
            self._checked[provider] = configured or await source.check(self._source_credential(provider))

    def oauth_spec(self, provider: str) -> OAuthProvider | None:
        """The provider's account sign-in and refresh: an extension's, a vendor's at the gateway a
        models.json provider names, or pi's built-in one."""
        if provider in self._extension_oauth:
            return self._extension_oauth[provider]
        if provider in self._gateway_logins:
            named, base_url, name = self._gateway_logins[provider]
            own = vendor(named)
            return own.oauth(provider, name, base_url) if own is not None else None
        return builtin_spec(provider)

    def _file(self) -> CredentialFile:
        from pi_coding_agent.ai.auth.oauth.store import CredentialFile

        return CredentialFile(self.path)

    async def store_credential(self, provider: str, credential: JsonObject) -> None:
        """Save a provider's credential (an API key or an OAuth sign-in) under pi's auth.json lock."""
        async def replace(_current: dict[str, Any] | None) -> JsonObject:
            return credential

        await self._file().modify(provider, replace)
        self._credentials[provider] = credential
        await self.check_key_source(provider)

    async def remove_credential(self, provider: str) -> bool:
        """Forget a provider's stored credential; whether one was stored."""
        removed = await self._file().delete(provider)
        self._credentials.pop(provider, None)
        self._resolved.pop(provider, None)
        await self.check_key_source(provider)
        return removed

    def stored_providers(self) -> list[str]:
        """Providers with an entry in auth.json (nothing is resolved)."""
        return list(self._credentials)

    def stored_credential(self, provider: str) -> JsonObject | None:
        """A copy of the provider's auth.json entry as loaded (nothing is resolved or refreshed)."""
        cred = self._credentials.get(provider)
        return dict(cred) if cred is not None else None

    def stored_type(self, provider: str) -> str | None:
        """``"api_key"`` or ``"oauth"`` for a stored credential, else None (nothing is resolved)."""
        kind = self._credentials.get(provider, {}).get("type")
        return kind if kind in ("api_key", "oauth") else None

    async def fresh_oauth(self, provider: str, min_validity_ms: int | None = None,
                          stale_access: str | None = None) -> JsonObject | None:
        """The provider's OAuth credential from auth.json, refreshed under pi's lock when due.

        The entry point for adapters that need more than the access token (OpenAI Codex's
        ``accountId``, GitHub Copilot's ``enterpriseUrl``): a copy of the stored entry, or None
        when the provider has no OAuth credential. Raises ``OAuthError`` (no token in its message)
        when a due refresh fails.
        """
        if self.stored_type(provider) != "oauth":
            return None
        from pi_coding_agent.ai.auth.oauth.refresh import fresh_credential

        cred = await fresh_credential(self._file(), provider, min_validity_ms, stale_access, self.oauth_spec(provider))
        if cred is None:
            self._credentials.pop(provider, None)
        else:
            self._credentials[provider] = cred
        return dict(cred) if cred is not None else None

    async def prepare(self, provider: str) -> None:
        """Before a request: refresh the provider's OAuth credential when it is due, and run its
        ``!command`` key sources once, off the event loop."""
        await self.fresh_oauth(provider)
        stored, configured = self._raw_keys(provider)
        if stored is not None and is_command(stored):
            await prepare_command(stored, for_process=True)
        if configured is not None and is_command(configured):
            await prepare_command(configured, for_process=False)
        if (source := self._owns_key(provider)) is not None:
            resolved = await source.resolve(self._source_credential(provider))
            self._resolved[provider] = resolved
            self._checked[provider] = resolved is not None

    def _raw_keys(self, provider: str) -> tuple[str | None, str | None]:
        """The provider's auth.json key (not an OAuth token) and models.json ``apiKey``."""
        stored = None if self.stored_type(provider) == "oauth" else self._stored_key(provider)
        return stored, self._config_keys.get(provider)

    def key_commands(self, provider: str) -> list[str]:
        """The ``!command`` values among the provider's key sources."""
        return [v for v in self._raw_keys(provider) if v is not None and is_command(v)]

    def key_command_failure(self, provider: str) -> str | None:
        """One line saying which key command of the provider failed and how, if one did."""
        for source in self.key_commands(provider):
            if (failure := command_failure(source)) is not None:
                return f"The API key command for {provider} {failure}: {source[1:]}"
        return None

    async def unauthorized(self, provider: str, rejected_key: str | None) -> bool:
        """A server answered 401 to ``rejected_key``: force a refresh when it was our OAuth token.

        Whether a different token is now stored (worth one more attempt).
        """
        cred = self._credentials.get(provider, {})
        if rejected_key == "" and _federated(provider) and self.api_key(provider) == "":
            from pi_coding_agent.ai.auth import anthropic_federation

            return anthropic_federation.invalidate()  # the next request exchanges the identity token again
        if cred.get("type") != "oauth" or not rejected_key or cred.get("access") != rejected_key:
            return False
        fresh = await self.fresh_oauth(provider, stale_access=rejected_key)
        return fresh is not None and fresh.get("access") != rejected_key

    def oauth_base_url(self, provider: str) -> str | None:
        """The API base URL an OAuth credential names (GitHub Copilot's token), else None."""
        cred = self._credentials.get(provider)
        if not cred or cred.get("type") != "oauth":
            return None
        spec = self.oauth_spec(provider)
        return spec.base_url(cred) if spec is not None else None

    def oauth_models(self, provider: str, models: list[Model]) -> list[Model]:
        """``models`` as a provider's OAuth credential shapes them (pi's ``filterModels``): GitHub
        Copilot lists only the credential's ``availableModelIds`` and serves them from the API host
        its token names; an extension's ``modify_models`` gets the signed-in credential."""
        cred = self._credentials.get(provider)
        if not cred or cred.get("type") != "oauth":
            return models
        if (own := self._extension_oauth.get(provider)) is not None:
            return own.modify_models(models, dict(cred)) if own.modify_models is not None else models
        if provider != "github-copilot":
            return models
        ids = cred.get("availableModelIds")
        if isinstance(ids, list) and all(isinstance(i, str) for i in ids):
            models = [m for m in models if m["id"] in ids]
        base_url = self.oauth_base_url(provider)
        return [{**m, "baseUrl": base_url} if base_url else m for m in models]

    def bearer_token(self, provider: str, runtime_override: str | None = None) -> str | None:
        """A token sent as ``Authorization: Bearer`` rather than as the API key.

        Anthropic's ``ANTHROPIC_AUTH_TOKEN``, used when no stored credential, models.json key or
        ``--api-key`` comes first (pi's order).
        """
        if provider != "anthropic" or runtime_override or self._stored_key(provider) is not None:
            return None
        if provider in self._config_keys:
            return None
        return _env(ANTHROPIC_AUTH_TOKEN, self.credential_env(provider))

    def credential_env(self, provider: str) -> dict[str, str]:
        """The string values of the provider's stored ``env`` map (pi's provider-scoped settings)."""
        env = self._credentials.get(provider, {}).get("env")
        stored = {k: v for k, v in env.items() if isinstance(v, str)} if isinstance(env, dict) else {}
        resolved = self.resolution(provider)
        return stored if resolved is None else {**stored, **resolved.env}

    def resolution(self, provider: str) -> ResolvedKey | None:
        """The last result of the provider's own key resolution (``prepare``), when it has one."""
        return self._resolved.get(provider) if self._owns_key(provider) is not None else None

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

    def _vendor_key(self, provider: str) -> str | None:
        """The key a vendor derives from its own configuration (``ai.providers``), if it does."""
        own = vendor(provider)
        return own.key(self._credentials.get(provider)) if own is not None and own.decides_key else None

    def _env_key(self, provider: str) -> str | None:
        env = self.credential_env(provider)
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
        if self._owns_key(provider) is not None:  # what its last resolution (``prepare``) gave
            last = self._resolved.get(provider)
            return last.key if last is not None else None
        env = self.credential_env(provider)
        stored = self._stored_key(provider)
        if stored is not None and self.stored_type(provider) == "oauth":
            own = self._extension_oauth.get(provider)  # an extension's getApiKey, else the access token
            return own.key_of(self._credentials[provider]) if own is not None else stored  # never interpolated
        if stored is not None:
            resolved = resolve_value(stored, env, cache=True)
            if resolved:
                return resolved
        configured = self._config_keys.get(provider)
        if configured is not None:
            resolved = resolve_value(configured, env)
            if resolved:
                return resolved
        if self.bearer_token(provider) is not None:
            return ""  # the credential travels as a header (``bearer_token``)
        if (derived := self._vendor_key(provider)) is not None:
            return derived
        found = self._env_key(provider)
        if found:
            return found
        return "" if _is_keyless(provider) or _federated(provider) else None

    def has_auth(self, provider: str) -> bool:
        """Whether a key source is configured (cheap: commands are not run)."""
        if self._owns_key(provider) is not None:
            return self._checked.get(provider, False)
        if _is_keyless(provider) or self._stored_key(provider) is not None:
            return True
        if self.bearer_token(provider) is not None:
            return True
        if (own := vendor(provider)) is not None and own.decides_key:
            return self._vendor_key(provider) is not None
        if _federated(provider):
            return True
        configured = self._config_keys.get(provider)
        if configured is not None and is_configured(configured, self.credential_env(provider)):
            return True
        return self._env_key(provider) is not None


def _federated(provider: str) -> bool:
    """Anthropic workload identity federation is configured (the adapter exchanges the identity token)."""
    return provider == "anthropic" and all(_env(name) for name in FEDERATION_ENV)


def _is_keyless(provider: str) -> bool:
    return bool(catalog_index()["providers"].get(provider, {}).get("keyless"))
