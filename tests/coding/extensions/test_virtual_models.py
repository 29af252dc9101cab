"""Issue 34 item 11: virtual models (pi's ``registerVirtualModel`` / ``unregisterVirtualModel``).

One router written twice, in TypeScript for the reference pi 1.6.0 and in Python for ours, over the
same fake LLM with two physical models: the models listed, the selection, the router's inputs (it
stores them as its state, so they show in the ``pi.virtual-model-state`` entries), the model and
level of each request that reaches the server and the provider/model fields of each message must
match. The registration rules (replace, unregister, ``unregister_provider``, reload, conflicts,
failures) are checked in-process through the SDK.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent import RouteRequest, SessionError, VirtualModel, create_agent_session
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.reference_pi import REFERENCE_PI, reference_path
from tests.support.rpc_compare import Conversation, Workspace, needs_reference
from tests.support.rpc_helpers import PYTHON, RpcProcess

ROUTER_TS = """
export default function (pi) {
  pi.registerVirtualModel({
    provider: "router", id: "auto", name: "Auto", thinkingLevels: ["low", "high"],
    route(request, ctx) {
      const sticky = request.failed ? undefined : request.previous;
      const state = { reason: request.reason, level: request.thinkingLevel, before: request.state ?? null,
        previous: request.previous ? `${request.previous.model.id}:${request.previous.thinkingLevel}` : null,
        failed: request.failed ? `${request.failed.model.id}:${request.failed.message.errorMessage}` : null,
        roles: request.messages.map((m) => m.role).join(",") };
      if (request.reason !== "user" && sticky) return { model: sticky.model, thinkingLevel: "high", state };
      const id = request.reason === "user" ? "fake-big" : "fake-model";
      return { model: ctx.modelRegistry.find("fake", id), thinkingLevel: "high", state };
    },
  });
}
"""

ROUTER_PY = """
def setup(pi):
    def route(request, ctx):
        sticky = None if request.failed else request.previous
        state = {"reason": request.reason, "level": request.thinking_level, "before": request.state,
                 "previous": (f"{request.previous.model['id']}:{request.previous.thinking_level}"
                              if request.previous else None),
                 "failed": (f"{request.failed.model['id']}:{request.failed.message['errorMessage']}"
                            if request.failed else None),
                 "roles": ",".join(m["role"] for m in request.messages)}
        if request.reason != "user" and sticky:
            return {"model": sticky.model, "thinking_level": "high", "state": state}
        model_id = "fake-big" if request.reason == "user" else "fake-model"
        return {"model": ctx.model_registry.find("fake", model_id), "thinking_level": "high", "state": state}

    pi.register_virtual_model({"provider": "router", "id": "auto", "name": "Auto",
                               "thinking_levels": ["low", "high"], "route": route})
"""

# a tool call (user), an overloaded follow-up (continuation), its retry, routed elsewhere
SCRIPT: list[dict[str, Any]] = [
    {"content": [{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "echo hi"}}]},
    {"status": 529, "body": {"error": {"message": "Overloaded"}}},
    {"content": [{"type": "text", "text": "done"}]},
]
BIG = {"id": "fake-big", "reasoning": True, "contextWindow": 200000, "maxTokens": 8000}


def _with_big_model(workspace: Workspace) -> None:
    path = workspace.agent_dir / "models.json"
    models = json.loads(path.read_text())
    models["providers"]["fake"]["models"].append(BIG)
    path.write_text(json.dumps(models))


async def _play(kind: str, root: Path, language: str = "") -> dict[str, Any]:
    """List, select, prompt; what the client and the server saw, with the server's URL taken out.
    ``language``: the router's (``py`` or ``ts``; by default Python for ours, TypeScript for pi)."""
    language = language or ("py" if kind == "ours" else "ts")
    with FakeLLMServer() as server:
        server.add(*SCRIPT)
        workspace = Workspace.create(root / f"{kind}-{language}", server.url, {"retry": {"baseDelayMs": 1}})
        _with_big_model(workspace)
        extension = workspace.root / f"router.{language}"
        extension.write_text(textwrap.dedent(ROUTER_PY if language == "py" else ROUTER_TS))
        proc = await workspace.spawn(kind, "--no-session", "-e", str(extension))
        conv = Conversation(proc, server, workspace)
        try:
            listed = (await conv.request({"type": "get_available_models"}))["data"]["models"]
            selected = (await conv.request({"type": "set_model", "provider": "router", "modelId": "auto"}))["data"]
            state = (await conv.request({"type": "get_state"}))["data"]
            records = await conv.prompt("hello")
        finally:
            await proc.kill()
        requests = list(server.requests)
    text = json.dumps({"listed": listed, "selected": selected}).replace(server.url, "<LLM>")
    return {
        **json.loads(text),
        "state": (state["model"]["id"], state["thinkingLevel"]),
        "route_states": [r["entry"]["data"] for r in records
                         if r["type"] == "entry_appended" and r["entry"].get("customType") == "pi.virtual-model-state"],
        "answers": [{k: r["message"].get(k) for k in ("api", "provider", "model", "thinkingLevel", "stopReason", "errorMessage")}
                    for r in records if r["type"] == "message_end" and r["message"]["role"] == "assistant"],
        "requests": [(r["body"]["model"], r["body"].get("reasoning_effort"),
                      [m["role"] for m in r["body"]["messages"]]) for r in requests],
    }


@pytest.mark.slow
async def test_a_virtual_model_routes_each_request(tmp_path: Path) -> None:
    """Ours alone: listed after the physical models, selected, and routed per phase of the turn."""
    ours = await _play("ours", tmp_path)
    assert [(m["provider"], m["id"], m["api"]) for m in ours["listed"]][-1] == ("router", "auto", "pi-virtual")
    assert ours["selected"]["thinkingLevelMap"] == {"off": None, "minimal": None, "low": "low", "medium": None,
                                                    "high": "high", "xhigh": None, "max": None}
    assert ours["state"] == ("auto", "low")
    assert [(s["state"]["reason"], s["state"]["previous"], s["state"]["failed"]) for s in ours["route_states"]] == [
        ("user", None, None), ("continuation", "fake-big:high", None),
        ("retry", "fake-big:high", 'fake-big:529: {"message":"Overloaded"}')]
    assert [(a["model"], a["thinkingLevel"], a["stopReason"]) for a in ours["answers"]] == [
        ("fake-big", "high", "toolUse"), ("fake-big", "high", "error"), ("fake-model", "off", "stop")]
    assert [(model, effort) for model, effort, _ in ours["requests"]] == [
        ("fake-big", "high"), ("fake-big", "high"), ("fake-model", None)]


@needs_reference
async def test_virtual_model_matches_the_reference(tmp_path: Path) -> None:
    reference = await _play("reference", tmp_path)
    ours = await _play("ours", tmp_path)
    assert ours == reference


FAILING_TS = """
export default function (pi) {
  pi.registerVirtualModel({ provider: "router", id: "auto", name: "Auto",
    route(request) {
      if (request.messages.filter((m) => m.role === "user").length < 2) throw new Error("no route for that");
      return { model: { provider: "fake", id: "nope" }, thinkingLevel: "off" };
    } });
}
"""
FAILING_PY = """
def setup(pi):
    def route(request, ctx):
        if sum(m["role"] == "user" for m in request.messages) < 2:
            raise RuntimeError("no route for that")
        return {"model": {"provider": "fake", "id": "nope"}, "thinking_level": "off"}

    pi.register_virtual_model({"provider": "router", "id": "auto", "name": "Auto", "route": route})
"""


async def _failed_routes(kind: str, root: Path) -> tuple[list[dict[str, Any]], int]:
    """Two prompts whose routing fails (a raising router, then a model that does not exist): the
    assistant records without their timestamps, and how many requests reached the server."""
    with FakeLLMServer() as server:
        workspace = Workspace.create(root / kind, server.url)
        extension = workspace.root / ("router.py" if kind == "ours" else "router.ts")
        extension.write_text(textwrap.dedent(FAILING_PY if kind == "ours" else FAILING_TS))
        proc = await workspace.spawn(kind, "--no-session", "-e", str(extension))
        conv = Conversation(proc, server, workspace)
        try:
            await conv.request({"type": "set_model", "provider": "router", "modelId": "auto"})
            records = [*await conv.prompt("first"), *await conv.prompt("second")]
        finally:
            await proc.kill()
        answers = [{k: v for k, v in r["message"].items() if k != "timestamp"} for r in records
                   if r["type"] in ("message_start", "message_end") and r["message"]["role"] == "assistant"]
        return answers, len(server.requests)


async def test_failed_routes_end_the_request_with_an_error(tmp_path: Path) -> None:
    answers, requests = await _failed_routes("ours", tmp_path)
    assert requests == 0 and [a["errorMessage"] for a in answers[1::2]] == [
        "no route for that", "Virtual model router/auto routed to fake/nope, which is not a physical model."]
    assert {(a["api"], a["provider"], a["model"]) for a in answers} == {("pi-virtual", "router", "auto")}


@needs_reference
async def test_failed_routes_match_the_reference(tmp_path: Path) -> None:
    assert await _failed_routes("ours", tmp_path) == await _failed_routes("reference", tmp_path)


async def _started_with_model_option(kind: str, root: Path) -> tuple[str, str, str]:
    """``--model router/auto:high`` on the command line: the selection and level ``get_state`` reports."""
    with FakeLLMServer() as server:
        workspace = Workspace.create(root / kind, server.url)
        extension = workspace.root / ("router.py" if kind == "ours" else "router.ts")
        extension.write_text(textwrap.dedent(ROUTER_PY if kind == "ours" else ROUTER_TS))
        argv = ["--mode", "rpc", "--no-session", "-e", str(extension), "--model", "router/auto:high"]
        if kind == "ours":
            proc = await RpcProcess.spawn([PYTHON, "-m", "pi_coding_agent", *argv], cwd=workspace.cwd,
                                          env=workspace.env)
        else:
            env = {**workspace.env, "PATH": reference_path(workspace.env.get("PATH", ""))}
            proc = await RpcProcess.spawn([str(REFERENCE_PI), *argv], cwd=workspace.cwd, env=env)
        try:
            state = (await Conversation(proc, server, workspace).request({"type": "get_state"}))["data"]
        finally:
            await proc.kill()
    return state["model"]["provider"], state["model"]["id"], state["thinkingLevel"]


async def test_the_model_option_selects_a_virtual_model(tmp_path: Path) -> None:
    assert await _started_with_model_option("ours", tmp_path) == ("router", "auto", "high")


@needs_reference
async def test_the_model_option_matches_the_reference(tmp_path: Path) -> None:
    assert await _started_with_model_option("reference", tmp_path) == ("router", "auto", "high")


@pytest.fixture
def ts_sidecar() -> None:
    """The TypeScript sidecar's runtime (jiti, TypeBox from npm, kept in the user cache)."""
    from tests.support.ts_runtime import install_or_skip

    install_or_skip()


@needs_reference
def test_the_typescript_router_runs_in_ours_as_in_the_reference(tmp_path: Path, ts_sidecar: None) -> None:
    """pi's own router file, loaded by ours through the TypeScript sidecar."""
    reference = asyncio.run(_play("reference", tmp_path))
    ours = asyncio.run(_play("ours", tmp_path, "ts"))
    assert ours == reference


# --------------------------------------------------------------------------- registration rules (SDK)


def _agent_dir(root: Path, url: str) -> Path:
    (root / "models.json").write_text(json.dumps({"providers": {"fake": {
        "baseUrl": f"{url}/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": "fake-model"}, BIG]}}}))
    return root


def _to(model_id: str, seen: list[RouteRequest] | None = None) -> Any:
    def route(request: RouteRequest) -> dict[str, Any]:
        if seen is not None:
            seen.append(request)
        return {"model": {"provider": "fake", "id": model_id}, "thinking_level": "medium"}

    return route


def _listed(session: Any) -> list[str]:
    return [f"{m['provider']}/{m['id']}" for m in session.get_available_models()]


async def test_sdk_registration_replaces_and_unregisters(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        server.add({"content": [{"type": "text", "text": "one"}]}, {"content": [{"type": "text", "text": "two"}]})
        async with create_agent_session(cwd=tmp_path, agent_dir=_agent_dir(tmp_path, server.url),
                                        model="fake/fake-model", in_memory=True, load_resources=False) as session:
            session.register_virtual_model(VirtualModel("router", "auto", "Auto", _to("fake-model")))
            session.register_virtual_model(VirtualModel("router", "auto", "Auto 2", _to("fake-big")))
            assert _listed(session) == ["fake/fake-model", "fake/fake-big", "router/auto"]
            await session.set_model("router", "auto")
            assert session.get_state()["model"]["name"] == "Auto 2"
            result = await session.run("hi")
            assert (result.messages[-1]["provider"], result.messages[-1]["model"]) == ("fake", "fake-big")
            assert server.requests[-1]["body"]["model"] == "fake-big"
            session.unregister_virtual_model("router", "auto")
            assert "router/auto" not in _listed(session)


async def test_sdk_conflicts_and_failed_routes(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        async with create_agent_session(cwd=tmp_path, agent_dir=_agent_dir(tmp_path, server.url),
                                        model="fake/fake-model", in_memory=True, load_resources=False) as session:
            with pytest.raises(ValueError, match="conflicts with a physical model"):
                session.register_virtual_model(VirtualModel("fake", "fake-big", "Big", _to("fake-model")))
            session.register_virtual_model(VirtualModel("fake", "auto", "Auto", _to("nope")))
            assert _listed(session)[-1] == "fake/auto"  # beside the provider's own models
            await session.set_model("fake", "auto")
            result = await session.run("hi", raise_on_error=False)
        assert not server.requests  # nothing reached the provider
    failed = result.messages[-1]
    assert (failed["api"], failed["provider"], failed["model"], failed["stopReason"]) == (
        "pi-virtual", "fake", "auto", "error")
    assert failed["errorMessage"] == "Virtual model fake/auto routed to fake/nope, which is not a physical model."


EXTENSION_ROUTER = """
GENERATION = [0]  # the module is imported once: each reload's setup sees the count go up


def setup(pi):
    GENERATION[0] += 1
    pi.register_provider("extra", {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
                                   "apiKey": "k", "models": [{"id": "x"}]})
    pi.register_virtual_model({"provider": "extra", "id": f"auto-{GENERATION[0]}", "name": "Auto",
                               "route": lambda request, ctx: {"model": ctx.model_registry.find("fake", "fake-model")}})

    async def drop(args, ctx):
        pi.unregister_provider("extra")

    pi.register_command("drop-provider", handler=drop)
"""


async def test_extension_models_survive_unregister_provider_and_come_back_on_reload(tmp_path: Path) -> None:
    """``unregister_provider`` leaves the virtual model; a reload drops what the old generation
    registered before the new one registers its own."""
    extension = tmp_path / "router.py"
    extension.write_text(textwrap.dedent(EXTENSION_ROUTER))
    with FakeLLMServer() as server:
        async with create_agent_session(cwd=tmp_path, agent_dir=_agent_dir(tmp_path, server.url),
                                        model="fake/fake-model", in_memory=True, load_resources=False,
                                        extensions=[extension]) as session:
            assert _listed(session)[:3] == ["extra/x", "extra/auto-1", "fake/fake-model"]
            await session.prompt("/drop-provider")
            assert _listed(session)[-1] == "extra/auto-1" and "extra/x" not in _listed(session)
            await session.new_session()
            assert _listed(session)[:3] == ["extra/x", "extra/auto-2", "fake/fake-model"]
            assert "extra/auto-1" not in _listed(session)
            with pytest.raises(SessionError, match="Model not found"):
                await session.set_model("router", "auto")


def _router_extension(pi: Any) -> None:
    pi.register_virtual_model(VirtualModel("router", "auto", "Auto",
                                           lambda request, ctx: {"model": ctx.model_registry.find("fake", "fake-big")}))


async def test_model_option_and_resume_select_the_virtual_model(tmp_path: Path) -> None:
    """``model=`` (``--model``) names a virtual model; a resumed session keeps the virtual selection
    its replies do not name, and falls back to the model that answered last once it is gone."""
    sessions = tmp_path / "sessions"
    with FakeLLMServer() as server:
        agent_dir = _agent_dir(tmp_path, server.url)
        async with create_agent_session(cwd=tmp_path, agent_dir=agent_dir, model="router/auto", session_dir=sessions,
                                        load_resources=False, extensions=[_router_extension]) as session:
            assert session.get_state()["model"]["id"] == "auto"
            answer = (await session.run("hi")).messages[-1]
            session_file = session.get_state()["sessionFile"]
        assert (answer["provider"], answer["model"]) == ("fake", "fake-big")
        async with create_agent_session(cwd=tmp_path, agent_dir=agent_dir, session_file=session_file,
                                        load_resources=False, extensions=[_router_extension]) as resumed:
            assert (resumed.get_state()["model"]["provider"], resumed.get_state()["model"]["id"]) == ("router", "auto")
        async with create_agent_session(cwd=tmp_path, agent_dir=agent_dir, session_file=session_file,
                                        load_resources=False) as without:
            assert without.get_state()["model"]["id"] == "fake-big"


async def test_overflow_compaction_routes_its_summary_and_the_retry(tmp_path: Path) -> None:
    """A context overflow: the summary is a ``direct`` request (no state), the request after the
    compaction a ``retry`` that names the failed answer."""
    from tests.coding.rpc.test_rpc_compaction import LONG, SUMMARY, TOO_LONG, compaction_settings, reply

    seen: list[RouteRequest] = []
    with FakeLLMServer() as server:
        server.add(reply(LONG + "one", 300), reply(LONG + "two", 600), TOO_LONG, reply(SUMMARY, 300, 20),
                   reply("recovered", 500, 5))
        async with create_agent_session(cwd=tmp_path, agent_dir=_agent_dir(tmp_path, server.url),
                                        model="fake/fake-model", in_memory=True, load_resources=False,
                                        settings=compaction_settings(300)) as session:
            session.register_virtual_model(VirtualModel("router", "auto", "Auto", _to("fake-big", seen)))
            await session.set_model("router", "auto")
            for text in ("one " + LONG, "two " + LONG, "three " + LONG):
                result = await session.run(text)
    assert [(r.reason, r.failed and r.failed.message["stopReason"]) for r in seen] == [
        ("user", None), ("user", None), ("user", None), ("direct", None), ("retry", "error")]
    assert result.text == "recovered" and [r["body"]["model"] for r in server.requests] == ["fake-big"] * 5


async def test_an_extension_call_through_the_model_registry_is_a_direct_request(tmp_path: Path) -> None:
    seen: list[RouteRequest] = []
    answers: list[dict[str, Any]] = []

    def extension(pi: Any) -> None:
        async def ask(args: str, ctx: Any) -> None:
            auto = ctx.model_registry.find("router", "auto")
            context = {"systemPrompt": "", "messages": [{"role": "user", "content": args, "timestamp": 0}]}
            answers.append(await ctx.model_registry.complete(auto, context, max_tokens=100000))

        pi.register_virtual_model(VirtualModel("router", "auto", "Auto", lambda request, ctx: _to("fake-big", seen)(request)))
        pi.register_command("ask", handler=ask)

    with FakeLLMServer() as server:
        server.add({"content": [{"type": "text", "text": "direct answer"}]})
        async with create_agent_session(cwd=tmp_path, agent_dir=_agent_dir(tmp_path, server.url),
                                        model="fake/fake-model", in_memory=True, load_resources=False,
                                        extensions=[extension]) as session:
            await session.prompt("/ask what now")
    assert [(r.reason, r.state, [m["role"] for m in r.messages]) for r in seen] == [("direct", None, ["user"])]
    assert (answers[0]["model"], answers[0]["content"][0]["text"]) == ("fake-big", "direct answer")
    assert server.requests[0]["body"]["max_completion_tokens"] == BIG["maxTokens"]  # capped to the routed model


async def test_a_route_to_a_smaller_window_compacts_before_the_request(tmp_path: Path) -> None:
    """pi compacts before sending when the routed model's window cannot hold the conversation; the
    route stays as the router chose it."""
    from tests.coding.rpc.test_rpc_compaction import LONG, SUMMARY, compaction_settings, reply

    def route(request: RouteRequest) -> dict[str, Any]:
        users = sum(m["role"] == "user" for m in request.messages)
        small = request.reason == "user" and users >= 3
        return {"model": {"provider": "fake", "id": "fake-model" if small else "fake-big"}, "thinking_level": "off"}

    with FakeLLMServer() as server:
        # the compaction's summary requests (two here) are direct requests, routed to the large model
        server.add(reply(LONG + "one", 3000), reply(LONG + "two", 9000), reply(SUMMARY, 300, 20),
                   reply(SUMMARY, 300, 20), reply("small", 500))
        agent_dir = _agent_dir(tmp_path, server.url)
        models = json.loads((agent_dir / "models.json").read_text())
        models["providers"]["fake"]["models"][0]["contextWindow"] = 10000  # fake-model: 8,000 tokens before the reserve
        (agent_dir / "models.json").write_text(json.dumps(models))
        async with create_agent_session(cwd=tmp_path, agent_dir=agent_dir, model="fake/fake-model", in_memory=True,
                                        load_resources=False, settings=compaction_settings(100, 2000)) as session:
            session.register_virtual_model(VirtualModel("router", "auto", "Auto", route))
            await session.set_model("router", "auto")
            events: list[str] = []
            session.subscribe(lambda event: events.append(event["type"]), ("compaction_start", "compaction_end"))
            for text in ("one", "two", "three"):
                result = await session.run(text)
    assert events == ["compaction_start", "compaction_end"]
    assert [r["body"]["model"] for r in server.requests] == ["fake-big"] * 4 + ["fake-model"]
    assert result.text == "small" and result.messages[-1]["model"] == "fake-model"
