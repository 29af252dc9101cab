"""Vertex AI (ADC bearer tokens, API keys, Vertex paths) and the ChatGPT Codex backend over real HTTP."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from pi_coding_agent.ai.apis import google_vertex
from pi_coding_agent.ai.auth.keys import AuthStorage
from pi_coding_agent.ai.models.catalog import builtin_models
from pi_coding_agent.ai.stream import StreamOptions, stream
from pi_coding_agent.ai.types import Model

USER = {"role": "user", "content": "hi", "timestamp": 0}
GCP_VARS = ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
            "GOOGLE_CLOUD_API_KEY")


@pytest.fixture(autouse=True)
def clean_gcp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in GCP_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    google_vertex._credentials.clear()


class _TokenHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        form = parse_qs(self.rfile.read(int(self.headers["content-length"])).decode())
        self.server.grants.append(form)  # type: ignore[attr-defined]
        data = json.dumps({"access_token": "ya29.vertex-token", "expires_in": 3600, "token_type": "Bearer"}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def token_server() -> Iterator[ThreadingHTTPServer]:
    """A fake OAuth token endpoint answering refresh-token grants."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _TokenHandler)
    server.grants = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _vertex(url: str) -> Model:
    catalog = next(m for m in builtin_models("google-vertex") if m["id"] == "gemini-2.5-flash")
    return {**catalog, "baseUrl": url}  # type: ignore[typeddict-item]


async def _result(model: Model, **opts: Any) -> Any:
    s = stream(model, {"messages": [USER]}, StreamOptions(**opts))
    async for _ in s:
        pass
    return await s.result()


@pytest.mark.slow
async def test_vertex_adc_refreshes_a_token_once_and_sends_it(fake_llm, token_server, monkeypatch, tmp_path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    adc = tmp_path / "service-account.json"
    adc.write_text(json.dumps({"type": "service_account", "project_id": "my-project", "private_key_id": "k1",
                               "private_key": pem, "client_email": "pi@my-project.iam.gserviceaccount.com",
                               "client_id": "1", "token_uri": f"http://127.0.0.1:{token_server.server_address[1]}/token"}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    auth = AuthStorage(tmp_path / "agent")
    assert auth.has_auth("google-vertex") and auth.api_key("google-vertex") == "<authenticated>"
    fake_llm.add({"content": [{"type": "text", "text": "vertex one"}]}, {"content": [{"type": "text", "text": "two"}]})
    model = _vertex(f"{fake_llm.url}/vertex")
    first = await _result(model, api_key="<authenticated>")
    second = await _result(model, api_key="<authenticated>")
    assert first["content"][0]["text"] == "vertex one", first.get("errorMessage")
    assert second["content"][0]["text"] == "two" and first["api"] == "google-vertex"
    grants = [g["grant_type"] for g in token_server.grants]
    assert grants == [["urn:ietf:params:oauth:grant-type:jwt-bearer"]]  # one token, cached until it expires
    for request in fake_llm.requests:
        assert request["path"] == "/vertex/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        assert request["headers"]["authorization"] == "Bearer ya29.vertex-token"
        assert "x-goog-api-key" not in request["headers"]


async def test_vertex_api_key_header(fake_llm) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "keyed"}]})
    msg = await _result(_vertex(f"{fake_llm.url}/v1beta1"), api_key="AIza-vertex")
    assert msg["content"][0]["text"] == "keyed", msg.get("errorMessage")
    request = fake_llm.requests[0]
    assert request["path"] == "/v1beta1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert request["headers"]["x-goog-api-key"] == "AIza-vertex"


def test_vertex_urls_follow_project_and_location(monkeypatch) -> None:
    model = next(m for m in builtin_models("google-vertex") if m["id"] == "gemini-2.5-pro")
    tail = "publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert google_vertex.request_url(model, "key") == f"https://aiplatform.googleapis.com/v1/{tail}"
    with pytest.raises(Exception, match="requires a project ID"):
        google_vertex.request_url(model, None)
    monkeypatch.setenv("GCLOUD_PROJECT", "p1")
    for location, host in (("europe-west4", "https://europe-west4-aiplatform.googleapis.com"),
                           ("global", "https://aiplatform.googleapis.com"),
                           ("eu", "https://aiplatform.eu.rep.googleapis.com")):
        monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", location)
        assert google_vertex.request_url(model, None) == f"{host}/v1/projects/p1/locations/{location}/{tail}"


def test_ambient_bedrock_credentials_count_as_configured(monkeypatch, tmp_path) -> None:
    for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_BEARER_TOKEN_BEDROCK",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    auth = AuthStorage(tmp_path / "agent")
    assert not auth.has_auth("amazon-bedrock")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKID")
    assert not auth.has_auth("amazon-bedrock")  # a key id alone is not a credential
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    assert auth.has_auth("amazon-bedrock") and auth.api_key("amazon-bedrock") == "<authenticated>"


def _jwt(claims: dict[str, Any]) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")
    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


async def test_codex_backend_request(fake_llm) -> None:
    token = _jwt({"https://api.openai.com/auth": {"chatgpt_account_id": "acct-42"}})
    catalog = builtin_models("openai-codex")[0]
    model: Model = {**catalog, "baseUrl": f"{fake_llm.url}/backend-api"}  # type: ignore[typeddict-item]
    fake_llm.add({"content": [{"type": "text", "text": "codex says hi"}]})
    msg = await _result(model, api_key=token, session_id="sess-9", thinking_level="low")
    assert msg["content"][0]["text"] == "codex says hi", msg.get("errorMessage")
    request = fake_llm.requests[0]
    headers = request["headers"]
    assert request["path"] == "/backend-api/codex/responses"
    assert headers["authorization"] == f"Bearer {token}" and headers["chatgpt-account-id"] == "acct-42"
    assert headers["openai-beta"] == "responses=experimental" and headers["originator"] == "pi"
    assert headers["session-id"] == "sess-9"
    body = request["body"]
    assert (body["store"], body["stream"], body["text"], body["tool_choice"], body["parallel_tool_calls"]) == (
        False, True, {"verbosity": "low"}, "auto", True)
    assert body["include"] == ["reasoning.encrypted_content"] and body["prompt_cache_key"] == "sess-9"
    assert body["reasoning"]["effort"] in ("low", catalog.get("thinkingLevelMap", {}).get("low"))
    assert body["max_output_tokens"] == catalog["maxTokens"]
    assert list(body)[-3:] == ["parallel_tool_calls", "max_output_tokens", "reasoning"]  # pi's order


async def test_codex_token_without_account_fails_without_echoing_it(fake_llm) -> None:
    model: Model = {**builtin_models("openai-codex")[0], "baseUrl": fake_llm.url}  # type: ignore[typeddict-item]
    msg = await _result(model, api_key="not-a-jwt-secret")
    assert msg["errorMessage"] == "Failed to extract accountId from token"
    assert fake_llm.requests == []


def _radius(url: str) -> Model:
    catalog = builtin_models("radius")[0]
    return {**catalog, "baseUrl": f"{url}/radius"}  # type: ignore[typeddict-item]


async def test_pi_messages_stream_round_trip(fake_llm) -> None:
    fake_llm.add({"content": [{"type": "thinking", "thinking": "hmm", "signature": "s1"},
                              {"type": "text", "text": "Listing."},
                              {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}],
                  "usage": {"input": 50, "output": 7}, "chunkSize": 3})
    msg = await _result(_radius(fake_llm.url), api_key="rad-key", session_id="s-1", thinking_level="high")
    request = fake_llm.requests[0]
    assert request["path"] == "/radius/messages" and request["headers"]["authorization"] == "Bearer rad-key"
    body = request["body"]
    assert body["model"] == builtin_models("radius")[0]["id"]
    assert body["context"]["messages"][0]["content"] == "hi"
    assert body["options"] == {"reasoning": "high", "sessionId": "s-1"}
    assert msg["content"][0] == {"type": "thinking", "thinking": "hmm", "thinkingSignature": "s1"}
    assert msg["content"][2]["arguments"] == {"command": "ls"}
    assert msg["stopReason"] == "toolUse" and msg["usage"]["input"] == 50 and msg["responseId"] == "pim_1"


async def test_pi_messages_bad_index_and_terminal_error(fake_llm) -> None:
    fake_llm.add({"content": [{"type": "text", "text": "x"}], "badIndex": True},
                 {"content": [{"type": "text", "text": "partial"}], "streamError": "upstream overloaded"},
                 {"status": 429})
    first = await _result(_radius(fake_llm.url), api_key="k")
    assert first["errorMessage"] == "Invalid contentIndex 5 in pi-messages text_delta event"
    second = await _result(_radius(fake_llm.url), api_key="k")
    assert second["errorMessage"] == "upstream overloaded" and second["content"][0]["text"] == "partial"
    third = await _result(_radius(fake_llm.url), api_key="k")
    assert third["errorMessage"] == "429: rate limited (rate_limit)"


async def test_codex_usage_limit_is_named_like_pi(fake_llm) -> None:
    token = _jwt({"https://api.openai.com/auth": {"chatgpt_account_id": "acct-1"}})
    model: Model = {**builtin_models("openai-codex")[0], "baseUrl": fake_llm.url}  # type: ignore[typeddict-item]
    fake_llm.add({"status": 429, "body": {"error": {"type": "usage_limit_reached", "plan_type": "PLUS",
                                                    "message": "The usage limit has been reached"}}},
                 {"status": 400, "body": {"error": {"message": "Unsupported parameter: foo"}}})
    first = await _result(model, api_key=token)
    assert first["errorMessage"] == "You have hit your ChatGPT usage limit (plus plan)."
    second = await _result(model, api_key=token)
    assert second["errorMessage"] == "Unsupported parameter: foo" and token not in second["errorMessage"]
