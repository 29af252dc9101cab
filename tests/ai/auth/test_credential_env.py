"""A stored credential's ``env`` map (auth.json) reaches the provider's adapter and nothing else.

pi applies an ``api_key`` credential's ``env`` values as provider-scoped settings, read before the
process environment; here they must not enter ``os.environ``, a tool's process or another request.
"""

from __future__ import annotations

import os

import pytest

from pi_coding_agent.ai.auth.provider_env import REQUEST_ENV
from pi_coding_agent.ai.models.catalog import builtin_models
from pi_coding_agent.ai.stream import StreamOptions, stream
from tests.coding.cli.test_auth_cli import home
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_helpers import RpcProcess

AZURE = next(m for m in builtin_models("azure") if m["api"] == "azure-openai-responses")


@pytest.fixture(autouse=True)
def no_azure_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_OPENAI_BASE_URL", "AZURE_OPENAI_DEPLOYMENT_NAME_MAP", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


async def test_request_env_is_read_by_the_adapter_and_stays_out_of_os_environ(fake_llm: FakeLLMServer):
    fake_llm.add({"content": [{"type": "text", "text": "scoped"}]}, {"content": [{"type": "text", "text": "x"}]})
    env = {"AZURE_OPENAI_BASE_URL": f"{fake_llm.url}/openai/v1", "AZURE_OPENAI_DEPLOYMENT_NAME_MAP": f"{AZURE['id']}=prod"}
    s = stream(AZURE, {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]},
               StreamOptions(api_key="azure-key-1", env=env))
    msg = await s.result()
    assert msg["content"][0]["text"] == "scoped", msg.get("errorMessage")
    assert fake_llm.requests[0]["path"].startswith("/openai/v1/responses") and fake_llm.requests[0]["body"]["model"] == "prod"
    assert "AZURE_OPENAI_BASE_URL" not in os.environ and REQUEST_ENV.get() is None
    unscoped = await stream(AZURE, {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]},
                            StreamOptions(api_key="azure-key-1")).result()
    assert unscoped["stopReason"] == "error" and "AZURE_OPENAI_BASE_URL" in str(unscoped.get("errorMessage"))


@pytest.mark.slow
async def test_stored_env_configures_azure_over_rpc_and_never_reaches_a_tool_process(tmp_path, fake_llm: FakeLLMServer):
    base = f"{fake_llm.url}/openai/v1"
    env = home(tmp_path, {"azure": {"type": "api_key", "key": "azure-key-1", "env": {
        "AZURE_OPENAI_BASE_URL": base, "AZURE_OPENAI_DEPLOYMENT_NAME_MAP": f"{AZURE['id']}=prod-deploy"}}})
    fake_llm.add({"content": [{"type": "text", "text": "from azure"}]})
    pi = await RpcProcess.pi("--no-session", "--model", f"azure/{AZURE['id']}", cwd=tmp_path, env=env)
    try:
        assert (await pi.request({"type": "prompt", "message": "hi"}))["success"] is True
        end = (await pi.read_until(lambda r: r.get("type") == "agent_end"))[-1]
        assert end["messages"][-1]["content"][0]["text"] == "from azure", end["messages"][-1].get("errorMessage")
        request = fake_llm.requests[0]
        assert request["path"].startswith("/openai/v1/responses") and request["body"]["model"] == "prod-deploy"
        assert request["headers"]["api-key"] == "azure-key-1"
        shell = await pi.request({"type": "bash", "command": "env"})
        assert shell["success"] is True and "HOME=" in shell["data"]["output"]
        assert "AZURE_OPENAI" not in shell["data"]["output"] and base not in shell["data"]["output"]
    finally:
        await pi.kill()


async def test_long_cache_retention_from_the_credential_env(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch):
    """``PI_CACHE_RETENTION=long`` in a stored credential's ``env`` gives one-hour cache marks, as in pi."""
    monkeypatch.delenv("PI_CACHE_RETENTION", raising=False)
    fake_llm.add({"content": [{"type": "text", "text": "a"}]}, {"content": [{"type": "text", "text": "b"}]})
    model = {**next(m for m in builtin_models("anthropic") if m["id"] == "claude-sonnet-4-5"), "baseUrl": fake_llm.url}
    context = {"systemPrompt": "Be brief.", "messages": [{"role": "user", "content": "hi", "timestamp": 0}]}
    for env in ({}, {"PI_CACHE_RETENTION": "long"}):
        msg = await stream(model, context, StreamOptions(api_key="sk-ant-1", env=env)).result()  # type: ignore[arg-type]
        assert msg["stopReason"] == "stop", msg.get("errorMessage")
    short, long = (r["body"]["system"][-1]["cache_control"] for r in fake_llm.requests)
    assert short == {"type": "ephemeral"} and long == {"type": "ephemeral", "ttl": "1h"}
    assert StreamOptions(cache_retention="none", env={"PI_CACHE_RETENTION": "long"}).cache_retention == "none"
