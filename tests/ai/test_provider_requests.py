"""What every provider request shares: provider-level retries, identity headers, cache retention, httpProxy."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.ai.identity import (
    install_telemetry_enabled,
    opencode_session_headers,
    user_agent,
    with_identity,
)
from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Model
from pi_coding_agent.coding.resources.provider_settings import provider_request_options
from pi_coding_agent.coding.resources.settings import Settings
from tests.support.cli_sides import FAKE_MODEL, fake_agent_env, needs_reference, pi_command
from tests.support.rpc_helpers import RpcProcess

USER = {"role": "user", "content": "hi", "timestamp": 0}


def _model(url: str) -> Model:
    return {"id": "m1", "name": "m1", "api": "openai-completions", "provider": "custom", "baseUrl": f"{url}/v1",
            "reasoning": False, "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 100000, "maxTokens": 1000}


async def _result(model: Model, **opts: Any) -> Any:
    s = stream(model, {"messages": [USER]}, StreamOptions(api_key="k", **opts))
    async for _ in s:
        pass
    return await s.result()


async def test_provider_retries_recover_from_a_transient_status(fake_llm) -> None:
    busy = {"status": 503, "body": {"error": {"message": "busy"}}, "headers": {"retry-after-ms": "10"}}
    fake_llm.add(busy, busy, {"content": [{"type": "text", "text": "third time"}]})
    msg = await _result(_model(fake_llm.url), max_retries=2)
    assert msg["content"][0]["text"] == "third time" and len(fake_llm.requests) == 3


async def test_no_provider_retries_by_default_and_none_for_client_errors(fake_llm) -> None:
    fake_llm.add({"status": 503, "body": {"error": {"message": "busy"}}})
    assert (await _result(_model(fake_llm.url)))["errorMessage"] == '503: {"message":"busy"}'
    fake_llm.add({"status": 400, "body": {"error": {"message": "bad request"}}})
    assert (await _result(_model(fake_llm.url), max_retries=3))["errorMessage"] == '400: {"message":"bad request"}'
    assert len(fake_llm.requests) == 2


async def test_a_server_wait_past_the_limit_fails_at_once(fake_llm) -> None:
    fake_llm.add({"status": 429, "body": {"error": {"message": "slow down"}}, "headers": {"retry-after": "120"}})
    msg = await _result(_model(fake_llm.url), max_retries=2, max_retry_delay_ms=60000)
    assert msg["errorMessage"] == 'Server requested 120s retry delay (max: 60s). 429: {"message":"slow down"}'
    assert len(fake_llm.requests) == 1


async def test_identity_headers_rank_below_configured_ones(fake_llm) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "a"}]}, {"content": [{"type": "text", "text": "b"}]})
    await _result(_model(fake_llm.url))
    await _result(_model(fake_llm.url), headers={"user-agent": "custom-agent/1"})
    first, second = (r["headers"]["user-agent"] for r in fake_llm.requests)
    assert first == user_agent() and first.startswith("pi/1.6.0 (") and second == "custom-agent/1"


def test_attribution_headers_follow_pi(monkeypatch) -> None:
    monkeypatch.delenv("PI_TELEMETRY", raising=False)
    openrouter = with_identity("https://openrouter.ai/api/v1/chat/completions", {})
    assert openrouter["HTTP-Referer"] == "https://pi.dev" and openrouter["X-OpenRouter-Title"] == "pi"
    assert openrouter["X-OpenRouter-Categories"] == "cli-agent"
    assert with_identity("https://integrate.api.nvidia.com/v1", {})["X-BILLING-INVOKE-ORIGIN"] == "Pi"
    assert with_identity("https://opencode.ai/zen/v1", {})["x-opencode-client"] == "pi"
    assert set(with_identity("https://api.openai.com/v1", {})) == {"User-Agent"}
    assert with_identity("http://proxy.local/v1", {}, provider="openrouter")["X-OpenRouter-Title"] == "pi"
    assert with_identity("http://proxy.local/v1", {}, provider="nvidia")["X-BILLING-INVOKE-ORIGIN"] == "Pi"
    assert with_identity("http://proxy.local/v1", {}, provider="opencode-go")["x-opencode-client"] == "pi"
    monkeypatch.setenv("PI_TELEMETRY", "0")
    assert set(with_identity("https://openrouter.ai/api/v1", {})) == {"User-Agent"}


def test_install_telemetry_is_the_environment_when_set_else_the_setting(monkeypatch) -> None:
    monkeypatch.delenv("PI_TELEMETRY", raising=False)
    assert install_telemetry_enabled() and install_telemetry_enabled(True) and not install_telemetry_enabled(False)
    for value, enabled in (("1", True), ("TRUE", True), ("yes", True), ("0", False), ("2", False), ("", False)):
        monkeypatch.setenv("PI_TELEMETRY", value)
        assert install_telemetry_enabled(False) is enabled and install_telemetry_enabled(True) is enabled, value
    monkeypatch.delenv("PI_TELEMETRY")
    assert set(with_identity("https://openrouter.ai/api/v1", {}, attribution=False)) == {"User-Agent"}


def test_opencode_session_header_for_opencode_targets_only() -> None:
    assert opencode_session_headers("opencode", "https://example.test/v1", "s1") == {"x-opencode-session": "s1"}
    assert opencode_session_headers("mine", "https://opencode.ai/zen/v1", "s1") == {"x-opencode-session": "s1"}
    assert opencode_session_headers("mine", "https://example.test/v1", "s1") == {}
    assert opencode_session_headers("opencode", "https://opencode.ai/zen/v1", None) == {}


ATTRIBUTION = ("http-referer", "x-openrouter-title", "x-openrouter-categories")


@needs_reference
def test_attribution_headers_follow_the_telemetry_setting_like_the_reference(fake_llm, tmp_path: Path) -> None:
    """Ours and pi 1.6.0, one print-mode prompt per case, against an OpenRouter-looking base URL."""
    cases = [({}, None), ({"enableInstallTelemetry": False}, None), ({"enableInstallTelemetry": False}, "1"),
             ({}, "0")]
    seen: dict[str, list[dict[str, str]]] = {}
    for kind in ("ours", "reference"):
        for index, (settings, telemetry) in enumerate(cases):
            fake_llm.add({"content": [{"type": "text", "text": "ok"}]})
            env = fake_agent_env(tmp_path / f"{kind}-{index}", f"{fake_llm.url}/openrouter.ai", settings)
            env.pop("PI_TELEMETRY", None)
            if telemetry is not None:
                env["PI_TELEMETRY"] = telemetry
            argv, env = pi_command(kind, [*FAKE_MODEL, "--no-session", "-p", "hi"], env)
            subprocess.run(argv, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
                           check=True)
            headers = fake_llm.requests[-1]["headers"]
            seen.setdefault(kind, []).append({name: headers[name] for name in ATTRIBUTION if name in headers})
    assert seen["ours"] == seen["reference"]
    assert [bool(h) for h in seen["ours"]] == [True, False, True, False]


def test_cache_retention_long_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("PI_CACHE_RETENTION", raising=False)
    assert StreamOptions().cache_retention == "short"
    monkeypatch.setenv("PI_CACHE_RETENTION", "long")
    assert StreamOptions().cache_retention == "long"


def test_provider_retry_settings(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PI_TELEMETRY", raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(name, "")  # recorded, so the value the code under test sets is undone afterwards
        monkeypatch.delenv(name)
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({
        "httpIdleTimeoutMs": 5000, "httpProxy": " http://proxy.local:3128 ",
        "retry": {"provider": {"maxRetries": 2, "maxRetryDelayMs": 0}}}))
    settings = Settings.load(agent, tmp_path, project_trusted=False)
    assert provider_request_options(settings) == {
        "attribution": True, "transport": "auto", "websocket_connect_timeout_s": 15.0,
        "idle_timeout_s": 5.0, "max_retries": 2, "max_retry_delay_ms": 0}
    assert os.environ["HTTP_PROXY"] == os.environ["HTTPS_PROXY"] == "http://proxy.local:3128"
    (agent / "settings.json").write_text(json.dumps({"retry": {"provider": {"timeoutMs": 0}}}))
    assert provider_request_options(Settings.load(agent, tmp_path, project_trusted=False))["idle_timeout_s"] is None


def test_transport_settings(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PI_TELEMETRY", raising=False)
    agent = tmp_path / "agent"
    agent.mkdir()

    def options(settings: dict[str, Any]) -> dict[str, Any]:
        (agent / "settings.json").write_text(json.dumps(settings))
        found = provider_request_options(Settings.load(agent, tmp_path, project_trusted=False))
        return {k: found[k] for k in ("transport", "websocket_connect_timeout_s", "attribution", "idle_timeout_s")}

    assert options({}) == {"transport": "auto", "websocket_connect_timeout_s": 15.0, "attribution": True,
                           "idle_timeout_s": 300.0}
    assert options({"transport": "sse", "websocketConnectTimeoutMs": 2500.9, "enableInstallTelemetry": False,
                    "httpIdleTimeoutMs": "disabled"}) == {
        "transport": "sse", "websocket_connect_timeout_s": 2.5, "attribution": False, "idle_timeout_s": None}
    assert options({"websockets": True, "websocketConnectTimeoutMs": "disabled"})["transport"] == "websocket"
    assert options({"websockets": False, "websocketConnectTimeoutMs": 0})["websocket_connect_timeout_s"] is None
    assert options({"transport": "carrier-pigeon", "websocketConnectTimeoutMs": -5}) == {
        "transport": "auto", "websocket_connect_timeout_s": 15.0, "attribution": True, "idle_timeout_s": 300.0}


@pytest.mark.slow
async def test_http_proxy_setting_routes_requests_through_the_proxy(fake_llm, tmp_path: Path) -> None:
    """The real ``pi --mode rpc``: the fake server plays the proxy for an unresolvable host."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"httpProxy": fake_llm.url}))
    (agent / "models.json").write_text(json.dumps({"providers": {"far": {
        "baseUrl": "http://llm.example.invalid/v1", "api": "openai-completions", "apiKey": "far-key",
        "models": [{"id": "m1", "contextWindow": 100000, "maxTokens": 1000}]}}}))
    env = {k: v for k, v in os.environ.items() if k.upper() not in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")}
    env.update(HOME=str(tmp_path), PI_CODING_AGENT_DIR=str(agent))
    fake_llm.add({"content": [{"type": "text", "text": "via proxy"}]})
    pi = await RpcProcess.pi("--provider", "far", "--model", "m1", "--no-session", cwd=tmp_path, env=env)
    try:
        assert (await pi.request({"type": "prompt", "message": "hi"}))["success"] is True
        await pi.read_until(lambda r: r.get("type") == "agent_settled")
        assert (await pi.request({"type": "get_last_assistant_text"}))["data"] == {"text": "via proxy"}
    finally:
        await pi.kill()
    assert fake_llm.requests[0]["path"] == "http://llm.example.invalid/v1/chat/completions"


@needs_reference
def test_opencode_identity_headers_match_the_reference(fake_llm, tmp_path: Path) -> None:
    """A provider named opencode behind another host: attribution by URL is off, the session header is on."""
    seen = {}
    for kind in ("ours", "reference"):
        fake_llm.add({"content": [{"type": "text", "text": "ok"}]})
        home = tmp_path / kind
        agent = home / "agent"
        agent.mkdir(parents=True)
        (agent / "models.json").write_text(json.dumps({"providers": {"opencode": {"baseUrl": f"{fake_llm.url}/v1"}}}))
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1",
               "OPENCODE_API_KEY": "oc-key"}
        argv, env = pi_command(kind, ["--provider", "opencode", "--model", "big-pickle", "-p", "hi"], env)
        subprocess.run(argv, env=env, cwd=home, stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
                       check=True)
        headers = fake_llm.requests[-1]["headers"]
        seen[kind] = sorted(name for name in headers if name.startswith("x-opencode"))
        assert len(headers.get("x-opencode-session", "")) >= 8, kind
    assert seen["ours"] == seen["reference"]
