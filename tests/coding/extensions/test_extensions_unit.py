"""Extension discovery, module import, and the pure decisions of the shipped examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_coding_agent.coding.extensions.examples import permission_gate, protected_paths
from pi_coding_agent.coding.extensions.loader import LoadError, discover, import_extension
from pi_coding_agent.coding.extensions.registry import Binding, StaleContextError
from pi_coding_agent.coding.resources.settings import SettingsPath


def _touch(path: Path, text: str = "def setup(pi):\n    pass\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    cwd, agent_dir = tmp_path / "work", tmp_path / "agent"
    _touch(agent_dir / "extensions" / "b_user.py")
    _touch(agent_dir / "extensions" / "a_pkg" / "__init__.py")
    _touch(agent_dir / "extensions" / "no_entry" / "helper.py")  # a folder without __init__.py is skipped
    _touch(agent_dir / "extensions" / "notes.txt")
    _touch(cwd / ".pi" / "extensions" / "proj.py")
    return cwd, agent_dir


def test_discovery_order_and_source_info(layout: tuple[Path, Path], tmp_path: Path) -> None:
    cwd, agent_dir = layout
    cli = _touch(cwd / "mine.py")
    configured = _touch(tmp_path / "shared" / "team.py")
    settings = [SettingsPath(str(configured), agent_dir, "user")]
    found = discover(cwd, agent_dir, True, ["mine.py", str(agent_dir / "extensions" / "b_user.py")], settings, True)
    assert [(s.path, s.source, s.scope) for s in found] == [
        (cli, "cli", "temporary"),
        (agent_dir / "extensions" / "b_user.py", "cli", "temporary"),  # listed once, first source wins
        (cwd / ".pi" / "extensions" / "proj.py", "auto", "project"),
        (configured, "local", "user"),
        (agent_dir / "extensions" / "a_pkg" / "__init__.py", "auto", "user"),
    ]
    assert found[2].source_info() == {"path": str(cwd / ".pi" / "extensions" / "proj.py"), "source": "auto",
                                      "scope": "project", "origin": "top-level", "baseDir": str(cwd / ".pi")}
    assert "baseDir" not in found[0].source_info()


def test_untrusted_project_and_no_extensions(layout: tuple[Path, Path]) -> None:
    cwd, agent_dir = layout
    untrusted = discover(cwd, agent_dir, False, [], [], True)
    assert all(s.scope == "user" for s in untrusted) and len(untrusted) == 2
    cli = _touch(cwd / "only.py")
    assert [s.path for s in discover(cwd, agent_dir, True, ["only.py"], [], False)] == [cli]
    assert discover(cwd, agent_dir / "missing", False, [], [], True) == []


def test_import_extension_modules_and_failures(tmp_path: Path) -> None:
    first = _touch(tmp_path / "one" / "ext.py", "VALUE = 1\ndef setup(pi):\n    pass\n")
    second = _touch(tmp_path / "two" / "ext.py", "VALUE = 2\ndef setup(pi):\n    pass\n")
    assert (import_extension(first).VALUE, import_extension(second).VALUE) == (1, 2)  # same base name
    package = _touch(tmp_path / "pkg" / "__init__.py", "from .helper import X\ndef setup(pi):\n    pass\n")
    _touch(tmp_path / "pkg" / "helper.py", "X = 'relative import works'\n")
    assert import_extension(package).X == "relative import works"
    with pytest.raises(LoadError, match="does not define a setup"):
        import_extension(_touch(tmp_path / "nosetup.py", "X = 1\n"))
    with pytest.raises(LoadError, match="does not exist"):
        import_extension(tmp_path / "absent.py")
    with pytest.raises(ZeroDivisionError):
        import_extension(_touch(tmp_path / "crash.py", "1 / 0\n"))


def test_stale_binding_raises() -> None:
    binding = Binding()
    binding.check()
    binding.stale = True
    with pytest.raises(StaleContextError, match="stale"):
        binding.check()


@pytest.mark.parametrize(("command", "reason"), [
    ("rm -rf build", "recursive forced delete"),
    ("rm -fr /", "recursive forced delete"),
    ("cd x && sudo apt install y", "runs as root"),
    ("chmod -R 777 .", "world-writable permissions"),
    ("ls -la", None),
    ("rm file.txt", None),
    ("echo pseudo sudoku", None),
])
def test_permission_gate_dangerous_commands(command: str, reason: str | None) -> None:
    assert permission_gate.dangerous_reason(command) == reason


def test_permission_gate_paths(tmp_path: Path) -> None:
    cwd = str(tmp_path)
    assert permission_gate.risk({"toolName": "write", "input": {"path": "src/a.py"}}, cwd) is None
    assert permission_gate.risk({"toolName": "edit", "input": {"path": "../elsewhere.py"}}, cwd) is not None
    assert permission_gate.risk({"toolName": "write", "input": {"path": "/etc/passwd"}}, cwd) is not None
    assert permission_gate.risk({"toolName": "read", "input": {"path": "/etc/passwd"}}, cwd) is None


async def test_permission_gate_blocks_without_ui(tmp_path: Path) -> None:
    class Ctx:
        cwd = str(tmp_path)
        has_ui = False

    decision = await permission_gate.on_tool_call({"toolName": "bash", "input": {"command": "sudo ls"}}, Ctx())
    assert decision is not None and decision["block"] is True


@pytest.mark.parametrize(("path", "blocked"), [
    (".env", True), (".env.local", True), ("config/.env", True), (".git/config", True),
    ("sub/.git/HEAD", True), ("node_modules/x/index.js", True), ("src/env.py", False), (".envrc.py", False),
])
def test_protected_paths(tmp_path: Path, path: str, blocked: bool) -> None:
    assert protected_paths.protected(path, str(tmp_path)) is blocked


def test_protected_paths_extra_patterns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_PROTECTED_PATHS", "secrets/*:*.pem")
    assert protected_paths.protected("secrets/key.txt", str(tmp_path))
    assert protected_paths.protected("certs/server.pem", str(tmp_path))
    assert not protected_paths.protected("src/main.py", str(tmp_path))


def test_builtin_extensions_follow_pis_rule():
    """-e builtin:<name> turns a bundled extension on; --no-extensions or -builtin:<name> turn it off."""
    from pi_coding_agent.coding.extensions.loader import builtin_enabled
    from pi_coding_agent.coding.resources.settings import SettingsPath

    def user(*entries: str) -> list[SettingsPath]:
        return [SettingsPath(e, Path("/agent"), "user") for e in entries]

    assert builtin_enabled("mcp", [], False, [])
    assert not builtin_enabled("mcp", [], True, [])
    assert builtin_enabled("mcp", [], True, ["builtin:mcp"])
    assert not builtin_enabled("mcp", user("-builtin:mcp"), False, [])
    assert builtin_enabled("mcp", user("-builtin:llama.cpp"), False, [])
    assert builtin_enabled("mcp", [*user("-builtin:mcp"), SettingsPath("+builtin:mcp", Path("/p/.pi"), "project")],
                           False, [])
