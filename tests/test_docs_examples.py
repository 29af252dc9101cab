"""The examples in the docs stay true: the models.json of docs/models.md loads and routes as described."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pi_coding_agent.ai.keys import AuthStorage
from pi_coding_agent.ai.models import ModelRegistry

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_models_md_example_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    block = re.search(r"```json\n(.*?)```", (DOCS / "models.md").read_text(), re.S)
    assert block is not None
    (tmp_path / "models.json").write_text(block.group(1))
    monkeypatch.setenv("VLLM_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    registry = ModelRegistry(tmp_path, AuthStorage(tmp_path))
    assert registry.errors == []
    ollama = registry.find("ollama", "qwen2.5-coder:7b")
    assert ollama is not None and ollama["contextWindow"] == 32768 and ollama["api"] == "openai-completions"
    vllm = registry.find("vllm", "Qwen/Qwen3-Coder-30B-A3B-Instruct")
    assert vllm is not None and vllm["reasoning"] is True and vllm["maxTokens"] == 16384  # the default
    available = {(m["provider"], m["id"]) for m in registry.available_models()}
    assert {("ollama", "qwen2.5-coder:7b"), ("llama-cpp", "local"), ("lmstudio", "qwen/qwen3-coder-30b")} <= available
    routed = [m for m in registry.all_models() if m["provider"] == "anthropic"]
    assert routed and all(m["baseUrl"] == "https://my-proxy.example.com" for m in routed)
    assert json.loads(block.group(1))["providers"]["anthropic"] == {"baseUrl": "https://my-proxy.example.com"}


def _python_blocks(name: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(), re.S)


@pytest.mark.parametrize("index", range(len(_python_blocks("sdk.md"))))
@pytest.mark.slow
def test_sdk_md_examples_run(index: int, tmp_path: Path) -> None:
    """Every example of docs/sdk.md runs as written (in its own interpreter) and prints something."""
    import subprocess
    import sys

    script = tmp_path / "example.py"
    script.write_text(_python_blocks("sdk.md")[index])
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
