"""``/login`` over RPC: a client signs a user in through extension UI dialogs, then prompts with the token.

The real ``pi --mode rpc`` process, the fake authorization server (``PI_OAUTH_ORIGIN``: PKCE, code
exchange, rotating refresh) and the fake LLM server (anthropic's ``baseUrl`` in models.json).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.coding.cli.test_auth_cli import auth_file, home
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.fakes.oauth_server import FakeOAuthServer
from tests.support.rpc_helpers import RpcProcess

MODEL = "anthropic/claude-sonnet-4-5"


@pytest.fixture
def oauth(monkeypatch: pytest.MonkeyPatch):
    with FakeOAuthServer() as server:
        monkeypatch.setenv("PI_OAUTH_ORIGIN", server.url)
        yield server


async def next_dialog(pi: RpcProcess, seen: list[dict[str, Any]]) -> dict[str, Any]:
    """The next extension UI request that waits for an answer; every record on the way goes to ``seen``."""
    records = await pi.read_until(lambda r: r.get("type") == "extension_ui_request" and r["method"] != "notify")
    seen.extend(records)
    return records[-1]


async def answer(pi: RpcProcess, request: dict[str, Any], **reply: Any) -> None:
    await pi.send({"type": "extension_ui_response", "id": request["id"], **reply})


async def prompt_text(pi: RpcProcess, message: str, seen: list[dict[str, Any]]) -> str:
    assert (await pi.request({"type": "prompt", "message": message}))["success"] is True
    records = await pi.read_until(lambda r: r.get("type") == "agent_settled")  # the next prompt may follow
    seen.extend(records)
    final = next(r for r in reversed(records) if r["type"] == "agent_end")["messages"][-1]
    return "".join(block.get("text", "") for block in final["content"])


@pytest.mark.slow
async def test_login_over_rpc_then_prompt_then_refresh(tmp_path: Path, oauth: FakeOAuthServer,
                                                       fake_llm: FakeLLMServer):
    env = home(tmp_path, {}, fake_llm.url)
    fake_llm.add({"content": [{"type": "text", "text": "first"}]}, {"content": [{"type": "text", "text": "second"}]})
    pi = await RpcProcess.pi("--no-session", "--model", MODEL, cwd=tmp_path, env=env)
    seen: list[dict[str, Any]] = []
    try:
        refused = await pi.request({"type": "prompt", "message": "hi"})
        assert refused["success"] is False and "pi auth login anthropic" in refused["error"]

        await pi.send({"id": "login", "type": "prompt", "message": "/login"})
        provider = await next_dialog(pi, seen)
        assert provider["method"] == "select" and provider["title"] == "Select provider to login:"
        assert provider["options"][:2] == ["Anthropic (Claude Pro/Max)", "OpenAI (ChatGPT Plus/Pro)"]
        assert {"OpenAI (ChatGPT subscription)", "Radius"} <= set(provider["options"]) and "openai" not in provider["options"]
        await answer(pi, provider, value="Anthropic (Claude Pro/Max)")
        method = await next_dialog(pi, seen)
        assert method["options"] == ["Browser login (default)", "Copy code login (headless)"]
        await answer(pi, method, value="Copy code login (headless)")
        paste = await next_dialog(pi, seen)
        assert paste["method"] == "input"
        url_note = next(r for r in seen if r.get("method") == "notify" and r["message"].startswith("Open this URL"))
        redirect = oauth.approve(url_note["message"].splitlines()[1])  # the user signs in in a browser
        await answer(pi, paste, value=redirect)
        response, rest = await pi.response_to("login")
        seen.extend(rest)
        assert response["success"] is True
        notes = [r["message"] for r in rest if r.get("method") == "notify"]
        assert notes[-1].startswith("Logged in to Anthropic. Credentials saved to ")

        stored = auth_file(env)["anthropic"]
        assert stored["type"] == "oauth" and stored["access"] == "sk-ant-oat01-access-1"
        exchange = oauth.grants("authorization_code")[0]
        assert exchange["redirect_uri"] == "https://platform.claude.com/oauth/code/callback"

        assert await prompt_text(pi, "hello", seen) == "first"
        assert fake_llm.requests[0]["headers"]["authorization"] == "Bearer sk-ant-oat01-access-1"

        # time passes: the stored token is due, so the next prompt refreshes it (under the lock) first
        path = Path(env["HOME"]) / ".pi" / "agent" / "auth.json"
        path.write_text(json.dumps({"anthropic": {**stored, "expires": int(time.time() * 1000) - 1}}, indent=2))
        assert await prompt_text(pi, "again", seen) == "second"
        refreshed = auth_file(env)["anthropic"]
        assert fake_llm.requests[1]["headers"]["authorization"] == f"Bearer {refreshed['access']}"
        assert refreshed["access"] == "sk-ant-oat01-access-2" and refreshed["refresh"] in oauth.live_refresh
        assert oauth.grants("refresh_token")[0]["refresh_token"] == stored["refresh"]
    finally:
        await pi.kill()
    output = b"\n".join(pi.raw_lines).decode() + await pi.stderr_text()
    for secret in (stored["access"], stored["refresh"], refreshed["access"], refreshed["refresh"]):
        assert secret not in output


async def test_login_of_a_key_provider_asks_the_key_and_a_dismissed_dialog_stores_nothing(
        tmp_path: Path, fake_llm: FakeLLMServer):
    env = home(tmp_path, {}, fake_llm.url)
    pi = await RpcProcess.pi("--no-session", cwd=tmp_path, env=env)
    seen: list[dict[str, Any]] = []
    try:
        await pi.send({"id": "a", "type": "prompt", "message": "/login anthropic"})
        await answer(pi, await next_dialog(pi, seen), cancelled=True)
        response, rest = await pi.response_to("a")
        assert response["success"] is True
        assert [r["message"] for r in rest if r.get("method") == "notify"] == [
            "Failed to log in to Anthropic: Login cancelled"]
        assert auth_file(env) == {}

        await pi.send({"id": "b", "type": "prompt", "message": "/login mistral"})
        key = await next_dialog(pi, seen)
        assert (key["method"], key["title"]) == ("input", "Enter mistral API key")
        await answer(pi, key, value="sk-mistral-secret")
        response, rest = await pi.response_to("b")
        notes = [r["message"] for r in rest if r.get("method") == "notify"]
        assert notes[-2].startswith("Saved API key for mistral.") and notes[-1] == "Selected devstral-medium-latest"
        assert auth_file(env) == {"mistral": {"type": "api_key", "key": "sk-mistral-secret"}}

        unknown = await pi.request({"type": "prompt", "message": "/login nowhere"})
        assert unknown["success"] is True
    finally:
        await pi.kill()
    assert "sk-mistral-secret" not in b"\n".join(pi.raw_lines).decode() + await pi.stderr_text()


@pytest.mark.slow
async def test_sign_in_with_chatgpt_over_rpc_names_the_installation_by_its_settings_device_id(
        tmp_path: Path, oauth: FakeOAuthServer):
    from urllib.parse import parse_qs, urlsplit

    env = home(tmp_path, {})
    pi = await RpcProcess.pi("--no-session", cwd=tmp_path, env=env)
    seen: list[dict[str, Any]] = []
    try:
        await pi.send({"id": "login", "type": "prompt", "message": "/login openai"})
        paste = await next_dialog(pi, seen)
        assert (paste["method"], paste["title"]) == ("input", "Complete login in your browser, or paste the final "
                                                              "redirect URL here:")
        url = next(r for r in seen if r.get("method") == "notify")["message"].splitlines()[1]
        await answer(pi, paste, value=oauth.approve(url))
        response, rest = await pi.response_to("login")
        assert response["success"] is True
        assert [r["message"] for r in rest if r.get("method") == "notify"][-2].startswith("Logged in to OpenAI.")
    finally:
        await pi.kill()
    settings = json.loads((Path(env["HOME"]) / ".pi" / "agent" / "settings.json").read_text())
    assert parse_qs(urlsplit(url).query)["ext_agent_host_id"] == [f"urn:uuid:{settings['deviceId']}"]
    stored = auth_file(env)["openai"]
    assert stored["clientId"] in oauth.issued_clients and "chatgpt.tokens.use.direct" in stored["scopes"]
    assert stored["access"] not in b"\n".join(pi.raw_lines).decode()


@pytest.mark.slow
def test_outside_rpc_mode_login_is_text_for_the_model_as_in_pi(tmp_path: Path, fake_llm: FakeLLMServer):
    from tests.coding.cli.test_auth_cli import ours

    env = home(tmp_path, {"anthropic": {"type": "api_key", "key": "sk-ant-api-1"}}, fake_llm.url)
    fake_llm.add({"content": [{"type": "text", "text": "model saw it"}]})
    done = ours(env, "-p", "--no-session", "--model", MODEL, "/login")
    assert (done.returncode, done.stdout.strip()) == (0, "model saw it"), done.stderr
    assert "/login" in json.dumps(fake_llm.requests[0]["body"]["messages"])


@pytest.mark.slow
async def test_a_models_json_radius_gateway_signs_in_and_refreshes_at_its_own_gateway(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from tests.coding.cli.test_auth_cli import ours

    monkeypatch.delenv("PI_OAUTH_ORIGIN", raising=False)  # every request must go to the configured gateway
    with FakeOAuthServer() as gateway:
        env = home(tmp_path, {})
        (Path(env["HOME"]) / ".pi" / "agent" / "models.json").write_text(json.dumps({"providers": {"corp": {
            "name": "Corp Gateway", "baseUrl": f"{gateway.url}/v1", "oauth": "radius", "api": "pi-messages",
            "models": [{"id": "m1", "contextWindow": 1000, "maxTokens": 100}]}}}))
        pi = await RpcProcess.pi("--no-session", cwd=tmp_path, env=env)
        seen: list[dict[str, Any]] = []
        try:
            await pi.send({"id": "login", "type": "prompt", "message": "/login"})
            provider = await next_dialog(pi, seen)
            assert "Corp Gateway" in provider["options"] and "corp" not in provider["options"]
            await answer(pi, provider, value="Corp Gateway")
            method = await next_dialog(pi, seen)
            assert method["title"] == "Sign in to Corp Gateway:"
            await answer(pi, method, value="Sign in with device code (when signing in from another device)")
            await pi.read_until(lambda r: r.get("method") == "notify" and "ABCD-1234" in r["message"])
            gateway.approve_device()
            response, rest = await pi.response_to("login")
            assert response["success"] is True
            notes = [r["message"] for r in rest if r.get("method") == "notify"]
            assert notes[-2].startswith("Logged in to Corp Gateway.") and notes[-1] == (
                'Signed in, but no default model is configured for provider "corp". Choose a model with set_model.')
        finally:
            await pi.kill()
        assert [r["path"] for r in gateway.requests] == ["/v1/oauth/device", "/v1/oauth/token"]
        stored = auth_file(env)["corp"]
        path = Path(env["HOME"]) / ".pi" / "agent" / "auth.json"
        path.write_text(json.dumps({"corp": {**stored, "expires": int(time.time() * 1000) - 1}}, indent=2))
        printed = ours(env, "auth", "print-bearer-token", "--provider", "corp")
        assert printed.returncode == 0, printed.stderr
        assert gateway.grants("refresh_token") == [{"grant_type": "refresh_token", "client_id": "pi-gateway",
                                                    "refresh_token": stored["refresh"]}]
        assert printed.stdout.strip() == auth_file(env)["corp"]["access"] != stored["access"]


@pytest.mark.slow
async def test_login_with_no_model_selects_the_providers_default_for_the_next_prompt(
        tmp_path: Path, fake_llm: FakeLLMServer):
    """As pi after a sign-in while no model is chosen: the provider's default model is selected, so the
    next prompt uses the new key (ours left the model unset: "No API key found"). pi 1.6.0 sends
    ``/login`` over RPC to the model as text, so there is no side-by-side run of this flow."""
    env = home(tmp_path, {})
    agent = Path(env["HOME"]) / ".pi" / "agent"
    (agent / "models.json").write_text(json.dumps({"providers": {"groq": {"baseUrl": f"{fake_llm.url}/v1"}}}))
    fake_llm.add({"content": [{"type": "text", "text": "hello"}]})
    pi = await RpcProcess.pi("--no-session", cwd=tmp_path, env=env)
    seen: list[dict[str, Any]] = []
    try:
        await pi.send({"id": "login", "type": "prompt", "message": "/login groq"})
        await answer(pi, await next_dialog(pi, seen), value="gsk-secret")
        _, rest = await pi.response_to("login")
        assert [r["message"] for r in rest if r.get("method") == "notify"][-1] == "Selected openai/gpt-oss-120b"
        state = await pi.request({"type": "get_state"})
        assert (state["data"]["model"]["provider"], state["data"]["model"]["id"]) == ("groq", "openai/gpt-oss-120b")
        assert await prompt_text(pi, "hi", seen) == "hello"
        assert fake_llm.requests[0]["headers"]["authorization"] == "Bearer gsk-secret"
    finally:
        await pi.kill()
