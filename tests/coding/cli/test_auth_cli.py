"""``pi auth`` and OAuth credentials across real processes: ours, two of ours at once, and pi's.

The fake authorization server (``PI_OAUTH_ORIGIN``) and the fake LLM server (anthropic's
``baseUrl`` in models.json) stand in for the providers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.fakes.oauth_server import FakeOAuthServer
from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_PI
from tests.support.rpc_helpers import PYTHON

needs_reference = pytest.mark.reference  # skipped, with the reason, without it (tests/conftest.py)


def now_ms() -> int:
    return int(time.time() * 1000)


def home(tmp_path: Path, auth: dict[str, Any], llm_url: str | None = None) -> dict[str, str]:
    """An isolated HOME with ``~/.pi/agent/auth.json`` (and anthropic pointed at the fake LLM)."""
    agent = tmp_path / "home" / ".pi" / "agent"
    agent.mkdir(parents=True)
    (agent / "auth.json").write_text(json.dumps(auth, indent=2))
    (agent / "auth.json").chmod(0o600)
    if llm_url:
        (agent / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": llm_url}}}))
        (agent / "settings.json").write_text(json.dumps({"retry": {"baseDelayMs": 10}}))
    keep = ("PATH", "LANG", "PI_OAUTH_ORIGIN")
    return {**{k: v for k, v in os.environ.items() if k in keep}, "HOME": str(tmp_path / "home")}


def auth_file(env: dict[str, str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(env["HOME"]) / ".pi" / "agent" / "auth.json").read_text())
    return data


def ours(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "pi_coding_agent", *args], env=env, cwd=cwd or env["HOME"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)


def reference(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**env, "PATH": f"{REFERENCE_NODE_BIN}:{env.get('PATH', '')}"}
    return subprocess.run([str(REFERENCE_PI), *args], env=env, cwd=env["HOME"], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=False)


@pytest.fixture
def oauth(monkeypatch: pytest.MonkeyPatch):
    with FakeOAuthServer() as server:
        monkeypatch.setenv("PI_OAUTH_ORIGIN", server.url)
        yield server


def through_proxy(env: dict[str, str], proxy: Any) -> dict[str, str]:
    """The reference pi's environment, its HTTPS requests going through an ``InterceptingProxy``."""
    return {**env, "PATH": f"{REFERENCE_NODE_BIN}:{env['PATH']}", "HTTPS_PROXY": proxy.url,
            "NODE_EXTRA_CA_CERTS": str(proxy.ca), "PI_SKIP_VERSION_CHECK": "1", "PI_OFFLINE": "1"}


@contextlib.contextmanager
def reference_through_proxy(tmp_path: Path, oauth: FakeOAuthServer, host: str,
                            env: dict[str, str]) -> Iterator[dict[str, str]]:
    """The reference pi's environment while its requests to ``host`` reach the fake authorization server."""
    from urllib.parse import urlsplit

    from tests.support.fakes.tls_proxy import InterceptingProxy

    with InterceptingProxy(tmp_path, host, int(urlsplit(oauth.url).port or 0)) as proxy:
        yield through_proxy(env, proxy)


def reference_login(ref_env: dict[str, str], provider: str, answers: list[tuple[bytes, Answer]]) -> None:
    """``pi auth login <provider> --no-browser`` of the reference pi on a terminal; it must succeed."""
    code, output = in_terminal([str(REFERENCE_PI), "auth", "login", provider, "--no-browser"], ref_env, answers)
    assert code == 0, output.decode()


def expire(env: dict[str, str], provider: str) -> None:
    """Make the stored credential of ``provider`` due, as if time had passed."""
    path = Path(env["HOME"]) / ".pi" / "agent" / "auth.json"
    data = json.loads(path.read_text())
    data[provider]["expires"] = now_ms() - 1
    path.write_text(json.dumps(data, indent=2))


def expired_anthropic(refresh: str) -> dict[str, Any]:
    return {"type": "oauth", "refresh": refresh, "access": "sk-ant-oat01-expired-token", "expires": now_ms() - 1}


@pytest.mark.slow
def test_print_bearer_token_refreshes_and_check_reports(tmp_path: Path, oauth: FakeOAuthServer):
    env = home(tmp_path, {"anthropic": expired_anthropic(oauth.issue_refresh())})
    done = ours(env, "auth", "print-bearer-token", "--provider", "anthropic")
    assert (done.returncode, done.stdout, done.stderr) == (0, "sk-ant-oat01-access-1\n", "")
    assert auth_file(env)["anthropic"]["access"] == "sk-ant-oat01-access-1"
    check = ours(env, "auth", "check", "--provider", "anthropic", "--json")
    assert check.returncode == 0
    assert json.loads(check.stdout) == {"status": "ready", "provider": "anthropic", "authType": "oauth"}


@pytest.mark.slow
def test_check_of_a_revoked_credential_is_invalid_and_names_no_token(tmp_path: Path, oauth: FakeOAuthServer):
    refresh = oauth.issue_refresh()
    oauth.revoke(refresh)
    env = home(tmp_path, {"anthropic": expired_anthropic(refresh)})
    check = ours(env, "auth", "check", "--provider", "anthropic", "--json")
    assert check.returncode == 2
    assert json.loads(check.stdout) == {"status": "invalid", "provider": "anthropic", "reason": "invalid_state"}
    stale = ours(env, "auth", "check", "--provider", "anthropic", "--no-refresh")
    assert (stale.returncode, stale.stdout) == (0, "ready\n")
    printed = ours(env, "auth", "print-bearer-token", "--provider", "anthropic")
    assert (printed.returncode, printed.stdout, printed.stderr) == (1, "", "Error: Failed to resolve credential\n")
    for out in (check, stale, printed):
        assert refresh not in out.stdout + out.stderr and "expired-token" not in out.stdout + out.stderr


@pytest.mark.slow
def test_agent_uses_refreshed_token_and_no_token_reaches_output_or_session(
        tmp_path: Path, oauth: FakeOAuthServer, fake_llm: FakeLLMServer):
    refresh = oauth.issue_refresh()
    env = home(tmp_path, {"anthropic": expired_anthropic(refresh)}, fake_llm.url)
    fake_llm.add({"content": [{"type": "text", "text": "hello back"}]})
    done = ours(env, "-p", "--model", "anthropic/claude-sonnet-4-5", "hello")
    assert (done.returncode, done.stdout.strip()) == (0, "hello back"), done.stderr
    request = fake_llm.requests[0]
    assert request["path"].endswith("/v1/messages")
    assert request["headers"]["authorization"] == "Bearer sk-ant-oat01-access-1"
    new = auth_file(env)["anthropic"]
    secrets_seen = [refresh, new["refresh"], new["access"], "sk-ant-oat01-expired-token"]
    sessions = list((Path(env["HOME"]) / ".pi" / "agent" / "sessions").rglob("*.jsonl"))
    assert sessions
    exported = tmp_path / "export.html"
    export = ours(env, "--export", str(sessions[0]), str(exported))
    assert export.returncode == 0, export.stderr
    texts = [done.stdout, done.stderr, export.stdout, export.stderr, exported.read_text(),
             *(s.read_text() for s in sessions)]
    for text in texts:
        for secret in secrets_seen:
            assert secret not in text


@pytest.mark.slow
def test_a_401_refreshes_once_and_the_prompt_succeeds(tmp_path: Path, oauth: FakeOAuthServer, fake_llm: FakeLLMServer):
    live = {"type": "oauth", "refresh": oauth.issue_refresh(), "access": "sk-ant-oat01-revoked-early",
            "expires": now_ms() + 3600_000}
    env = home(tmp_path, {"anthropic": live}, fake_llm.url)
    fake_llm.add({"status": 401, "body": {"type": "error", "error": {"type": "authentication_error",
                                                                     "message": "invalid token"}}},
                 {"content": [{"type": "text", "text": "after refresh"}]})
    done = ours(env, "-p", "--model", "anthropic/claude-sonnet-4-5", "hi")
    assert (done.returncode, done.stdout.strip()) == (0, "after refresh"), done.stderr
    auth_headers = [r["headers"]["authorization"] for r in fake_llm.requests]
    assert auth_headers == ["Bearer sk-ant-oat01-revoked-early", "Bearer sk-ant-oat01-access-1"]
    assert len(oauth.grants("refresh_token")) == 1


@pytest.mark.slow
async def test_two_agent_processes_refresh_one_credential_once(
        tmp_path: Path, oauth: FakeOAuthServer, fake_llm: FakeLLMServer):
    """Both find the token expired; the lock lets one refresh and the other use its result."""
    oauth.refresh_delay_s = 1.0
    env = home(tmp_path, {"anthropic": expired_anthropic(oauth.issue_refresh())}, fake_llm.url)
    fake_llm.add({"content": [{"type": "text", "text": "one"}]}, {"content": [{"type": "text", "text": "two"}]})

    async def run() -> tuple[int, bytes, bytes]:
        proc = await asyncio.create_subprocess_exec(
            PYTHON, "-m", "pi_coding_agent", "-p", "--no-session", "--model", "anthropic/claude-sonnet-4-5", "go",
            env=env, cwd=env["HOME"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = await proc.communicate()
        assert proc.returncode is not None
        return proc.returncode, out, err

    results = await asyncio.gather(run(), run())
    assert [r[0] for r in results] == [0, 0], [r[2] for r in results]
    assert len(oauth.grants("refresh_token")) == 1
    stored = auth_file(env)["anthropic"]
    assert stored["refresh"] in oauth.live_refresh  # the rotated token survived
    assert {r["headers"]["authorization"] for r in fake_llm.requests} == {f"Bearer {stored['access']}"}


# ----------------------------------------------------------------------------- side by side with pi


def _commands() -> list[list[str]]:
    return [
        ["auth", "check", "--provider", "anthropic"],
        ["auth", "check", "--provider", "anthropic", "--json", "--credentials", "--no-refresh"],
        ["auth", "check", "--provider", "openai", "--json"],
        ["auth", "check", "--provider", "nosuch", "--json"],
        ["auth", "check"],
        ["auth", "check", "--provider", "anthropic", "--bogus"],
        ["auth", "check", "--provider", "anthropic", "stray"],
        ["auth", "print-bearer-token", "--provider", "anthropic"],
        ["auth", "print-bearer-token", "--model", "claude-sonnet-4-5"],
        ["auth", "print-api-key", "--provider", "anthropic"],
        ["auth", "print-api-key", "--provider", "xai"],
        ["auth", "print-bearer-token", "--provider", "xai"],
        ["auth", "print-api-key"],
        ["auth", "print-bearer-token", "--provider", "anthropic", "--min-expiry", "5x"],
        ["auth", "print-bearer-token", "--provider", "anthropic", "--json"],
        ["auth", "frobnicate"],
        ["auth", "logout", "openai"],
        ["auth", "logout"],
        ["auth", "login"],
        ["auth", "login", "anthropic", "--api-key", "--no-browser"],
        ["auth", "login", "anthropic"],
    ]


@needs_reference
def test_auth_commands_match_the_reference(tmp_path: Path):
    data = {"anthropic": {"type": "oauth", "refresh": "r-1", "access": "sk-ant-oat01-same",
                          "expires": now_ms() + 7200_000},
            "xai": {"type": "api_key", "key": "xai-key-1"}}
    for args in _commands():
        ours_env = home(tmp_path / "ours" / "-".join(args)[:60], data)
        ref_env = home(tmp_path / "ref" / "-".join(args)[:60], data)
        mine, theirs = ours(ours_env, *args), reference(ref_env, *args)
        assert (mine.returncode, mine.stdout, mine.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr), args


@needs_reference
def test_credential_we_refreshed_is_used_by_pi_and_pi_rewrites_it_identically(tmp_path: Path, oauth: FakeOAuthServer):
    env = home(tmp_path, {"anthropic": expired_anthropic(oauth.issue_refresh()),
                          "xai": {"type": "api_key", "key": "xai-key-1"}})
    assert ours(env, "auth", "print-bearer-token", "--provider", "anthropic").returncode == 0
    ours_bytes = (Path(env["HOME"]) / ".pi" / "agent" / "auth.json").read_bytes()
    printed = reference(env, "auth", "print-bearer-token", "--provider", "anthropic")
    assert (printed.returncode, printed.stdout) == (0, "sk-ant-oat01-access-1\n")
    # pi removes xai: its rewrite of our file is byte-for-byte ours minus that entry
    assert reference(env, "auth", "logout", "xai").returncode == 0
    data = json.loads(ours_bytes)
    del data["xai"]
    assert (Path(env["HOME"]) / ".pi" / "agent" / "auth.json").read_bytes() == json.dumps(data, indent=2).encode()


Answer = bytes | Callable[[bytes], bytes]


def in_terminal(argv: list[str], env: dict[str, str], answers: list[tuple[bytes, Answer]]) -> tuple[int, bytes]:
    """Run ``argv`` on a pseudo-terminal, typing each answer once its prompt text has appeared
    (a callable answer is computed from the output so far)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child
        os.chdir(env["HOME"])
        os.execve(argv[0], argv, env)
    output = b""
    deadline = time.monotonic() + 30
    for prompt, answer in answers:
        while prompt not in output and time.monotonic() < deadline:
            output += os.read(fd, 1024)
        os.write(fd, (answer(output) if callable(answer) else answer) + b"\r")
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), output


@needs_reference
def test_api_key_saved_by_pi_login_is_used_by_ours(tmp_path: Path):
    env = {**home(tmp_path, {}), "TERM": "dumb"}
    env["PATH"] = f"{REFERENCE_NODE_BIN}:{env.get('PATH', '')}"
    code, output = in_terminal([str(REFERENCE_PI), "auth", "login", "anthropic", "--api-key"], env,
                               [(b"API key", b"sk-ant-api03-from-pi")])
    assert code == 0, output
    assert auth_file(env)["anthropic"] == {"type": "api_key", "key": "sk-ant-api03-from-pi"}
    printed = ours(env, "auth", "print-api-key", "--provider", "anthropic")
    assert (printed.returncode, printed.stdout) == (0, "sk-ant-api03-from-pi\n")


def test_llama_login_checks_the_router_and_keeps_its_url(tmp_path: Path):
    from tests.support.fakes.llama_server import FakeLlamaRouter

    env = {**home(tmp_path, {}), "TERM": "dumb"}
    with FakeLlamaRouter({"m": {"status": {"value": "loaded"}}}) as router:
        code, output = in_terminal([PYTHON, "-m", "pi_coding_agent", "auth", "login", "llama.cpp"], env,
                                   [(b"server URL", router.url.encode() + b"/v1"), (b"API key", b"")])
        assert code == 0, output
        assert router.requests[0]["path"] == "/models"
    assert auth_file(env)["llama.cpp"] == {"type": "api_key", "env": {"LLAMA_BASE_URL": router.url}}
    assert b"Saved API key for llama.cpp." in output


@pytest.mark.slow
def test_anthropic_auth_token_reaches_the_server_as_bearer(tmp_path: Path, fake_llm: FakeLLMServer):
    env = {**home(tmp_path, {}, fake_llm.url), "ANTHROPIC_AUTH_TOKEN": "workload-bearer-1"}
    fake_llm.add({"content": [{"type": "text", "text": "ok"}]})
    done = ours(env, "-p", "--no-session", "--model", "anthropic/claude-sonnet-4-5", "hi")
    assert done.returncode == 0, done.stderr
    headers = fake_llm.requests[0]["headers"]
    assert headers["authorization"] == "Bearer workload-bearer-1" and "x-api-key" not in headers


@pytest.mark.slow
def test_no_key_errors_name_what_works_here(tmp_path: Path):
    env = home(tmp_path, {})
    (Path(env["HOME"]) / ".pi" / "agent" / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
        "models": [{"id": "m1", "contextWindow": 1000, "maxTokens": 100}]}}}))
    catalog = ours(env, "-p", "--no-session", "--model", "openai/gpt-4.1", "hi")
    custom = ours(env, "-p", "--no-session", "--model", "local/m1", "hi")
    assert catalog.returncode == custom.returncode == 1
    assert catalog.stderr.startswith("No API key found for openai.\n\nSet OPENAI_API_KEY, or run `pi auth login openai`")
    assert custom.stderr.startswith('No API key found for local.\n\nAdd "apiKey" to the "local" provider in ')
    for text in (catalog.stderr, custom.stderr):
        assert "docs/models.md" in text and "/login" not in text and "github.com" not in text
        assert Path(text.split("See ")[-1].strip()).is_file()


@needs_reference
@pytest.mark.openssl
@pytest.mark.parametrize("first", ["ours", "pi"])
async def test_pi_and_ours_refreshing_one_credential_at_once_keep_the_rotated_token(
        tmp_path: Path, oauth: FakeOAuthServer, first: str):
    """pi's refresh reaches the fake server through an intercepting HTTPS proxy; both processes find
    the token expired at the same moment, one refreshes under the shared lock, the other reuses it."""
    from urllib.parse import urlsplit

    from tests.support.fakes.tls_proxy import InterceptingProxy

    oauth.refresh_delay_s = 1.0
    env = home(tmp_path, {"anthropic": expired_anthropic(oauth.issue_refresh())})
    port = int(urlsplit(oauth.url).port or 0)
    with InterceptingProxy(tmp_path, "platform.claude.com", port) as proxy:
        ref_env = through_proxy(env, proxy)
        commands = {"ours": [PYTHON, "-m", "pi_coding_agent"], "pi": [str(REFERENCE_PI)]}
        envs = {"ours": env, "pi": ref_env}

        lock = Path(env["HOME"]) / ".pi" / "agent" / "auth.json.lock"

        async def run(side: str, after_lock: bool) -> tuple[int, str, str]:
            while after_lock and not lock.exists():  # the first process holds the lock for its refresh
                await asyncio.sleep(0.02)
            proc = await asyncio.create_subprocess_exec(
                *commands[side], "auth", "print-bearer-token", "--provider", "anthropic", env=envs[side],
                cwd=env["HOME"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = await proc.communicate()
            return proc.returncode or 0, out.decode(), err.decode()

        second = "pi" if first == "ours" else "ours"
        results = await asyncio.wait_for(asyncio.gather(run(first, False), run(second, True)), 60)
    assert [r[0] for r in results] == [0, 0], results
    refreshes = [r for r in oauth.requests if r["body"].get("grant_type") == "refresh_token"]
    assert len(refreshes) == 1, refreshes
    # the process that started first refreshed (pi's request came through the proxy)
    assert (refreshes[0]["headers"]["host"] == "platform.claude.com") == (first == "pi")
    stored = auth_file(env)["anthropic"]
    assert {r[1] for r in results} == {stored["access"] + "\n"}
    assert stored["refresh"] in oauth.live_refresh and list(stored) == ["type", "refresh", "access", "expires"]


@pytest.mark.slow
def test_terminal_sign_in_without_browser_uses_the_pasted_code(tmp_path: Path, oauth: FakeOAuthServer):
    env = {**home(tmp_path, {}), "TERM": "dumb"}

    def paste(output: bytes) -> bytes:
        url = next(line.strip() for line in output.decode().splitlines() if "claude.ai/oauth/authorize" in line)
        return oauth.approve(url).encode()

    code, output = in_terminal([PYTHON, "-m", "pi_coding_agent", "auth", "login", "anthropic", "--no-browser"], env,
                               [(b"code#state", paste)])
    text = output.decode()
    assert code == 0, text
    assert "Select Anthropic login method: Copy code login (headless)" in text
    assert f"Logged in to Anthropic. Credentials saved to {Path(env['HOME'])}/.pi/agent/auth.json" in text
    stored = auth_file(env)["anthropic"]
    assert stored["type"] == "oauth" and stored["access"] not in text and stored["refresh"] not in text


@needs_reference
@pytest.mark.openssl
def test_radius_sign_in_by_pi_is_refreshed_by_ours_and_used_again_by_pi(tmp_path: Path, oauth: FakeOAuthServer):
    """pi's own device-code sign-in (its requests to radius.pi.dev go through the intercepting proxy)
    writes the credential; ours refreshes it when due; pi reads what ours wrote."""
    env = {**home(tmp_path, {}), "TERM": "dumb"}

    def approve(output: bytes) -> bytes:
        oauth.approve_device()
        return b""

    with reference_through_proxy(tmp_path, oauth, "radius.pi.dev", env) as ref_env:
        reference_login(ref_env, "radius", [(b"ABCD-1234", approve)])
        by_pi = auth_file(env)["radius"]
        assert by_pi["type"] == "oauth" and by_pi["refresh"] in oauth.live_refresh
        mcp_json = json.loads((Path(env["HOME"]) / ".pi" / "agent" / "mcp.json").read_text())
        assert mcp_json == {"mcpServers": {"radius": {"url": "https://radius.pi.dev/mcp", "auth": {"provider": "radius"}}}}
        expire(env, "radius")
        printed = ours(env, "auth", "print-bearer-token", "--provider", "radius")
        by_ours = auth_file(env)["radius"]
        assert (printed.returncode, printed.stdout) == (0, by_ours["access"] + "\n"), printed.stderr
        assert by_ours["access"] != by_pi["access"] and by_ours["refresh"] in oauth.live_refresh
        assert oauth.grants("refresh_token")[-1]["refresh_token"] == by_pi["refresh"]
        again = reference(ref_env, "auth", "print-bearer-token", "--provider", "radius")
        assert (again.returncode, again.stdout) == (0, by_ours["access"] + "\n"), again.stderr
    assert len(oauth.grants("refresh_token")) == 1  # pi found our token fresh and did not refresh again


@needs_reference
@pytest.mark.openssl
def test_chatgpt_sign_in_by_pi_is_refreshed_by_ours_with_its_issued_client(tmp_path: Path, oauth: FakeOAuthServer):
    env = {**home(tmp_path, {}), "TERM": "dumb"}

    def paste(output: bytes) -> bytes:
        url = next(line.strip() for line in output.decode().splitlines() if "/api/accounts/authorize?" in line)
        return oauth.approve(url[url.index("https://"):]).encode()

    with reference_through_proxy(tmp_path, oauth, "auth.openai.com", env) as ref_env:
        reference_login(ref_env, "openai", [(b"redirect URL here", paste)])
    by_pi = auth_file(env)["openai"]
    assert by_pi["clientId"] in oauth.issued_clients and "chatgpt.tokens.use.direct" in by_pi["scopes"]
    expire(env, "openai")
    printed = ours(env, "auth", "print-bearer-token", "--provider", "openai")
    by_ours = auth_file(env)["openai"]
    assert (printed.returncode, printed.stdout) == (0, by_ours["access"] + "\n"), printed.stderr
    assert oauth.grants("refresh_token")[-1]["client_id"] == by_pi["clientId"] == by_ours["clientId"]
    assert list(by_ours) == list(by_pi)  # the same fields in pi's order


def radius_device_sign_in(env: dict[str, str], oauth: FakeOAuthServer) -> tuple[int, bytes]:
    """Our ``pi auth login radius --no-browser`` on a terminal, the device code approved when shown."""
    def approve(output: bytes) -> bytes:
        oauth.approve_device()
        return b""

    return in_terminal([PYTHON, "-m", "pi_coding_agent", "auth", "login", "radius", "--no-browser"], env,
                       [(b"ABCD-1234", approve)])


@pytest.mark.slow
def test_our_radius_sign_in_in_a_terminal_adds_its_mcp_server_like_pi(tmp_path: Path, oauth: FakeOAuthServer):
    env = {**home(tmp_path, {}), "TERM": "dumb"}
    code, output = radius_device_sign_in(env, oauth)
    text = output.decode()
    agent = Path(env["HOME"]) / ".pi" / "agent"
    assert code == 0, text
    assert "Sign in to Radius: Sign in with device code (when signing in from another device)" in text
    assert f'Added MCP server "radius" in {agent / "mcp.json"} to use the Radius login.' in text
    assert json.loads((agent / "mcp.json").read_text()) == {"mcpServers": {"radius": {
        "url": "https://radius.pi.dev/mcp", "auth": {"provider": "radius"}}}}
    stored = auth_file(env)["radius"]
    assert stored["refresh"] in oauth.live_refresh and stored["access"] not in text
