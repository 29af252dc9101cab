"""Model catalog, availability and model resolution."""

import json
from pathlib import Path

import pytest

from pi_coding_agent.ai.auth.keys import AuthStorage
from pi_coding_agent.ai.models.catalog import (
    PLACEHOLDER_MODEL,
    ModelRegistry,
    builtin_models,
    catalog_index,
    default_model,
)
from pi_coding_agent.ai.models.resolution import (
    ModelResolutionError,
    locale_key,
    resolve_model_pattern,
    resolve_model_scope,
)


@pytest.fixture(autouse=True)
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests decide which providers have keys."""
    for entry in catalog_index()["providers"].values():
        for name in entry["envVars"]:
            monkeypatch.delenv(name, raising=False)


def make_registry(agent_dir: Path, models_json: dict | None = None) -> ModelRegistry:
    if models_json is not None:
        (agent_dir / "models.json").write_text(json.dumps(models_json))
    return ModelRegistry(agent_dir, AuthStorage(agent_dir))


def resolve(registry: ModelRegistry, pattern: str, provider: str | None = None, **kw):
    model, level, warnings = resolve_model_pattern(registry, pattern, provider, **kw)
    return f"{model['provider']}/{model['id']}", level, warnings


# ----------------------------------------------------------------------------- catalog


def test_catalog_records_source_and_core_providers():
    index = catalog_index()
    assert index["source"] == "pi-ai 1.6.0"
    for provider in ("anthropic", "openai", "google", "openrouter", "groq", "cerebras", "xai", "mistral",
                     "deepseek", "faux"):
        assert provider in index["providers"], provider
        assert builtin_models(provider), provider
    assert index["providers"]["anthropic"]["defaultModel"] == "claude-opus-5-5"
    assert index["providers"]["google"]["envVars"] == ["GEMINI_API_KEY"]


def test_catalog_holds_only_implemented_apis():
    from pi_coding_agent.ai.stream import API_MODULES

    apis = {m["api"] for p in catalog_index()["providers"] for m in builtin_models(p)}
    assert apis == set(API_MODULES)


def test_mistral_served_over_openai_completions():
    model = builtin_models("mistral")[0]
    assert model["api"] == "openai-completions"
    assert model["baseUrl"] == "https://api.mistral.ai/v1"


def test_catalog_model_has_wire_shape():
    opus = next(m for m in builtin_models("anthropic") if m["id"] == "claude-opus-5-5")
    assert list(opus)[:10] == ["id", "name", "api", "provider", "baseUrl", "reasoning", "input", "cost",
                               "contextWindow", "maxTokens"]
    assert opus["provider"] == "anthropic" and opus["baseUrl"] == "https://api.anthropic.com"
    assert opus["thinkingLevelMap"]["off"] is None
    assert "type" not in opus


def test_placeholder_model_matches_pi():
    assert PLACEHOLDER_MODEL == {
        "id": "unknown", "name": "unknown", "api": "unknown", "provider": "unknown", "baseUrl": "",
        "reasoning": False, "input": [], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 0, "maxTokens": 0,
    }


def test_locale_key_orders_like_localecompare():
    # ICU root order: punctuation before digits before letters, case only breaks ties.
    words = ["b", "B", "a-b", "a.b", "a_b", "a1", "A", "a"]
    assert sorted(words, key=locale_key) == ["a", "A", "a_b", "a-b", "a.b", "a1", "b", "B"]


# ----------------------------------------------------------------------------- availability


def test_only_faux_available_without_keys(tmp_path):
    registry = make_registry(tmp_path)
    assert [m["id"] for m in registry.available_models()] == ["faux-1"]
    assert len(registry.all_models()) > 1000


def test_env_key_makes_provider_available(tmp_path, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test")
    registry = make_registry(tmp_path)
    assert {m["provider"] for m in registry.available_models()} == {"groq", "faux"}


def test_default_model_prefers_provider_default(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    registry = make_registry(tmp_path)
    chosen = default_model(registry, None, None, [])
    assert chosen is not None and (chosen["provider"], chosen["id"]) == ("anthropic", "claude-opus-5-5")


def test_default_model_uses_saved_setting_only_with_auth(tmp_path, monkeypatch):
    registry = make_registry(tmp_path)
    assert default_model(registry, "openai", "gpt-4o", []) is None  # faux is never picked implicitly
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    chosen = default_model(make_registry(tmp_path), "openai", "gpt-4o", [])
    assert chosen is not None and chosen["id"] == "gpt-4o"


def test_default_model_first_scoped_wins(tmp_path):
    registry = make_registry(tmp_path)
    faux = registry.find("faux", "faux-1")
    assert faux is not None
    assert default_model(registry, "openai", "gpt-4o", [faux]) is faux


# ----------------------------------------------------------------------------- resolution


def test_exact_id_resolves_case_insensitively(tmp_path):
    assert resolve(make_registry(tmp_path), "GPT-4O-MINI", "openai") == ("openai/gpt-4o-mini", None, [])


def test_provider_slash_id(tmp_path):
    assert resolve(make_registry(tmp_path), "openai/gpt-4o") == ("openai/gpt-4o", None, [])


def test_longest_provider_prefix_wins(tmp_path):
    # "openrouter/anthropic/..." names the openrouter provider, whose id itself contains a slash.
    registry = make_registry(tmp_path)
    found = resolve(registry, "openrouter/anthropic/claude-opus-5.5")
    assert found == ("openrouter/anthropic/claude-opus-5.5", None, [])


def test_fuzzy_prefers_alias_over_dated_id(tmp_path):
    registry = make_registry(tmp_path, {"providers": {"local": {
        "baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions", "apiKey": "x",
        "models": [{"id": "coder-20250101"}, {"id": "coder-20250601"}, {"id": "coder-a"}],
    }}})
    assert resolve(registry, "coder", "local")[0] == "local/coder-a"


def test_fuzzy_takes_greatest_id_among_aliases(tmp_path):
    registry = make_registry(tmp_path, {"providers": {"local": {
        "baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions", "apiKey": "x",
        "models": [{"id": "coder-1"}, {"id": "coder-3"}, {"id": "coder-2"}, {"id": "coder-4-20250101"}],
    }}})
    assert resolve(registry, "coder", "local")[0] == "local/coder-3"


def test_fuzzy_prefers_authenticated_provider(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    assert resolve(make_registry(tmp_path), "sonnet")[0] == "anthropic/claude-sonnet-5-5"


def test_thinking_suffix_is_split_off(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    assert resolve(make_registry(tmp_path), "anthropic/claude-opus-5-5:low") == ("anthropic/claude-opus-5-5", "low", [])


def test_invalid_suffix_stays_part_of_the_id(tmp_path):
    with pytest.raises(ModelResolutionError) as err:
        resolve(make_registry(tmp_path), "gpt-4o:bogus")
    assert str(err.value) == 'Model "gpt-4o:bogus" not found. Use --list-models to see available models.'


def test_ambiguous_across_providers(tmp_path):
    """The reference pi 1.6.0 prints this very message for ``--model gpt-6.2-sol`` without keys."""
    with pytest.raises(ModelResolutionError) as err:
        resolve(make_registry(tmp_path), "gpt-6.2-sol")
    assert str(err.value) == (
        'Model "gpt-6.2-sol" is ambiguous across providers: azure/gpt-6.2-sol, cloudflare-ai-gateway/gpt-6.2-sol, '
        "github-copilot/gpt-6.2-sol, openai-codex/gpt-6.2-sol, openai/gpt-6.2-sol, opencode/gpt-6.2-sol, "
        "radius/gpt-6.2-sol. "
        "No matching provider is authenticated. Use --provider or provider/model."
    )


def test_ambiguity_settled_by_the_authenticated_provider(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert resolve(make_registry(tmp_path), "gpt-6.2-sol")[0] == "openai/gpt-6.2-sol"


def test_inline_api_key_does_not_choose_a_provider(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(ModelResolutionError, match=r"--api-key does not choose a provider\. Use --provider"):
        resolve(make_registry(tmp_path), "gpt-6.2-sol", inline_api_key=True)


def test_unknown_provider(tmp_path):
    with pytest.raises(ModelResolutionError) as err:
        resolve(make_registry(tmp_path), "x", "nope")
    assert str(err.value) == 'Unknown provider "nope". Use --list-models to see available providers/models.'


def test_custom_model_synthesised_on_known_provider(tmp_path):
    model, level, warnings = resolve_model_pattern(make_registry(tmp_path), "anthropic/my-model:high", None)
    assert (model["id"], model["name"], model["provider"], level) == ("my-model", "my-model", "anthropic", "high")
    assert model["reasoning"] is True
    default = next(m for m in builtin_models("anthropic") if m["id"] == "claude-opus-5-5")
    assert model["contextWindow"] == default["contextWindow"] and model["api"] == default["api"]
    assert warnings == ['Model "my-model" not found for provider "anthropic". Using custom model id.']


def test_cli_thinking_keeps_suffix_in_custom_id(tmp_path):
    model, level, _ = resolve_model_pattern(make_registry(tmp_path), "foo:high", "openai", cli_thinking="low")
    assert (model["id"], level) == ("foo:high", None)


def test_unknown_model_without_provider(tmp_path):
    with pytest.raises(ModelResolutionError, match=r'^Model "nothing-like-this" not found'):
        resolve(make_registry(tmp_path), "nothing-like-this")


# ----------------------------------------------------------------------------- scope


def test_scope_globs_and_levels(tmp_path, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "gsk")
    registry = make_registry(tmp_path)
    scoped, warnings = resolve_model_scope(registry, ["groq/*:high", "faux-1", "missing-model"])
    # "*" does not cross "/": groq ids that contain a slash are not matched by "groq/*".
    flat = [m["id"] for m in builtin_models("groq") if "/" not in m["id"]]
    assert flat and len(flat) < len(builtin_models("groq"))
    assert [(m["provider"], m["id"], lvl) for m, lvl in scoped] == (
        [("groq", i, "high") for i in flat] + [("faux", "faux-1", None)])
    assert warnings == ['No models match pattern "missing-model"']


def test_scope_star_does_not_cross_slash(tmp_path, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "gsk")
    scoped, _ = resolve_model_scope(make_registry(tmp_path), ["openai/*"])
    # groq ids like "openai/gpt-oss-120b" match "openai/*" on the id alone, never by crossing "/".
    assert {m["id"] for m, _ in scoped} == {m["id"] for m in builtin_models("groq") if m["id"].count("/") == 1
                                            and m["id"].startswith("openai/")}
