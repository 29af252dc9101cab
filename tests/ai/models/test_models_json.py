"""models.json: custom providers, overrides of built-ins, validation errors, validation cache."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pi_coding_agent.ai.auth.keys import AuthStorage
from pi_coding_agent.ai.config_validation import ConfigError, validated_json
from pi_coding_agent.ai.models.catalog import ModelRegistry, builtin_models, catalog_index


@pytest.fixture(autouse=True)
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for entry in catalog_index()["providers"].values():
        for name in entry["envVars"]:
            monkeypatch.delenv(name, raising=False)


def registry_for(agent_dir: Path, config: dict | str) -> ModelRegistry:
    text = config if isinstance(config, str) else json.dumps(config)
    (agent_dir / "models.json").write_text(text)
    return ModelRegistry(agent_dir, AuthStorage(agent_dir))


OLLAMA = {"providers": {"ollama": {
    "baseUrl": "http://localhost:11434/v1", "api": "openai-completions", "apiKey": "ollama",
    "models": [{"id": "qwen2.5-coder:7b"}, {"id": "big", "name": "Big", "reasoning": True, "contextWindow": 1000000,
                                             "input": ["text", "image"], "thinkingLevelMap": {"max": "max"}}],
}}}


def test_custom_provider_models_get_defaults(tmp_path):
    registry = registry_for(tmp_path, OLLAMA)
    assert registry.find("ollama", "qwen2.5-coder:7b") == {
        "id": "qwen2.5-coder:7b", "name": "qwen2.5-coder:7b", "api": "openai-completions", "provider": "ollama",
        "baseUrl": "http://localhost:11434/v1", "reasoning": False, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 128000,
        "maxTokens": 16384,
    }
    big = registry.find("ollama", "big")
    assert big is not None and big["thinkingLevelMap"] == {"max": "max"} and big["contextWindow"] == 1000000
    assert registry.providers()[-1] == "ollama"
    assert {m["provider"] for m in registry.available_models()} == {"faux", "ollama"}  # apiKey counts as auth


def test_custom_provider_without_key_is_not_available(tmp_path):
    config = json.loads(json.dumps(OLLAMA))
    del config["providers"]["ollama"]["apiKey"]
    registry = registry_for(tmp_path, config)
    assert registry.find("ollama", "big") is not None
    assert "ollama" not in {m["provider"] for m in registry.available_models()}


def test_builtin_provider_reroute_override_and_replace(tmp_path):
    registry = registry_for(tmp_path, {"providers": {"anthropic": {
        "baseUrl": "http://proxy.local",
        "compat": {"supportsStrictTools": False},
        "modelOverrides": {"claude-opus-5-5": {"contextWindow": 50000, "cost": {"input": 1}}},
        "models": [{"id": "claude-sonnet-5-5", "name": "Replaced"}],
    }}})
    original = next(m for m in builtin_models("anthropic") if m["id"] == "claude-opus-5-5")
    opus = registry.find("anthropic", "claude-opus-5-5")
    assert opus is not None
    assert opus["baseUrl"] == "http://proxy.local"
    assert opus["contextWindow"] == 50000 and opus["maxTokens"] == original["maxTokens"]
    assert opus["cost"] == {**original["cost"], "input": 1}
    assert opus["compat"] == {**original["compat"], "supportsStrictTools": False}
    sonnet = registry.find("anthropic", "claude-sonnet-5-5")
    assert sonnet is not None and sonnet["name"] == "Replaced" and sonnet["reasoning"] is False
    assert sonnet["api"] == "anthropic-messages" and sonnet["baseUrl"] == "http://proxy.local"
    ids = [m["id"] for m in registry.provider_models("anthropic")]
    assert ids == [m["id"] for m in builtin_models("anthropic")]  # replaced in place, nothing added


def test_headers_resolve_per_request_and_auth_header(tmp_path, monkeypatch):
    monkeypatch.setenv("H3_TEAM", "blue")
    config = json.loads(json.dumps(OLLAMA))
    config["providers"]["ollama"].update({"headers": {"X-Team": "${H3_TEAM}", "X-Lit": "$$5"}, "authHeader": True})
    registry = registry_for(tmp_path, config)
    model = registry.find("ollama", "big")
    assert model is not None and "headers" not in model  # unresolved values never travel with the model
    headers = registry.request_headers(model, registry.auth.api_key("ollama"))
    assert headers == {"X-Team": "blue", "X-Lit": "$5", "Authorization": "Bearer ollama"}
    monkeypatch.delenv("H3_TEAM")
    with pytest.raises(ValueError, match="from environment variable: H3_TEAM"):
        registry.request_headers(model, "k")


@pytest.mark.parametrize(("config", "message"), [
    ('{"providers": {', "models.json: invalid JSON: "),
    ({"providers": {"o": {"baseUrl": "http://x", "api": "openai-completions", "models": [{"id": "a",
                                                                                       "contextWindow": "big"}]}}},
     "models.json: providers.o.models[0].contextWindow: Input should be a valid integer"),
    ({"providers": {"o": {"baseUrl": "http://x", "models": [{"name": "n"}]}}},
     "models.json: providers.o.models[0].id: Field required"),
    ({"providers": {"o": {"models": [{"id": "m"}]}}},
     'models.json: Provider o, model m: no "api" specified. Set at provider or model level.'),
    ({"providers": {"o": {"api": "openai-completions", "models": [{"id": "m"}]}}},
     'models.json: Provider o: "baseUrl" is required when defining custom models.'),
    ({"providers": {"anthropic": {}}},
     'models.json: Provider anthropic: must specify "baseUrl", "headers", "compat", "modelOverrides", or "models".'),
])
def test_errors_are_one_clear_line(tmp_path, config, message):
    registry = registry_for(tmp_path, config)
    assert registry.errors and registry.errors[0].startswith(message)
    assert all("\n" not in e for e in registry.errors)
    assert registry.find("o", "m") is None


def test_comments_and_bom_are_accepted(tmp_path):
    text = "\ufeff// local models\n" + json.dumps(OLLAMA)
    registry = registry_for(tmp_path, text)
    assert registry.errors == [] and registry.find("ollama", "big") is not None


def test_validation_runs_only_when_content_changes(tmp_path):
    path, cache = tmp_path / "models.json", tmp_path / ".cache"
    path.write_text('{"a": 1}')
    calls = []
    assert validated_json(path, cache, calls.append) == {"a": 1}
    assert validated_json(path, cache, calls.append) == {"a": 1}
    assert calls == [{"a": 1}]
    path.write_text('{"a": 2}')
    validated_json(path, cache, calls.append)
    assert calls == [{"a": 1}, {"a": 2}]
    assert not list(cache.glob("*.tmp"))


def test_rejected_content_is_checked_again(tmp_path):
    path, cache = tmp_path / "models.json", tmp_path / ".cache"
    path.write_text("{}")

    def reject(_data):
        raise ConfigError("bad")

    for _ in range(2):
        with pytest.raises(ConfigError, match="bad"):
            validated_json(path, cache, reject)
    assert validated_json(tmp_path / "missing.json", cache, reject) is None


def run_pi(agent_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    env["PI_CODING_AGENT_DIR"] = str(agent_dir)
    return subprocess.run([sys.executable, "-m", "pi_coding_agent", *args], capture_output=True, text=True,
                          env=env, timeout=60, check=False)


@pytest.mark.slow
def test_list_models_reports_bad_models_json_without_traceback(tmp_path):
    (tmp_path / "models.json").write_text(json.dumps(
        {"providers": {"ollama": {"baseUrl": "http://x", "api": "openai-completions", "apiKey": "k",
                                  "models": [{"id": "m", "maxTokens": True}]}}}))
    done = run_pi(tmp_path, "--list-models")
    assert done.returncode == 0
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == "Warning: models.json: providers.ollama.models[0].maxTokens: Input should be a valid integer"
    assert "ollama" not in done.stdout and done.stdout.startswith("No models with credentials")  # as pi: none


@pytest.mark.slow
def test_list_models_skips_pydantic_for_unchanged_file(tmp_path):
    (tmp_path / "models.json").write_text(json.dumps(OLLAMA))
    assert run_pi(tmp_path, "--list-models").returncode == 0
    probe = ("import sys; from pathlib import Path; from pi_coding_agent.ai.auth.keys import AuthStorage;"
             "from pi_coding_agent.ai.models.catalog import ModelRegistry; d = Path(sys.argv[1]);"
             "r = ModelRegistry(d, AuthStorage(d)); print(len(r.available_models()), 'pydantic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["3", "False"]
