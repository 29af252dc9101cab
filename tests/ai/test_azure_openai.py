"""Azure OpenAI over real HTTP: deployment URLs, ``api-key`` auth, the deployment map and API version."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.ai.apis.azure_openai import MISSING_BASE_URL, base_url, deployment_map
from pi_coding_agent.ai.models.catalog import builtin_models
from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Model
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Workspace, needs_reference
from tests.support.rpc_helpers import RpcProcess

USER = {"role": "user", "content": "hi", "timestamp": 0}
AZURE_VARS = ("AZURE_OPENAI_BASE_URL", "AZURE_OPENAI_RESOURCE_NAME", "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
              "AZURE_OPENAI_API_VERSION", "AZURE_OPENAI_API_KEY")


@pytest.fixture(autouse=True)
def clean_azure(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AZURE_VARS:
        monkeypatch.delenv(name, raising=False)


def _catalog(api: str) -> Model:
    return next(m for m in builtin_models("azure") if m["api"] == api)


async def _run(model: Model, **opts: Any) -> Any:
    s = stream(model, {"messages": [USER]}, StreamOptions(api_key="azure-key-1", **opts))
    async for _ in s:
        pass
    return await s.result()


async def test_responses_go_to_the_deployment_with_api_key_and_version(fake_llm, monkeypatch) -> None:
    model = _catalog("azure-openai-responses")
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", f"{fake_llm.url}/openai/v1")
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", f"other=x, {model['id']}=prod-deploy")
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2025-04-01-preview")
    fake_llm.add({"content": [{"type": "text", "text": "from azure"}]})
    msg = await _run(model, session_id="sess-1", cache_retention="long")
    assert msg["content"][0]["text"] == "from azure", msg.get("errorMessage")
    assert msg["model"] == model["id"] and msg["api"] == "azure-openai-responses"
    request = fake_llm.requests[0]
    assert request["path"] == "/openai/v1/responses?api-version=2025-04-01-preview"
    assert request["headers"]["api-key"] == "azure-key-1"
    assert "authorization" not in request["headers"]
    body = request["body"]
    assert body["model"] == "prod-deploy" and body["prompt_cache_key"] == "sess-1"
    assert "prompt_cache_retention" not in body and body["max_output_tokens"] == model["maxTokens"]


async def test_chat_completions_model_uses_bearer_at_the_azure_base(fake_llm, monkeypatch) -> None:
    model = _catalog("openai-completions")
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", f"{fake_llm.url}/openai/v1")
    fake_llm.add({"content": [{"type": "text", "text": "chat"}]})
    msg = await _run(model)
    assert msg["content"][0]["text"] == "chat", msg.get("errorMessage")
    request = fake_llm.requests[0]
    assert request["path"] == "/openai/v1/chat/completions"
    assert request["headers"]["authorization"] == "Bearer azure-key-1"
    assert request["body"]["model"] == model["id"]


async def test_http_error_is_prefixed_and_keyless_request_refused(fake_llm, monkeypatch) -> None:
    model = _catalog("azure-openai-responses")
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", fake_llm.url)
    fake_llm.add({"status": 401, "body": {"error": {"code": "401", "message": "Access denied due to invalid key."}}})
    msg = await _run(model)
    assert msg["errorMessage"] == (
        'Azure OpenAI API error (401): {"code":"401","message":"Access denied due to invalid key."}')
    s = stream(model, {"messages": [USER]}, StreamOptions())
    assert (await s.result())["errorMessage"] == "No API key for provider: azure"


def test_base_url_resolution(monkeypatch) -> None:
    model = _catalog("azure-openai-responses")
    with pytest.raises(Exception, match="Azure OpenAI base URL is required") as err:
        base_url(model)
    assert str(err.value) == MISSING_BASE_URL
    monkeypatch.setenv("AZURE_OPENAI_RESOURCE_NAME", "contoso")
    assert base_url(model) == "https://contoso.openai.azure.com/openai/v1"
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", "https://contoso.cognitiveservices.azure.com/openai/")
    assert base_url(model) == "https://contoso.cognitiveservices.azure.com/openai/v1"
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", "https://proxy.example.com/azure/")
    assert base_url(model) == "https://proxy.example.com/azure"


def test_deployment_map_reads_like_pi() -> None:
    assert deployment_map("a=x, b = y ,a=z,bad,=q,c=d=e,") == {"a": "z", "b": "y", "c": "d"}
    assert deployment_map(None) == {}


async def test_rpc_prompt_reaches_azure_through_the_environment(fake_llm, tmp_path: Path) -> None:
    """The real ``pi --mode rpc``: credentials and endpoint from the environment only."""
    model = _catalog("azure-openai-responses")
    env = {k: v for k, v in os.environ.items() if k not in AZURE_VARS}
    env.update(HOME=str(tmp_path), PI_CODING_AGENT_DIR=str(tmp_path / "agent"),
               AZURE_OPENAI_API_KEY="azure-rpc-secret", AZURE_OPENAI_BASE_URL=f"{fake_llm.url}/openai/v1",
               AZURE_OPENAI_DEPLOYMENT_NAME_MAP=f"{model['id']}=rpc-deploy")
    fake_llm.add({"content": [{"type": "text", "text": "hello from the deployment"}]})
    pi = await RpcProcess.pi("--provider", "azure", "--model", model["id"], "--no-session", cwd=tmp_path, env=env)
    try:
        response = await pi.request({"type": "prompt", "message": "hi"})
        assert response["success"] is True
        records = await pi.read_until(lambda r: r.get("type") == "agent_settled")
        text = await pi.request({"type": "get_last_assistant_text"})
        assert text["data"] == {"text": "hello from the deployment"}
    finally:
        await pi.kill()
    request = fake_llm.requests[0]
    assert request["path"].startswith("/openai/v1/responses?api-version=v1")
    assert request["headers"]["api-key"] == "azure-rpc-secret"
    assert request["body"]["model"] == "rpc-deploy"
    assert "azure-rpc-secret" not in json.dumps(records) + "".join(line.decode() for line in pi.raw_lines)


async def _azure_body(kind: str, root: Path) -> dict[str, Any]:
    """One prompt to an ``azure-openai-responses`` model that says it takes no ``max_output_tokens``."""
    with FakeLLMServer() as server:
        workspace = Workspace.create(root / kind, server.url)
        workspace.set_model("azure-openai-responses", {"supportsMaxOutputTokens": False}, contextWindow=8000)
        server.add({"content": [{"type": "text", "text": "ok"}]})
        pi = await workspace.spawn(kind, "--no-session")
        try:
            assert (await pi.request({"type": "prompt", "message": "hi"}))["success"] is True
            await pi.read_until(lambda record: record.get("type") == "agent_settled")
        finally:
            await pi.kill()
        body: dict[str, Any] = server.requests[0]["body"]
        return body


@pytest.mark.slow
async def test_azure_sends_the_output_cap_whatever_supports_max_output_tokens_says(tmp_path: Path) -> None:
    """pi's Azure dialect has no ``supportsMaxOutputTokens`` check: the cap (fitted into the 8,000-token
    window) is sent anyway, where the plain Responses API leaves it out."""
    body = await _azure_body("ours", tmp_path)
    assert 16 <= body["max_output_tokens"] < 8000 and body["store"] is False


@needs_reference
async def test_azure_body_matches_reference(tmp_path: Path) -> None:
    """The same fields and tool flags (the cap's value differs only by the lengths of the two system
    prompts, the tools by their descriptions, both written in each project's own words)."""
    ours, reference = await _azure_body("ours", tmp_path), await _azure_body("reference", tmp_path)
    assert ours.keys() == reference.keys() and "max_output_tokens" in reference
    assert ours["store"] == reference["store"] and ours["stream"] == reference["stream"]

    def flags(body: dict[str, Any]) -> list[tuple[str, Any]]:
        return [(tool["name"], tool.get("strict")) for tool in body["tools"]]
    assert flags(ours) == flags(reference)


def test_azure_sends_the_cache_key_even_without_cache_retention() -> None:
    """pi's Azure dialect sends ``prompt_cache_key`` whatever the retention; only
    ``promptCacheKeyMode: "disabled"`` leaves it out."""
    from pi_coding_agent.ai.apis.azure_openai import responses_body

    model = _catalog("azure-openai-responses")
    options = StreamOptions(session_id="s" * 80, cache_retention="none")
    assert responses_body(model, {"messages": [USER]}, options)["prompt_cache_key"] == "s" * 64
    disabled: Model = {**model, "compat": {"promptCacheKeyMode": "disabled"}}
    assert "prompt_cache_key" not in responses_body(disabled, {"messages": [USER]}, options)
