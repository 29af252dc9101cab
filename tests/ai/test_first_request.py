"""The first request of a process: TLS loads late but works, and the HTTP stack is warmed in the background.

``pi`` starts asyncio without ``ssl`` (``coding/modes/start_up.py``) and hands the module over when
the HTTP stack imports it, so an ``https://`` provider must still work end to end: here against the
fake LLM server behind a certificate of a throw-away CA, trusted through ``SSL_CERT_FILE``. Once the
first command is answered, a session whose model has credentials imports that stack in a thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import subprocess
from pathlib import Path

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.fakes.tls_proxy import make_certificates
from tests.support.rpc_helpers import PYTHON, RpcProcess
from tests.test_startup_imports import imported_modules

MODEL_ARGS = ("--no-session", "--provider", "local", "--model", "m1")


def write_models_json(agent: Path, base_url: str) -> None:
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": f"{base_url}/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": "m1", "contextWindow": 1000, "maxTokens": 100}]}}}))


@pytest.fixture
def tls_server(tmp_path):
    ca, leaf, key = make_certificates(tmp_path, "127.0.0.1")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(leaf, key)
    with FakeLLMServer(tls=context) as server:
        yield server, ca


@pytest.mark.slow
async def test_an_https_provider_works_with_ssl_loaded_late(tmp_path, tls_server):
    server, ca = tls_server
    server.add({"content": [{"type": "text", "text": "over tls"}]})
    assert server.url.startswith("https://")
    write_models_json(tmp_path / "agent", server.url)
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
           "SSL_CERT_FILE": str(ca)}
    pi = await RpcProcess.pi(*MODEL_ARGS, cwd=tmp_path, env=env)
    try:
        await pi.send({"type": "prompt", "message": "hello"})  # the first command: nothing warmed yet
        records = await pi.read_until(lambda r: r.get("type") == "agent_settled")
        ends = [r["message"] for r in records if r.get("type") == "message_end"]
        assert ends[-1]["content"] == [{"type": "text", "text": "over tls"}]
        assert ends[-1]["stopReason"] == "stop"
        assert server.requests[0]["path"] == "/v1/chat/completions"
    finally:
        await pi.kill()


@pytest.mark.slow
async def test_an_untrusted_certificate_is_refused(tmp_path, tls_server):
    """Without the CA in SSL_CERT_FILE the handshake fails: loading ssl late keeps verification on."""
    server, _ = tls_server
    write_models_json(tmp_path / "agent", server.url)
    # a failed handshake is retried: 10 ms apart instead of pi's 2, 4 and 8 s
    (tmp_path / "agent" / "settings.json").write_text(json.dumps({"retry": {"baseDelayMs": 10}}))
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    env.pop("SSL_CERT_FILE", None)
    pi = await RpcProcess.pi(*MODEL_ARGS, cwd=tmp_path, env=env)
    try:
        await pi.send({"type": "prompt", "message": "hello"})
        records = await pi.read_until(lambda r: r.get("type") == "agent_settled")
        ends = [r["message"] for r in records if r.get("type") == "message_end"]
        assert ends[-1]["stopReason"] == "error"
        assert server.requests == []
    finally:
        await pi.kill()


def test_credentials_warm_the_http_stack_after_the_first_answer(tmp_path):
    """The answer comes before the HTTP client and the tools' modules are imported; the imports follow
    without another command, and without httpx, which provider requests no longer use."""
    write_models_json(tmp_path / "agent", "http://127.0.0.1:9")
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    proc = subprocess.Popen([PYTHON, "-X", "importtime", "-m", "pi_coding_agent", "--mode", "rpc", *MODEL_ARGS],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            cwd=tmp_path)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b'{"id":"s","type":"get_state"}\n')
        proc.stdin.flush()
        before: list[str] = []
        while not (line := proc.stdout.readline().decode()).startswith("{"):
            before.append(line)
        assert json.loads(line)["success"] is True
        after: list[str] = []
        # stdin stays open and nothing else is asked; ``importlib.import_module`` imports are not
        # listed by -X importtime, the modules they import with an import statement are
        # the first prompt's own modules follow: bash's shell runner and the prompt builder's skills index
        wanted = {"pi_coding_agent.ai.transport.http", "pi_coding_agent.coding.tools.shell",
                  "pi_coding_agent.coding.resources.skills"}
        while not wanted <= imported_modules("".join(after)):
            after.append(proc.stdout.readline().decode())
        assert not {"aiohttp", "httpx", "pi_coding_agent.coding.tools.shell"} & imported_modules("".join(before))
        assert {"aiohttp", "pi_coding_agent.ai.transport.aio", "pi_coding_agent.ai.transport.http"} <= imported_modules("".join(after))
        assert "httpx" not in imported_modules("".join(after))
    finally:
        proc.kill()
        proc.wait()


async def test_a_bare_start_warms_nothing(tmp_path):
    """No credentials, nothing to send: the idle process keeps its memory (no httpx, no ssl)."""
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    for name in [n for n in env if n.endswith("_API_KEY")]:
        del env[name]
    pi = await RpcProcess.spawn([PYTHON, "-X", "importtime", "-m", "pi_coding_agent", "--mode", "rpc",
                                 "--no-session"], cwd=tmp_path, env=env)
    try:
        assert (await pi.request({"type": "get_state"}))["success"] is True
        assert (await pi.request({"type": "get_commands"}))["success"] is True  # the loop went idle between
        await asyncio.sleep(0.3)
        await pi.close_stdin()
        await pi.wait()
        modules = imported_modules(await pi.stderr_text())
        assert "pi_coding_agent.coding.modes.rpc.mode" in modules
        # ``ssl`` itself is listed by the import asyncio attempts while it is deferred; ``_ssl`` is OpenSSL
        assert sorted(m for m in modules if m.split(".")[0] in ("aiohttp", "httpx", "httpcore", "_ssl")) == []
    finally:
        await pi.kill()


async def test_one_session_a_loop_and_one_verifying_context():
    """Every request of a loop shares its aiohttp session (and so its connection pool); https://
    requests share the process's verifying TLS context."""
    from pi_coding_agent.ai.transport import aio

    client = aio.session()
    assert aio.session() is client and not client.closed
    context = aio.tls_context()  # the system's store here
    assert context is aio.tls_context() and context.cert_store_stats()["x509_ca"] > 0
    from aiohttp.connector import _SSL_CONTEXT_VERIFIED as default

    assert default.verify_mode == ssl.CERT_REQUIRED and default.check_hostname
