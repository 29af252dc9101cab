"""Side by side with the reference pi 1.6.0: the catalog providers credentials unlock, Bedrock's requests."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_sides import needs_reference, pi_command, rpc_turns
from tests.support.fakes.llm_server import FakeLLMServer

BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

# every credential variable pi-ai 1.6.0 reads, plus the ambient AWS keys and Azure's resource name
CREDENTIALS = [
    "AI_GATEWAY_API_KEY", "ANTHROPIC_API_KEY", "ANT_LING_API_KEY", "AZURE_OPENAI_API_KEY",
    "BASETEN_API_KEY", "CEREBRAS_API_KEY", "CLOUDFLARE_API_KEY", "COPILOT_GITHUB_TOKEN", "DEEPSEEK_API_KEY",
    "FIREWORKS_API_KEY", "GEMINI_API_KEY", "GOOGLE_CLOUD_API_KEY", "GROQ_API_KEY", "HF_TOKEN",
    "KIMI_API_KEY", "META_API_KEY", "MINIMAX_API_KEY", "MINIMAX_CN_API_KEY", "MISTRAL_API_KEY",
    "MOONSHOT_API_KEY", "NVIDIA_API_KEY", "OPENAI_API_KEY", "OPENCODE_API_KEY", "OPENROUTER_API_KEY",
    "QWEN_TOKEN_PLAN_API_KEY", "QWEN_TOKEN_PLAN_CN_API_KEY", "QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY",
    "QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY", "RADIUS_API_KEY", "TOGETHER_API_KEY", "XAI_API_KEY",
    "XIAOMI_API_KEY", "XIAOMI_TOKEN_PLAN_AMS_API_KEY", "XIAOMI_TOKEN_PLAN_CN_API_KEY",
    "XIAOMI_TOKEN_PLAN_SGP_API_KEY", "ZAI_API_KEY", "ZAI_CODING_CN_API_KEY", "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY", "CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_GATEWAY_ID", "AZURE_OPENAI_RESOURCE_NAME",
]


def list_models(kind: str, home: Path, variables: list[str]) -> str:
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN")) and not k.startswith("AWS_")}
    env.update({name: f"dummy-{name.lower()}" for name in variables})
    env.update(HOME=str(home), PI_CODING_AGENT_DIR=str(home / "agent"), PI_OFFLINE="1",
               AWS_CONFIG_FILE=str(home / "none"), AWS_SHARED_CREDENTIALS_FILE=str(home / "none"))
    argv, env = pi_command(kind, ["--list-models"], env)
    # stdout to a file, not a pipe: the list passes 64 KiB, and pi (Node) exits with what a full pipe
    # did not take yet still queued, so a reader slowed by load got the reference's list cut short
    out = home / "stdout.txt"
    with out.open("wb") as sink:
        subprocess.run(argv, env=env, cwd=home, stdout=sink, stderr=subprocess.PIPE, timeout=120, check=True)
    return out.read_text()


@needs_reference
def test_list_models_with_every_credential_matches_the_reference(tmp_path: Path) -> None:
    ours, theirs = (list_models(kind, tmp_path / kind, CREDENTIALS) for kind in ("ours", "reference"))
    providers = {line.split()[0] for line in ours.splitlines()[1:]}
    assert {"amazon-bedrock", "azure", "google-vertex", "openrouter", "cloudflare-ai-gateway"} <= providers
    assert ours == theirs


@needs_reference
def test_list_models_with_cloud_credentials_only_matches_the_reference(tmp_path: Path) -> None:
    cloud = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_RESOURCE_NAME",
             "GOOGLE_CLOUD_API_KEY"]
    ours, theirs = (list_models(kind, tmp_path / kind, cloud) for kind in ("ours", "reference"))
    assert {line.split()[0] for line in ours.splitlines()[1:]} == {"amazon-bedrock", "azure", "google-vertex"}
    assert ours == theirs


def _png() -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 30, 30)).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _masked(value: Any, key: str = "") -> Any:
    """The body with our own wording (tool descriptions, the system prompt) left out of the comparison."""
    if isinstance(value, dict):
        return {k: "<ours>" if k in ("description", "systemInstruction") else _masked(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) if key != "system" or i else "<system prompt>" for i, v in enumerate(value)]
    return value


def bedrock_turn(kind: str, home: Path, server: FakeLLMServer, image: str) -> list[dict[str, Any]]:
    """One prompt with an image; the model calls bash, then answers (two Converse requests)."""
    agent = home / "agent"
    agent.mkdir(parents=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"amazon-bedrock": {"baseUrl": server.url}}}))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1",
           "AWS_BEARER_TOKEN_BEDROCK": "bedrock-key", "AWS_BEDROCK_FORCE_HTTP1": "1", "AWS_REGION": "us-west-2"}
    start = len(server.requests)
    prompt = {"id": "1", "type": "prompt", "message": "what is this?",
              "images": [{"type": "image", "data": image, "mimeType": "image/png"}]}
    rpc_turns(kind, ["--provider", "amazon-bedrock", "--model", BEDROCK_CLAUDE, "--thinking", "high", "--no-session"],
              env, home, [prompt])
    return server.requests[start:]


@needs_reference
@pytest.mark.timeout(180)
def test_bedrock_requests_match_the_reference(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    """Cache points, thinking fields, the image, tool use and the tool result turn, request by request."""
    image = _png()
    for _ in range(2):
        fake_llm.add({"content": [{"type": "thinking", "thinking": "look", "signature": "sig-1"},
                                  {"type": "toolCall", "id": "tooluse_1", "name": "bash",
                                   "arguments": {"command": "echo hi"}}]},
                     {"content": [{"type": "text", "text": "a red picture"}]})
    ours = bedrock_turn("ours", tmp_path / "ours", fake_llm, image)
    theirs = bedrock_turn("reference", tmp_path / "reference", fake_llm, image)
    assert len(ours) == len(theirs) == 2
    for mine, ref in zip(ours, theirs, strict=True):
        assert mine["path"] == ref["path"]
        assert mine["headers"]["authorization"] == ref["headers"]["authorization"] == "Bearer bedrock-key"
        assert _masked(mine["body"]) == _masked(ref["body"])
    assert ours[0]["body"]["messages"][0]["content"][1]["image"]["format"] == "png"
    assert {"toolResult", "cachePoint"} <= {key for block in ours[1]["body"]["messages"][-1]["content"]
                                            for key in block}


def azure_prompt(kind: str, home: Path, server: FakeLLMServer, model: str) -> dict[str, Any]:
    agent = home / "agent"
    agent.mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1",
           "AZURE_OPENAI_API_KEY": "azure-key", "AZURE_OPENAI_BASE_URL": f"{server.url}/openai/v1",
           "AZURE_OPENAI_API_VERSION": "2025-04-01-preview",
           "AZURE_OPENAI_DEPLOYMENT_NAME_MAP": f"other=x, {model}=first=extra ,{model}=my-deployment"}
    argv, env = pi_command(kind, ["--provider", "azure", "--model", model, "--no-session", "-p", "hi"], env)
    subprocess.run(argv, env=env, cwd=home, stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=True)
    return server.requests[-1]


@needs_reference
@pytest.mark.parametrize("model", ["chat-latest", "deepseek-v4-pro"])  # Responses, then Chat Completions
def test_azure_requests_match_the_reference(tmp_path: Path, fake_llm: FakeLLMServer, model: str) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "ok"}]}, {"content": [{"type": "text", "text": "ok"}]})
    ours, theirs = (azure_prompt(kind, tmp_path / kind, fake_llm, model) for kind in ("ours", "reference"))
    assert ours["path"] == theirs["path"]
    for name in ("api-key", "authorization"):
        assert ours["headers"].get(name) == theirs["headers"].get(name), name
    assert ours["body"]["model"] == theirs["body"]["model"] == "my-deployment"


def bedrock_signed(kind: str, home: Path, server: FakeLLMServer, model: str, env_extra: dict[str, str]) -> Any:
    """A SigV4-signed print-mode prompt from environment keys: the request and its signing region."""
    agent = home / "agent"
    agent.mkdir(parents=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"amazon-bedrock": {"baseUrl": server.url}}}))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1",
           "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "example-secret",
           "AWS_BEDROCK_FORCE_HTTP1": "1", "AWS_EC2_METADATA_DISABLED": "true",
           "AWS_CONFIG_FILE": str(home / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(home / "none"), **env_extra}
    argv, env = pi_command(kind, ["--provider", "amazon-bedrock", "--model", model, "--no-session", "-p", "hi"], env)
    subprocess.run(argv, env=env, cwd=home, stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False)
    request = server.requests[-1]
    scope = request["headers"]["authorization"].split("Credential=", 1)[1].split(",", 1)[0].split("/")
    return request["path"], scope[2:4], _masked(request["body"])


PROFILE_ARN = "arn:aws:bedrock:ap-northeast-1:123456789012:application-inference-profile/abc"


@needs_reference
@pytest.mark.parametrize(("model", "env_extra"), [
    (BEDROCK_CLAUDE, {"AWS_REGION": "eu-west-3"}),  # the configured region
    (BEDROCK_CLAUDE, {}),  # no region, no profile: us-east-1
    (PROFILE_ARN, {"AWS_REGION": "eu-west-3"}),  # an inference profile signs in its own region, uncached
    (PROFILE_ARN, {"AWS_BEDROCK_FORCE_CACHE": "1"}),  # ... unless cache points are forced
    ("amazon.nova-lite-v1:0", {"AWS_REGION": "ap-southeast-2"}),  # not Claude: no cache points, still maxTokens
])
def test_bedrock_regions_and_inference_profiles_match_the_reference(
        tmp_path: Path, fake_llm: FakeLLMServer, model: str, env_extra: dict[str, str]) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "ok"}]}, {"content": [{"type": "text", "text": "ok"}]})
    ours, theirs = (bedrock_signed(kind, tmp_path / kind, fake_llm, model, env_extra)
                    for kind in ("ours", "reference"))
    assert ours == theirs
    assert ours[1][1] == "bedrock"


def vertex_prompt(kind: str, home: Path, server: FakeLLMServer) -> dict[str, Any]:
    """A Vertex prompt with a Google Cloud API key, the endpoint overridden (a proxy) in models.json."""
    agent = home / "agent"
    agent.mkdir(parents=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"google-vertex": {"baseUrl": f"{server.url}/vx"}}}))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1",
           "GOOGLE_CLOUD_API_KEY": "vertex-key", "GOOGLE_CLOUD_PROJECT": "proj-1", "GOOGLE_CLOUD_LOCATION": "europe-west4"}
    argv, env = pi_command(kind, ["--provider", "google-vertex", "--model", "gemini-2.5-flash", "--thinking", "low",
                                  "--no-session", "-p", "hi"], env)
    subprocess.run(argv, env=env, cwd=home, stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False)
    return server.requests[-1]


@needs_reference
def test_vertex_request_matches_the_reference(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "ok"}]}, {"content": [{"type": "text", "text": "ok"}]})
    ours, theirs = (vertex_prompt(kind, tmp_path / kind, fake_llm) for kind in ("ours", "reference"))
    assert ours["path"] == theirs["path"]
    assert ours["headers"]["x-goog-api-key"] == theirs["headers"]["x-goog-api-key"] == "vertex-key"
    assert "authorization" not in ours["headers"] and "authorization" not in theirs["headers"]
    assert _masked(ours["body"]) == _masked(theirs["body"])
