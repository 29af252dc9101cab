"""The examples in the docs stay true: the models.json of docs/models.md loads and routes as described."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from pi_coding_agent.ai.auth.keys import AuthStorage
from pi_coding_agent.ai.models.catalog import ModelRegistry

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
    script = tmp_path / "example.py"
    script.write_text(_python_blocks("sdk.md")[index])
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


# --------------------------------------------------------------------------- every code block runs

ROOT = DOCS.parent
# docs/sdk.md's examples run in test_sdk_md_examples_run above (scripts that must also print)
PAGES = [ROOT / "README.md", *sorted(page for page in DOCS.glob("*.md") if page.name != "sdk.md")]
BLOCK = re.compile(r"(?:<!-- not-run:(?P<reason>.*?)-->\n)?```(?P<lang>python|sh|bash)\n(?P<body>.*?)```", re.S)


class Block(NamedTuple):
    page: str
    line: int
    lang: str
    body: str
    not_run: str | None  # the reason given in the marker, stripped

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in BLOCK.finditer(text):
            reason = match.group("reason")
            found.append(Block(str(page.relative_to(ROOT)), text.count("\n", 0, match.start("lang")) + 1,
                               match.group("lang"), match.group("body"), None if reason is None else reason.strip()))
    return found


def test_not_run_markers_sit_on_a_block_and_give_a_reason():
    """A marker anywhere but right before a python/sh/bash fence, or without a reason, is refused."""
    blocks = _blocks()
    markers = sum(page.read_text().count("<!-- not-run") for page in PAGES)
    assert markers == sum(block.not_run is not None for block in blocks)
    assert all(block.not_run for block in blocks if block.not_run is not None), "a not-run marker needs a reason"


def _env(home: Path) -> dict[str, str]:
    """A fresh HOME, and the ``pi`` of this checkout first on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    return {"HOME": str(home), "PATH": f"{bin_dir}:/usr/bin:/bin", "PI_CODING_AGENT_DIR": str(home / "agent")}


def _run_extension(path: Path, cwd: Path) -> None:
    """An extension module (``setup(pi)``) must load into ``pi --mode rpc`` without an error."""
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", "--mode", "rpc", "--provider", "faux", "--model",
                           "faux-1", "--no-session", "-e", str(path)], input=b'{"id":"c","type":"get_commands"}\n',
                          capture_output=True, timeout=120, cwd=cwd, env=_env(cwd), check=False)
    assert done.returncode == 0 and b"extension_error" not in done.stdout, done.stderr.decode()
    assert json.loads(done.stdout.splitlines()[-1])["success"] is True


@pytest.mark.parametrize("block", _blocks(), ids=str)
@pytest.mark.slow
def test_docs_code_block_runs(block: Block, tmp_path: Path) -> None:
    """Every python/sh/bash block of README.md and docs/*.md runs as written: a script exits 0, an
    extension loads, a shell block exits 0 under ``bash -e``. ``pytest -rs`` lists the ones not run."""

    if block.not_run is not None:
        pytest.skip(f"{block}: not-run: {block.not_run}")
    if block.lang == "python":
        script = tmp_path / "example.py"
        script.write_text(block.body)
        if re.search(r"^(async )?def setup\(pi\)", block.body, re.M):
            _run_extension(script, tmp_path)
            return
        command = [sys.executable, str(script)]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", block.body]
    done = subprocess.run(command, capture_output=True, text=True, timeout=100, cwd=tmp_path, env=_env(tmp_path),
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
