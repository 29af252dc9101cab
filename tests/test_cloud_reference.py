"""Side by side with the reference pi 1.6.0: which catalog providers credentials in the environment unlock."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.cli_sides import needs_reference, pi_command

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
    done = subprocess.run(argv, env=env, cwd=home, capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


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
