"""settings.json: merge, defaults, invalid files, persistence, validation cache."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pi_coding_agent.coding.resources import settings_file
from pi_coding_agent.coding.resources.settings import Settings, SettingsPath, js_string


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    agent_dir = tmp_path / "agent"
    cwd = tmp_path / "project"
    agent_dir.mkdir()
    (cwd / ".pi").mkdir(parents=True)
    return agent_dir, cwd


def write(path: Path, data: object) -> None:
    path.write_bytes(orjson.dumps(data))


def test_defaults_without_files(dirs: tuple[Path, Path]) -> None:
    s = Settings.load(*dirs, project_trusted=True)
    assert s.warnings == []
    assert (s.steering_mode, s.follow_up_mode) == ("one-at-a-time", "one-at-a-time")
    assert s.default_tools == ["read", "bash", "edit", "write"]
    assert (s.compaction_enabled, s.compaction_reserve_tokens, s.compaction_keep_recent_tokens) == (True, 16384, 20000)
    assert (s.retry_enabled, s.retry_max_retries, s.retry_base_delay_ms, s.retry_max_agent_delay_ms) == (
        True, 3, 2000, 60000)
    assert s.default_project_trust == "ask"
    assert s.enable_skill_commands is True
    assert s.thinking_budgets is None and s.enabled_models is None and s.default_provider is None
    assert s.skills == [] and s.prompts == [] and s.extensions == []


def test_project_overrides_global_and_objects_merge(dirs: tuple[Path, Path]) -> None:
    agent_dir, cwd = dirs
    write(agent_dir / "settings.json", {"steeringMode": "all", "compaction": {"enabled": False, "reserveTokens": 100},
                                         "defaultModel": "g"})
    write(cwd / ".pi" / "settings.json", {"compaction": {"reserveTokens": 200}, "defaultModel": "p"})
    s = Settings.load(agent_dir, cwd, project_trusted=True)
    assert s.steering_mode == "all"
    assert s.compaction_enabled is False
    assert s.compaction_reserve_tokens == 200
    assert s.get("defaultModel") == "p"
    assert s.get("compaction") == {"enabled": False, "reserveTokens": 200}


def test_untrusted_project_file_is_ignored(dirs: tuple[Path, Path]) -> None:
    agent_dir, cwd = dirs
    write(cwd / ".pi" / "settings.json", {"defaultModel": "p"})
    assert Settings.load(agent_dir, cwd, project_trusted=False).default_model is None


def test_default_project_trust_comes_from_global_file_only(dirs: tuple[Path, Path]) -> None:
    agent_dir, cwd = dirs
    write(cwd / ".pi" / "settings.json", {"defaultProjectTrust": "always"})
    assert Settings.load(agent_dir, cwd, project_trusted=True).default_project_trust == "ask"
    write(agent_dir / "settings.json", {"defaultProjectTrust": "never"})
    assert Settings.load(agent_dir, cwd, project_trusted=True).default_project_trust == "never"


@pytest.mark.parametrize(
    ("global_tools", "project_tools", "expected"),
    [
        (["read", "grep"], None, ["read", "grep"]),
        (["+grep", "-edit"], None, ["read", "bash", "write", "grep"]),
        (["read", "bash"], ["+ls"], ["read", "bash", "ls"]),
        (["read", "bash"], ["grep"], ["grep"]),
        ([], None, []),
    ],
)
def test_default_tools_entries(dirs: tuple[Path, Path], global_tools: list[str], project_tools: list[str] | None,
                               expected: list[str]) -> None:
    agent_dir, cwd = dirs
    write(agent_dir / "settings.json", {"defaultTools": global_tools})
    if project_tools is not None:
        write(cwd / ".pi" / "settings.json", {"defaultTools": project_tools})
    assert Settings.load(agent_dir, cwd, project_trusted=True).default_tools == expected


def test_invalid_json_warns_with_file_and_uses_defaults(dirs: tuple[Path, Path]) -> None:
    agent_dir, cwd = dirs
    (agent_dir / "settings.json").write_text("{bad")
    s = Settings.load(agent_dir, cwd, project_trusted=True)
    assert len(s.warnings) == 1
    assert s.warnings[0].startswith(f"Warning: Invalid settings file {agent_dir / 'settings.json'}: ")
    assert s.steering_mode == "one-at-a-time"


def test_wrong_value_type_drops_only_that_key(dirs: tuple[Path, Path]) -> None:
    agent_dir, cwd = dirs
    write(agent_dir / "settings.json", {"steeringMode": "sometimes", "retry": {"maxRetries": "3"},
                                         "defaultModel": "kept", "someTuiKey": 1})
    s = Settings.load(agent_dir, cwd, project_trusted=True)
    assert s.default_model == "kept"
    assert s.steering_mode == "one-at-a-time"
    assert s.retry_max_retries == 3
    assert s.get("someTuiKey") == 1
    joined = "\n".join(s.warnings)
    assert "steeringMode" in joined and "retry.maxRetries" in joined
    assert all(w.startswith(f"Warning: Invalid settings file {agent_dir / 'settings.json'}: ") for w in s.warnings)


@pytest.mark.parametrize(("value", "shown"), [(-5, "-5"), (1.5, "1.5"), ("100", "100"), (True, "true"),
                                              (2**53, str(2**53))])
def test_invalid_compaction_numbers_warn_with_pi_text(dirs: tuple[Path, Path], value: object, shown: str) -> None:
    agent_dir, cwd = dirs
    write(agent_dir / "settings.json", {"compaction": {"reserveTokens": value}})
    s = Settings.load(agent_dir, cwd, project_trusted=True)
    assert s.compaction_reserve_tokens == 16384
    assert (f"Warning: Invalid compaction.reserveTokens setting: {shown}. Expected a non-negative safe integer."
            in s.warnings)


def test_compaction_integral_float_is_accepted_and_model_override_applies(dirs: tuple[Path, Path]) -> None:
    agent_dir, cwd = dirs
    write(agent_dir / "settings.json", {"compaction": {"keepRecentTokens": 5000.0, "modelOverrides": {
        "p/m": {"keepRecentTokens": 7}, "p/bad": {"keepRecentTokens": -1}}}})
    s = Settings.load(agent_dir, cwd, project_trusted=True)
    assert s.compaction_keep_recent_tokens == 5000
    assert s.compaction_tokens_for("keepRecentTokens", "p", "m") == 7
    assert s.compaction_tokens_for("keepRecentTokens", "p", "other") == 5000
    assert s.compaction_tokens_for("keepRecentTokens", "p", "bad") == 5000
    assert ('Warning: Invalid compaction.modelOverrides["p/bad"].keepRecentTokens setting: -1. '
            "Expected a non-negative safe integer.") in s.warnings


def test_js_string_matches_javascript() -> None:
    assert [js_string(v) for v in (None, False, 3.0, [1, None, "a"], {"a": 1}, "x")] == [
        "null", "false", "3", "1,,a", "[object Object]", "x"]


def test_set_global_persists_atomically_and_keeps_other_keys(dirs: tuple[Path, Path]) -> None:
    agent_dir, cwd = dirs
    write(agent_dir / "settings.json", {"theme": "dark", "compaction": {"reserveTokens": 1}})
    s = Settings.load(agent_dir, cwd, project_trusted=True)
    # Another process adds a key after we loaded: it must survive our write.
    write(agent_dir / "settings.json", {"theme": "dark", "compaction": {"reserveTokens": 1}, "quietStartup": True})
    s.set_global("compaction.enabled", False)
    s.set_global("steeringMode", "all")
    on_disk = orjson.loads((agent_dir / "settings.json").read_bytes())
    assert on_disk == {"theme": "dark", "compaction": {"reserveTokens": 1, "enabled": False}, "quietStartup": True,
                       "steeringMode": "all"}
    assert (agent_dir / "settings.json").read_text().startswith('{\n  "theme": "dark"')
    assert [p.name for p in agent_dir.iterdir() if p.name.endswith(".tmp")] == []
    assert s.compaction_enabled is False and s.steering_mode == "all"
    reloaded = Settings.load(agent_dir, cwd, project_trusted=True)
    assert reloaded.compaction_enabled is False and reloaded.steering_mode == "all"


def test_set_global_creates_the_file(dirs: tuple[Path, Path]) -> None:
    agent_dir, cwd = dirs
    Settings.load(agent_dir, cwd, project_trusted=True).set_global("retry.enabled", False)
    assert orjson.loads((agent_dir / "settings.json").read_bytes()) == {"retry": {"enabled": False}}


def test_set_global_leaves_a_broken_file_alone(dirs: tuple[Path, Path]) -> None:
    agent_dir, cwd = dirs
    (agent_dir / "settings.json").write_text("{broken")
    s = Settings.load(agent_dir, cwd, project_trusted=True)
    s.set_global("steeringMode", "all")
    assert (agent_dir / "settings.json").read_text() == "{broken"
    assert s.steering_mode == "all"


def test_validation_runs_only_when_content_changes(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    agent_dir, cwd = dirs
    calls: list[object] = []
    real = settings_file._validate
    monkeypatch.setattr(settings_file, "_validate", lambda data: (calls.append(data), real(data)))
    write(agent_dir / "settings.json", {"defaultModel": "a"})
    Settings.load(agent_dir, cwd, project_trusted=True)
    Settings.load(agent_dir, cwd, project_trusted=True)
    assert len(calls) == 1
    write(agent_dir / "settings.json", {"defaultModel": "b"})
    assert Settings.load(agent_dir, cwd, project_trusted=True).default_model == "b"
    assert len(calls) == 2


def test_migrates_old_spellings(dirs: tuple[Path, Path]) -> None:
    agent_dir, cwd = dirs
    write(agent_dir / "settings.json", {"queueMode": "all", "websockets": True,
                                         "skills": {"enableSkillCommands": False}})
    s = Settings.load(agent_dir, cwd, project_trusted=True)
    assert s.steering_mode == "all"
    assert s.get("transport") == "websocket"
    assert s.enable_skill_commands is False
    assert s.skills == []


def test_resource_paths_are_scoped_project_first(dirs: tuple[Path, Path]) -> None:
    agent_dir, cwd = dirs
    write(agent_dir / "settings.json", {"skills": ["../shared", "!old-*"]})
    write(cwd / ".pi" / "settings.json", {"skills": ["local"]})
    s = Settings.load(agent_dir, cwd, project_trusted=True)
    assert s.skills == [SettingsPath("local", cwd / ".pi", "project"), SettingsPath("../shared", agent_dir, "user"),
                        SettingsPath("!old-*", agent_dir, "user")]


def test_session_dir_and_shell_path_expand_home(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    agent_dir, cwd = dirs
    monkeypatch.setenv("HOME", "/home/someone")
    write(agent_dir / "settings.json", {"sessionDir": "~/sessions", "shellPath": "/bin/zsh",
                                         "shellCommandPrefix": "set -e"})
    s = Settings.load(agent_dir, cwd, project_trusted=True)
    assert (s.session_dir, s.shell_path, s.shell_command_prefix) == ("/home/someone/sessions", "/bin/zsh", "set -e")
