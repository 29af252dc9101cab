"""models.json ``compat`` switches, sampling parameters and the output cap, on the wire, beside pi 1.6.0.

Each scenario is a models.json provider (vLLM/Qwen, llama.cpp, gateways in front of Claude, the other
reasoning dialects) and pi arguments; both pis answer one prompt from the same fake server and the
first request bodies and session-affinity headers must match. The scratch directories of the two
runs have names of equal length, so the system prompts (which hold the cwd) count the same tokens
and the output cap, fitted into the context window, must come out equal.

The tests after the side-by-side ones assert the same facts on our process alone.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Conversation, Workspace, needs_reference

QWEN_SAMPLING = {"samplingParams": {"top_k": 20, "min_p": 0, "temperature": 0.6, "top_p": 0.95},
                 "samplingParamsByThinkingLevel": {"off": {"temperature": 0.7, "top_p": 0.8},
                                                   "high": {"presence_penalty": 1.5}}}
VLLM_QWEN = {"api": "openai-completions", "compat": {
    "thinkingFormat": "qwen-chat-template", "supportsThinkingTokenBudget": True, "vllmPriority": -5,
    "maxTokensField": "max_tokens", "supportsStore": False, "sendSessionAffinityHeaders": True},
    "model": {"reasoning": True, "contextWindow": 8000, "maxTokens": 4096, **QWEN_SAMPLING}}
LLAMA_CPP = {"api": "openai-completions", "compat": {
    "thinkingFormat": "chat-template", "thinkingTokenBudgetField": "thinking_budget_tokens",
    "chatTemplateKwargs": {"enable_thinking": {"$var": "thinking.enabled"}, "budget": {"$var": "thinking.budget"},
                           "effort": {"$var": "thinking.effort", "omitWhenOff": True}, "flavour": "plain"}},
    "model": {"reasoning": True, "contextWindow": 32768, "maxTokens": 16384,
              "thinkingLevelMap": {"medium": "balanced"}}}
CLAUDE_GATEWAY = {"api": "openai-completions", "compat": {
    "cacheControlFormat": "anthropic", "supportsLongCacheRetention": True, "promptCacheKeyMode": "enabled",
    "sendSessionAffinityHeaders": True, "sessionAffinityFormat": "openrouter",
    "openRouterRouting": {"order": ["anthropic"]}, "vercelGatewayRouting": {"only": ["anthropic"]},
    "supportsStrictMode": True},
    "model": {"contextWindow": 200000, "maxTokens": 64000}}
DIALECTS = {name: {"api": "openai-completions", "compat": {"thinkingFormat": name, **extra},
                   "model": {"reasoning": True, "contextWindow": 64000, "maxTokens": 8192,
                             "thinkingLevelMap": {"low": "light", "off": "none"}}}
            for name, extra in (("zai", {}), ("qwen", {}), ("deepseek", {}), ("together", {}),
                                ("string-thinking", {}), ("ant-ling", {}), ("openrouter", {}),
                                ("baseten", {"chatTemplateArgs": {"on": {"$var": "thinking.enabled"}}}))}
RESPONSES = {"api": "openai-responses", "compat": {"supportsExplicitPromptCacheMode": True},
             "model": {"reasoning": True, "contextWindow": 8000, "maxTokens": 6000, **QWEN_SAMPLING}}

# name -> (provider configuration, thinking level, environment)
SCENARIOS: dict[str, tuple[dict[str, Any], str, dict[str, str]]] = {
    "vllm-qwen-high": (VLLM_QWEN, "high", {}),
    "vllm-qwen-off": (VLLM_QWEN, "off", {}),
    "llama-cpp-medium": (LLAMA_CPP, "medium", {}),
    "llama-cpp-off": (LLAMA_CPP, "off", {}),
    "claude-gateway-long-cache": (CLAUDE_GATEWAY, "off", {"PI_CACHE_RETENTION": "long"}),
    **{f"{name}-low": (config, "low", {}) for name, config in DIALECTS.items()},
    **{f"{name}-off": (config, "off", {}) for name, config in DIALECTS.items()},
    "responses-sampling-long-cache": (RESPONSES, "high", {"PI_CACHE_RETENTION": "long"}),
}
AFFINITY = ("session_id", "session-id", "x-session-id", "x-client-request-id", "x-session-affinity")
ARGS = ("--no-session", "--no-tools", "--system-prompt", "You are terse.")


def _provider(config: dict[str, Any], url: str) -> dict[str, Any]:
    return {"baseUrl": url + "/v1", "api": config["api"], "apiKey": "dummy", "compat": config["compat"],
            "models": [{"id": "fake-model", **config["model"]}]}


async def first_requests(kind: str, names: list[str], root: Path) -> dict[str, dict[str, Any]]:
    """For each scenario (all of one environment), the first request one pi sends for the prompt "hi".

    Every scenario is a provider of one models.json; the process switches to it with ``set_model``
    and ``set_thinking_level`` and starts a new session before each prompt.
    """
    env = SCENARIOS[names[0]][2]
    with FakeLLMServer() as server:
        # "ref" and "our": equal lengths, so both system prompts (holding the cwd) estimate the same
        workspace = Workspace.create(root / ("ref" if kind == "reference" else "our"), server.url,
                                     {"retry": {"enabled": False}})
        providers = {name: _provider(SCENARIOS[name][0], server.url) for name in names}
        providers["fake"] = providers[names[0]]  # the provider the process starts with
        (workspace.agent_dir / "models.json").write_text(json.dumps({"providers": providers}))
        workspace.env.update(env)
        proc = await workspace.spawn(kind, *ARGS)
        conversation = Conversation(proc, server, workspace)
        found: dict[str, dict[str, Any]] = {}
        try:
            for name in names:
                for command in ({"type": "new_session"},
                                {"type": "set_model", "provider": name, "modelId": "fake-model"},
                                {"type": "set_thinking_level", "level": SCENARIOS[name][1]}):
                    assert (await conversation.request(command))["success"], command
                sent = len(server.requests)
                await conversation.prompt("hi")
                found[name] = _normalized(server.requests[sent], workspace)
        finally:
            await proc.kill()
        return found


def _normalized(request: dict[str, Any], workspace: Workspace) -> dict[str, Any]:
    body = json.loads(json.dumps(request["body"]).replace(str(workspace.cwd), "<cwd>"))
    if "prompt_cache_key" in body:  # the session id, random per run
        body["prompt_cache_key"] = "<session>"
    return {"body": body, "headers": request["headers"], "sent": request["body"]}


async def first_request(name: str, root: Path) -> dict[str, Any]:
    """Our process alone, one scenario."""
    return (await first_requests("ours", [name], root))[name]


def affinity(headers: dict[str, str]) -> dict[str, str]:
    """Session-affinity headers with the session id (random per run) replaced by a placeholder."""
    found = {k: v for k, v in headers.items() if k in AFFINITY}
    assert len(set(found.values())) <= 1, found
    return {k: "<session>" for k in found}


ENVIRONMENTS = sorted({json.dumps(env, sort_keys=True) for _config, _level, env in SCENARIOS.values()})


@needs_reference
@pytest.mark.parametrize("environment", ENVIRONMENTS)
async def test_requests_match_the_reference(environment: str, tmp_path: Path) -> None:
    names = [name for name, (_c, _l, env) in SCENARIOS.items() if json.dumps(env, sort_keys=True) == environment]
    reference = await first_requests("reference", names, tmp_path / "r")
    ours = await first_requests("ours", names, tmp_path / "o")
    for name in names:
        assert ours[name]["body"] == reference[name]["body"], name
        assert affinity(ours[name]["headers"]) == affinity(reference[name]["headers"]), name


# --------------------------------------------------------------------------- ours alone


@pytest.mark.slow
async def test_vllm_qwen_request_carries_the_configured_sampling_and_budget(tmp_path: Path) -> None:
    body = (await first_request("vllm-qwen-high", tmp_path))["sent"]
    # the 8000-token window minus the estimated input (3.5 characters a token) minus the 4096 margin
    system = body["messages"][0]["content"]
    estimate = math.ceil(len(system) / 3.5) + math.ceil(len("hi") / 3.5)  # no tools
    assert body["max_tokens"] == 8000 - estimate - 4096
    assert body["thinking_token_budget"] == body["max_tokens"] - 1024  # the rest is left for the answer
    assert body["chat_template_kwargs"] == {"enable_thinking": True, "preserve_thinking": True}
    assert body["priority"] == -5 and "store" not in body
    assert {k: body[k] for k in ("top_k", "min_p", "temperature", "top_p", "presence_penalty")} == {
        "top_k": 20, "min_p": 0, "temperature": 0.6, "top_p": 0.95, "presence_penalty": 1.5}


@pytest.mark.slow
async def test_thinking_off_uses_the_off_sampling_and_no_budget(tmp_path: Path) -> None:
    body = (await first_request("vllm-qwen-off", tmp_path))["body"]
    assert body["temperature"] == 0.7 and body["top_p"] == 0.8 and "presence_penalty" not in body
    assert "thinking_token_budget" not in body
    assert body["chat_template_kwargs"]["enable_thinking"] is False


@pytest.mark.slow
async def test_llama_cpp_chat_template_values_resolve(tmp_path: Path) -> None:
    body = (await first_request("llama-cpp-medium", tmp_path))["body"]
    assert body["chat_template_kwargs"] == {"enable_thinking": True, "budget": 8192, "effort": "balanced",
                                            "flavour": "plain"}
    assert body["thinking_budget_tokens"] == 8192
    off = (await first_request("llama-cpp-off", tmp_path / "off"))["body"]
    assert off["chat_template_kwargs"] == {"enable_thinking": False, "flavour": "plain"}


@pytest.mark.slow
async def test_claude_gateway_marks_cache_breakpoints_and_routes(tmp_path: Path) -> None:
    request = await first_request("claude-gateway-long-cache", tmp_path)
    body = request["body"]
    control = {"type": "ephemeral", "ttl": "1h"}
    assert body["messages"][0]["content"][-1]["cache_control"] == control  # the system prompt
    assert body["messages"][-1]["content"] == [{"type": "text", "text": "hi", "cache_control": control}]
    assert body["prompt_cache_retention"] == "24h" and body["prompt_cache_key"]
    assert body["provider"] == {"order": ["anthropic"]}
    assert body["providerOptions"] == {"gateway": {"only": ["anthropic"]}}
    assert affinity(request["headers"]) == {"x-session-id": "<session>"}
    assert re.fullmatch(r"[0-9a-f-]{36}", request["headers"]["x-session-id"])
