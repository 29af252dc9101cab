"""Classifier and image models through the real ``pi --mode rpc`` process, ours and the reference pi 1.6.0.

The fake LLM sends codemode scripts that call ``models.classify()`` and ``models.generateImages()``;
models.json points the built-in classifier and image providers at a fake service on 127.0.0.1
(``tests/support/fakes/nonchat_server.py``). Ours is checked alone (request bodies, headers, results) and
side by side with the reference: the same requests must reach the service and the scripts must
see the same results.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.fakes.nonchat_server import PNG, USAGE, FakeNonChatServer
from tests.support.rpc_compare import Workspace, needs_reference

QUESTIONS = {
    "mood": {"type": "choice", "instructions": "How does the user feel?", "criteria": {"happy": "Glad", "sad": "Down"}},
    "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "mid", "high"]},
    "ok": {"type": "bool", "instructions": "Approved?", "criteria": {"true": "Approval", "false": "No approval"}},
}
IMAGE = {"type": "image", "data": PNG, "mimeType": "image/png"}
# (provider, id, with an image): one classify() call each, in this order
CALLS = [
    ("typesafe", "jev-latest", True),
    ("cloudflare-workers-ai", "@cf/cloudflare/clef", True),
    ("cloudflare-workers-ai", "typesafe/jev", True),
    ("openrouter", "typesafe/jev-1.14", True),
    ("vercel-ai-gateway", "baseten/elephant-1", False),
    ("openai", "gpt-6-luna", True),
    ("opencode", "jev-1.13", True),  # text only: refused before any request
    ("typesafe", "jev-latest", False),  # the fake answers this one with HTTP 400
]
CLASSIFY = f"""
const questions = {json.dumps(QUESTIONS)};
const image = {json.dumps(IMAGE)};
const calls = {json.dumps(CALLS)};
const out = [];
for (const [provider, id, withImage] of calls) {{
  const model = await models.getModelOfType("classifier", provider, id);
  const result = await models.classify(model, {{ state: {{ message: "works" }}, questions,
                                                  ...(withImage ? {{ images: [image] }} : {{}}) }});
  delete result.timestamp;
  out.push(result);
}}
return out;
"""
IMAGES = """
const painter = await models.getModelOfType("image", "openrouter", "google/gemini-2.5-flash-image");
const result = await models.generateImages(painter, { input: [{ type: "text", text: "A red fox" }] });
delete result.timestamp;
for (const block of result.output) if (block.type === "image") image(block);
return { ...result, output: result.output.map((b) => b.type) };
"""
LISTING = """
const all = await models.getModelsOfType("classifier", "cloudflare-workers-ai");
const available = await models.getAvailableOfType("classifier", "typesafe");
const chat = await models.getAvailableOfType("chat", "typesafe");
const wrong = await models.classify({ provider: "openrouter", id: "google/gemini-2.5-flash-image" },
  { state: {}, questions: {} }).catch((e) => e.message);
const shape = await models.classify({ provider: "typesafe", id: "jev-latest" }, { state: {}, questions: {} })
  .catch((e) => e.message.split(". Expected")[0]);
return [all.map((m) => m.id), available.map((m) => [m.id, m.type, m.headers === undefined]), chat.length, wrong, shape];
"""
UNSHOWN = """
const painter = await models.getModelOfType("image", "openrouter", "google/gemini-2.5-flash-image");
await models.generateImages(painter, { input: [{ type: "text", text: "A red fox" }] });
text("generated");
"""
REFUSED_IMAGE = """
const painter = await models.getModelOfType("image", "openrouter", "google/gemini-2.5-flash-image");
const result = await models.generateImages(painter, { input: [{ type: "text", text: "A red fox" },
  { type: "image", data: "AAAA", mimeType: "image/png" }] });
delete result.timestamp;
return result;
"""
SCRIPTS = [CLASSIFY, IMAGES, LISTING, UNSHOWN, REFUSED_IMAGE]


def _providers(url: str, compat: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """models.json entries sending each built-in provider's classifier and image models to the fake."""
    routes = {"typesafe": "ts", "cloudflare-workers-ai": "cf", "openrouter": "or", "vercel-ai-gateway": "ts",
              "opencode": "ts", "openai": "oa"}
    providers: dict[str, Any] = {}
    for provider, prefix in routes.items():
        entry: dict[str, Any] = {"baseUrl": f"{url}/{prefix}", "apiKey": f"key-{provider}"}
        if provider == "typesafe":
            entry["headers"] = {"X-Team": "blue"}
        if provider in compat:
            entry["compat"] = compat[provider]
        providers[provider] = entry
    return providers


def _route_providers(workspace: Workspace, url: str, compat: dict[str, dict[str, Any]],
                     drop_key: str | None = None) -> None:
    """Add ``_providers`` to the workspace's models.json (``drop_key``: a provider left without ``apiKey``)."""
    path = workspace.agent_dir / "models.json"
    config = json.loads(path.read_text())
    config["providers"].update(_providers(url, compat))
    if drop_key is not None:
        del config["providers"][drop_key]["apiKey"]
    path.write_text(json.dumps(config))


Played = tuple[list[dict[str, Any]], list[dict[str, Any]]]


async def _play(kind: str, root: Path, compat: dict[str, dict[str, Any]]) -> Played:
    """Run the scripts on one side; the codemode results and what the fake service received."""
    with FakeLLMServer() as llm, FakeNonChatServer() as service:
        for index, code in enumerate(SCRIPTS):
            llm.add({"content": [{"type": "toolCall", "id": f"cm{index}", "name": "codemode",
                                  "arguments": {"code": code}}]},
                    {"content": [{"type": "text", "text": "done"}]})
        workspace = Workspace.create(root / kind, llm.url, {"defaultTools": ["+codemode"]})
        _route_providers(workspace, service.url, compat)
        for name in ("TYPESAFE_API_KEY", "OPENROUTER_API_KEY", "CLOUDFLARE_API_KEY", "AI_GATEWAY_API_KEY",
                     "OPENCODE_API_KEY", "OPENAI_API_KEY", "PI_TELEMETRY"):
            workspace.env.pop(name, None)
        workspace.env["CLOUDFLARE_ACCOUNT_ID"] = "acct-1"  # pi's Workers AI credential needs the account too
        proc = await workspace.spawn(kind, "--no-session")
        ends: list[dict[str, Any]] = []
        try:
            for index in range(len(SCRIPTS)):
                if index == 0:  # the classify script's last call and the last image request fail
                    service.pass_next(6)
                    service.fail_next(400, {"error": {"message": "state too large"}})
                    service.pass_next(2)
                    service.fail_next(429, {"error": {"message": "slow down", "code": 429}})
                await proc.send({"type": "prompt", "message": "go", "id": f"p{index}"})
                records = await proc.read_until(lambda r: r["type"] == "agent_settled")
                ends += [r for r in records if r["type"] == "tool_execution_end" and r["toolName"] == "codemode"]
        finally:
            await proc.kill()
        return ends, list(service.requests)


def _text(end: dict[str, Any]) -> str:
    text = "".join(b.get("text", "") for b in end["result"]["content"] if b["type"] == "text")
    return re.sub(r"Wall time \d+\.\d seconds", "Wall time N seconds", re.sub(r"pi-codemode-[0-9a-f]{16}", "X", text))


def _value(end: dict[str, Any]) -> Any:
    """The script's returned value: the result's text after the image paths (``[Image saved ...]``)."""
    body = re.sub(r"\[Image saved to [^\]]*\]\n?", "", _text(end).split("Output:\n", 1)[1])
    return json.loads(body)


def _rows(end: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "durationMs"} for row in end["result"]["details"]["calls"]]


COMPARED_HEADERS = ("authorization", "content-type", "typesafe-danger-zone-images", "x-team", "http-referer",
                    "x-openrouter-title", "x-openrouter-categories")


def _wire(requests: list[dict[str, Any]]) -> list[tuple[str, dict[str, str], Any]]:
    return [(r["path"], {h: r["headers"][h] for h in COMPARED_HEADERS if h in r["headers"]}, r["body"])
            for r in requests]


# --------------------------------------------------------------------------- ours alone


@pytest.mark.slow
async def test_classifier_requests_and_results(tmp_path: Path) -> None:
    ends, requests = await _play("ours", tmp_path, {})
    assert [r["path"] for r in requests] == ["/ts/systemone", "/cf/run", "/cf/run", "/or/systemone",
                                             "/ts/systemone", "/oa/decisions", "/ts/systemone", "/or/chat/completions",
                                             "/or/chat/completions", "/or/chat/completions"]
    typesafe, clef, cf_jev, openrouter, vercel, luna, failed, images, _unshown, _refused = requests
    wire_questions = {**QUESTIONS, "ok": {**QUESTIONS["ok"], "type": "noul"}}
    # TypeSafe: assets named before the state, the opt-in header, the provider's models.json header
    assert typesafe["body"] == {"model": "jev-latest", "state": ["<image-1>", {"message": "works"}],
                                "questions": wire_questions,
                                "assets": {"<image-1>": {"type": "image", "format": "png", "data_base64": PNG}}}
    assert typesafe["headers"]["typesafe-danger-zone-images"] == "true"
    assert typesafe["headers"]["authorization"] == "Bearer key-typesafe" and typesafe["headers"]["x-team"] == "blue"
    # Clef on Workers AI: a list of data URLs inside Cloudflare's input envelope, no opt-in header
    assert clef["body"] == {"model": "@cf/cloudflare/clef", "input": {
        "state": {"message": "works"}, "questions": wire_questions, "images": [f"data:image/png;base64,{PNG}"]}}
    assert "typesafe-danger-zone-images" not in clef["headers"]
    assert cf_jev["body"]["input"]["state"] == ["<image-1>", {"message": "works"}]
    # OpenRouter: image_url parts before the state
    assert openrouter["body"]["state"] == [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                                           {"message": "works"}]
    assert "typesafe-danger-zone-images" not in openrouter["headers"]
    assert "http-referer" not in openrouter["headers"]  # pi attributes chat requests only
    assert vercel["body"] == {"model": "baseten/elephant-1", "state": {"message": "works"}, "questions": wire_questions}
    # Decisions: the state as JSON text beside the image, questions as a list, bool as a predicate
    assert luna["body"] == {"model": "gpt-6-luna", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": '{"message":"works"}'},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}]}], "questions": [
        {"type": "choice", "name": "mood", "instructions": "How does the user feel?",
         "choices": [{"value": "happy", "description": "Glad"}, {"value": "sad", "description": "Down"}]},
        {"type": "score", "name": "urgency", "instructions": "How urgent?",
         "levels": [{"label": "low"}, {"label": "mid"}, {"label": "high"}]},
        {"type": "predicate", "name": "ok", "instructions": "Approved?\n\nTrue means: Approval\nFalse means: No approval"}]}
    assert failed["body"]["model"] == "jev-latest" and "assets" not in failed["body"]
    assert images["body"] == {"model": "google/gemini-2.5-flash-image", "stream": False, "modalities": ["image", "text"],
                              "messages": [{"role": "user", "content": [{"type": "text", "text": "A red fox"}]}]}

    results = _value(ends[0])
    answers = {"mood": {"type": "choice", "choice": "happy", "probabilities": {"happy": 0.8, "sad": 0.2},
                        "confidence": 0.8},
               "urgency": {"type": "score", "score": 1.5, "confidence": 0.6},
               "ok": {"type": "bool", "probability": 0.75}}
    assert [r["stopReason"] for r in results] == ["stop"] * 6 + ["error", "error"]
    assert all(r["answers"] == answers for r in results[:6])
    assert results[0]["usage"]["cost"]["total"] == 0  # TypeSafe's direct jev-latest has no price
    assert results[3]["usage"]["input"] == USAGE["input_tokens"] and results[3]["usage"]["cost"]["total"] > 0
    assert results[6]["errorMessage"] == "Model opencode/jev-1.13 does not accept image input"
    assert results[7]["errorMessage"] == 'System One API error (400): {"error":{"message":"state too large"}}'
    rows = _rows(ends[0])
    assert [r["status"] for r in rows] == ["ok"] * 6 + ["error", "error"]
    assert rows[0] == {"id": "cm0/models.classify/1", "name": "models.classify", "args": "typesafe/jev-latest",
                       "status": "ok", "cost": 0}
    usage = ends[0]["result"]["usage"]  # the script's model calls, summed into the tool result
    assert usage["input"] == 6 * USAGE["input_tokens"] and usage["output"] == 6 * USAGE["output_tokens"]

    image_end = ends[1]
    assert [b["type"] for b in image_end["result"]["content"]].count("image") == 1
    generated = _value(image_end)
    assert generated["stopReason"] == "stop" and generated["output"] == ["text", "image"]
    assert generated["responseId"] == "gen-1" and generated["usage"]["output"] == 1290

    assert _text(ends[3]).endswith("generated\nNote: models.generateImages() returned 1 image that the script did "
                                   "not show. Show each image block of result.output with image(block).")
    refused = _value(ends[4])  # image requests are not retried
    assert refused["stopReason"] == "error" and refused["errorMessage"] == '429: {"message":"slow down","code":429}' and refused["output"] == []
    assert requests[-1]["body"]["messages"][0]["content"][1] == {"type": "image_url",
                                                                  "image_url": {"url": "data:image/png;base64,AAAA"}}
    all_cf, available, chat, wrong, shape = _value(ends[2])
    assert "@cf/cloudflare/clef" in all_cf and "typesafe/jev" in all_cf
    assert available == [["jev-latest", "classifier", True]] and chat == 0
    assert wrong.startswith('"openrouter/google/gemini-2.5-flash-image" is an image model, not a classifier model.')
    assert shape == "models.classify() context.questions must map question IDs to questions, got {}"


@pytest.mark.slow
async def test_provider_compat_chooses_how_images_travel(tmp_path: Path) -> None:
    compat = {"typesafe": {"imageInput": "state-image-urls", "sendImageOptInHeader": False},
              "cloudflare-workers-ai": {"imageInput": "assets"}}
    _ends, requests = await _play("ours", tmp_path, compat)
    typesafe, clef = requests[0], requests[1]
    assert typesafe["body"]["state"][0]["type"] == "image_url" and "assets" not in typesafe["body"]
    assert "typesafe-danger-zone-images" not in typesafe["headers"]
    assert clef["body"]["input"]["state"] == ["<image-1>", {"message": "works"}] and "images" not in clef["body"]["input"]


async def test_chat_commands_do_not_see_classifier_models(tmp_path: Path) -> None:
    with FakeLLMServer() as llm, FakeNonChatServer() as service:
        workspace = Workspace.create(tmp_path, llm.url)
        _route_providers(workspace, service.url, {})
        proc = await workspace.spawn("ours", "--no-session")
        try:
            listed = (await proc.request({"type": "get_available_models"}))["data"]["models"]
            refused = await proc.request({"type": "set_model", "provider": "typesafe", "modelId": "jev-latest"})
        finally:
            await proc.kill()
    assert not any(m["provider"] == "typesafe" or m.get("type") for m in listed)
    assert not refused["success"]


# --------------------------------------------------------------------------- side by side


@needs_reference
@pytest.mark.parametrize("compat", [{}, {"typesafe": {"imageInput": "images"},
                                         "cloudflare-workers-ai": {"imageInput": "state-image-urls"}}],
                         ids=["catalog", "provider-compat"])
async def test_same_requests_and_results_as_the_reference(tmp_path: Path, compat: dict[str, Any]) -> None:
    ours_ends, ours_requests = await _play("ours", tmp_path, compat)
    ref_ends, ref_requests = await _play("reference", tmp_path, compat)
    assert _wire(ours_requests) == _wire(ref_requests)
    assert len(ours_ends) == len(ref_ends) == len(SCRIPTS)
    for mine, theirs in zip(ours_ends, ref_ends, strict=True):
        assert _text(mine) == _text(theirs)
        assert _rows(mine) == _rows(theirs)
        assert mine["result"].get("usage") == theirs["result"].get("usage")


EXTENSION = '''
import os

def setup(pi):
    pi.register_provider("acme", {
        "baseUrl": os.environ["ACME_URL"], "api": "openai-completions", "apiKey": "acme-key",
        "models": [{"id": "acme-chat"},
                   {"id": "acme-judge", "type": "classifier", "name": "Acme Judge", "api": "typesafe-system-one",
                    "input": ["text"], "contextWindow": 8000,
                    "cost": {"input": 1, "output": 0, "cacheRead": 0, "cacheWrite": 0}}],
    })
'''
JUDGE = """
const judge = await models.getModelOfType("classifier", "acme", "acme-judge");
const chat = await models.getModelOfType("classifier", "acme", "acme-chat");
const result = await models.classify(judge, { state: { n: 1 }, questions: {
  ok: { type: "bool", instructions: "Fine?", criteria: { true: "yes", false: "no" } } } });
return [judge.name, chat === undefined, result.stopReason, result.answers.ok, result.usage.cost.total];
"""


@pytest.mark.slow
async def test_an_extension_registers_a_classifier_model(tmp_path: Path) -> None:
    """A registered provider's ``type: "classifier"`` model runs on a built-in API; its chat models stay chat."""
    with FakeLLMServer() as llm, FakeNonChatServer() as service:
        llm.add({"content": [{"type": "toolCall", "id": "cm1", "name": "codemode", "arguments": {"code": JUDGE}}]},
                {"content": [{"type": "text", "text": "done"}]})
        workspace = Workspace.create(tmp_path, llm.url, {"defaultTools": ["+codemode"]})
        workspace.env["ACME_URL"] = f"{service.url}/ts"
        proc = await workspace.spawn_with("ours", {"ours": EXTENSION}, "--no-session")
        try:
            listed = (await proc.request({"type": "get_available_models"}))["data"]["models"]
            await proc.send({"type": "prompt", "message": "go", "id": "p"})
            records = await proc.read_until(lambda r: r["type"] == "agent_settled")
        finally:
            await proc.kill()
    end = next(r for r in records if r["type"] == "tool_execution_end" and r["toolName"] == "codemode")
    assert _value(end) == ["Acme Judge", True, "stop", {"type": "bool", "probability": 0.75}, 0.0012]
    assert service.requests[0]["headers"]["authorization"] == "Bearer acme-key"
    assert service.requests[0]["body"]["model"] == "acme-judge"
    assert {m["id"] for m in listed if m["provider"] == "acme"} == {"acme-chat"}


@pytest.mark.slow
async def test_a_transient_failure_is_retried_and_a_bad_request_is_an_error_result(tmp_path: Path) -> None:
    code = """
const jev = await models.getModelOfType("classifier", "typesafe", "jev-latest");
const q = { questions: { ok: { type: "bool", instructions: "Fine?", criteria: { true: "yes", false: "no" } } } };
const first = await models.classify(jev, { state: {}, ...q });
const second = await models.classify(jev, { state: {}, ...q });
return [first.stopReason, second.stopReason, second.errorMessage];
"""
    with FakeLLMServer() as llm, FakeNonChatServer() as service:
        llm.add({"content": [{"type": "toolCall", "id": "cm1", "name": "codemode", "arguments": {"code": code}}]},
                {"content": [{"type": "text", "text": "done"}]})
        workspace = Workspace.create(tmp_path, llm.url, {"defaultTools": ["+codemode"]})
        _route_providers(workspace, service.url, {}, drop_key="typesafe")  # its key: TYPESAFE_API_KEY
        workspace.env["TYPESAFE_API_KEY"] = "env-key"
        service.fail_next(503, {"error": {"message": "busy"}})  # retried: the first call succeeds
        service.pass_next()
        service.fail_next(400, "")  # not retried
        proc = await workspace.spawn("ours", "--no-session")
        try:
            await proc.send({"type": "prompt", "message": "go", "id": "p"})
            records = await proc.read_until(lambda r: r["type"] == "agent_settled")
        finally:
            await proc.kill()
    end = next(r for r in records if r["type"] == "tool_execution_end" and r["toolName"] == "codemode")
    # a 400 is not retried; its empty body gives pi's "<label> returned <status>" text
    assert _value(end) == ["stop", "error", "System One API error (400): System One API returned 400"]
    assert len(service.requests) == 3
    assert {r["headers"]["authorization"] for r in service.requests} == {"Bearer env-key"}


# --------------------------------------------------------------------------- llama.cpp router models

ROUTER = {
    "qwen-loaded": {"status": {"value": "loaded"}, "meta": {"n_ctx": 32768}},
    "judge-1": {"status": {"value": "loaded"},
                "architecture": {"input_modalities": ["text", "image"], "output_modalities": ["decisions"]}},
}
LLAMA = f"""
const listed = await models.getAvailableOfType("classifier", "llama.cpp");
const questions = {json.dumps({**QUESTIONS, "mood": {**QUESTIONS["mood"], "criteria": {
    "happy": "Glad", "sad": "Down", "calm": ""}}})};
const qwen = await models.getModelOfType("classifier", "llama.cpp", "qwen-loaded");
const chat = await models.classify(qwen, {{ state: {{ message: "works", n: [1, 2] }}, questions }});
const judge = await models.getModelOfType("classifier", "llama.cpp", "judge-1");
const decided = await models.classify(judge, {{ state: {{ message: "works" }}, questions,
                                                images: [{json.dumps(IMAGE)}] }});
const refused = await models.classify(qwen, {{ state: {{}}, questions, images: [{json.dumps(IMAGE)}] }});
for (const r of [chat, decided, refused]) delete r.timestamp;
return [listed.map((m) => [m.id, m.api, m.input, m.compat ?? null]), chat, decided, refused];
"""


async def _play_llama(kind: str, root: Path) -> tuple[list[str], Any, list[dict[str, Any]]]:
    """The chat ids the router offers, the script's value and the router's classification requests."""
    from tests.support.fakes.llama_server import FakeLlamaRouter

    with FakeLLMServer() as llm, FakeLlamaRouter({k: dict(v) for k, v in ROUTER.items()}) as router:
        llm.add({"content": [{"type": "toolCall", "id": "cm1", "name": "codemode", "arguments": {"code": LLAMA}}]},
                {"content": [{"type": "text", "text": "done"}]})
        workspace = Workspace.create(root / kind, llm.url, {"defaultTools": ["+codemode"]})
        workspace.env.update({"LLAMA_BASE_URL": router.url, "LLAMA_API_KEY": "llama-secret"})
        proc = await workspace.spawn(kind, "--no-session")
        try:
            chat: list[str] = []
            for _ in range(50):  # pi lists the router's models in the background after start-up
                models = (await proc.request({"type": "get_available_models"}))["data"]["models"]
                chat = sorted(m["id"] for m in models if m["provider"] == "llama.cpp")
                if chat:
                    break
                await asyncio.sleep(0.2)
            await proc.send({"type": "prompt", "message": "go", "id": "p"})
            records = await proc.read_until(lambda r: r["type"] == "agent_settled")
        finally:
            await proc.kill()
        posted = [{"path": r["path"], "body": r["body"], "authorization": r["authorization"]}
                  for r in router.requests if r["method"] == "POST" and r["path"] != "/v1/chat/completions"]
    end = next(r for r in records if r["type"] == "tool_execution_end" and r["toolName"] == "codemode")
    return chat, _value(end), posted


@pytest.mark.slow
async def test_llama_router_models_classify_by_label_probabilities(tmp_path: Path) -> None:
    chat, (listed, answered, decided, refused), posted = await _play_llama("ours", tmp_path)
    assert chat == ["qwen-loaded"]  # a decision-only model does not chat
    assert listed == [["qwen-loaded", "llama-cpp-classify", ["text"], None],
                      ["judge-1", "typesafe-system-one", ["text", "image"],
                       {"imageInput": "images", "sendImageOptInHeader": False}]]
    yes, no = math.exp(-0.4), math.exp(-1.2)
    assert answered["stopReason"] == "stop"
    assert answered["answers"]["ok"] == {"type": "bool", "probability": pytest.approx(yes / (yes + no))}
    mood = answered["answers"]["mood"]
    assert mood["choice"] == "happy" and list(mood["probabilities"]) == ["happy", "sad", "calm"]
    a, b, c = math.exp(-0.2), math.exp(-1.9), math.exp(-3.0)
    assert mood["probabilities"]["happy"] == pytest.approx(a / (a + b + c))
    assert mood["confidence"] == pytest.approx((3 * a / (a + b + c) - 1) / 2)
    assert 0 < answered["answers"]["urgency"]["score"] < 2
    assert decided["stopReason"] == "stop" and decided["answers"]["ok"] == {"type": "bool", "probability": 0.75}
    assert refused["errorMessage"] == "Model llama.cpp/qwen-loaded does not accept image input"
    completions = [r for r in posted if r["path"] == "/completion"]
    assert len(completions) == 3 and all(r["authorization"] == "Bearer llama-secret" for r in posted)
    assert completions[0]["body"] == {"model": "qwen-loaded", "prompt": completions[0]["body"]["prompt"],
                                      "n_predict": 1, "n_probs": 256, "post_sampling_probs": False,
                                      "cache_prompt": True, "temperature": 0}
    assert completions[0]["body"]["prompt"].endswith("<|assistant|>\n<think></think>")
    templates = [r["body"] for r in posted if r["path"] == "/apply-template"]
    assert templates[0]["chat_template_kwargs"] == {"enable_thinking": False}
    assert templates[0]["messages"][1]["content"].startswith('State:\n{\n "message": "works",\n "n": [\n  1,\n  2\n ]\n}')
    systemone = next(r["body"] for r in posted if r["path"] == "/v1/systemone")
    assert systemone["images"] == [f"data:image/png;base64,{PNG}"] and "assets" not in systemone


def _rounded(value: Any) -> Any:
    """Floats to 12 digits: the two runtimes' ``exp`` may differ in the last bit."""
    if isinstance(value, float):
        return round(value, 12)
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


@needs_reference
async def test_llama_router_classification_matches_the_reference(tmp_path: Path) -> None:
    ours = await _play_llama("ours", tmp_path)
    theirs = await _play_llama("reference", tmp_path)
    assert ours[0] == theirs[0]
    assert _rounded(ours[1]) == _rounded(theirs[1])
    key = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731 - label lookups run concurrently, in any order
    assert sorted(ours[2], key=key) == sorted(theirs[2], key=key)


JUDGE_COMMAND = '''
def setup(pi):
    async def judge(args, ctx):
        registry = ctx.model_registry
        jev = registry.find_of_type("classifier", "typesafe", "jev-latest")
        result = await registry.classify(jev, {"state": {"text": args}, "questions": {
            "ok": {"type": "bool", "instructions": "Fine?", "criteria": {"true": "yes", "false": "no"}}}})
        chat = registry.find("fake", "fake-model")
        wrong = await registry.classify(chat, {"state": {}, "questions": {}})
        images = registry.get_available_of_type("image", "openrouter")
        pi.append_entry("judged", {"answer": result["answers"], "stop": result["stopReason"],
                                   "wrong": wrong["errorMessage"], "images": len(images) > 0})

    pi.register_command("judge", handler=judge)
'''


@pytest.mark.slow
async def test_extensions_classify_through_the_model_registry(tmp_path: Path) -> None:
    """``ctx.model_registry.classify`` (pi's ``ctx.modelRegistry.classify``) with the session's credentials."""
    with FakeLLMServer() as llm, FakeNonChatServer() as service:
        workspace = Workspace.create(tmp_path, llm.url)
        _route_providers(workspace, service.url, {})
        proc = await workspace.spawn_with("ours", {"ours": JUDGE_COMMAND}, "--no-session")
        try:
            await proc.request({"type": "prompt", "message": "/judge the build is green"})
            entries: list[dict[str, Any]] = []
            for _ in range(50):
                entries = [e for e in (await proc.request({"type": "get_entries"}))["data"]["entries"]
                           if e.get("customType") == "judged"]
                if entries:
                    break
                await asyncio.sleep(0.1)
        finally:
            await proc.kill()
    assert entries[0]["data"] == {"answer": {"ok": {"type": "bool", "probability": 0.75}}, "stop": "stop",
                                  "wrong": "Model fake/fake-model is not a classifier model", "images": True}
    assert service.requests[0]["body"]["state"] == {"text": "the build is green"}
    assert service.requests[0]["headers"]["authorization"] == "Bearer key-typesafe"


@pytest.mark.parametrize("kind", ["ours", pytest.param("reference", marks=needs_reference)])
@pytest.mark.slow
async def test_abort_cancels_a_waiting_classify_call(tmp_path: Path, kind: str) -> None:
    code = """
const jev = await models.getModelOfType("classifier", "typesafe", "jev-latest");
await models.classify(jev, { state: {}, questions: { ok: { type: "bool", instructions: "Fine?",
  criteria: { true: "yes", false: "no" } } } });
text("not reached");
"""
    with FakeLLMServer() as llm, FakeNonChatServer() as service:
        llm.add({"content": [{"type": "toolCall", "id": "cm1", "name": "codemode", "arguments": {"code": code}}]},
                {"content": [{"type": "text", "text": "done"}]})
        workspace = Workspace.create(tmp_path, llm.url, {"defaultTools": ["+codemode"]})
        _route_providers(workspace, service.url, {})
        service.delay_s = 5.0
        proc = await workspace.spawn(kind, "--no-session")
        try:
            await proc.send({"type": "prompt", "message": "go", "id": "p"})
            await proc.read_until(lambda r: r["type"] == "tool_execution_update"
                                  and any(c["status"] == "running" and c["name"] == "models.classify"
                                          for c in r["partialResult"]["details"]["calls"]))
            started = asyncio.get_running_loop().time()
            await proc.send({"type": "abort", "id": "a"})
            records = await proc.read_until(lambda r: r["type"] == "agent_settled")
            elapsed = asyncio.get_running_loop().time() - started
        finally:
            await proc.kill()
    end = next(r for r in records if r["type"] == "tool_execution_end" and r["toolName"] == "codemode")
    assert elapsed < 3  # the slow answer is not waited for
    assert _text(end) == ("Script failed\nWall time N seconds\nOutput:\nScript error:\nScript aborted: This "
                          "operation was aborted\n\nTool calls made before the failure (they are not undone): "
                          "models.classify (cancelled)")
    assert [c["status"] for c in end["result"]["details"]["calls"]] == ["cancelled"]
