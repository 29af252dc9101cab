"""codemode through the real ``pi --mode rpc`` process: the fake LLM sends scripts, the scripts call tools."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import MODEL_ID, Workspace
from tests.support.rpc_helpers import RpcProcess


@pytest.fixture
def workspace(tmp_path: Path, fake_llm: FakeLLMServer) -> tuple[Path, dict[str, str]]:
    """pi's agent dir routing provider ``fake`` to the fake server, with codemode among the default tools."""
    created = Workspace.create(tmp_path, fake_llm.url, {"defaultTools": ["+codemode"]})
    return created.cwd, created.env


async def _spawn(workspace: tuple[Path, dict[str, str]], *extra: str) -> RpcProcess:
    cwd, env = workspace
    return await RpcProcess.pi("--provider", "fake", "--model", MODEL_ID, *extra, cwd=cwd, env=env)


async def _with_extension(workspace: tuple[Path, dict[str, str]], source: str) -> RpcProcess:
    extension = workspace[0].parent / f"extension_{abs(hash(source))}.py"
    extension.write_text(source)
    return await _spawn(workspace, "--no-session", "-e", str(extension))


@pytest.fixture
async def pi(workspace: tuple[Path, dict[str, str]]) -> AsyncIterator[RpcProcess]:
    proc = await _spawn(workspace, "--no-session")
    yield proc
    await proc.kill()


def script(fake_llm: FakeLLMServer, code: str, call_id: str = "cm1") -> None:
    fake_llm.add({"content": [{"type": "toolCall", "id": call_id, "name": "codemode", "arguments": {"code": code}}]},
                 {"content": [{"type": "text", "text": "done"}]})


async def run(pi: RpcProcess, message: str = "go") -> list[dict[str, Any]]:
    await pi.send({"type": "prompt", "message": message, "id": "run"})
    return await pi.read_until(lambda r: r["type"] == "agent_settled")


def codemode_end(records: list[dict[str, Any]], call_id: str = "cm1") -> dict[str, Any]:
    return next(r for r in records if r["type"] == "tool_execution_end" and r["toolCallId"] == call_id)


def result_text(end: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in end["result"]["content"] if b["type"] == "text")


@pytest.mark.slow
async def test_parallel_reads_are_real_tool_executions(pi: RpcProcess, fake_llm: FakeLLMServer,
                                                       workspace: tuple[Path, dict[str, str]]) -> None:
    for i in range(20):
        (workspace[0] / f"f{i}.txt").write_text(f"line {i}\n")
    script(fake_llm, "const texts = await Promise.all(Array.from({ length: 20 }, (_, i) => "
                     "tools.read({ path: `f${i}.txt` })));\nreturn texts.map((t) => t.trim()).join(',');")
    records = await run(pi)
    end = codemode_end(records)
    assert not end["isError"]
    text = result_text(end)
    assert text.startswith("Script completed\nWall time ")
    assert text.endswith("Output:\n" + ",".join(f"line {i}" for i in range(20)))
    nested = [r for r in records if r["type"] == "tool_execution_start" and r.get("parentToolCallId") == "cm1"]
    assert sorted(r["toolCallId"] for r in nested) == sorted(f"cm1/{n}" for n in range(1, 21))
    assert {r["toolName"] for r in nested} == {"read"}
    ends = [r for r in records if r["type"] == "tool_execution_end" and r.get("parentToolCallId") == "cm1"]
    assert len(ends) == 20 and not any(e["isError"] for e in ends)
    calls = end["result"]["details"]["calls"]
    assert len(calls) == 20 and {c["status"] for c in calls} == {"ok"}
    # inner results are not messages: only the codemode call has a toolResult
    results = [r["message"] for r in records if r["type"] == "message_end" and r["message"]["role"] == "toolResult"]
    assert [m["toolCallId"] for m in results] == ["cm1"]
    nested = results[0]["nestedCalls"]
    assert nested["complete"] is True and len(nested["calls"]) == 20
    assert {c["status"] for c in nested["calls"]} == {"ok"} and nested["calls"][0]["arguments"]["path"].endswith(".txt")


@pytest.mark.slow
async def test_bash_output_is_filtered_inside_the_script(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    script(fake_llm, "const r = await tools.bash({ command: 'seq 1 30000' });\n"
                     "const lines = r.output.split('\\n').filter((l) => l.endsWith('777'));\n"
                     "text(`exit ${r.exit_code} truncated ${r.truncated}`);\ntext(lines.join(' '));")
    end = codemode_end(await run(pi))
    text = result_text(end)
    assert "==> text 1/2 <==\nexit 0 truncated false\n==> text 2/2 <==\n777 1777 2777" in text
    assert "29777" in text and "\n5000\n" not in text


@pytest.mark.slow
async def test_failure_halfway_keeps_partial_output(pi: RpcProcess, fake_llm: FakeLLMServer,
                                                    workspace: tuple[Path, dict[str, str]]) -> None:
    script(fake_llm, "await tools.write({ path: 'a.txt', content: 'kept' });\ntext('wrote a');\n"
                     "console.log('about to fail');\nawait tools.read({ path: 'missing.txt' });\ntext('never');")
    end = codemode_end(await run(pi))
    text = result_text(end)
    assert end["isError"]
    assert text.startswith("Script failed\n")
    assert "wrote a\n<console_output>\nabout to fail\n</console_output>\nScript error:\nError: " in text
    assert "never" not in text
    assert "Tool calls made before the failure (they are not undone): write (ok), read (error)" in text
    assert (workspace[0] / "a.txt").read_text() == "kept"


@pytest.mark.slow
async def test_timeout_and_infinite_loop_are_interrupted(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    script(fake_llm, '// @options: {"timeout_ms": 500}\ntext("before");\nwhile (true) {}')
    end = codemode_end(await run(pi))
    text = result_text(end)
    assert end["isError"] and "before\nScript error:\nScript timed out: Execution timed out after 500 ms" in text


@pytest.mark.slow
async def test_abort_cancels_a_looping_script(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    script(fake_llm, "let i = 0;\nwhile (true) { i++; }")
    await pi.send({"type": "prompt", "message": "go", "id": "run"})
    await pi.read_until(lambda r: r["type"] == "tool_execution_start" and r["toolCallId"] == "cm1")
    await pi.send({"type": "abort", "id": "stop"})
    records = await pi.read_until(lambda r: r["type"] == "agent_settled")
    end = codemode_end(records)
    assert end["isError"] and "Script aborted" in result_text(end)
    assert records[-1]["aborted"] is True


@pytest.mark.slow
async def test_abort_cancels_running_inner_calls(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    script(fake_llm, "await Promise.all([tools.bash({ command: 'sleep 30' }), tools.bash({ command: 'sleep 30' })]);")
    await pi.send({"type": "prompt", "message": "go", "id": "run"})
    for _ in range(2):
        await pi.read_until(lambda r: r["type"] == "tool_execution_start" and r.get("parentToolCallId") == "cm1")
    await pi.send({"type": "abort", "id": "stop"})
    records = await pi.read_until(lambda r: r["type"] == "agent_settled")
    inner = [r for r in records if r["type"] == "tool_execution_end" and r.get("parentToolCallId") == "cm1"]
    assert len(inner) == 2 and all(r["isError"] for r in inner)
    statuses = {c["status"] for c in codemode_end(records)["result"]["details"]["calls"]}
    assert statuses == {"cancelled"}


@pytest.mark.slow
async def test_memory_exhaustion_fails_the_script_only(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    script(fake_llm, "const a = [];\nwhile (true) a.push('x'.repeat(4096) + a.length);")
    end = codemode_end(await run(pi))
    assert end["isError"] and "InternalError: out of memory" in result_text(end)
    script(fake_llm, "return 1 + 1", "cm2")
    assert result_text(codemode_end(await run(pi), "cm2")).endswith("Output:\n2")


async def test_never_settling_promise_fails_at_once(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    script(fake_llm, "await new Promise(() => {});")
    text = result_text(codemode_end(await run(pi)))
    assert "The script is waiting on a promise that can never settle" in text


@pytest.mark.parametrize(("code", "expected"), [
    ("let = ;", "Script error:\nSyntaxError: "),
    ('// @options: {max_output_tokens: 5}\nreturn 1', "@options must be valid JSON"),
    ('return 1\n// @options: {"timeout_ms": 5}', "The // @options: line must be the first line of the input; found"
                                                 " one on line 2"),
    ("await tools.nope({})", "tools.nope does not exist."),
    ("await tools.read({ limit: 3 })", 'Validation failed for tool "read"'),
    ("await tools.codemode({ code: 'return 1' })", "tools.codemode does not exist."),
])
@pytest.mark.slow
async def test_bad_input_fails_clearly_and_the_session_goes_on(pi: RpcProcess, fake_llm: FakeLLMServer, code: str,
                                                              expected: str) -> None:
    script(fake_llm, code)
    end = codemode_end(await run(pi))
    assert end["isError"] and expected in result_text(end)
    script(fake_llm, "return 'still here'", "cm2")
    assert result_text(codemode_end(await run(pi), "cm2")).endswith("still here")


@pytest.mark.slow
async def test_store_across_calls_and_forks(workspace: tuple[Path, dict[str, str]], fake_llm: FakeLLMServer) -> None:
    pi = await _spawn(workspace)
    try:
        script(fake_llm, "store('count', 1); return load('count');", "s1")
        assert result_text(codemode_end(await run(pi), "s1")).endswith("1")
        script(fake_llm, "store('count', load('count') + 1); store('gone', 1); store('gone', undefined); "
                         "return load('count');", "s2")
        assert result_text(codemode_end(await run(pi), "s2")).endswith("2")
        script(fake_llm, "store('count', 100); throw new Error('no');", "s3")
        assert codemode_end(await run(pi), "s3")["isError"]
        script(fake_llm, "return load('count');", "s4")
        assert result_text(codemode_end(await run(pi), "s4")).endswith("2")  # the failed script stored nothing
        state = await pi.request({"type": "get_state"})
        session_file = Path(state["data"]["sessionFile"])
        entries = [json.loads(line) for line in session_file.read_text().splitlines()]
        stores = [e["data"] for e in entries if e.get("type") == "custom" and e.get("customType") == "codemode-store"]
        assert stores == [{"set": {"count": 1}, "delete": []}, {"set": {"count": 2}, "delete": ["gone"]}]
        # fork at the second prompt: that branch saw only the first store entry
        forks = await pi.request({"type": "get_fork_messages"})
        second = forks["data"]["messages"][1]["entryId"]
        assert (await pi.request({"type": "fork", "entryId": second}))["success"]
        script(fake_llm, "return load('count');", "s5")
        assert result_text(codemode_end(await run(pi), "s5")).endswith("1")
    finally:
        await pi.kill()


@pytest.mark.slow
async def test_discovery_globals_and_models(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    script(fake_llm, "const hits = await searchTools('run shell command', { limit: 2 });\n"
                     "text(hits.map((h) => h.name));\ntext(ALL_TOOLS.map((t) => t.name).sort());\n"
                     "text((await describeTool('read')).includes('codemode tool declaration'));\n"
                     "text(await describeNamespace('nothing') === undefined);\n"
                     "const chat = await models.getModelsOfType('chat', 'fake');\ntext(chat.map((m) => m.id));\n"
                     "const jev = await models.getModelOfType('classifier', 'typesafe', 'jev-latest');\n"
                     "const r = await models.classify(jev, { state: {}, questions: { ok: { type: 'bool', "
                     "instructions: 'ok?', criteria: { true: 'yes', false: 'no' } } } });\n"
                     "text([r.stopReason, r.errorMessage]);")
    end = codemode_end(await run(pi))
    text = result_text(end)
    assert '==> text 1/6 <==\n["bash"' in text
    assert '["bash","edit","read","write"]' in text
    assert "==> text 3/6 <==\ntrue\n==> text 4/6 <==\ntrue" in text
    # the catalog has TypeSafe's classifier; without TYPESAFE_API_KEY the call is an error result, not a throw
    assert '["fake-model"]' in text and '["error","Provider is not configured: typesafe"]' in text
    assert any(c["name"] == "models.classify" and c["status"] == "error" for c in end["result"]["details"]["calls"])


@pytest.mark.slow
async def test_large_output_is_truncated_with_the_full_text_saved(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    script(fake_llm, '// @options: {"max_output_tokens": 100}\nfor (let i = 0; i < 500; i++) console.log("row " + i);')
    text = result_text(codemode_end(await run(pi)))
    assert "Warning: truncated output (original token count: " in text and "tokens truncated…" in text
    path = text.split("[Full output: ")[1].split(" (read with")[0]
    assert "row 499" in Path(path).read_text() and "row 250" not in text


EXTENSION = '''
def setup(pi):
    def gate(event, ctx):
        if event["toolName"] == "bash" and "forbidden" in event["input"]["command"]:
            return {"block": True, "reason": "blocked by the gate"}
        return None

    def tag(event, ctx):
        if event["toolName"] == "shout":
            return {"content": [{"type": "text", "text": event["content"][0]["text"] + " (seen)"}]}
        return None

    async def shout(tool_call_id, params, signal, on_update, ctx):
        return {"content": [{"type": "text", "text": params["word"].upper()}]}

    pi.on("tool_call", gate)
    pi.on("tool_result", tag)
    pi.register_tool(name="shout", description="Upper-case a word.", execute=shout,
                     parameters={"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]})
'''


@pytest.mark.slow
async def test_inner_calls_pass_extension_handlers(workspace: tuple[Path, dict[str, str]],
                                                   fake_llm: FakeLLMServer) -> None:
    pi = await _with_extension(workspace, EXTENSION)
    try:
        script(fake_llm, "text(await tools.shout({ word: 'hi' }));\n"
                         "const r = await Promise.allSettled([tools.bash({ command: 'echo forbidden' })]);\n"
                         "text(r[0].status + ': ' + r[0].reason.message);")
        records = await run(pi)
        text = result_text(codemode_end(records))
        assert "==> text 1/2 <==\nHI (seen)\n==> text 2/2 <==\nrejected: blocked by the gate" in text
        blocked = next(r for r in records if r["type"] == "tool_execution_end" and r["toolCallId"] == "cm1/2")
        assert blocked["isError"] and blocked["parentToolCallId"] == "cm1"
    finally:
        await pi.kill()


@pytest.mark.slow
async def test_scripts_wait_for_a_free_worker(workspace: tuple[Path, dict[str, str]],
                                              fake_llm: FakeLLMServer) -> None:
    cwd, env = workspace
    pi = await RpcProcess.pi("--provider", "fake", "--model", MODEL_ID, "--no-session", cwd=cwd,
                             env={**env, "PI_CODEMODE_MAX_WORKERS": "1"})
    try:
        hold = '// @options: {"timeout_ms": 1500}\nwhile (true) {}'
        fake_llm.add({"content": [
            {"type": "toolCall", "id": "a", "name": "codemode", "arguments": {"code": hold}},
            {"type": "toolCall", "id": "b", "name": "codemode",
             "arguments": {"code": '// @options: {"timeout_ms": 300}\nreturn 1'}},
            {"type": "toolCall", "id": "c", "name": "codemode", "arguments": {"code": "return 'after'"}}]},
            {"content": [{"type": "text", "text": "done"}]})
        records = await run(pi)
        assert "Script timed out: Execution timed out after 1500 ms" in result_text(codemode_end(records, "a"))
        waited = result_text(codemode_end(records, "b"))
        assert ("Script timed out: Execution timed out after 300 ms while waiting for a free codemode worker\n\n"
                "The script did not start.") in waited
        assert result_text(codemode_end(records, "c")).endswith("after")
    finally:
        await pi.kill()


def test_enable_codemode_respects_auto_enable_false() -> None:
    from types import SimpleNamespace

    from pi_coding_agent.coding.codemode.activation import NAME, enable_codemode

    tool = SimpleNamespace(name=NAME)
    agent = SimpleNamespace(tools=[])
    agent.set_tools = lambda tools: setattr(agent, "tools", tools)  # the Agent's setter
    runtime: Any = SimpleNamespace(agent=agent, all_tools={NAME: tool})
    assert enable_codemode(runtime, auto_enable=False) is False and runtime.agent.tools == []
    assert enable_codemode(runtime) is True and runtime.agent.tools == [tool]
    assert enable_codemode(runtime, auto_enable=False) is True  # already active stays active


def _workers_of(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and b"codemode/worker.py" in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.slow
async def test_a_killed_pi_leaves_no_worker_behind(pi: RpcProcess, fake_llm: FakeLLMServer) -> None:
    import asyncio
    import signal

    script(fake_llm, "while (true) {}")
    await pi.send({"type": "prompt", "message": "go", "id": "run"})
    await pi.read_until(lambda r: r["type"] == "tool_execution_start" and r["toolCallId"] == "cm1")
    workers: list[int] = []
    for _ in range(100):
        workers = _workers_of(pi.proc.pid)
        if workers:
            break
        await asyncio.sleep(0.05)
    assert len(workers) == 1
    pi.proc.send_signal(signal.SIGKILL)
    await pi.proc.wait()
    for _ in range(100):
        if not Path(f"/proc/{workers[0]}").exists():
            break
        await asyncio.sleep(0.05)
    assert not Path(f"/proc/{workers[0]}").exists()


SEQUENTIAL_EXTENSION = '''
import asyncio

state = {"running": 0, "most": 0}


def setup(pi):
    async def slow(tool_call_id, params, signal, on_update, ctx):
        state["running"] += 1
        state["most"] = max(state["most"], state["running"])
        await asyncio.sleep(0.1)
        state["running"] -= 1
        return {"content": [{"type": "text", "text": str(state["most"])}]}

    pi.register_tool(name="slow", description="Takes a while, alone.", execute=slow, execution_mode="sequential",
                     parameters={"type": "object", "properties": {}})
'''


@pytest.mark.slow
async def test_sequential_tools_take_turns_inside_scripts(workspace: tuple[Path, dict[str, str]],
                                                          fake_llm: FakeLLMServer) -> None:
    pi = await _with_extension(workspace, SEQUENTIAL_EXTENSION)
    try:
        script(fake_llm, "const r = await Promise.all([tools.slow({}), tools.slow({}), tools.slow({})]);\nreturn r;")
        assert result_text(codemode_end(await run(pi))).endswith('Output:\n["1","1","1"]')
    finally:
        await pi.kill()
