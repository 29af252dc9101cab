"""Command-line behaviour side by side with the reference pi 1.6.0, plus checks on our process alone.

Each case runs the same argv in a fresh HOME for both implementations and compares what a script or a
client sees: the exit status and the ``Error:`` lines on stderr (pi also prints start-up warnings about
missing credentials, which are not compared).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pi_coding_agent import PI_COMPATIBLE_VERSION, __version__
from tests.support.cli_sides import needs_reference, pi_command

# what pi-acp accepts as a version (its own test of `pi --version`)
SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:[-+].+)?$")


def run_pi(kind: str, argv: list[str], home: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """One ``pi`` run (``kind`` is ``ours`` or ``reference``) with its own HOME and agent dir."""
    home.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.update(HOME=str(home), PI_CODING_AGENT_DIR=str(home / ".pi" / "agent"), PI_OFFLINE="1")
    command, env = pi_command(kind, argv, env)
    return subprocess.run(command, cwd=home, env=env, input=stdin, capture_output=True, text=True, timeout=120)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Error:")]


REFUSALS = [
    ["--provider", "openai", "-p", "hi"],
    ["--provider", "nosuch", "-p", "hi"],
    ["--provider", "faux", "--mode", "json", "hi"],
    ["-e", "builtin:nosuch", "-p", "hi"],
    ["-e", "builtin:nosuch", "--provider", "openai", "--mode", "json", "hi"],
    ["--mode", "rpc", "@notes.txt"],
]


@pytest.mark.parametrize("argv", REFUSALS, ids=" ".join)
@pytest.mark.slow
def test_refusals_as_ours(argv, tmp_path):
    """Our process alone: an Error line per problem, status 1, no model run, nothing on stdout."""
    done = run_pi("ours", argv, tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert len(error_lines(done.stderr)) == 1 + ("--provider" in argv and "-e" in argv)
    assert not (tmp_path / ".pi" / "agent" / "sessions").exists()


@needs_reference
@pytest.mark.parametrize("argv", REFUSALS, ids=" ".join)
def test_refusals_match_reference(argv, tmp_path):
    ours = run_pi("ours", argv, tmp_path / "ours")
    reference = run_pi("reference", argv, tmp_path / "reference")
    assert ours.returncode == reference.returncode
    assert error_lines(ours.stderr) == error_lines(reference.stderr)


def test_version_is_the_pi_version_then_ours(tmp_path):
    done = run_pi("ours", ["--version"], tmp_path)
    assert done.stdout == f"{PI_COMPATIBLE_VERSION}\n"
    assert SEMVER.match(done.stdout.strip())  # pi-acp's test
    assert [int(part) for part in done.stdout.strip().split(".")] == [1, 6, 0]  # a split-on-dots client
    assert done.stderr == f"pi-coding-agent-py {__version__}\n"


@needs_reference
def test_version_stdout_matches_reference(tmp_path):
    ours = run_pi("ours", ["--version"], tmp_path / "ours")
    reference = run_pi("reference", ["--version"], tmp_path / "reference")
    assert ours.stdout == reference.stdout
    assert ours.returncode == reference.returncode == 0


@pytest.mark.slow
def test_list_models_writes_nothing(tmp_path):
    done = run_pi("ours", ["--list-models", "sonnet"], tmp_path)
    assert done.returncode == 0
    assert not (tmp_path / ".pi").exists()  # no auth.json, no agent dir


@pytest.mark.slow
def test_list_models_into_a_closed_pipe_ends_quietly(tmp_path):
    """``pi --list-models | head -1``: the reader leaves early; no BrokenPipeError traceback."""
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
           "XAI_API_KEY": "x", "OPENAI_API_KEY": "x", "ANTHROPIC_API_KEY": "x"}
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-m", "pi_coding_agent", "--list-models"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # closed before anything was written: the first write hits EPIPE
        stderr = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0
        assert "Traceback" not in stderr and "BrokenPipeError" not in stderr


def test_resume_is_refused_with_a_way_forward(tmp_path):
    done = run_pi("ours", ["-r", "-p", "hi"], tmp_path)
    assert done.returncode == 2
    assert "--session" in done.stderr and "--continue" in done.stderr


@needs_reference
def test_every_reference_subcommand_word_is_handled(tmp_path):
    """The words under "Commands:" in pi's --help: each is dispatched here (auth and mcp by their own
    modules when they land), none becomes a prompt."""
    from pi_coding_agent.coding.cli.subcommands import PACKAGE_WORDS, SUPPORTED

    help_text = run_pi("reference", ["--help"], tmp_path).stdout
    block = help_text.split("Commands:", 1)[1].split("\n\n", 1)[0]
    words = {match.group(1) for match in re.finditer(r"^\s+pi (\w+) ", block, re.M)} - {"<command>"}
    assert {"install", "config"} <= words
    assert words <= PACKAGE_WORDS | set(SUPPORTED)
