"""Vendor objects: keys and the model registry ask a vendor by provider id and never name one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pi_coding_agent.ai.auth.keys import AuthStorage
from pi_coding_agent.ai.models.catalog import ModelRegistry
from pi_coding_agent.ai.providers import vendor, vendor_for
from pi_coding_agent.ai.providers.vendor import BUILTIN, builtin_spec

AI = Path(__file__).parents[3] / "src/pi_coding_agent/ai"


@pytest.mark.parametrize("folder", ["auth", "models"])
def test_keys_and_catalog_name_no_vendor(folder: str):
    named = [f"{path.relative_to(AI)}:{n}" for path in sorted((AI / folder).rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if re.search(r"llama|radius", line, re.I)]
    assert named == []


def test_every_builtin_vendor_is_found_by_its_provider_id():
    for provider in BUILTIN:
        own = vendor(provider)
        assert own is not None and own.id == provider
    assert vendor("anthropic") is None


def test_a_models_json_sign_in_gateway_is_served_by_that_vendor(tmp_path: Path):
    (tmp_path / "models.json").write_text(json.dumps({"providers": {"acme": {
        "oauth": "radius", "baseUrl": "acme.example/v1", "name": "Acme", "api": "pi-messages"}}}))
    registry = ModelRegistry(tmp_path, AuthStorage(tmp_path))
    assert vendor_for("acme", registry.config("acme")) is vendor("radius")
    assert vendor_for("acme", {"oauth": "radius"}) is None  # no baseUrl: no gateway of its own
    spec = registry.auth.oauth_spec("acme")
    assert spec is not None and (spec.id, spec.title, spec.login is not None) == ("acme", "Acme", True)
    builtin = builtin_spec("radius")
    assert builtin is not None and builtin.title == "Radius"


def test_the_router_key_comes_from_its_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("LLAMA_BASE_URL", raising=False)
    monkeypatch.delenv("LLAMA_API_KEY", raising=False)
    auth = AuthStorage(tmp_path)
    assert auth.api_key("llama.cpp") is None and not auth.has_auth("llama.cpp")
    monkeypatch.setenv("LLAMA_BASE_URL", "http://127.0.0.1:1/v1")
    assert auth.api_key("llama.cpp") == "local" and auth.has_auth("llama.cpp")
    monkeypatch.setenv("LLAMA_API_KEY", "router-key")
    assert auth.api_key("llama.cpp") == "router-key"
    monkeypatch.setenv("LLAMA_BASE_URL", "ftp://nowhere")
    assert auth.api_key("llama.cpp") is None and not auth.has_auth("llama.cpp")


def test_a_switched_off_vendor_provider_is_not_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("LLAMA_BASE_URL", raising=False)
    auth = AuthStorage(tmp_path)
    assert "llama.cpp" in ModelRegistry(tmp_path, auth).providers()
    off = ModelRegistry(tmp_path, auth, switched_off=("llama.cpp",))
    assert "llama.cpp" not in off.providers() and off.provider_models("llama.cpp") == []
