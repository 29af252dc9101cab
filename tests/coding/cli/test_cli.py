"""The pi command line: parsing, usage errors (exit 2), --version/--help, --list-models, dispatch, paths."""

import importlib
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from pi_coding_agent import PI_COMPATIBLE_VERSION, __version__
from pi_coding_agent.ai.models.catalog import catalog_index
from pi_coding_agent.coding import paths
from pi_coding_agent.coding.cli.main import (
    CliError,
    format_token_count,
    fuzzy_filter_match,
    main,
    parse_args,
)
from pi_coding_agent.coding.options import CliArgs


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for entry in catalog_index()["providers"].values():
        for name in entry["envVars"]:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    return tmp_path / "agent"


def test_parse_every_kind_of_flag():
    args = parse_args([
        "--mode", "rpc", "--provider", "openai", "--model=gpt-4o:high", "--thinking", "low", "--api-key", "k",
        "-e", "a.py", "--extension", "builtin:mcp", "--append-system-prompt", "one", "--append-system-prompt", "two",
        "--tools", "read, bash", "--models", "a,b:high", "-n", "name", "--session-dir", "/s", "--no-session",
        "-nc", "-ne", "-ns", "-np", "-a", "--skill", "s1", "--prompt-template", "p1", "@file.md", "hello", "--", "-x",
    ])
    assert (args.mode, args.provider, args.model, args.thinking, args.api_key) == ("rpc", "openai", "gpt-4o:high",
                                                                                   "low", "k")
    assert args.extensions == ["a.py", "builtin:mcp"]
    assert args.append_system_prompt == ["one", "two"]
    assert args.tools == ["read", "bash"] and args.models == ["a", "b:high"]
    assert (args.name, args.session_dir, args.no_session) == ("name", "/s", True)
    assert args.no_context_files and args.no_extensions and args.no_skills and args.no_prompt_templates
    assert args.approve is True and args.skills == ["s1"] and args.prompt_templates == ["p1"]
    assert args.file_args == ["file.md"] and args.messages == ["hello", "-x"]


def test_print_takes_the_next_message_and_export_output():
    args = parse_args(["-p", "say hi", "more"])
    assert args.print and args.messages == ["say hi", "more"]
    assert parse_args(["-p", "--no-session"]).messages == []
    args = parse_args(["--export", "s.jsonl", "out.html"])
    assert (args.export, args.export_output) == ("s.jsonl", "out.html")


def test_list_models_optional_search_and_approve_off():
    assert parse_args(["--list-models"]).list_models is True
    assert parse_args(["--list-models", "sonnet"]).list_models == "sonnet"
    assert parse_args(["--list-models", "--no-session"]).list_models is True
    assert parse_args(["-na"]).approve is False
    assert CliArgs().approve is None


def test_api_key_hidden_from_repr():
    assert "secret" not in repr(parse_args(["--api-key", "secret"]))


@pytest.mark.parametrize(("argv", "message"), [
    (["-x"], "Unknown option: -x"),
    (["--mode", "tui"], 'Invalid mode "tui". Valid values: text, json, rpc'),
    (["--mode"], "--mode requires a value"),
    (["--model", "--no-session"], "--model requires a value"),
    (["--thinking", "ultra"], 'Invalid thinking level "ultra". Valid values: off, minimal, low, medium, high, xhigh, max'),
    (["--tools", "read,+bash"], "--tools: tool names cannot be mixed with +name or -name entries"),
    (["--tools", "+mcp__*"], "--tools: +name and -name entries take exact tool names, not patterns: +mcp__*"),
    (["--fork", "x", "--continue", "--no-session"], "--fork cannot be combined with --continue, --no-session"),
    (["--session-id", "x", "--session", "y"], "--session-id cannot be combined with --session"),
    (["--no-session=1"], "--no-session does not take a value"),
])
def test_usage_errors_exit_2_with_one_line(capsys, argv, message):
    with pytest.raises(CliError) as raised:
        parse_args(argv)
    assert str(raised.value) == message
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"Error: {message}\n"


def test_version_and_help(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr() == (f"{PI_COMPATIBLE_VERSION}\n", f"pi-coding-agent-py {__version__}\n")
    assert main(["-h"]) == 0
    out = capsys.readouterr().out
    for flag in ("--mode", "--list-models", "--export", "--no-session", "--models", "--thinking", "-nc"):
        assert flag in out


def test_list_models_table(capsys, monkeypatch):
    monkeypatch.setenv("XAI_API_KEY", "xai-test")
    assert main(["--list-models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["provider", "model", "context", "max-out", "thinking", "images"]
    assert [line.split()[0] for line in lines[1:]] == ["xai"] * (len(lines) - 1)  # no faux: pi has none
    widths = {len(line) for line in lines}
    assert len(widths) == 1  # every column padded, as pi prints it


def test_list_models_search(capsys, monkeypatch):
    monkeypatch.setenv("XAI_API_KEY", "xai-test")
    assert main(["--list-models", "xai grok"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert rows and all(row.startswith("xai ") for row in rows)
    assert main(["--list-models", "faux"]) == 0  # a search names our test provider
    assert capsys.readouterr().out.splitlines()[1].split() == ["faux", "faux-1", "128K", "16.4K", "yes", "yes"]
    assert main(["--list-models", "zzzz-none"]) == 0
    assert capsys.readouterr().out == 'No models matching "zzzz-none"\n'


@pytest.mark.parametrize(("count", "text"), [
    (999, "999"), (1000, "1K"), (200000, "200K"), (16384, "16.4K"), (131250, "131.3K"), (1000000, "1M"),
    (1048576, "1.0M"), (2500000, "2.5M"),
])
def test_token_counts(count, text):
    assert format_token_count(count) == text


def test_fuzzy_filter_tokens():
    assert fuzzy_filter_match("opus", "anthropic claude-opus-5-5")
    assert fuzzy_filter_match("anthropic/opus", "anthropic claude-opus-5-5")
    assert fuzzy_filter_match("gpt5", "openai gpt-5")
    assert fuzzy_filter_match("5gpt", "openai gpt-5")  # letters and digits swapped
    assert not fuzzy_filter_match("opus xai", "anthropic claude-opus-5-5")


@pytest.mark.parametrize(("argv", "module"), [
    (["--mode", "rpc"], "pi_coding_agent.coding.modes.rpc.mode"),
    (["--mode", "json", "hi"], "pi_coding_agent.coding.modes.json_mode"),
    (["-p", "hi"], "pi_coding_agent.coding.modes.print_mode"),
    (["--mode", "text", "hi"], "pi_coding_agent.coding.modes.print_mode"),
])
def test_modes_dispatch_lazily(monkeypatch, argv, module):
    seen: list[CliArgs] = []
    fake = types.ModuleType(module)
    fake.run = lambda args, *images: seen.append(args) or 7  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module, fake)
    parent, name = module.rsplit(".", 1)
    monkeypatch.setattr(importlib.import_module(parent), name, fake, raising=False)
    assert main(argv) == 7
    assert len(seen) == 1 and isinstance(seen[0], CliArgs)


def test_export_dispatch(monkeypatch):
    fake = types.ModuleType("pi_coding_agent.coding.export.html")
    fake.export_cli = lambda args: 0 if args.export_output == "o.html" else 1  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pi_coding_agent.coding.export.html", fake)
    monkeypatch.setattr(importlib.import_module("pi_coding_agent.coding.export"), "html", fake, raising=False)
    assert main(["--export", "s.jsonl", "o.html"]) == 0


def test_pi_subprocess_exit_code_and_markers(tmp_path):
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", "--nope"], capture_output=True, text=True,
                          env=env, check=False)
    # as in pi, an unknown long option waits for the extensions (which may register it), then exits 1
    assert (done.returncode, done.stderr.splitlines()[-1], done.stdout) == (1, "Error: Unknown option: --nope", "")


def test_unknown_long_options_wait_for_extensions():
    args = parse_args(["--plan", "--profile", "fast", "--depth=3", "@f.txt", "--quiet", "hello"])
    assert [(f.name, f.value, f.inline) for f in args.pending_flags] == [
        ("plan", None, False), ("profile", "fast", False), ("depth", "3", True), ("quiet", "hello", False)]
    assert args.file_args == ["f.txt"] and args.messages == []


# ----------------------------------------------------------------------------- paths


def test_agent_dir_from_env_with_tilde(monkeypatch):
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/custom-agent")
    assert paths.agent_dir() == Path.home() / "custom-agent"
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    assert paths.agent_dir() == Path.home() / ".pi" / "agent"


def test_session_dir_encoding(tmp_path):
    assert paths.encode_cwd("/home/ana/work1") == "--home-ana-work1--"
    assert paths.default_session_dir(tmp_path, "/home/ana/work1") == tmp_path.resolve() / "sessions" / "--home-ana-work1--"


def test_environment_markers():
    env: dict[str, str] = {}
    paths.mark_environment(env)
    assert env == {"AI_AGENT": "pi", "PI_CODING_AGENT": "true"}


def test_config_word_is_a_command_not_a_prompt(tmp_path):
    """``pi config`` (the resource picker) is a word, not a prompt: bad options say so, no model run."""
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "pi_coding_agent", "config", "--bogus"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines()[0] == 'Unknown option --bogus for "config".'
    assert not (tmp_path / "sessions").exists()
