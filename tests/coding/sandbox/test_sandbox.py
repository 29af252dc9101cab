"""The optional sandbox, through the real RPC process: the model's attempts to get out, refused in
the strict modes and allowed with ``off``; normal work still done in ``workspace-write``."""

from __future__ import annotations

import asyncio
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_coding_agent.coding.sandbox.policy import SandboxPolicy, SandboxRefusal, policy_from_settings
from tests.support.rpc_helpers import RpcProcess

pytestmark = pytest.mark.sandbox

SECRET = "sk-test-SANDBOX-0123456789"


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "name": name, "arguments": arguments}]}


async def _run(tmp_path: Path, calls: list[dict[str, Any]], *args: str, settings: dict[str, Any] | None = None,
               ui_answer: bool | None = None) -> list[dict[str, Any]]:
    """One prompt whose faux model makes ``calls`` in turn; the tool_execution_end events, in order."""
    work, agent = tmp_path / "work", tmp_path / "agent"
    work.mkdir(exist_ok=True)
    agent.mkdir(exist_ok=True)
    if settings is not None:
        (agent / "settings.json").write_bytes(orjson.dumps(settings))
    script = tmp_path / "script.json"
    script.write_bytes(orjson.dumps([*calls, {"content": [{"type": "text", "text": "done"}]}]))
    for state in tmp_path.glob("script.json.state"):
        state.unlink()
    private_tmp = tmp_path / "tmp"  # the temp dir is writable: keep it apart from the "outside" of the tests
    private_tmp.mkdir(exist_ok=True)
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent), "HOME": str(tmp_path), "PI_FAUX_SCRIPT": str(script),
           "OPENAI_API_KEY": SECRET, "TMPDIR": str(private_tmp)}
    pi = await RpcProcess.pi("--provider", "faux", "--model", "faux-1", "--no-session", *args, cwd=work, env=env)
    try:
        await pi.send({"type": "prompt", "id": "p", "message": "go"})
        ends = []
        while True:
            record = await pi.read_record()
            if record.get("type") == "extension_ui_request" and record.get("method") == "confirm":
                assert ui_answer is not None, f"unexpected dialog {record}"
                await pi.send({"type": "extension_ui_response", "id": record["id"], "confirmed": ui_answer})
            elif record.get("type") == "tool_execution_end":
                ends.append(record)
            elif record.get("type") == "agent_settled":
                return ends
    finally:
        await pi.close_stdin()
        await pi.wait()


def _text(end: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in end["result"]["content"])


OUTSIDE_ATTEMPTS = [
    _call("write", {"path": "../outside.txt", "content": "x"}),
    _call("bash", {"command": "echo x > ../outside-bash.txt"}),
    _call("edit", {"path": "link/victim.txt", "edits": [{"oldText": "keep", "newText": "lost"}]}),
    _call("read", {"path": "/proc/self/environ"}),
    _call("bash", {"command": "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c sk-test-SANDBOX || true"}),
]


def _layout(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "victim").mkdir(exist_ok=True)
    (tmp_path / "victim" / "victim.txt").write_text("keep\n")
    link = tmp_path / "work" / "link"
    if not link.exists():
        link.symlink_to(tmp_path / "victim")


@pytest.mark.slow
async def test_workspace_write_refuses_every_way_out(tmp_path: Path) -> None:
    _layout(tmp_path)
    ends = await _run(tmp_path, OUTSIDE_ATTEMPTS, "--sandbox", "workspace-write",
                      settings={"sandbox": {"env": "scrub"}})
    write, bash_write, edit, read, bash_env = ends
    assert write["isError"] and _text(write) == f"write outside the workspace refused: {tmp_path / 'outside.txt'}"
    assert bash_write["isError"] and "Read-only file system" in _text(bash_write)
    assert "Sandbox (workspace-write): writes outside the workspace and the network are refused" in _text(bash_write)
    assert edit["isError"] and _text(edit).startswith("write outside the workspace refused:")
    assert read["isError"] and "refused by the sandbox" in _text(read)
    assert _text(bash_env).strip() == "0"  # neither its own environment nor pi's shows the key
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "outside-bash.txt").exists()
    assert (tmp_path / "victim" / "victim.txt").read_text() == "keep\n"


@pytest.mark.slow
async def test_off_allows_the_same_operations(tmp_path: Path) -> None:
    _layout(tmp_path)
    ends = await _run(tmp_path, OUTSIDE_ATTEMPTS)
    assert [e["isError"] for e in ends] == [False] * 5
    assert (tmp_path / "outside.txt").exists() and (tmp_path / "outside-bash.txt").exists()
    assert (tmp_path / "victim" / "victim.txt").read_text() == "lost\n"
    assert SECRET in _text(ends[3])
    assert int(_text(ends[4]).strip().splitlines()[0]) >= 1


@pytest.mark.slow
async def test_read_only_refuses_writes_inside_the_workspace_too(tmp_path: Path) -> None:
    calls = [_call("write", {"path": "new.txt", "content": "x"}),
             _call("bash", {"command": "touch inside.txt; echo scratch > $TMPDIR/t && cat $TMPDIR/t"})]
    write, bash = await _run(tmp_path, calls, "--sandbox", "read-only")
    assert write["isError"] and _text(write) == f"write refused by the read-only sandbox: {tmp_path / 'work' / 'new.txt'}"
    assert "Read-only file system" in _text(bash) and "scratch" in _text(bash)
    assert not (tmp_path / "work" / "inside.txt").exists()


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"reached")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize(("network", "reached"), [(False, False), (True, True)])
@pytest.mark.slow
async def test_network_false_cuts_even_loopback(tmp_path: Path, network: bool, reached: bool) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        command = f"python3 -c \"import urllib.request; print(urllib.request.urlopen('{url}', timeout=5).read())\""
        [end] = await _run(tmp_path, [_call("bash", {"command": command})], "--sandbox", "workspace-write",
                           settings={"sandbox": {"network": network}})
    finally:
        server.shutdown()
    assert ("reached" in _text(end)) is reached
    assert end["isError"] is not reached


@pytest.mark.slow
async def test_setsid_and_double_fork_die_with_the_command(tmp_path: Path) -> None:
    pid_file = tmp_path / "work" / "daemon.pid"
    command = f"setsid sh -c 'echo $$ > {pid_file}; sleep 300' & sleep 0.5"
    [end] = await _run(tmp_path, [_call("bash", {"command": command})], "--sandbox", "workspace-write")
    assert not end["isError"]
    await asyncio.sleep(0.5)
    assert pid_file.exists()
    # its pid is one of the sandbox's namespace; no process outside runs that command any more
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).endswith(f"echo $$ > {pid_file}; sleep 300")]


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


@pytest.mark.slow
async def test_normal_work_passes_in_workspace_write(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "work" / "test_calc.py").write_text("from calc import add\nassert add(2, 3) == 5\nprint('ok')\n")
    calls = [_call("edit", {"path": "calc.py", "edits": [{"oldText": "a - b", "newText": "a + b"}]}),
             _call("bash", {"command": "python3 test_calc.py"}),
             _call("grep", {"pattern": "return"}), _call("find", {"pattern": "*.py"})]
    edit, bash, grep, find = await _run(tmp_path, calls, "--sandbox", "workspace-write",
                                        "--tools", "read,bash,edit,write,grep,find")
    assert not edit["isError"] and not bash["isError"] and "ok" in _text(bash)
    assert _text(grep) == "calc.py:2:     return a + b" and _text(find).split() == ["calc.py", "test_calc.py"]


@pytest.mark.slow
async def test_ask_on_refusal_lets_the_user_allow_it(tmp_path: Path) -> None:
    calls = [_call("write", {"path": "../allowed.txt", "content": "x"}),
             _call("bash", {"command": "echo y > ../allowed-bash.txt"})]
    write, bash = await _run(tmp_path, calls, "--sandbox", "workspace-write",
                             settings={"sandbox": {"onRefusal": "ask"}}, ui_answer=True)
    assert not write["isError"] and not bash["isError"]
    assert (tmp_path / "allowed.txt").exists() and (tmp_path / "allowed-bash.txt").read_text() == "y\n"


async def test_an_unavailable_sandbox_refuses_to_start(tmp_path: Path) -> None:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path), "HOME": str(tmp_path), "PATH": "/nonexistent"}
    pi = await RpcProcess.pi("--provider", "faux", "--model", "faux-1", "--no-session", "--sandbox", "read-only",
                             cwd=tmp_path, env=env)
    assert await pi.wait() == 1
    assert "Cannot start in the read-only sandbox: the sandbox needs bubblewrap" in await pi.stderr_text()


def test_policy_from_settings_and_the_env_scrub(tmp_path: Path) -> None:
    settings = {"sandbox.mode": "workspace-write", "sandbox.writableRoots": ["~/extra"], "sandbox.env": "scrub"}
    policy = policy_from_settings(lambda key, default: settings.get(key, default), tmp_path, None)
    assert policy.mode == "workspace-write" and policy.scrub_env
    assert Path(os.path.expanduser("~/extra")).resolve() in policy.writable()
    assert policy_from_settings(lambda key, default: settings.get(key, default), tmp_path, "off").active is False
    env = {"PATH": "/bin", "OPENAI_API_KEY": "k", "GH_TOKEN": "t", "MY_SECRET": "s", "AWS_PROFILE": "p", "HOME": "/h"}
    assert SandboxPolicy(mode="read-only", scrub_env=True).tool_environment(env) == {"PATH": "/bin", "HOME": "/h"}
    with pytest.raises(ValueError):
        policy_from_settings(lambda key, default: "sometimes" if key == "sandbox.mode" else default, tmp_path, None)
    with pytest.raises(SandboxRefusal):
        SandboxPolicy(mode="workspace-write", cwd=tmp_path).check_write("/etc/hosts")


def _project_settings(tmp_path: Path, sandbox: dict[str, Any]) -> None:
    (tmp_path / "work" / ".pi").mkdir(parents=True, exist_ok=True)
    (tmp_path / "work" / ".pi" / "settings.json").write_bytes(orjson.dumps({"sandbox": sandbox}))


@pytest.mark.slow
async def test_project_settings_cannot_switch_off_or_widen_the_users_sandbox(tmp_path: Path) -> None:
    """A trusted project's settings (which the model could write) say ``off``, add the outside as a
    writable root and turn the network on: the user's ``workspace-write`` stands, unwidened."""
    (tmp_path / "outside").mkdir()
    _project_settings(tmp_path, {"mode": "off", "writableRoots": [str(tmp_path / "outside")], "network": True})
    calls = [_call("write", {"path": "../outside/a.txt", "content": "x"}),
             _call("bash", {"command": "echo x > ../outside/b.txt"})]
    write, bash = await _run(tmp_path, calls, "-a", settings={"sandbox": {"mode": "workspace-write"}})
    assert write["isError"] and _text(write).startswith("write outside the workspace refused:")
    assert bash["isError"] and "Read-only file system" in _text(bash)
    assert list((tmp_path / "outside").iterdir()) == []


@pytest.mark.slow
async def test_project_settings_may_narrow_the_sandbox(tmp_path: Path) -> None:
    _project_settings(tmp_path, {"mode": "read-only"})
    [write] = await _run(tmp_path, [_call("write", {"path": "new.txt", "content": "x"})], "-a",
                         settings={"sandbox": {"mode": "workspace-write"}})
    assert write["isError"] and _text(write).startswith("write refused by the read-only sandbox")


@pytest.mark.slow
async def test_pi_and_git_hooks_stay_read_only_inside_the_workspace(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    proc = await asyncio.create_subprocess_exec(*git[:1], "init", "-q", str(work))
    assert await proc.wait() == 0
    config = (work / ".git" / "config").read_text()
    attempts = "; ".join(["echo '{}' > .pi/settings.json", "echo evil > .git/hooks/pre-commit",
                          "git config core.hooksPath evil", "mv .git .git-old", "rm -rf .pi"])
    calls = [_call("write", {"path": ".pi/settings.json", "content": '{"sandbox": {"mode": "off"}}'}),
             _call("write", {"path": ".git/hooks/pre-commit", "content": "evil"}),
             _call("edit", {"path": ".git/config", "edits": [{"oldText": "[core]", "newText": "[core]\n\thooksPath = x"}]}),
             _call("bash", {"command": attempts + "; echo tried"}),
             _call("bash", {"command": f"echo v1 > a.txt && {' '.join(git)} add a.txt && {' '.join(git)} commit -qm one "
                                       "&& git log --oneline | wc -l"})]
    pi_write, hook_write, config_edit, bash_attempts, bash_git = await _run(
        tmp_path, calls, "--sandbox", "workspace-write")
    for end in (pi_write, hook_write, config_edit):
        assert end["isError"] and "stay read-only" in _text(end), _text(end)
    assert "tried" in _text(bash_attempts) and "Read-only file system" in _text(bash_attempts)
    assert not bash_git["isError"] and _text(bash_git).strip().endswith("1"), _text(bash_git)
    assert list((work / ".pi").iterdir()) == [] and list((work / ".git" / "hooks").glob("pre-commit")) == []
    assert (work / ".git" / "config").read_text() == config and (work / ".git").is_dir()


def test_project_sandbox_values_only_narrow(tmp_path: Path) -> None:
    def getter(values: dict[str, Any]) -> Any:
        return lambda key, default: values.get(key, default)

    user = getter({"sandbox.mode": "workspace-write", "sandbox.network": True, "sandbox.onRefusal": "ask"})
    loose = getter({"sandbox.mode": "off", "sandbox.writableRoots": ["/"], "sandbox.network": True,
                    "sandbox.onRefusal": "ask"})
    policy = policy_from_settings(user, tmp_path, None, loose)
    assert (policy.mode, policy.writable_roots, policy.network, policy.ask_on_refusal) == (
        "workspace-write", (), True, True)
    strict = getter({"sandbox.mode": "read-only", "sandbox.network": False, "sandbox.env": "scrub",
                     "sandbox.onRefusal": "refuse"})
    policy = policy_from_settings(user, tmp_path, None, strict)
    assert (policy.mode, policy.network, policy.scrub_env, policy.ask_on_refusal) == ("read-only", False, True, False)
    assert policy_from_settings(getter({}), tmp_path, None, loose).active is False
    assert policy_from_settings(user, tmp_path, "off", strict).active is False  # --sandbox wins


@pytest.mark.slow
async def test_a_sandboxed_command_flipping_a_link_gets_no_write_outside(tmp_path: Path) -> None:
    """The issue's race end to end: one message runs a sandboxed ``bash`` that flips ``link`` between
    a workspace folder and an outside one, beside 200 writes through the link. None lands outside."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "inside").mkdir(parents=True)
    outside.mkdir()
    flipper = (f"end=$(( $(date +%s) + 4 )); while [ $(date +%s) -lt $end ]; do "
               f"ln -sfn inside link; ln -sfn {outside} link; done; echo flipped")
    writes = [{"type": "toolCall", "id": f"w{i}", "name": "write", "arguments": {"path": f"link/f{i}.txt", "content": "x"}}
              for i in range(200)]
    message = {"content": [{"type": "toolCall", "id": "flip", "name": "bash", "arguments": {"command": flipper}},
                           {"type": "toolCall", "id": "nap", "name": "bash", "arguments": {"command": "sleep 0.5"}},
                           *writes]}
    ends = await _run(tmp_path, [message], "--sandbox", "workspace-write")
    assert "flipped" in _text(next(e for e in ends if e["toolCallId"] == "flip"))
    escaped = len(list(outside.iterdir()))
    assert escaped == 0, f"{escaped} of 200 writes landed outside the workspace"
    assert any(not e["isError"] for e in ends if e["toolCallId"].startswith("w")), "no write went through"
