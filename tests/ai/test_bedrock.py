"""Amazon Bedrock Converse stream over real HTTP: binary event-stream frames, bearer and SigV4 auth."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.ai.apis.bedrock_converse import build_request
from pi_coding_agent.ai.auth import aws as aws_auth
from pi_coding_agent.ai.errors import is_retryable_error
from pi_coding_agent.ai.models.catalog import builtin_models
from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.thinking import clamp_max_tokens
from pi_coding_agent.ai.types import Model
from tests.support.fakes.sigv4 import verify

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
USER = {"role": "user", "content": "hi", "timestamp": 0}
AWS_VARS = ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
            "AWS_DEFAULT_REGION", "AWS_BEARER_TOKEN_BEDROCK", "AWS_BEDROCK_SKIP_AUTH", "AWS_BEDROCK_FORCE_CACHE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")


@pytest.fixture(autouse=True)
def clean_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    aws_auth._chains.clear()


def _model(url: str, model_id: str = CLAUDE, **over: Any) -> Model:
    catalog = next(m for m in builtin_models("amazon-bedrock") if m["id"] == model_id)
    return {**catalog, "baseUrl": url, **over}  # type: ignore[typeddict-item]


async def _run(model: Model, context: Any = None, **opts: Any) -> tuple[list[dict[str, Any]], Any]:
    s = stream(model, context or {"systemPrompt": "Be brief.", "messages": [USER]}, StreamOptions(**opts))
    events = [ev async for ev in s]
    return events, await s.result()


SCRIPT = {"content": [{"type": "thinking", "thinking": "Let me check.", "signature": "sig-1"},
                      {"type": "text", "text": "Looking now."},
                      {"type": "toolCall", "id": "tooluse_1", "name": "bash", "arguments": {"command": "ls -la"}}],
          "usage": {"input": 120, "output": 40, "cacheRead": 900, "cacheWrite": 30}, "chunkSize": 4}


def test_catalog_has_pi_bedrock_models() -> None:
    models = builtin_models("amazon-bedrock")
    assert len(models) > 200
    assert {m["api"] for m in models} == {"bedrock-converse-stream"}
    assert any(m["baseUrl"] == "https://bedrock-runtime.eu-central-1.amazonaws.com" for m in models)


async def test_bearer_token_stream_with_thinking_text_and_tool_call(fake_llm, monkeypatch) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-123")
    fake_llm.add(SCRIPT)
    events, msg = await _run(_model(fake_llm.url), api_key="<authenticated>", thinking_level="high")
    request = fake_llm.requests[0]
    assert request["path"] == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    assert request["headers"]["authorization"] == "Bearer bedrock-api-key-123"
    assert request["headers"]["user-agent"].startswith("pi/1.6.0 (")
    body = request["body"]
    assert body["system"] == [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}]
    assert body["messages"] == [{"role": "user", "content": [{"text": "hi"}, {"cachePoint": {"type": "default"}}]}]
    thinking = body["additionalModelRequestFields"]["thinking"]
    assert thinking["type"] == "enabled" and thinking["display"] == "summarized"
    assert body["inferenceConfig"]["maxTokens"] > thinking["budget_tokens"]
    assert [b["type"] for b in msg["content"]] == ["thinking", "text", "toolCall"]
    assert msg["content"][0] == {"type": "thinking", "thinking": "Let me check.", "thinkingSignature": "sig-1"}
    assert msg["content"][2]["arguments"] == {"command": "ls -la"}
    assert msg["stopReason"] == "toolUse" and msg["rawStopReason"] == "tool_use"
    assert (msg["usage"]["input"], msg["usage"]["cacheRead"], msg["usage"]["cacheWrite"]) == (120, 900, 30)
    assert msg["usage"]["cost"]["total"] > 0
    kinds = [e["type"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done"
    assert kinds.count("toolcall_delta") > 1 and "thinking_end" in kinds


async def test_sigv4_from_environment_keys_verifies(fake_llm, monkeypatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-token-xyz")
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    fake_llm.add({"content": [{"type": "text", "text": "signed"}]})
    _, msg = await _run(_model(fake_llm.url), temperature=0.2)
    assert msg["content"][0]["text"] == "signed", msg.get("errorMessage")
    request = fake_llm.requests[0]
    found = verify(request, fake_llm.raw_bodies[0], "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    assert found["signature"] == found["expected"]
    assert (found["accessKey"], found["region"], found["service"]) == ("AKIDEXAMPLE", "eu-west-3", "bedrock")
    assert "host" in found["signedHeaders"].split(";")
    assert request["headers"]["x-amz-security-token"] == "session-token-xyz"
    assert request["body"]["inferenceConfig"]["temperature"] == 0.2


async def test_tampered_signature_does_not_verify(fake_llm, monkeypatch) -> None:
    """The verifier itself can fail: a different secret gives a different signature."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "right-secret")
    fake_llm.add({"content": [{"type": "text", "text": "x"}]})
    await _run(_model(fake_llm.url))
    found = verify(fake_llm.requests[0], fake_llm.raw_bodies[0], "wrong-secret")
    assert found["signature"] != found["expected"]


async def test_profile_from_shared_files_signs_with_its_keys_and_region(fake_llm, monkeypatch, tmp_path) -> None:
    (tmp_path / "config").write_text("[profile work]\nregion = ap-south-1\n")
    (tmp_path / "credentials").write_text("[work]\naws_access_key_id = AKIDPROFILE\n"
                                          "aws_secret_access_key = profile-secret\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_PROFILE", "work")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDAMBIENT")  # a configured profile wins over ambient keys
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ambient-secret")
    fake_llm.add({"content": [{"type": "text", "text": "profile"}]})
    _, msg = await _run(_model(fake_llm.url))
    assert msg["stopReason"] == "stop", msg.get("errorMessage")
    found = verify(fake_llm.requests[0], fake_llm.raw_bodies[0], "profile-secret")
    assert found["signature"] == found["expected"]
    assert (found["accessKey"], found["region"]) == ("AKIDPROFILE", "ap-south-1")


async def test_exception_frame_is_a_retryable_throttling_error(fake_llm, monkeypatch) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "t")
    fake_llm.add({"content": [{"type": "text", "text": "partial"}],
                  "exception": {"type": "throttlingException", "message": "Too many requests, please wait before trying again."}})
    events, msg = await _run(_model(fake_llm.url))
    assert msg["stopReason"] == "error"
    assert msg["errorMessage"] == "Throttling error: Too many requests, please wait before trying again."
    assert is_retryable_error(msg)
    assert msg["content"][0]["text"] == "partial" and events[-1]["type"] == "error"


async def test_corrupted_frame_fails_its_crc_check(fake_llm, monkeypatch) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "t")
    fake_llm.add({"content": [{"type": "text", "text": "hello"}], "corruptFrame": 1})
    _, msg = await _run(_model(fake_llm.url))
    assert msg["stopReason"] == "error"
    assert msg["errorMessage"].startswith("Bedrock event stream:") and "Checksum mismatch" in msg["errorMessage"]


async def test_http_error_names_the_aws_exception(fake_llm, monkeypatch) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "secret-bearer")
    fake_llm.add({"status": 400, "body": {"message": "The provided model identifier is invalid."},
                  "headers": {"x-amzn-ErrorType": "ValidationException:http://internal.amazon.com/coral/"}})
    _, msg = await _run(_model(fake_llm.url))
    assert msg["errorMessage"] == "Validation error: The provided model identifier is invalid."
    assert "secret-bearer" not in msg["errorMessage"]


def test_images_tool_results_and_redacted_reasoning_convert() -> None:
    png = base64.b64encode(b"\x89PNG fake").decode()
    messages = [
        {"role": "user", "timestamp": 0,
         "content": [{"type": "text", "text": "see"}, {"type": "image", "mimeType": "image/png", "data": png}]},
        {"role": "assistant", "provider": "amazon-bedrock", "api": "bedrock-converse-stream", "model": CLAUDE,
         "timestamp": 1, "stopReason": "toolUse", "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
         "content": [{"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": "b3BhcXVl",
                      "redacted": True},
                     {"type": "toolCall", "id": "call|odd id", "name": "read", "arguments": {"path": "a", "": 1}}]},
        {"role": "toolResult", "toolCallId": "call|odd id", "toolName": "read", "isError": True, "timestamp": 2,
         "content": [{"type": "text", "text": "failed"}, {"type": "image", "mimeType": "image/jpeg", "data": png}]},
    ]
    model = _model("https://bedrock-runtime.us-east-1.amazonaws.com")
    body = build_request(model, {"messages": messages}, StreamOptions(cache_retention="long"))
    user, assistant, results = body["messages"]
    assert user["content"][1] == {"image": {"format": "png", "source": {"bytes": png}}}
    assert assistant["content"][0] == {"reasoningContent": {"redactedContent": "b3BhcXVl"}}
    assert assistant["content"][1]["toolUse"] == {"toolUseId": "call_odd_id", "name": "read", "input": {"path": "a"}}
    result = results["content"][0]["toolResult"]
    assert result == {"toolUseId": "call_odd_id", "content": [{"text": "failed"}], "status": "error"}
    assert results["content"][2] == {"image": {"format": "jpeg", "source": {"bytes": png}}}  # after, for Claude
    assert results["content"][-1] == {"cachePoint": {"type": "default", "ttl": "1h"}}


def test_adaptive_claude_takes_effort_and_gpt_oss_a_flat_effort() -> None:
    adaptive = _model("https://x", "us.anthropic.claude-opus-4-6-v1")
    fields = build_request(adaptive, {"messages": [USER]}, StreamOptions(thinking_level="medium"))
    assert fields["additionalModelRequestFields"]["thinking"]["type"] == "adaptive"
    assert fields["additionalModelRequestFields"]["output_config"] == {"effort": "medium"}
    oss = next(m for m in builtin_models("amazon-bedrock") if "gpt-oss" in m["id"] and m["reasoning"])
    body = build_request(oss, {"messages": [USER]}, StreamOptions(thinking_level="xhigh"))
    assert body["additionalModelRequestFields"] == {"reasoning_effort": "high"}
    # pi's agent sends the model's cap (fitted into the context window) for every model
    assert body["inferenceConfig"]["maxTokens"] == clamp_max_tokens(oss, {"messages": [USER]}, None)


def test_regions_and_endpoints(monkeypatch) -> None:
    catalog = "https://bedrock-runtime.us-east-1.amazonaws.com"
    assert aws_auth.region_for(CLAUDE, catalog) == "us-east-1"
    assert aws_auth.endpoint_for(catalog, "us-east-1") == catalog
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert aws_auth.region_for(CLAUDE, catalog) == "eu-west-1"
    assert aws_auth.endpoint_for(catalog, "eu-west-1") == "https://bedrock-runtime.eu-west-1.amazonaws.com"
    arn = "arn:aws:bedrock:ap-northeast-1:123456789012:application-inference-profile/abc"
    assert aws_auth.region_for(arn, catalog) == "ap-northeast-1"
    assert aws_auth.endpoint_for("https://vpce-1.example.com", "eu-west-1") == "https://vpce-1.example.com"
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.setenv("AWS_PROFILE", "p")
    assert aws_auth.region_for(CLAUDE, catalog) is None  # the profile's region decides


async def test_forced_cache_points_from_the_credential_env(fake_llm, monkeypatch) -> None:
    """``AWS_BEDROCK_FORCE_CACHE`` is read from a stored credential's ``env`` first, as pi does."""
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-123")
    fake_llm.add({"content": [{"type": "text", "text": "ok"}]}, {"content": [{"type": "text", "text": "ok"}]})
    model = _model(fake_llm.url, "amazon.nova-lite-v1:0")
    await _run(model, api_key="<authenticated>")
    await _run(model, api_key="<authenticated>", env={"AWS_BEDROCK_FORCE_CACHE": "1"})
    plain, forced = (r["body"]["system"] for r in fake_llm.requests)
    assert plain == [{"text": "Be brief."}]
    assert forced == [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}]
    assert "AWS_BEDROCK_FORCE_CACHE" not in os.environ
