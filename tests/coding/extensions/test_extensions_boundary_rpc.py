"""Extension API gaps closed against pi 1.6.0, end to end over RPC with the fake LLM server.

Boundary events (``turn_end`` and ``agent_before_settle`` proposing entries and one more request),
``tool_result`` patches with ``usage``, ``message_end`` replacements, dialogs dismissed by a
signal, and images made by extension tools.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest

from tests.coding.extensions import test_extensions_rpc
from tests.coding.extensions.test_extensions_rpc import Workspace, _run, _spawn
from tests.support.rpc_helpers import RpcProcess

ws = test_extensions_rpc.ws  # the same fixtures, registered here under their own names
procs = test_extensions_rpc.procs


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def _notes(records: list[dict[str, Any]]) -> list[str]:
    return [r["message"] for r in records if r.get("method") == "notify"]


def _user_texts(request: dict[str, Any]) -> list[str]:
    texts = []
    for message in request["body"]["messages"]:
        if message["role"] == "user":
            content = message["content"]
            texts.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return texts


# --------------------------------------------------------------------------- turn_end boundary


@pytest.mark.slow
async def test_turn_end_entries_and_continue(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("boundary.py", """
        def setup(pi):
            def propose(event, ctx):
                ctx.ui.notify(f"{event['turnIndex']}|{event['outcome']}|{len(event['entries'])}|{event['continue']}"
                              f"|{event['context']['canContinue']}|{len(event['context']['llmMessages'])}")
                if event["turnIndex"] == 0:
                    return {"entries": [{"type": "custom_message", "customType": "nudge", "content": "keep going",
                                         "display": False},
                                        {"type": "custom", "customType": "mark", "data": {"turn": 0}}],
                            "continue": True}

            def follow(event, ctx):
                ctx.ui.notify(f"second sees {len(event['entries'])}|{event['continue']}"
                              f"|{event['context']['canContinue']}")

            pi.on("turn_end", propose)
            pi.on("turn_end", follow)
    """)
    ws.server.add(_text("first"), _text("second"))
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "hello")
    assert _notes(records) == ["0|completed|0|False|False|3", "second sees 2|True|True",
                               "1|completed|0|False|False|5", "second sees 0|False|False"]
    kinds = [r["type"] for r in records if r["type"] != "message_update"]
    first_end = kinds.index("turn_end")
    assert kinds[first_end - 2:first_end + 2] == ["entry_appended", "entry_appended", "turn_end", "turn_start"]
    appended = [r["entry"] for r in records if r["type"] == "entry_appended"]
    assert [(e["type"], e["customType"]) for e in appended] == [("custom_message", "nudge"), ("custom", "mark")]
    assert kinds.count("agent_start") == 1 and kinds.count("turn_start") == 2
    assert len(ws.server.requests) == 2
    assert _user_texts(ws.server.requests[1])[-1] == "keep going"  # a context-only request
    messages = (await pi.request({"type": "get_messages"}))["data"]["messages"]
    assert [m["role"] for m in messages if m["role"] != "system"] == ["user", "assistant", "custom", "assistant"]


@pytest.mark.slow
async def test_turn_end_continue_without_runnable_context_is_reported(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("again.py", """
        def setup(pi):
            pi.on("turn_end", lambda event, ctx: {"continue": True})
    """)
    ws.server.add(_text("only"))
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "hello")
    errors = [r for r in records if r["type"] == "extension_error"]
    assert errors == [{"type": "extension_error", "extensionPath": "<boundary>", "event": "turn_end",
                       "error": "turn_end requested continuation without runnable model context"}]
    assert len(ws.server.requests) == 1


@pytest.mark.slow
async def test_invalid_draft_voids_the_proposal(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("bad_draft.py", """
        def setup(pi):
            pi.on("turn_end", lambda event, ctx: {
                "entries": [{"type": "context_edit", "targetId": "nope", "replacement": None}], "continue": True})
    """)
    ws.server.add(_text("only"))
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "hello")
    errors = [r for r in records if r["type"] == "extension_error"]
    assert [e["event"] for e in errors] == ["turn_end"]
    assert errors[0]["error"] == "Invalid boundary entries: Entry nope not found"
    assert not [r for r in records if r["type"] == "entry_appended"]
    assert len(ws.server.requests) == 1


# --------------------------------------------------------------------------- agent_before_settle


@pytest.mark.slow
async def test_agent_before_settle_appends_and_continues_once(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("settle.py", """
        calls = []

        def setup(pi):
            def before_settle(event, ctx):
                calls.append(event["outcome"])
                ctx.ui.notify(f"{event['type']}|{','.join(event)}|{event['outcome']}|{len(calls)}")
                if len(calls) == 1:
                    return {"entries": [{"type": "custom_message", "customType": "check", "content": "verify",
                                         "display": True}], "continue": True}

            pi.on("agent_before_settle", before_settle)
            pi.on("agent_settled", lambda event, ctx: ctx.ui.notify("settled"))
    """)
    ws.server.add(_text("done"), _text("verified"))
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "hello")
    assert _notes(records) == ["agent_before_settle|type,outcome,entries,continue,context|completed|1",
                               "agent_before_settle|type,outcome,entries,continue,context|completed|2", "settled"]
    kinds = [r["type"] for r in records if r["type"] not in ("message_update", "extension_ui_request")]
    assert kinds.count("agent_start") == 2 and kinds.count("agent_end") == 2 and kinds.count("agent_settled") == 1
    first_end = kinds.index("agent_end")
    assert kinds[first_end + 1:first_end + 3] == ["entry_appended", "agent_start"]
    assert _user_texts(ws.server.requests[1])[-1] == "verify"


@pytest.mark.slow
async def test_agent_before_settle_reports_outcome_and_refuses_empty_continue(
        ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("settle_bad.py", """
        def setup(pi):
            def before_settle(event, ctx):
                ctx.ui.notify(event["outcome"])
                return {"continue": True}
            pi.on("agent_before_settle", before_settle)
    """)
    ws.server.add({"status": 400, "body": {"error": {"message": "bad request", "type": "invalid_request_error"}}})
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "hello")
    assert _notes(records) == ["error"]
    errors = [r for r in records if r["type"] == "extension_error"]
    assert [(e["extensionPath"], e["event"], e["error"]) for e in errors] == [
        ("<boundary>", "agent_before_settle",
         "agent_before_settle requested continuation without runnable model context")]
    assert records[-1] == {"type": "agent_settled", "aborted": False}


# --------------------------------------------------------------------------- tool_result usage


@pytest.mark.slow
async def test_tool_result_patch_sets_usage(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("usage.py", """
        USAGE = {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120,
                 "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75}}

        def setup(pi):
            pi.on("tool_result", lambda event, ctx: {"usage": USAGE})
            pi.on("tool_result", lambda event, ctx: ctx.ui.notify(stringify(event.get("usage"))))

        import json
        def stringify(value):
            return json.dumps(value, separators=(",", ":"))
    """)
    ws.server.add({"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "echo hi"}}],
                   "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0}},
                  {"content": [{"type": "text", "text": "done"}],
                   "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0}})
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "run it")
    assert json.loads(_notes(records)[0])["input"] == 100  # later handlers see the patched usage
    result = next(r["message"] for r in records if r["type"] == "message_end" and r["message"]["role"] == "toolResult")
    assert result["usage"]["input"] == 100 and list(result)[:6] == [
        "role", "toolCallId", "toolName", "content", "usage", "isError"]
    end = next(r for r in records if r["type"] == "tool_execution_end")
    assert end["result"]["usage"]["output"] == 20
    stats = (await pi.request({"type": "get_session_stats"}))["data"]
    assert stats["tokens"]["input"] == 120 and stats["tokens"]["output"] == 30
    assert stats["cost"] >= 0.75


# --------------------------------------------------------------------------- message_end replacement


@pytest.mark.slow
async def test_message_end_replaces_the_message(ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("replace.py", """
        def setup(pi):
            def redact(event, ctx):
                message = event["message"]
                if message["role"] == "assistant":
                    return {"message": {**message, "content": [{"type": "text", "text": "[redacted]"}]}}
                if message["role"] == "user":
                    return {"message": {**message, "role": "assistant"}}  # refused: the role must stay

            def report(event, ctx):
                message = event["message"]
                if message["role"] in ("user", "assistant"):
                    ctx.ui.notify(message["role"] + ":" + message["content"][0]["text"])

            pi.on("message_end", redact)
            pi.on("message_end", report)
    """)
    ws.server.add(_text("the secret answer"), _text("again"))
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "hello")
    assert _notes(records) == ["user:hello", "assistant:[redacted]"]
    errors = [r for r in records if r["type"] == "extension_error"]
    assert [e["error"] for e in errors] == ["message_end handlers must return a message with the same role"]
    end = [r["message"] for r in records if r["type"] == "message_end" and r["message"]["role"] == "assistant"]
    assert end[0]["content"] == [{"type": "text", "text": "[redacted]"}] and end[0]["stopReason"] == "stop"
    messages = (await pi.request({"type": "get_messages"}))["data"]["messages"]
    assert messages[-1]["content"] == [{"type": "text", "text": "[redacted]"}]
    await _run(pi, "and?")
    assert "the secret answer" not in json.dumps(ws.server.requests[-1]["body"])  # the model sees the replacement


# --------------------------------------------------------------------------- dialog signal


async def test_dialog_signal_dismisses_and_pre_aborted_signal_asks_nothing(
        ws: Workspace, procs: list[RpcProcess]) -> None:
    ext = ws.extension("dismiss.py", """
        import asyncio
        from pi_coding_agent.ai.abort import AbortSignal

        def setup(pi):
            async def ask(args, ctx):
                signal = AbortSignal()
                pending = asyncio.ensure_future(ctx.ui.confirm("Second", "dismissed later", signal=signal))
                choice = await ctx.ui.select("First", ["dismiss"])
                signal.abort()
                dismissed = await pending
                gone = AbortSignal()
                gone.abort()
                skipped = await ctx.ui.input("Never asked", signal=gone)
                ctx.ui.notify(f"{choice}|{dismissed}|{skipped}")
            pi.register_command("ask", handler=ask)
    """)
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    await pi.send({"type": "prompt", "message": "/ask", "id": "p1"})
    first = await pi.read_record()
    second = await pi.read_record()
    assert (first["method"], second["method"]) == ("select", "confirm")
    await pi.send({"type": "extension_ui_response", "id": first["id"], "value": "dismiss"})
    response, before = await pi.response_to("p1")
    assert response["data"] == {"disposition": "handled"}
    assert [r["method"] for r in before if r["type"] == "extension_ui_request"] == ["notify"]
    assert _notes(before) == ["dismiss|False|None"]
    await pi.send({"type": "extension_ui_response", "id": second["id"], "confirmed": True})  # too late: ignored
    assert (await pi.request({"type": "get_state"}))["success"]


# --------------------------------------------------------------------------- images of extension tools


def _png(width: int, height: int) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


@pytest.mark.slow
async def test_extension_tool_images_are_normalised(ws: Workspace, procs: list[RpcProcess]) -> None:
    images = {"small": _png(20, 10), "large": _png(3000, 1000)}
    (ws.cwd / "images.json").write_text(json.dumps(images))
    ext = ws.extension("shots.py", """
        import json
        from pathlib import Path

        def setup(pi):
            images = json.loads((Path(__file__).parent / "images.json").read_text())

            def shoot(tool_call_id, params, signal, on_update, ctx):
                return {"content": [
                    {"type": "text", "text": "three shots"},
                    {"type": "image", "data": images["small"], "mimeType": "image/png"},
                    {"type": "image", "data": images["large"], "mimeType": "image/png"},
                    {"type": "image", "data": "bm90IGFuIGltYWdl", "mimeType": "image/png"}]}

            pi.register_tool(name="shoot", description="Take screenshots", execute=shoot)
    """)
    ws.server.add({"content": [{"type": "toolCall", "id": "s1", "name": "shoot", "arguments": {}}]}, _text("seen"))
    pi = await _spawn(ws, procs, "--no-session", "-e", str(ext))
    records = await _run(pi, "look")
    result = next(r["message"] for r in records if r["type"] == "message_end" and r["message"]["role"] == "toolResult")
    content = result["content"]
    assert [b["type"] for b in content] == ["text", "image", "image", "text", "image"]
    assert content[1]["data"] == images["small"]  # within the limits: byte for byte
    assert content[2]["data"] != images["large"]
    assert content[3]["text"] == ("[Image: original 3000x1000, displayed at 2000x667. "
                                  "Multiply coordinates by 1.50 to map to original image.]")
    assert content[4] == {"type": "image", "data": "bm90IGFuIGltYWdl", "mimeType": "image/png"}  # kept as it was
