"""API key sources in order and config value resolution."""

import json
import stat

import pytest

from pi_coding_agent.ai.auth import keys
from pi_coding_agent.ai.auth.keys import AuthStorage, env_names, resolve_or_raise, resolve_value
from pi_coding_agent.ai.models.catalog import ModelRegistry


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN", "H3_KEY", "H3_A", "H3_B"):
        monkeypatch.delenv(name, raising=False)
    keys._command_cache.clear()


def write_auth(agent_dir, data) -> None:
    (agent_dir / "auth.json").write_text(json.dumps(data))


def test_auth_json_created_private_and_empty(tmp_path):
    agent_dir = tmp_path / "agent"
    auth = AuthStorage(agent_dir)
    path = agent_dir / "auth.json"
    assert path.read_text() == "{}"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert auth.api_key("openai") is None and not auth.has_auth("openai")


def test_resolution_order(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    auth = AuthStorage(tmp_path)
    assert auth.api_key("openai") == "from-env"
    auth.set_config_keys({"openai": "from-models-json"})
    assert auth.api_key("openai") == "from-models-json"
    write_auth(tmp_path, {"openai": {"type": "api_key", "key": "from-auth-json"}})
    auth = AuthStorage(tmp_path)
    auth.set_config_keys({"openai": "from-models-json"})
    assert auth.api_key("openai") == "from-auth-json"
    assert auth.api_key("openai", runtime_override="from-cli") == "from-cli"


def test_env_var_order_follows_catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "api")
    auth = AuthStorage(tmp_path)
    assert auth.api_key("anthropic") == "api"
    monkeypatch.setenv("ANTHROPIC_OAUTH_TOKEN", "oauth")
    assert auth.api_key("anthropic") == "oauth"


def test_command_key_in_auth_json_runs_once(tmp_path):
    counter = tmp_path / "count"
    write_auth(tmp_path, {"openai": {"type": "api_key", "key": f"!echo x >> {counter}; echo ' sk-cmd '"}})
    auth = AuthStorage(tmp_path)
    assert auth.has_auth("openai")
    assert auth.api_key("openai") == "sk-cmd"
    assert auth.api_key("openai") == "sk-cmd"
    assert counter.read_text() == "x\n"  # cached for the process


def test_models_json_command_runs_per_request(tmp_path):
    counter = tmp_path / "count"
    auth = AuthStorage(tmp_path)
    auth.set_config_keys({"local": f"!echo x >> {counter}; echo k"})
    assert auth.api_key("local") == "k" and auth.api_key("local") == "k"
    assert counter.read_text() == "x\nx\n"


def test_failing_command_falls_through_to_env(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    write_auth(tmp_path, {"openai": {"type": "api_key", "key": "!exit 3"}})
    assert AuthStorage(tmp_path).api_key("openai") == "from-env"


def test_credential_env_overrides_process_env(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "process")
    write_auth(tmp_path, {"openai": {"type": "api_key", "env": {"OPENAI_API_KEY": "scoped"}}})
    assert AuthStorage(tmp_path).api_key("openai") == "scoped"


def test_env_template_key_needs_its_variables(tmp_path, monkeypatch):
    auth = AuthStorage(tmp_path)
    auth.set_config_keys({"local": "$H3_KEY"})
    assert not auth.has_auth("local") and auth.api_key("local") is None
    monkeypatch.setenv("H3_KEY", "v")
    assert auth.has_auth("local") and auth.api_key("local") == "v"


def test_faux_needs_no_key(tmp_path):
    auth = AuthStorage(tmp_path)
    assert auth.has_auth("faux") and auth.api_key("faux") == ""


def test_registry_configured_api_key(tmp_path):
    (tmp_path / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": "http://x/v1", "api": "openai-completions", "apiKey": "literal", "models": [{"id": "m"}]}}}))
    registry = ModelRegistry(tmp_path, AuthStorage(tmp_path))
    assert registry.configured_api_key("local") == "literal"
    assert registry.auth.api_key("local") == "literal"


def test_broken_auth_json_is_reported_not_raised(tmp_path):
    (tmp_path / "auth.json").write_text("{nope")
    auth = AuthStorage(tmp_path)
    assert auth.errors and auth.errors[0].startswith(f"Warning: {tmp_path / 'auth.json'}: invalid JSON (")
    assert auth.api_key("openai") is None


def test_keys_never_in_repr(tmp_path):
    write_auth(tmp_path, {"openai": {"type": "api_key", "key": "sk-very-secret"}})
    auth = AuthStorage(tmp_path)
    auth.set_config_keys({"local": "sk-other-secret"})
    assert "secret" not in repr(auth)
    assert "secret" not in repr(ModelRegistry(tmp_path, auth))


@pytest.mark.parametrize(("value", "expected"), [
    ("plain", "plain"),
    ("$H3_A", "a"),
    ("pre-${H3_A}-post", "pre-a-post"),
    ("$$H3_A", "$H3_A"),
    ("$!bang", "!bang"),
    ("${not valid}", "${not valid}"),
    ("cost $5", "cost $5"),
    ("$H3_A$H3_B", "ab"),
])
def test_value_templates(monkeypatch, value, expected):
    monkeypatch.setenv("H3_A", "a")
    monkeypatch.setenv("H3_B", "b")
    assert resolve_value(value) == expected


def test_missing_variables_named_in_error(monkeypatch):
    assert env_names("$H3_A-${H3_B}-$H3_A") == ["H3_A", "H3_B"]
    with pytest.raises(ValueError, match=r"^Failed to resolve key from environment variables: H3_A, H3_B$"):
        resolve_or_raise("$H3_A$H3_B", "key")
    with pytest.raises(ValueError, match=r"from shell command: exit 1$"):
        resolve_or_raise("!exit 1", "key")
