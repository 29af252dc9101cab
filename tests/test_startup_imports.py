"""Start-up stays cheap: `pi --mode rpc` answers `get_state` without importing the heavy libraries.

httpx (and its stack), pydantic, yaml and the cloud credential libraries (botocore, google-auth) cost more than our whole start-up budget; they belong in the
functions that need them (first provider request, changed config file, skill front matter).
``-X importtime`` lists every module the process imported, start to exit.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.rpc_helpers import PYTHON, ROOT

HEAVY = ("aiohttp", "yarl", "multidict", "httpx", "httpcore", "h11", "anyio", "httptools", "pydantic", "pydantic_core", "yaml",
         "botocore", "urllib3", "google", "cryptography",  # the cloud SDKs load on a provider's first request
         "_quickjs", "quickjs",  # the codemode engine loads only in its worker process
         "websockets", "backports",  # the Codex WebSocket transport and its zstd bodies: first Codex request
         "textual", "rich", "pygments", "markdown_it",  # the interactive mode's UI: only when it opens
         "nodesemver")  # npm version ranges: only when a package source has one
# standard modules a start does not need: OpenSSL (asyncio starts without ``ssl``: coding/modes/start_up.py),
# inspect with its parsers (asyncio and dataclasses import it, a start calls none of it: start_up.py),
# tempfile with what it pulls in (random, shutil and its compression modules), and the extension
# modules the tools use only while running (base64's binascii and zlib, struct, unicodedata)
DEFERRED_STDLIB = ("_ssl", "_hashlib", "inspect", "ast", "dis", "tempfile", "shutil", "random",
                   "secrets", "bz2", "lzma", "base64", "binascii", "zlib", "_struct", "unicodedata")


def imported_modules(stderr: str) -> set[str]:
    """Module names from ``-X importtime`` lines (``import time: self | cumulative | name``)."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def start_and_get_state(tmp_path: Path, *args: str) -> tuple[dict[str, object], set[str]]:
    return first_answer(tmp_path, b'{"id":"s","type":"get_state"}\n', *args)


def first_answer(tmp_path: Path, command: bytes, *args: str, **env_extra: str) -> tuple[dict[str, object], set[str]]:
    """The answer to ``command`` and the modules imported before it was written.

    stderr shares stdout's pipe, so the ``-X importtime`` lines come in the order of the writes; what
    a session loads in the background once its first answer is out (the provider stack) comes after.
    """
    env = {**os.environ, **env_extra, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    done = subprocess.run([PYTHON, "-X", "importtime", "-m", "pi_coding_agent", "--mode", "rpc", "--no-session", *args],
                          input=command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=env, cwd=tmp_path, timeout=60, check=False)
    before, answer = _split_at_answer(done.stdout.decode())
    return json.loads(answer), imported_modules(before)


def _split_at_answer(output: str) -> tuple[str, str]:
    """(everything before the first JSON line, that line)."""
    lines = output.splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("{"))
    return "\n".join(lines[:index]), lines[index]


def test_bare_start_imports_no_heavy_library(tmp_path):
    response, modules = start_and_get_state(tmp_path)
    assert response["command"] == "get_state" and response["success"] is True
    assert "pi_coding_agent.coding.modes.rpc.mode" in modules  # the listing is real
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []
    assert sorted(m for m in modules if m in DEFERRED_STDLIB) == []
    assert sorted(m for m in modules if m in FIRST_USE) == []


# the built-in tools are registered at start-up as handles, each tool's module (and the sandbox
# policy, the image pipeline) loads with its first use; the system prompt is built with the first
# prompt; the codemode tool is registered at start-up, what runs a script loads with the first one; the
# summaries of compaction and tree navigation load with the first, tool-argument validation with
# the first tool call; the run loop and tool execution with the first run, compaction planning and
# the branch projection with the first check after it, the cache warmer with the first reply, the
# edit matcher with the first edit; model patterns only with --model/--models, Anthropic federation
# only when its variables are set, the session replacement (new, resume, fork, clone) with the first one
FIRST_USE = (*(f"pi_coding_agent.coding.codemode.{name}"
               for name in ("script_run", "sandbox", "output", "host", "scope", "source", "worker", "declarations")),
             "pi_coding_agent.coding.compaction.summarize", "pi_coding_agent.coding.compaction.branch_summary",
             "pi_coding_agent.agent.validation", "pi_coding_agent.agent.loop", "pi_coding_agent.agent.tool_execution",
             "pi_coding_agent.coding.compaction.prepare", "pi_coding_agent.coding.compaction.projection",
             "pi_coding_agent.coding.services.cache_warming", "pi_coding_agent.coding.tools.edit_diff",
             "pi_coding_agent.ai.models.resolution", "pi_coding_agent.ai.auth.anthropic_federation",
             *(f"pi_coding_agent.coding.tools.{name}" for name in (
                 "read", "bash", "edit", "write", "grep", "find", "ls", "shell", "output", "backend", "images")),
             "pi_coding_agent.coding.sandbox.policy", "pi_coding_agent.coding.resources.system_prompt",
             "pi_coding_agent.coding.services.replacement",
             "pi_coding_agent.coding.packages.manifest", "glob")  # the package manifest reader: with a package


@pytest.mark.slow
def test_start_declares_no_dataclass_but_the_two_callers_replace(tmp_path):
    """A dataclass costs 0.2-0.5 ms as its module loads (its methods are compiled then): the classes
    a start loads are records (``ai/records.py``), except ``ToolResult`` and ``StreamOptions``,
    which callers (SDK users too) ``dataclasses.replace``."""
    _, modules = start_and_get_state(tmp_path)
    declared = []
    for module in sorted(m for m in modules if m.startswith("pi_coding_agent")):
        path = ROOT / "src" / module.replace(".", "/")
        source = (path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py").read_text()
        declared += [f"{module}.{node.name}" for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)
                     and any("dataclass" in ast.unparse(decorator) for decorator in node.decorator_list)]
    assert declared == ["pi_coding_agent.agent.tool.ToolResult", "pi_coding_agent.ai.stream.StreamOptions"]


@pytest.mark.slow
def test_start_with_validated_models_json_imports_no_heavy_library(tmp_path):
    """Once models.json was validated, later starts trust its fingerprint and skip pydantic."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": "m1", "contextWindow": 1000, "maxTokens": 100}]}}}))
    first, first_modules = start_and_get_state(tmp_path, "--provider", "local", "--model", "m1")
    assert first["success"] is True and "pydantic" in first_modules  # the first start validates
    second, modules = start_and_get_state(tmp_path, "--provider", "local", "--model", "m1")
    assert second["success"] is True
    assert second["data"]["model"]["id"] == "m1"  # type: ignore[index]
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []
    assert sorted(m for m in modules if m in DEFERRED_STDLIB and m != "zlib") == []  # fingerprints checksum


def test_start_with_cloud_credentials_imports_no_cloud_sdk(tmp_path):
    """Ambient AWS and Google credentials make their providers available without loading their SDKs."""
    adc = tmp_path / "adc.json"
    adc.write_text("{}")
    env_extra = {"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret", "GOOGLE_APPLICATION_CREDENTIALS":
                 str(adc), "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1"}
    response, modules = first_answer(tmp_path, b'{"id":"s","type":"get_available_models"}\n', **env_extra)
    providers = {m["provider"] for m in response["data"]["models"]}  # type: ignore[index]
    assert {"amazon-bedrock", "google-vertex"} <= providers
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []


def test_start_with_an_oauth_credential_imports_no_oauth_or_router_code(tmp_path):
    """Sign-in and refresh code (``ai.oauth``) loads on the first request of an OAuth provider, and
    the llama.cpp router client only when ``LLAMA_BASE_URL`` or its credential configures it."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "auth.json").write_text(json.dumps({"anthropic": {
        "type": "oauth", "refresh": "r", "access": "sk-ant-oat01-x", "expires": 4102444800000}}))
    response, modules = start_and_get_state(tmp_path)
    assert response["data"]["model"]["provider"] == "anthropic"  # type: ignore[index]
    assert sorted(m for m in modules if m.startswith(("pi_coding_agent.ai.auth.oauth", "pi_coding_agent.ai.providers.llama_router", "pi_coding_agent.ai.nonchat.llama_classify"))) == []
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []


def test_start_without_mcp_json_loads_only_the_mcp_entry_module(tmp_path):
    """No mcp.json: the ``/mcp`` entry module is all of MCP a session imports."""
    response, modules = start_and_get_state(tmp_path)
    assert response["success"] is True
    loaded = {m for m in modules if m.startswith("pi_coding_agent.coding.mcp")}
    assert "pi_coding_agent.coding.mcp" in loaded  # the listing is real
    assert loaded <= {"pi_coding_agent.coding.mcp", "pi_coding_agent.coding.mcp.session"}


@pytest.mark.slow
def test_start_with_a_stdio_mcp_server_imports_no_heavy_library(tmp_path):
    """A stdio server needs neither httpx nor the official SDK; the connection runs in the background."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "mcp.json").write_text(json.dumps({"mcpServers": {"s": {"command": "sleep", "args": ["5"]}}}))
    response, modules = start_and_get_state(tmp_path)
    assert response["success"] is True
    assert "pi_coding_agent.coding.mcp.manager" in modules
    assert sorted(m for m in modules if m.split(".")[0] in (*HEAVY, "mcp")) == []
    # tool-name hashes (OpenSSL's libcrypto) and saved outputs (tempfile, secrets) load on first use
    assert sorted(m for m in modules if m in DEFERRED_STDLIB) == []


@pytest.mark.slow
def test_mcp_servers_start_only_once_the_first_command_is_answered(tmp_path):
    """The RPC loop answers first: no server process (nor its transport module) before the answer,
    then the server is started without any further command."""
    agent = tmp_path / "agent"
    agent.mkdir()
    marker = tmp_path / "server-started"
    server = {"command": "sh", "args": ["-c", f"touch {marker}; sleep 5"]}
    (agent / "mcp.json").write_text(json.dumps({"mcpServers": {"one": server, "two": server}}))
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(agent)}
    proc = subprocess.Popen([PYTHON, "-X", "importtime", "-m", "pi_coding_agent", "--mode", "rpc", "--no-session"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b'{"id":"s","type":"get_state"}\n')
        proc.stdin.flush()
        before = []
        while not (line := proc.stdout.readline().decode()).startswith("{"):
            before.append(line)
        assert json.loads(line)["success"] is True
        modules = imported_modules("".join(before))
        assert "pi_coding_agent.coding.mcp.manager" in modules  # mcp.json was read at start-up
        # the connection stack loads when the servers start, the tool_search ranking with a search
        later = ("stdio", "client", "connection")
        assert [m for m in modules if m in {f"pi_coding_agent.coding.mcp.{n}" for n in later}] == []
        assert "pi_coding_agent.coding.tools.ranking" not in modules
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_acp_initialize_imports_no_heavy_library_nor_the_acp_sdk(tmp_path):
    """``pi --mode acp`` answers ``initialize`` before building any session; the ACP SDK is for tests only."""
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    request = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
    done = subprocess.run([PYTHON, "-X", "importtime", "-m", "pi_coding_agent", "--mode", "acp"], input=request,
                          capture_output=True, env=env, cwd=tmp_path, timeout=60, check=False)
    assert json.loads(done.stdout.splitlines()[0])["result"]["protocolVersion"] == 1
    modules = imported_modules(done.stderr.decode())
    assert "pi_coding_agent.coding.modes.acp.mode" in modules
    assert sorted(m for m in modules if m.split(".")[0] in (*HEAVY, "acp")) == []
    assert "pi_coding_agent.coding.bootstrap" not in modules


def test_start_reading_a_radius_catalog_from_the_store_stays_light(tmp_path):
    """A signed-in Radius provider lists its stored gateway catalog without the sign-in or HTTP modules
    (offline here: the background refresh, which needs them, is off)."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "auth.json").write_text(json.dumps({"radius": {"type": "api_key", "key": "rk-1"}}))
    model = {"id": "house-blend", "name": "House Blend", "reasoning": False, "input": ["text"],
             "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 1000,
             "maxTokens": 100, "api": "pi-messages", "provider": "radius", "baseUrl": "https://gw.example/v1"}
    (agent / "models-store.json").write_text(json.dumps({"radius": {"models": [model], "checkedAt": 1}}))
    response, modules = first_answer(tmp_path, b'{"id":"m","type":"get_available_models"}\n', PI_OFFLINE="1")
    assert [m["id"] for m in response["data"]["models"]] == ["house-blend"]  # type: ignore[index]
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []
    assert sorted(m for m in modules if m.startswith("pi_coding_agent.ai.auth.oauth")) == []


def test_start_with_an_extension_loads_its_runtime_but_not_the_run_machinery(tmp_path):
    """An extension brings the extension runtime (#20: within 10 % of a bare start), not the run loop,
    the tools, the prompt builder or the resource readers, which its hooks reach with the first run."""
    example = Path(__file__).parents[1] / "src/pi_coding_agent/coding/extensions/examples/permission_gate.py"
    response, modules = start_and_get_state(tmp_path, "-e", str(example))
    assert response["success"] is True
    assert "pi_coding_agent.coding.extensions.runner" in modules  # the extension did load
    assert sorted(m for m in modules if m in FIRST_USE) == []
    assert sorted(m for m in modules if m in DEFERRED_STDLIB) == []
    assert not {"pi_coding_agent.coding.resources.skills", "pi_coding_agent.coding.resources.prompt_templates"} & modules


def test_print_mode_imports_no_terminal_ui(tmp_path):
    """``pi -p`` (stdin and stdout pipes) runs headless: Textual and Rich stay unloaded."""
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    done = subprocess.run([PYTHON, "-X", "importtime", "-m", "pi_coding_agent", "-p", "hello", "--no-session"],
                          input=b"", capture_output=True, env=env, cwd=tmp_path, timeout=60, check=False)
    modules = imported_modules(done.stderr.decode())
    assert "pi_coding_agent.coding.modes.print_mode" in modules  # the listing is real
    assert sorted(m for m in modules if m.split(".")[0] in ("textual", "rich")) == []
    assert not any(m.startswith("pi_coding_agent.coding.modes.interactive") for m in modules)


# what a one-shot answer without a tool call does not run (issue #40): the tools' modules and their
# helpers (their declarations are in ``tools/declarations.py``), codemode's tool when it is not active,
# the ``/login`` command
ONE_SHOT_UNUSED = (*(f"pi_coding_agent.coding.tools.{name}" for name in (
                       "read", "bash", "edit", "write", "grep", "find", "ls", "images", "blocking", "paths",
                       "truncate", "output", "shell", "backend", "mutation")),
                   "pi_coding_agent.coding.codemode.tool", "pi_coding_agent.coding.commands.login")


@pytest.mark.slow
def test_one_shot_runs_load_no_code_they_do_not_run(tmp_path):
    """``pi -p`` and ``--mode json``, a whole run (issue #40): the codemode host was loaded for the
    declarations without codemode, the OAuth client for its error class, the cache warmer for a
    model it cannot warm. The first run validates models.json; the runs after it are checked."""
    from tests.support.fakes.llm_server import FakeLLMServer

    agent = tmp_path / "agent"
    agent.mkdir()
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(agent)}
    with FakeLLMServer() as server:
        server.add(*[{"content": [{"type": "text", "text": "done"}]}] * 3)
        (agent / "models.json").write_text(json.dumps({"providers": {"local": {
            "baseUrl": f"{server.url}/v1", "api": "openai-completions", "apiKey": "dummy",
            "models": [{"id": "m1", "contextWindow": 1000, "maxTokens": 100}]}}}))
        for index, mode in enumerate((["-p"], ["-p"], ["--mode", "json"])):
            done = subprocess.run([PYTHON, "-X", "importtime", "-m", "pi_coding_agent", *mode, "--no-session",
                                   "--provider", "local", "--model", "m1", "hi"], stdin=subprocess.DEVNULL,
                                  capture_output=True, env=env, cwd=tmp_path, timeout=60, check=False)
            assert done.returncode == 0 and b"done" in done.stdout, done.stderr[-500:]
            modules = imported_modules(done.stderr.decode())
            assert "asyncio" in modules
            if index:  # the first run validated models.json
                # the cache warmer: m1 has no prompt-cache lifetime, so there is nothing to warm
                # (inspect, ast and dis, which the SIGINT repr once pulled in, now come with aiohttp)
                unused = ("pi_coding_agent.coding.codemode.host",
                          "pi_coding_agent.ai.auth.oauth.http", "pi_coding_agent.coding.services.cache_warming")
                assert sorted(m for m in modules if m in unused) == []
                assert sorted(m for m in modules if m in ONE_SHOT_UNUSED) == []
                if mode == ["-p"]:  # JSON mode writes through the RPC record writer; print mode writes once
                    assert "pi_coding_agent.coding.modes.rpc.transport" not in modules
