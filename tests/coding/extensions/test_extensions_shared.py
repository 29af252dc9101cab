"""The parts of ``pi``/``ctx`` extensions share with each other and with the session: ``pi.events``,
``register_flag``/``get_flag``, ``get_settings`` and ``ctx.is_project_trusted()``; through the real RPC
process (an extension file loaded with ``-e``) and in process (``create_session``)."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.coding.bootstrap import create_session
from pi_coding_agent.coding.extensions.event_bus import EventBus
from pi_coding_agent.coding.extensions.loader import in_process
from pi_coding_agent.coding.options import CliArgs
from tests.support.rpc_helpers import RpcProcess

EXTENSION = """
    import asyncio

    def talker(pi):
        pi.register_flag("plan", type="boolean", default=False, description="Start in plan mode")
        pi.register_flag("name", type="string")

        async def started(event, ctx):
            await asyncio.sleep(0)
            pi.events.emit("talk:ready", {"trusted": ctx.is_project_trusted(), "plan": pi.get_flag("plan"),
                                          "name": pi.get_flag("name"), "other": pi.get_flag("other"),
                                          "steering": pi.get_settings().get("steeringMode")})

        pi.on("session_start", started)

    def listener(pi):
        async def heard(data):
            await asyncio.sleep(0)
            pi.append_entry("heard", data)

        def broken(data):
            raise RuntimeError("listener broke")

        pi.events.on("talk:ready", broken)
        pi.events.on("talk:ready", heard)
        pi.register_flag("other", type="boolean", default=True)

    def setup(pi):
        talker(pi)
"""


def _dirs(root: Path) -> tuple[Path, Path, dict[str, str]]:
    """An agent dir, a working directory and the environment pointing pi at them."""
    agent_dir, cwd = root / "agent", root / "work"
    agent_dir.mkdir()
    cwd.mkdir(exist_ok=True)
    return agent_dir, cwd, {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(root)}


def _fake_provider(agent_dir: Path, url: str, **extra: Any) -> None:
    """models.json routing provider ``fake`` (model ``fake-model``) to the fake server."""
    provider = {"baseUrl": f"{url}/v1", "api": "openai-completions", **extra, "models": [{"id": "fake-model"}]}
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))


async def _wait_for_entries(proc: RpcProcess, custom_type: str) -> list[dict[str, Any]]:
    """The ``custom`` entries of that type, once an asynchronous handler has appended one."""
    for _ in range(100):
        entries = [e for e in (await proc.request({"type": "get_entries"}))["data"]["entries"]
                   if e.get("customType") == custom_type]
        if entries:
            return entries
    return []


@pytest.mark.slow
async def test_bus_flags_settings_and_trust_over_rpc(tmp_path: Path) -> None:
    agent_dir, cwd, env = _dirs(tmp_path)
    (cwd / ".pi").mkdir()
    (agent_dir / "settings.json").write_text(json.dumps({"steeringMode": "all"}))
    (cwd / "talk.py").write_text(textwrap.dedent(EXTENSION))
    (cwd / "listen.py").write_text(textwrap.dedent(EXTENSION).replace("talker(pi)", "listener(pi)"))
    proc = await RpcProcess.pi("--provider", "faux", "--model", "faux-1", "--no-session", "-a",
                               "-e", "talk.py", "-e", "listen.py", cwd=cwd, env=env)
    try:
        entries = await _wait_for_entries(proc, "heard")
    finally:
        await proc.kill()
    assert [e["data"] for e in entries] == [
        {"trusted": True, "plan": False, "name": None, "other": None, "steering": "all"}]
    assert "Event handler error (talk:ready): listener broke" in await proc.stderr_text()


async def _session(tmp_path: Path, args: CliArgs, setup: Any, settings: dict[str, Any] | None = None) -> Any:
    (tmp_path / ".pi").mkdir(exist_ok=True)
    return await create_session(args, "sdk", cwd=tmp_path, agent_dir=tmp_path / "agent", extensions=[in_process(setup)],
                                settings_overrides=settings)


async def test_flag_values_from_the_command_line_win_over_defaults(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def setup(pi: Any) -> None:
        pi.register_flag("plan", type="boolean", default=False)
        pi.register_flag("mode", type="string", default="fast")
        with pytest.raises(TypeError, match='Invalid default for flag "bad": expected string, got boolean'):
            pi.register_flag("bad", type="string", default=True)
        seen["pi"] = pi

    args = CliArgs(provider="faux", model="faux-1", no_session=True, approve=False, flag_values={"plan": True})
    session = await _session(tmp_path, args, setup, {"retry": {"enabled": False}})
    try:
        pi = seen["pi"]
        assert (pi.get_flag("plan"), pi.get_flag("mode"), pi.get_flag("bad")) == (True, "fast", None)
        settings = pi.get_settings()
        assert settings["retry"] == {"enabled": False}
        settings["retry"]["enabled"] = True  # a copy: the session's settings are untouched
        assert pi.get_settings()["retry"] == {"enabled": False}
        assert session.extensions.context.is_project_trusted() is False  # -na
    finally:
        await session.shutdown()


async def test_bus_unsubscribe_and_sync_handlers() -> None:
    bus, heard = EventBus(), []
    stop = bus.on("ch", heard.append)
    bus.emit("ch", 1)
    stop()
    bus.emit("ch", 2)
    bus.emit("nobody", 3)
    assert heard == [1]


TOOLS_EXTENSION = """
    def setup(pi):
        pi.register_tool(name="lookup", description="Look a word up", default_active=False,
                         annotations={"readOnlyHint": True}, output_schema={"type": "object"},
                         parameters={"type": "object", "properties": {"word": {"type": "string"}}},
                         execute=lambda call_id, params, signal, update, ctx: "found " + params["word"])
        pi.register_tool(name="legacy", description="Takes query (older sessions sent q)",
                         parameters={"type": "object", "properties": {"query": {"type": "string"}},
                                     "required": ["query"]},
                         prepare_arguments=lambda args: {"query": args["q"]} if "q" in args else args,
                         execute=lambda call_id, params, signal, update, ctx: "query=" + params["query"])

        async def tools(args, ctx):
            pi.append_entry("tools", {"all": pi.get_all_tools(), "active": pi.get_active_tools()})
            pi.set_active_tools([*pi.get_active_tools(), "lookup"])

        pi.register_command("tools", handler=tools)
"""


@pytest.mark.slow
async def test_tool_fields_default_active_annotations_and_prepare_arguments(tmp_path: Path) -> None:
    from tests.support.fakes.llm_server import FakeLLMServer

    legacy_call = {"content": [{"type": "toolCall", "id": "c1", "name": "legacy", "arguments": {"q": "old"}}]}
    with FakeLLMServer() as server:
        server.add(legacy_call, {"content": [{"type": "text", "text": "ok"}]},
                   {"content": [{"type": "text", "text": "again"}]})
        agent_dir, cwd, env = _dirs(tmp_path)
        _fake_provider(agent_dir, server.url, apiKey="dummy")
        (cwd / "tools.py").write_text(textwrap.dedent(TOOLS_EXTENSION))
        # no --tools: an allowlist that does not name an extension tool keeps it out, as in pi
        proc = await RpcProcess.pi("--provider", "fake", "--model", "fake-model", "--no-session",
                                   "-e", "tools.py", cwd=cwd, env=env)
        try:
            await proc.send({"type": "prompt", "message": "use legacy"})
            records = await proc.read_until(lambda r: r["type"] == "agent_settled")
            await proc.request({"type": "prompt", "message": "/tools"})
            await proc.send({"type": "prompt", "message": "now lookup"})
            await proc.read_until(lambda r: r["type"] == "agent_settled")
            entries = (await proc.request({"type": "get_entries"}))["data"]["entries"]
        finally:
            await proc.kill()
        declared = [[t["function"]["name"] for t in r["body"].get("tools", [])] for r in server.requests]
    end = next(r for r in records if r["type"] == "tool_execution_end")
    assert end["result"]["content"] == [{"type": "text", "text": "query=old"}]
    defaults = ["read", "bash", "edit", "write"]
    assert declared[0] == declared[1] == [*defaults, "legacy"]  # lookup registered, not active
    assert declared[2] == [*defaults, "legacy", "lookup"]
    listed = next(e["data"] for e in entries if e.get("customType") == "tools")
    assert listed["active"] == [*defaults, "legacy"]
    lookup = next(t for t in listed["all"] if t["name"] == "lookup")
    assert lookup["annotations"] == {"readOnlyHint": True}
    assert "annotations" not in next(t for t in listed["all"] if t["name"] == "legacy")


COMPACT_EXTENSION = """
    def setup(pi):
        pi.on("session_before_compact", lambda event, ctx: {"cancel": True})
        pi.on("session_compact_failed",
              lambda event, ctx: pi.append_entry("failed", {k: v for k, v in event.items() if k != "type"}))
"""


@pytest.mark.slow
async def test_session_compact_failed_reports_errors_and_cancellations(tmp_path: Path) -> None:
    agent_dir, cwd, env = _dirs(tmp_path)
    (cwd / "compact.py").write_text(textwrap.dedent(COMPACT_EXTENSION))
    (agent_dir / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 1}}))
    proc = await RpcProcess.pi("--provider", "faux", "--model", "faux-1", "--no-session", "-e", "compact.py",
                               cwd=cwd, env=env)
    try:
        empty = await proc.request({"type": "compact"})
        for text in ("hello", "again"):
            await proc.send({"type": "prompt", "message": text})
            await proc.read_until(lambda r: r["type"] == "agent_settled")
        cancelled = await proc.request({"type": "compact"})
        entries = (await proc.request({"type": "get_entries"}))["data"]["entries"]
    finally:
        await proc.kill()
    assert empty["success"] is False and cancelled["error"] == "Compaction cancelled"
    failed = [e["data"] for e in entries if e.get("customType") == "failed"]
    assert failed == [
        {"reason": "manual", "errorMessage": f"Compaction failed: {empty['error']}", "aborted": False,
         "willRetry": False, "fromExtension": False},
        {"reason": "manual", "aborted": True, "willRetry": False, "fromExtension": False},
    ]


TREE_EXTENSION = """
    def setup(pi):
        seen = []

        def before(event, ctx):
            prep = event["preparation"]
            seen.append({k: prep[k] for k in ("targetId", "oldLeafId", "commonAncestorId", "userWantsSummary",
                                               "label")} | {"left": len(prep["entriesToSummarize"])})
            if prep["label"] == "cancel-me":
                return {"cancel": True}
            return {"summary": {"summary": "summary by the extension"}, "label": "renamed"}

        def after(event, ctx):
            pi.append_entry("tree", {"before": seen, "fromExtension": event.get("fromExtension"),
                                     "summary": event["summaryEntry"]["summary"]})

        async def goto(args, ctx):
            target, label = args.split()
            result = await ctx.navigate_tree(target, summarize=True, label=label)
            ctx.ui.notify(str(result))

        pi.on("session_before_tree", before)
        pi.on("session_tree", after)
        pi.register_command("goto", handler=goto)
"""


async def test_session_before_tree_cancels_or_supplies_the_summary(tmp_path: Path) -> None:
    _, cwd, env = _dirs(tmp_path)
    (cwd / "tree.py").write_text(textwrap.dedent(TREE_EXTENSION))
    proc = await RpcProcess.pi("--provider", "faux", "--model", "faux-1", "--no-session", "-e", "tree.py",
                               cwd=cwd, env=env)
    try:
        for text in ("one", "two"):
            await proc.send({"type": "prompt", "message": text})
            await proc.read_until(lambda r: r["type"] == "agent_settled")
        entries = (await proc.request({"type": "get_entries"}))["data"]["entries"]
        messages = [e for e in entries if e["type"] == "message"]
        first_answer = next(e["id"] for e in messages if e["message"]["role"] == "assistant")
        leaf = messages[-1]["id"]
        notes = []
        for label in ("cancel-me", "kept"):
            await proc.send({"type": "prompt", "message": f"/goto {first_answer} {label}"})
            records = await proc.read_until(lambda r: r.get("method") == "notify")
            notes.append(records[-1]["message"])
        entries = (await proc.request({"type": "get_entries"}))["data"]["entries"]
    finally:
        await proc.kill()
    assert notes == ["{'cancelled': True}", "{'cancelled': False}"]
    [tree] = [e["data"] for e in entries if e.get("customType") == "tree"]
    prepared = {"targetId": first_answer, "oldLeafId": leaf, "commonAncestorId": first_answer,
                "userWantsSummary": True, "left": 2}
    assert tree == {"before": [{**prepared, "label": "cancel-me"}, {**prepared, "label": "kept"}],
                    "fromExtension": True, "summary": "summary by the extension"}
    summary = next(e for e in entries if e["type"] == "branch_summary")
    labels = [e for e in entries if e["type"] == "label"]
    assert labels[-1]["targetId"] == summary["id"] and labels[-1]["label"] == "renamed"


OPTIONS_EXTENSION = """
    def setup(pi):
        def first(event, ctx):
            event["systemPromptOptions"]["promptGuidelines"].append("added by the first handler")

        def second(event, ctx):
            options = event["systemPromptOptions"]
            pi.append_entry("options", {k: v for k, v in options.items() if k not in ("toolSnippets", "toolGuidelines")}
                            | {"snippets": sorted(options["toolSnippets"]), "guided": sorted(options["toolGuidelines"])})

        pi.on("before_agent_start", first)
        pi.on("before_agent_start", second)
"""


async def test_before_agent_start_gets_the_system_prompt_options(tmp_path: Path) -> None:
    _, cwd, env = _dirs(tmp_path)
    (cwd / "AGENTS.md").write_text("Be brief.")
    (cwd / "options.py").write_text(textwrap.dedent(OPTIONS_EXTENSION))
    proc = await RpcProcess.pi("--provider", "faux", "--model", "faux-1", "--no-session", "-e", "options.py",
                               "--tools", "read,bash", "--append-system-prompt", "Extra words.", cwd=cwd, env=env)
    try:
        await proc.send({"type": "prompt", "message": "hello"})
        await proc.read_until(lambda r: r["type"] == "agent_settled")
        entries = (await proc.request({"type": "get_entries"}))["data"]["entries"]
    finally:
        await proc.kill()
    [options] = [e["data"] for e in entries if e.get("customType") == "options"]
    assert options == {
        "selectedTools": ["read", "bash"], "hiddenTools": [], "promptGuidelines": ["added by the first handler"],
        "appendSystemPrompt": "Extra words.", "sections": {}, "cwd": str(cwd.resolve()),
        "contextFiles": [{"path": str((cwd / "AGENTS.md").resolve()), "content": "Be brief."}], "skills": [],
        # every registered tool, codemode (inactive unless enabled) included
        "snippets": ["bash", "codemode", "edit", "find", "grep", "ls", "read", "write"],
        "guided": ["bash", "codemode", "edit", "read", "write"]}


REVIEW_EXTENSION = """
    def setup(pi):
        async def review(args, ctx):
            registry = ctx.model_registry
            model = registry.find("fake", "fake-model")
            answer = await registry.complete(model, {"systemPrompt": "You review.",
                                                     "messages": [{"role": "user", "content": args,
                                                                   "timestamp": 0}]})
            pi.append_entry("review", {
                "text": answer["content"][0]["text"], "stop": answer["stopReason"],
                "available": [m["id"] for m in registry.get_available()],
                "missing": registry.find("fake", "nope"), "scoped": ctx.scoped_models})

        pi.register_command("review", handler=review)
"""


@pytest.mark.slow
async def test_model_registry_calls_a_model_with_the_session_credentials(tmp_path: Path) -> None:
    from tests.support.fakes.llm_server import FakeLLMServer

    with FakeLLMServer() as server:
        server.add({"content": [{"type": "text", "text": "looks fine"}]})
        agent_dir, cwd, env = _dirs(tmp_path)
        _fake_provider(agent_dir, server.url, headers={"x-team": "reviewers"})
        (cwd / "review.py").write_text(textwrap.dedent(REVIEW_EXTENSION))
        proc = await RpcProcess.pi("--provider", "fake", "--model", "fake-model", "--api-key", "sk-session-key",
                                   "--no-session", "-e", "review.py", cwd=cwd, env=env)
        try:
            await proc.request({"type": "prompt", "message": "/review check this diff"})
            entries = await _wait_for_entries(proc, "review")
        finally:
            await proc.kill()
        [request] = server.requests
    assert entries[0]["data"] == {"text": "looks fine", "stop": "stop", "available": ["fake-model"],
                                  "missing": None, "scoped": []}
    assert request["headers"]["authorization"] == "Bearer sk-session-key"
    assert request["headers"]["x-team"] == "reviewers"
    assert request["body"]["messages"][0] == {"role": "system", "content": "You review."}


WITH_SYSTEM_EXTENSION = """
    def setup(pi):
        def rewrite(event, ctx):
            messages = event["messages"]
            last = dict(messages[-1], content=[{"type": "text", "text": "rewritten for this request"}])
            return {"messages": [*messages[:-1], last]}

        pi.on("context_with_system", lambda event, ctx: ctx.ui.notify(event["messages"][0]["role"]))
        pi.on("context_with_system", rewrite)
        pi.on("context_with_system", lambda event, ctx: {"messages": event["messages"][1:]})
"""


@pytest.mark.slow
async def test_context_with_system_rewrites_the_request_and_keeps_the_system_head(tmp_path: Path) -> None:
    from tests.support.fakes.llm_server import FakeLLMServer

    with FakeLLMServer() as server:
        server.add({"content": [{"type": "text", "text": "ok"}]})
        agent_dir, cwd, env = _dirs(tmp_path)
        _fake_provider(agent_dir, server.url, apiKey="dummy")
        (cwd / "system.py").write_text(textwrap.dedent(WITH_SYSTEM_EXTENSION))
        proc = await RpcProcess.pi("--provider", "fake", "--model", "fake-model", "--no-session",
                                   "-e", "system.py", cwd=cwd, env=env)
        try:
            await proc.send({"type": "prompt", "message": "original text"})
            records = await proc.read_until(lambda r: r["type"] == "agent_settled")
            messages = (await proc.request({"type": "get_messages"}))["data"]["messages"]
        finally:
            await proc.kill()
        [request] = server.requests
    sent = request["body"]["messages"]
    assert sent[0]["role"] == "system" and sent[-1]["content"] in (
        "rewritten for this request", [{"type": "text", "text": "rewritten for this request"}])
    assert [r["message"] for r in records if r.get("method") == "notify"] == ["system"]
    [error] = [r for r in records if r["type"] == "extension_error"]
    assert error["event"] == "context_with_system" and "index 0" in error["error"]
    assert messages[-2]["content"] == [{"type": "text", "text": "original text"}]  # the transcript is untouched
