"""The commands and examples in README.md and docs/ do what the text says (run, not just read)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pi_coding_agent import PI_COMPATIBLE_VERSION, __version__
from tests.rpc_helpers import ROOT

README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), **extra}


@pytest.mark.slow
def test_readme_python_example_runs_verbatim(tmp_path):
    (block,) = re.findall(r"```python\n(.*?)```", README, re.S)
    script = tmp_path / "example.py"
    script.write_text(block)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "You said: Hello"  # the comment in the example
    assert "agent_settled" in lines and lines.index("agent_start") < lines.index("agent_end")


def test_readme_version_example_is_what_pi_prints(tmp_path):
    assert f"(`{PI_COMPATIBLE_VERSION}`) on stdout" in README
    assert f"(`pi-coding-agent-py {__version__}`" in README
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", "--version"], env=_env(tmp_path),
                          capture_output=True, text=True, timeout=60, check=True)
    assert (done.stdout, done.stderr) == (f"{PI_COMPATIBLE_VERSION}\n", f"pi-coding-agent-py {__version__}\n")


def test_readme_faux_script_sentence(tmp_path):
    """"`PI_FAUX_SCRIPT=<file.json>` gives it a list of replies": one scripted text reply comes back."""
    assert "PI_FAUX_SCRIPT" in README
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "text": "scripted reply"}]}]))
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", "--provider", "faux", "--model", "faux-1",
                           "--no-session", "-p", "hi"], env=_env(tmp_path, PI_FAUX_SCRIPT=str(script)),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, "scripted reply\n")


def test_rpc_md_parse_error_examples(tmp_path):
    table = (DOCS / "rpc.md").read_text()
    documented = re.search(r"the line `not json` gives `([^`]+)`, an empty line `([^`]+)`", table)
    assert documented is not None
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", "--mode", "rpc", "--no-session"],
                          input=b"not json\n\n", env=_env(tmp_path), capture_output=True, timeout=60, check=False)
    errors = [json.loads(line)["error"] for line in done.stdout.splitlines()]
    assert errors == [f"Failed to parse command: {documented.group(1)}",
                      f"Failed to parse command: {documented.group(2)}"]


def _model_commands() -> list[tuple[list[str], str]]:
    """The ``pi --mode rpc ...  # comment`` lines of docs/models.md "Choosing a model"."""
    section = (DOCS / "models.md").read_text().split("## Choosing a model", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    commands = []
    for line in block.group(1).splitlines():
        command, _, comment = line.partition("#")
        commands.append((shlex.split(command)[1:], comment.strip()))
    return commands


@pytest.mark.parametrize(("argv", "comment"), _model_commands(), ids=lambda value: str(value)[:40])
@pytest.mark.slow
def test_models_md_commands_select_a_model(tmp_path, argv, comment):
    keys = {"ANTHROPIC_API_KEY": "x", "OPENAI_API_KEY": "x", "OPENROUTER_API_KEY": "x"}
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", *argv, "--no-session"],
                          input=b'{"type":"get_state"}\n', env=_env(tmp_path, **keys), capture_output=True,
                          timeout=60, check=False)
    state = json.loads(done.stdout.splitlines()[0])["data"]
    model = state["model"]
    assert model["id"] != "unknown", comment
    pattern = argv[argv.index("--model") + 1] if "--model" in argv else argv[argv.index("--models") + 1]
    if "--provider" in argv:
        assert model["provider"] == argv[argv.index("--provider") + 1]
    elif "/" in pattern and "," not in pattern:
        assert model["provider"] == pattern.split("/")[0]
    if pattern.endswith(":high"):
        assert state["thinkingLevel"] == "high"
