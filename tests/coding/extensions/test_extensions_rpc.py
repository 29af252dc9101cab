"""Extensions end to end: the real ``pi --mode rpc`` loading Python extensions, the fake LLM server over HTTP.

Extension sources are written per test into the workspace and loaded with ``-e`` (or discovered in
``<agentDir>/extensions``). Orders and shapes are pi 1.6.0's.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.extensions import examples
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_helpers import PYTHON, RpcProcess

MODEL_ID = "fake-model"
EXAMPLES = Path(examples.__file__).parent


class Workspace:
    def __init__(self, root: Path, server: FakeLLMServer) -> None:
        self.agent_dir = root / "agent"
        self.cwd = root / "work"
        self.server = server
        self.agent_dir.mkdir()
        self.cwd.mkdir()
        (self.agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
            "baseUrl": f"{server.url}/v1", "api": "openai-completions", "apiKey": "dummy",
            "models": [{"id": MODEL_ID, "contextWindow": 100000, "maxTokens": 4096}]}}}))
        self.env = {**os.environ, "PI_CODING_AGENT_DIR": str(self.agent_dir), "HOME": str(root)}

    def extension(self, name: str, source: str, directory: Path | None = None) -> Path:
        path = (directory or self.cwd) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        return path

    async def pi(self, *args: str) -> RpcProcess:
        return await RpcProcess.pi("--provider", "fake", "--model", MODEL_ID, *args, cwd=self.cwd, env=self.env)


@pytest.fixture
def ws(tmp_path: Path, fake_llm: FakeLLMServer) -> Iterator[Workspace]:
    yield Workspace(tmp_path, fake_llm)


@pytest.fixture
async def procs() -> Any:
    started: list[RpcProcess] = []
    yield started
    for proc in started:
        await proc.kill()


async def _spawn(ws: Workspace, procs: list[RpcProcess], *args: str) -> RpcProcess:
    proc = await ws.pi(*args)
    procs.append(proc)
    return proc


async def _run(pi: RpcProcess, message: str, answer: Any = None) -> list[dict[str, Any]]:
    """Prompt and read through ``agent_settled``; ``answer(request)`` replies to dialog requests."""
    await pi.send({"type": "prompt", "message": message, "id": "run"})
    records = []
    while True:
        record = await pi.read_record()
        records.append(record)
        if record["type"] == "extension_ui_request" and answer is not None:
            reply = answer(record)
            if reply is not None:
                await pi.send({"type": "extension_ui_response", "id": record["id"], **reply})
        if record["type"] == "agent_settled":
            return records


def _tool_results(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r["message"] for r in records if r["type"] == "message_end" and r["message"]["role"] == "toolResult"]


def _last_user_text(request: dict[str, Any]) -> str:
    user = [m for m in request["body"]["messages"] if m["role"] == "user"][-1]
    content = user["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


# --------------------------------------------------------------------------- commands and dialogs


@pytest.mark.slow
async def test_command_select_round_trip_then_handled(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("ask.py", """
        async def setup(pi):
            async def ask(args, ctx):
                choice = await ctx.ui.select("Pick one", ["A", "B"], timeout_ms=60000)
                ctx.ui.notify(f"picked {choice} with {args}")
            pi.register_command("ask", description="Ask a question", handler=ask)
    """)
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    await pi.send({"type": "prompt", "message": "/ask some args", "id": "p1"})
    request = await pi.read_record()
    assert request["type"] == "extension_ui_request" and request["method"] == "select"
    assert request["title"] == "Pick one" and request["options"] == ["A", "B"] and request["timeout"] == 60000
    await pi.send({"type": "extension_ui_response", "id": request["id"], "value": "B"})
    response, before = await pi.response_to("p1")
    assert response["data"] == {"disposition": "handled"}
    notify = [r for r in before if r.get("method") == "notify"]
    assert [n["message"] for n in notify] == ["picked B with some args"]  # written before the response
    assert ws.server.requests == []  # a command never reaches the model


@pytest.mark.slow
async def test_raising_command_reports_error_and_is_still_handled(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("bad_cmd.py", """
        def setup(pi):
            def fail(args, ctx):
                raise ValueError("command went wrong")
            pi.register_command("fail", handler=fail)
    """)
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    await pi.send({"type": "prompt", "message": "/fail", "id": "p1"})
    response, before = await pi.response_to("p1")
    assert response["success"] is True and response["data"] == {"disposition": "handled"}
    assert before == [{"type": "extension_error", "extensionPath": "command:fail", "event": "command",
                       "error": "command went wrong"}]


@pytest.mark.slow
async def test_command_cannot_be_queued_with_steer(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("noop.py", """
        def setup(pi):
            pi.register_command("noop", handler=lambda args, ctx: None)
    """)
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    response = await pi.request({"type": "steer", "message": "/noop"})
    assert response["success"] is False
    assert response["error"] == ('Extension command "/noop" cannot be queued. Use prompt() or execute the '
                                 "command when not streaming.")


# --------------------------------------------------------------------------- tool gates


def _bash_call(command: str) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": command}}]}


@pytest.mark.slow
async def test_permission_gate_refusal_blocks_the_tool(ws: Workspace, procs: list[RpcProcess]) -> None:
    victim = ws.cwd / "victim"
    victim.mkdir()
    ws.server.add(_bash_call(f"rm -rf {victim}"), {"content": [{"type": "text", "text": "understood"}]})
    pi = await _spawn(ws, procs, "--no-session", "-e", str(EXAMPLES / "permission_gate.py"))
    asked: list[dict[str, Any]] = []

    def refuse(request: dict[str, Any]) -> dict[str, Any] | None:
        if request["method"] != "confirm":
            return None
        asked.append(request)
        return {"confirmed": False}

    records = await _run(pi, "clean up", refuse)
    assert len(asked) == 1 and "recursive forced delete" in asked[0]["message"]
    [result] = _tool_results(records)
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("Blocked by the user (recursive forced delete")
    assert victim.exists()
    ws.server.wait_for_requests(2)
    assert "Blocked by the user" in json.dumps(ws.server.requests[1]["body"]["messages"][-1])


@pytest.mark.slow
async def test_unanswered_confirm_times_out_and_blocks(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("gate.py", """
        async def setup(pi):
            async def gate(event, ctx):
                if await ctx.ui.confirm("Run it?", event["input"]["command"], timeout_ms=200):
                    return None
                return {"block": True, "reason": "not confirmed in time"}
            pi.on("tool_call", gate)
    """)
    marker = ws.cwd / "ran"
    ws.server.add(_bash_call(f"touch {marker}"), {"content": [{"type": "text", "text": "ok"}]})
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "go")  # never answers the dialog
    assert [r["method"] for r in records if r["type"] == "extension_ui_request"] == ["confirm"]
    [result] = _tool_results(records)
    assert result["isError"] is True and result["content"][0]["text"] == "not confirmed in time"
    assert not marker.exists()


@pytest.mark.slow
async def test_protected_paths_blocks_writing_env_file(ws: Workspace, procs: list[RpcProcess]) -> None:
    ws.server.add({"content": [{"type": "toolCall", "id": "w1", "name": "write",
                                "arguments": {"path": ".env", "content": "SECRET=1"}}]},
                  {"content": [{"type": "text", "text": "ok"}]})
    pi = await _spawn(ws, procs, "--no-session", "-e", str(EXAMPLES / "protected_paths.py"))
    records = await _run(pi, "write the env file")
    [result] = _tool_results(records)
    assert result["isError"] is True and result["content"][0]["text"] == "Path is protected: .env"
    assert not (ws.cwd / ".env").exists()


@pytest.mark.slow
async def test_raising_tool_call_handler_fails_closed(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("broken_gate.py", """
        def setup(pi):
            def gate(event, ctx):
                raise RuntimeError("gate crashed")
            pi.on("tool_call", gate)
    """)
    marker = ws.cwd / "ran"
    ws.server.add(_bash_call(f"touch {marker}"), {"content": [{"type": "text", "text": "ok"}]})
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "go")
    assert [r for r in records if r["type"] == "extension_error"] == []  # as pi: the tool result carries it
    [result] = _tool_results(records)
    assert result["isError"] is True and result["content"] == [{"type": "text", "text": "gate crashed"}]
    assert not marker.exists()


# --------------------------------------------------------------------------- session replacement


@pytest.mark.slow
async def test_new_session_and_fork_cancelled_by_extension(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("keep.py", """
        def setup(pi):
            pi.on("session_before_switch", lambda event, ctx: {"cancel": event["reason"] == "new"})
            pi.on("session_before_fork", lambda event, ctx: {"cancel": True})
    """)
    pi = await _spawn(ws, procs, "-e", str(ext))
    await _run(pi, "hello")
    before = (await pi.request({"type": "get_state"}))["data"]
    assert (await pi.request({"type": "new_session"}))["data"] == {"cancelled": True}
    [fork_point] = (await pi.request({"type": "get_fork_messages"}))["data"]["messages"]
    assert (await pi.request({"type": "fork", "entryId": fork_point["entryId"]}))["data"] == {"cancelled": True}
    assert (await pi.request({"type": "clone"}))["data"] == {"cancelled": True}
    after = (await pi.request({"type": "get_state"}))["data"]
    assert after["sessionId"] == before["sessionId"] and after["messageCount"] == before["messageCount"]


@pytest.mark.slow
async def test_replacement_reloads_extensions_and_stales_old_ctx(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("lifecycle.py", """
        def setup(pi):
            pi.on("session_start", lambda e, ctx: ctx.ui.notify("start " + e["reason"]))
            pi.on("session_shutdown", lambda e, ctx: ctx.ui.notify("shutdown " + e["reason"]))

            async def fresh(args, ctx):
                async def in_new(new_ctx):
                    new_ctx.ui.notify("fresh ctx works in " + new_ctx.mode)
                await ctx.new_session(with_session=in_new)
                ctx.ui.notify("unreachable")
            pi.register_command("fresh", handler=fresh)
    """)
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    await pi.send({"type": "prompt", "message": "/fresh", "id": "p1"})
    response, before = await pi.response_to("p1")
    assert response["data"] == {"disposition": "handled"}
    notes = [r["message"] for r in before if r.get("method") == "notify"]
    assert notes == ["start startup", "shutdown new", "start new", "fresh ctx works in rpc"]
    [error] = [r for r in before if r["type"] == "extension_error"]
    assert error["extensionPath"] == "command:fresh" and "stale" in error["error"]


# --------------------------------------------------------------------------- provider request hooks


@pytest.mark.slow
async def test_context_hook_rewrite_reaches_the_provider(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("ctx_hook.py", """
        def setup(pi):
            def rewrite(event, ctx):
                assert all(m["role"] != "system" for m in event["messages"])
                last = event["messages"][-1]
                last["content"] = [{"type": "text", "text": "rewritten by extension"}]
                return {"messages": event["messages"]}
            pi.on("context", rewrite)
    """)
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "original text")
    ws.server.wait_for_requests(1)
    request = ws.server.requests[0]
    assert _last_user_text(request) == "rewritten by extension"
    assert request["body"]["messages"][0]["role"] in ("system", "developer")  # the prompt is kept
    # the transcript itself is unchanged: only the request was rewritten
    user = [r["message"] for r in records if r["type"] == "message_end" and r["message"]["role"] == "user"]
    assert user[0]["content"][0]["text"] == "original text"


@pytest.mark.slow
async def test_payload_system_prompt_and_injected_message(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("request_hooks.py", """
        def setup(pi):
            pi.on("before_agent_start", lambda e, ctx: {
                "systemPrompt": "You are a test. Prompt was: " + e["prompt"],
                "message": {"customType": "note", "content": "injected note", "display": False}})
            def payload(event, ctx):
                body = dict(event["payload"])
                body["temperature"] = 0.125
                return body
            pi.on("before_provider_request", payload)
    """)
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "hi")
    ws.server.wait_for_requests(1)
    body = ws.server.requests[0]["body"]
    assert body["temperature"] == 0.125
    assert body["messages"][0]["content"] == "You are a test. Prompt was: hi"
    assert "injected note" in json.dumps(body["messages"][1:])
    roles = [r["message"]["role"] for r in records if r["type"] == "message_end"]
    assert roles.index("custom") == roles.index("user") + 1


@pytest.mark.slow
async def test_input_transform_and_handled(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("input_hook.py", """
        def setup(pi):
            def on_input(event, ctx):
                if event["text"] == "swallow":
                    return {"action": "handled"}
                return {"action": "transform", "text": event["text"].upper()}
            pi.on("input", on_input)
    """)
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    assert (await pi.request({"type": "prompt", "message": "swallow"}))["data"] == {"disposition": "handled"}
    await _run(pi, "shout this")
    ws.server.wait_for_requests(1)
    assert len(ws.server.requests) == 1 and _last_user_text(ws.server.requests[0]) == "SHOUT THIS"


# --------------------------------------------------------------------------- errors and loading


@pytest.mark.slow
async def test_raising_handler_reports_and_run_continues(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("flaky.py", """
        def setup(pi):
            def boom(event, ctx):
                raise RuntimeError("turn handler exploded")
            pi.on("turn_start", boom)
    """)
    ws.server.add({"content": [{"type": "text", "text": "still answering"}]})
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "hi")
    errors = [r for r in records if r["type"] == "extension_error"]
    assert errors == [{"type": "extension_error", "extensionPath": str(ext), "event": "turn_start",
                       "error": "turn handler exploded"}]
    assert records[-1] == {"type": "agent_settled", "aborted": False}
    assert (await pi.request({"type": "get_last_assistant_text"}))["data"] == {"text": "still answering"}


@pytest.mark.slow
async def test_broken_extension_is_skipped_with_an_error(ws: Workspace, procs: list[RpcProcess]) -> None:
    bad = ws.extension("bad_setup.py", "def setup(pi):\n    raise ImportError('missing dependency')\n")
    good = ws.extension("good.py", "def setup(pi):\n    pi.register_command('good', handler=lambda a, c: None)\n")
    pi = await _spawn(ws, procs, "--no-session", "-e", str(bad), "-e", str(good))
    first = await pi.read_record()
    assert first == {"type": "extension_error", "extensionPath": str(bad), "event": "load",
                     "error": "Failed to load extension: missing dependency"}
    commands = (await pi.request({"type": "get_commands"}))["data"]["commands"]
    assert [c["name"] for c in commands if c["sourceInfo"].get("source") != "builtin"] == ["good"]  # not /mcp
    await pi.close_stdin()
    assert await pi.wait() == 0
    assert f'Failed to load extension "{bad}": missing dependency' in await pi.stderr_text()


@pytest.mark.slow
async def test_get_commands_lists_extensions_templates_and_skills(ws: Workspace, procs: list[RpcProcess]) -> None:
    auto = ws.extension("auto.py", """
        def setup(pi):
            pi.register_command("dup", handler=lambda a, c: None)
            pi.register_command("auto-only", description="from the agent dir", handler=lambda a, c: None)
    """, ws.agent_dir / "extensions")
    cli = ws.extension("cli.py", "def setup(pi):\n    pi.register_command('dup', handler=lambda a, c: None)\n")
    (ws.agent_dir / "prompts").mkdir()
    (ws.agent_dir / "prompts" / "review.md").write_text("---\ndescription: Review code\n---\nReview $ARGUMENTS\n")
    (ws.agent_dir / "skills" / "lint").mkdir(parents=True)
    (ws.agent_dir / "skills" / "lint" / "SKILL.md").write_text("---\nname: lint\ndescription: Lint things\n---\nRun it.\n")
    pi = await _spawn(ws, procs, "--no-session", "-e", str(cli))
    commands = [c for c in (await pi.request({"type": "get_commands"}))["data"]["commands"]
                if c["sourceInfo"].get("source") != "builtin"]  # not the built-in /mcp
    cli_info = {"path": str(cli), "source": "cli", "scope": "temporary", "origin": "top-level"}
    auto_info = {"path": str(auto), "source": "auto", "scope": "user", "origin": "top-level",
                 "baseDir": str(ws.agent_dir)}
    assert commands[:3] == [
        {"name": "dup:1", "source": "extension", "sourceInfo": cli_info},
        {"name": "dup:2", "source": "extension", "sourceInfo": auto_info},
        {"name": "auto-only", "description": "from the agent dir", "source": "extension", "sourceInfo": auto_info},
    ]
    assert [(c["name"], c["source"]) for c in commands[3:]] == [("review", "prompt"), ("skill:lint", "skill")]
    # --no-extensions drops the discovered one; -e still loads
    other = await _spawn(ws, procs, "--no-session", "--no-extensions", "-e", str(cli))
    names = [c["name"] for c in (await other.request({"type": "get_commands"}))["data"]["commands"]
             if c["sourceInfo"].get("source") != "builtin"]
    assert names == ["dup", "review", "skill:lint"]


# --------------------------------------------------------------------------- shipped session_name example


@pytest.mark.slow
async def test_session_name_command_and_tool(ws: Workspace, procs: list[RpcProcess]) -> None:
    pi = await _spawn(ws, procs, "--no-session", "-e", str(EXAMPLES / "session_name.py"))
    await pi.send({"type": "prompt", "message": "/session-name", "id": "p1"})
    request = await pi.read_record()
    assert request["method"] == "input" and request["title"] == "Session name"
    await pi.send({"type": "extension_ui_response", "id": request["id"], "value": "  Bug hunt  "})
    response, before = await pi.response_to("p1")
    assert response["data"] == {"disposition": "handled"}
    assert {"type": "session_info_changed", "name": "Bug hunt"} in before
    assert [r["message"] for r in before if r.get("method") == "notify"] == ["Session name: Bug hunt"]
    ws.server.add({"content": [{"type": "toolCall", "id": "n1", "name": "set_session_name",
                                "arguments": {"name": "Refactor parser"}}]},
                  {"content": [{"type": "text", "text": "named"}]})
    records = await _run(pi, "name it")
    [result] = _tool_results(records)
    assert result["isError"] is False and result["content"][0]["text"] == "Session named: Refactor parser"
    assert (await pi.request({"type": "get_state"}))["data"]["sessionName"] == "Refactor parser"
    tools = [t["function"]["name"] for t in ws.server.requests[0]["body"]["tools"]]
    assert "set_session_name" in tools


@pytest.mark.slow
async def test_no_extension_machinery_imported_without_extensions(ws: Workspace) -> None:
    proc = await RpcProcess.spawn([PYTHON, "-X", "importtime", "-m", "pi_coding_agent", "--mode", "rpc",
                                   "--no-session"], cwd=ws.cwd, env=ws.env)
    try:
        assert (await proc.request({"type": "get_state"}))["success"] is True
        await proc.close_stdin()
        await proc.wait()
        imported = await proc.stderr_text()
    finally:
        await proc.kill()
    assert "pi_coding_agent.coding.extensions.loader" in imported  # discovery ran
    assert "pi_coding_agent.coding.extensions.runner" not in imported
    assert "pi_coding_agent.coding.extensions.api" not in imported


@pytest.mark.slow
async def test_api_exec_append_entry_and_triggered_message(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("api_use.py", """
        import sys

        def setup(pi):
            async def run(args, ctx):
                out = await pi.exec(sys.executable, ["-c", "import sys; print('hi'); sys.exit(3)"])
                pi.append_entry("exec-result", {"stdout": out["stdout"], "code": out["code"]})
                pi.set_active_tools(["read", "nonexistent"])
                ctx.ui.notify(",".join(pi.get_active_tools()))
                await pi.send_message({"customType": "ping", "content": "from extension", "display": True},
                                      trigger_turn=True)
            pi.register_command("run", handler=run)
    """)
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    await pi.send({"type": "prompt", "message": "/run", "id": "p1"})
    records = await pi.read_until(lambda r: r["type"] == "agent_settled")
    [entry] = [r["entry"] for r in records if r["type"] == "entry_appended"]
    assert entry["type"] == "custom" and entry["customType"] == "exec-result"
    assert entry["data"] == {"stdout": "hi\n", "code": 3}
    assert [r["message"] for r in records if r.get("method") == "notify"] == ["read"]
    handled = next(r for r in records if r.get("id") == "p1")
    assert handled["data"] == {"disposition": "handled"}
    ws.server.wait_for_requests(1)
    body = ws.server.requests[0]["body"]
    assert "from extension" in json.dumps(body["messages"])
    assert [t["function"]["name"] for t in body["tools"]] == ["read"]


@pytest.mark.slow
async def test_ctx_shutdown_ends_the_process_in_order(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("stopper.py", """
        def setup(pi):
            def stop(args, ctx):
                ctx.shutdown()
            pi.on("session_shutdown", lambda event, ctx: ctx.ui.notify(f"bye {event['reason']}"))
            pi.register_command("stop", description="Stop pi", handler=stop)
    """)
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    response = await pi.request({"type": "prompt", "message": "/stop"})
    assert response["data"] == {"disposition": "handled"}
    rest = await pi.read_rest()
    assert await pi.wait() == 0  # stdin is still open: the extension asked the process to stop
    assert [r["message"] for r in rest if r.get("method") == "notify"] == ["bye quit"]


@pytest.mark.slow
async def test_navigate_tree_with_branch_summary_and_its_retry(ws: Workspace, procs: list[RpcProcess]) -> None:
    (ws.agent_dir / "settings.json").write_text(json.dumps({"retry": {"baseDelayMs": 10}}))
    ext = ws.extension("goto.py", """
        def setup(pi):
            async def goto(args, ctx):
                result = await ctx.navigate_tree(args.strip(), summarize=True, label="left branch")
                ctx.ui.notify(repr(result))
            pi.register_command("goto", description="Move in the tree", handler=goto)
    """)
    ws.server.add({"content": [{"type": "text", "text": "first answer"}]},
                  {"content": [{"type": "text", "text": "second answer"}]},
                  {"status": 529, "body": {"error": {"message": "Overloaded", "type": "overloaded_error"}}},
                  {"content": [{"type": "text", "text": "## Goal\nthe summary"}]})
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    await _run(pi, "first question")
    await _run(pi, "second question")
    entries = (await pi.request({"type": "get_entries"}))["data"]["entries"]
    second_user = next(e for e in entries if e["type"] == "message" and e["message"]["role"] == "user"
                       and e["message"]["content"][0]["text"] == "second question")
    old_leaf = entries[-1]["id"]
    response, before = await pi.response_to(await _send(pi, {"type": "prompt", "message": f"/goto {second_user['id']}"}))
    assert response["data"] == {"disposition": "handled"}
    kinds = [r["type"] for r in before]
    assert kinds.index("summarization_retry_scheduled") < kinds.index("summarization_retry_attempt_start") \
        < kinds.index("summarization_retry_finished")
    start = next(r for r in before if r["type"] == "summarization_retry_attempt_start")
    assert start["source"] == "branchSummary"
    notify = next(r for r in before if r.get("method") == "notify")
    assert notify["message"] == "{'cancelled': False, 'editorText': 'second question'}"
    entries = (await pi.request({"type": "get_entries"}))["data"]["entries"]
    summary = next(e for e in entries if e["type"] == "branch_summary")
    assert summary["fromId"] == old_leaf and summary["parentId"] == second_user["parentId"]
    assert summary["summary"].endswith("## Goal\nthe summary")
    label = next(e for e in entries if e["type"] == "label")
    assert label["targetId"] == summary["id"] and label["label"] == "left branch"
    messages = (await pi.request({"type": "get_messages"}))["data"]["messages"]
    assert [m["role"] for m in messages][-3:] == ["user", "assistant", "branchSummary"]
    summary_request = ws.server.requests[-1]["body"]
    assert "tools" not in summary_request and "second answer" in json.dumps(summary_request)


async def _send(pi: RpcProcess, record: dict[str, Any]) -> str:
    record = {**record, "id": pi.new_id()}
    await pi.send(record)
    return record["id"]
