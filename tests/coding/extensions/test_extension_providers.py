"""Issue 12, providers that extensions register: a subscription sign-in (``oauth``: ``/login``,
auth.json, refresh before a request, ``modify_models``), bad registrations, registering again. Each
shipped example runs in the real ``pi --mode rpc`` process against fake servers on 127.0.0.1 (LLM,
OAuth), and, where pi shows the same behaviour from outside, beside its TypeScript twin on the
reference pi 1.6.0. Model lists and stream events: ``test_extension_provider_models.py``."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.coding.extensions.test_extensions_fidelity import notes, play_example
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.fakes.oauth_server import FakeOAuthServer
from tests.support.rpc_compare import Conversation, Played, Workspace, is_settled, needs_reference
from tests.support.run_once import ours_once, shared_run

SUBSCRIPTION_TS = """
export default function (pi) {
  const SSO = process.env.CORP_SSO_URL;
  async function tokens(form) {
    const response = await fetch(`${SSO}/v1/oauth/token`, { method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(form).toString() });
    if (!response.ok) throw new Error(`token request failed: ${response.status}`);
    const body = await response.json();
    const credential = { refresh: body.refresh_token, access: body.access_token,
                         expires: Date.now() + body.expires_in * 1000 - 60000 };
    return body.tier === undefined ? credential : { ...credential, tier: body.tier };
  }
  pi.registerProvider("corp-ai", {
    name: "Corp AI", baseUrl: process.env.CORP_AI_URL, api: "openai-completions",
    models: [{ id: "corp-model", name: "Corp model", reasoning: false, input: ["text"],
               cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 64000, maxTokens: 4096 },
             { id: "corp-max", name: "Corp max", reasoning: false, input: ["text"],
               cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 200000, maxTokens: 16384 }],
    oauth: {
      name: "Corp AI (SSO)",
      async login() { throw new Error("signed in beforehand"); },
      async refreshToken(credentials) {
        return tokens({ grant_type: "refresh_token", client_id: "pi-corp", refresh_token: credentials.refresh });
      },
      getApiKey(credentials) { return credentials.access; },
      modifyModels(models, credentials) {
        return models.filter((m) => credentials.tier === "max" || !m.id.endsWith("-max"));
      },
    },
  });
}
"""
CORP_ARGS = ("--provider", "corp-ai", "--model", "corp-model")
ANSWER = [{"content": [{"type": "text", "text": "from corp"}]}]


pytestmark = shared_run("extension-providers")  # tests of ours alone and comparisons read the same runs


def _corp_env(sso: FakeOAuthServer) -> Any:
    return lambda url: {"CORP_AI_URL": f"{url}/v1", "CORP_SSO_URL": sso.url}


def _auth(played: Played) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((played.workspace.agent_dir / "auth.json").read_text())
    return data


@asynccontextmanager
async def inline_extension(root: Path, source: str) -> AsyncIterator[Conversation]:
    """Our ``pi --mode rpc`` with the Python extension ``source`` and a fake LLM; killed on the way out."""
    extension = root / "extension.py"
    extension.write_text(source)
    with FakeLLMServer() as server:
        workspace = Workspace.create(root / "side", server.url)
        conv = Conversation(await workspace.spawn("ours", "--no-session", "-e", str(extension)), server, workspace)
        try:
            yield conv
        finally:
            await conv.proc.kill()


async def next_dialog(conv: Conversation) -> dict[str, Any]:
    records = await conv.read_until(lambda r: r["type"] == "extension_ui_request" and r["method"] != "notify")
    return records[-1]


async def _sign_in_and_prompt(conv: Conversation, sso: FakeOAuthServer) -> None:
    login = await conv.send({"type": "prompt", "message": "/login"})
    menu = await next_dialog(conv)
    conv.records.append({"type": "menu", "options": menu["options"]})
    await conv.proc.send({"type": "extension_ui_response", "id": menu["id"], "value": "Corp AI (SSO)"})
    code = await next_dialog(conv)
    url = next(n for n in notes(conv.records) if n.startswith("Open this URL")).splitlines()[1]
    redirect = sso.approve(url)  # the user signs in at the SSO page, which shows the code
    await conv.proc.send({"type": "extension_ui_response", "id": code["id"],
                          "value": redirect.split("code=")[1].split("&")[0]})
    await conv.response(login)
    await conv.request({"type": "set_model", "provider": "corp-ai", "modelId": "corp-model"})
    await conv.prompt("hello corp")


@pytest.mark.slow
async def test_sign_in_of_an_extension_provider_over_rpc(tmp_path: Path) -> None:
    with FakeOAuthServer() as sso:
        played = await play_example("ours", "subscription_provider.py", "", lambda c: _sign_in_and_prompt(c, sso),
                                    tmp_path, script=ANSWER, env_of=_corp_env(sso))
    menu = next(r["options"] for r in played.records if r["type"] == "menu")
    assert "Corp AI (SSO)" in menu and "corp-ai" not in menu  # listed by its sign-in's name, with the others
    said = notes(played.records)
    assert said[0].splitlines()[2] == "Sign in, then paste the code shown."
    assert "Exchanging the code for tokens..." in said
    assert any(n.startswith("Logged in to Corp AI. Credentials saved to ") for n in said)
    stored = _auth(played)["corp-ai"]
    assert list(stored) == ["refresh", "access", "expires", "type"] and stored["type"] == "oauth"
    assert stored["expires"] > time.time() * 1000
    request = played.requests[0]
    assert request["path"] == "/v1/chat/completions" and request["body"]["model"] == "corp-model"
    assert request["headers"]["authorization"] == f"Bearer {stored['access']}"
    assert sso.grants("authorization_code")[0]["client_id"] == "pi-corp"
    shown = json.dumps(played.records)
    assert stored["access"] not in shown and stored["refresh"] not in shown


def _expiring(sso: FakeOAuthServer, left_ms: int) -> Any:
    def prepare(workspace: Workspace) -> None:
        (workspace.agent_dir / "auth.json").write_text(json.dumps({"corp-ai": {
            "type": "oauth", "refresh": sso.issue_refresh(), "access": "expired-access",
            "expires": int(time.time() * 1000) + left_ms}}))
    return prepare


async def _one_prompt(conv: Conversation) -> None:
    await conv.prompt("hello corp")


async def _refresh_outcome(kind: str, root: Path, left_ms: int) -> dict[str, Any]:
    """Start with a stored credential that has ``left_ms`` left, prompt once: what was sent and stored."""
    with FakeOAuthServer() as sso:
        played = await play_example(kind, "subscription_provider.py", SUBSCRIPTION_TS, _one_prompt, root / kind,
                                    CORP_ARGS, ANSWER, _corp_env(sso), _expiring(sso, left_ms))
        grants = sso.grants("refresh_token")
    stored = _auth(played)["corp-ai"]
    sent = played.requests[0]["headers"]["authorization"]
    return {"keys": list(stored), "refreshed": len(grants), "sentStored": sent == f"Bearer {stored['access']}",
            "sentOld": sent == "Bearer expired-access", "answer": [r["message"]["content"] for r in played.records
                                                                    if r["type"] == "message_end"][-1]}


@pytest.mark.parametrize("left_ms", [-1000, 2 * 60_000, 60 * 60_000])
@pytest.mark.slow
async def test_stored_credential_is_refreshed_before_a_request(left_ms: int, tmp_path: Path) -> None:
    outcome = await ours_once(_refresh_outcome, tmp_path, left_ms)
    due = left_ms < 5 * 60_000  # less than five minutes left
    assert outcome["refreshed"] == (1 if due else 0)
    assert outcome["sentStored"] and outcome["sentOld"] is not due
    assert outcome["keys"] == (["refresh", "access", "expires", "type"] if due else
                               ["type", "refresh", "access", "expires"])


@needs_reference
@pytest.mark.parametrize("left_ms", [-1000, 2 * 60_000, 60 * 60_000])
async def test_refresh_matches_reference(left_ms: int, tmp_path: Path) -> None:
    assert await ours_once(_refresh_outcome, tmp_path, left_ms) == await _refresh_outcome("reference", tmp_path, left_ms)


async def _listed(conv: Conversation) -> None:
    listed = await conv.request({"type": "get_available_models"})
    conv.records.append({"type": "listed", "models": sorted(m["id"] for m in listed["data"]["models"]
                                                            if m["provider"] == "corp-ai")})


async def _tier_listing(kind: str, root: Path, tier: str | None) -> list[str]:
    """The corp-ai models offered to a stored (fresh) credential of ``tier``."""
    def prepare(workspace: Workspace) -> None:
        credential = {"type": "oauth", "refresh": "r", "access": "a", "expires": int(time.time() * 1000) + 3_600_000}
        (workspace.agent_dir / "auth.json").write_text(json.dumps({"corp-ai": {**credential, "tier": tier}
                                                                   if tier else credential}))

    with FakeOAuthServer() as sso:
        played = await play_example(kind, "subscription_provider.py", SUBSCRIPTION_TS, _listed, root / kind,
                                    env_of=_corp_env(sso), prepare=prepare)
    return next(r["models"] for r in played.records if r["type"] == "listed")


@pytest.mark.parametrize(("tier", "expected"), [(None, ["corp-model"]), ("max", ["corp-max", "corp-model"])])
@pytest.mark.slow
async def test_modify_models_shapes_what_a_credential_sees(tier: str | None, expected: list[str],
                                                           tmp_path: Path) -> None:
    assert await ours_once(_tier_listing, tmp_path, tier) == expected


@needs_reference
@pytest.mark.parametrize("tier", [None, "max"])
async def test_modify_models_matches_reference(tier: str | None, tmp_path: Path) -> None:
    assert await ours_once(_tier_listing, tmp_path, tier) == await _tier_listing("reference", tmp_path, tier)


async def _prompted(conv: Conversation) -> None:
    conv.records.append({"type": "answer", "response": await conv.request({"type": "prompt", "message": "hi"})})
    await conv.read_until(is_settled)


async def _failing_refresh(kind: str, root: Path) -> tuple[Played, dict[str, Any], dict[str, Any]]:
    """A prompt whose due credential the SSO no longer refreshes: the prompt's answer, the run's last message."""
    with FakeOAuthServer() as sso:
        def revoked(workspace: Workspace) -> None:
            _expiring(sso, -1000)(workspace)
            sso.live_refresh.clear()  # the SSO no longer knows the refresh token

        played = await play_example(kind, "subscription_provider.py", SUBSCRIPTION_TS, _prompted, root / kind,
                                    CORP_ARGS, ANSWER, _corp_env(sso), revoked)
    response = next(r["response"] for r in played.records if r["type"] == "answer")
    last = next(r for r in played.records if r["type"] == "agent_end")["messages"][-1]
    return played, response, last


@pytest.mark.slow
async def test_a_failing_refresh_ends_the_run_with_the_error_and_keeps_the_credential(tmp_path: Path) -> None:
    """As for a built-in subscription: the prompt starts, no request reaches the model, and the run
    ends with the refresh error as the assistant message; auth.json keeps the credential."""
    played, response, last = await ours_once(_failing_refresh, tmp_path)
    assert response["success"] is True
    assert last["role"] == "assistant" and last["stopReason"] == "error"
    assert last["errorMessage"] == "OAuth refresh failed for corp-ai: HTTP Error 400: Bad Request"
    assert played.requests == [] and _auth(played)["corp-ai"]["access"] == "expired-access"


@needs_reference
async def test_a_failing_refresh_matches_reference(tmp_path: Path) -> None:
    ours, reference = await ours_once(_failing_refresh, tmp_path), await _failing_refresh("reference", tmp_path)
    for (played, response, last) in (ours, reference):
        assert response["success"] is True and last["stopReason"] == "error" and played.requests == []
    kept = [_auth(played)["corp-ai"] for played, _, _ in (ours, reference)]
    assert [credential["access"] for credential in kept] == ["expired-access", "expired-access"]
    assert kept[0].keys() == kept[1].keys()


BAD_INPUT = """
import json

from pi_coding_agent.coding.extensions.providers import Provider

async def boom(callbacks):
    raise RuntimeError("the SSO is down")

async def garbage(callbacks):
    return {"access": "only-an-access-token"}

async def refresh(credentials, signal):
    return credentials

async def fine(callbacks):
    return {"access": "a", "refresh": "r", "expires": 4102444800000}

def no_key(credentials):
    raise KeyError("key")

def setup(pi):
    base = {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
            "models": [{"id": "m", "contextWindow": 8000, "maxTokens": 1000}]}
    pi.register_provider("down", base, oauth={"name": "Down SSO", "login": boom, "refresh_token": refresh,
                                              "get_api_key": lambda c: c["access"]})
    pi.register_provider("odd", base, oauth={"name": "Odd SSO", "login": garbage, "refresh_token": refresh,
                                             "get_api_key": lambda c: c["access"]})
    pi.register_provider("nokey", base, oauth={"name": "No key", "login": fine, "refresh_token": refresh,
                                               "get_api_key": no_key})

    def bad(args, ctx):
        attempts = {
            "no functions": lambda: pi.register_provider("x", base, oauth={"name": "X"}),
            "unknown field": lambda: pi.register_provider("x", base, oauth={"name": "X", "login": boom,
                "refresh_token": refresh, "get_api_key": str, "scopes": []}),
            "no baseUrl": lambda: pi.register_provider("x", {"api": "openai-completions"}, oauth={
                "name": "X", "login": boom, "refresh_token": refresh, "get_api_key": str}),
            "stream without api": lambda: pi.register_provider("x", {"baseUrl": "http://h"}, stream=boom),
            "no config": lambda: pi.register_provider("x"),
            "empty id": lambda: pi.register_provider(Provider(id=" ")),
            "object and config": lambda: pi.register_provider(Provider(id="y"), {}),
        }
        found = {}
        for name, attempt in attempts.items():
            try:
                attempt()
                found[name] = "accepted"
            except (TypeError, ValueError) as exc:
                found[name] = f"{type(exc).__name__}: {exc}"
        ctx.ui.notify(json.dumps(found), "info")

    pi.register_command("bad", handler=bad)
"""


@pytest.mark.slow
async def test_bad_registrations_and_failing_sign_ins(tmp_path: Path) -> None:
    """Ours: a registration that could not work raises at once and changes nothing; a raising or
    malformed login fails the sign-in with a message and stores nothing."""
    async with inline_extension(tmp_path, BAD_INPUT) as conv:
        await conv.request({"type": "prompt", "message": "/bad"})
        await conv.request({"type": "prompt", "message": "/login down"})
        await conv.request({"type": "prompt", "message": "/login odd"})
        listed = await conv.request({"type": "get_available_models"})
        await conv.request({"type": "prompt", "message": "/login nokey"})
        await conv.request({"type": "set_model", "provider": "nokey", "modelId": "m"})
        refused = await conv.request({"type": "prompt", "message": "hi"})
    stderr = await conv.proc.stderr_text()
    found = json.loads(notes(conv.records)[0])
    assert found["no functions"].startswith("ValueError: oauth: ")
    assert found["unknown field"].startswith("ValueError: oauth must be a ProviderOAuth or a dict of ")
    assert found["no baseUrl"] == 'ValueError: Provider x: "baseUrl" is required when "oauth" is set.'
    assert found["stream without api"] == 'ValueError: Provider x: a custom stream needs the provider\'s "api"'
    assert found["no config"] == "TypeError: register_provider(name, config) needs the provider's config"
    assert found["empty id"] == "ValueError: Provider id must not be empty."
    assert found["object and config"] == "TypeError: register_provider(Provider) takes no other arguments"
    assert notes(conv.records)[1:3] == [
        "Failed to log in to Down SSO: the SSO is down",
        "Failed to log in to Odd SSO: login must return a dict with access, refresh and expires"]
    assert list(json.loads((conv.workspace.agent_dir / "auth.json").read_text())) == ["nokey"]
    assert refused["success"] is False and "nokey" in refused["error"] and conv.server.requests == []
    assert "Extension provider nokey: get_api_key failed: KeyError" in stderr
    assert {m["provider"] for m in listed["data"]["models"]} == {"fake"}  # no x, and no sign-in: nothing available


MERGE_PY = """
import os

def setup(pi):
    pi.register_provider("merged", {"baseUrl": os.environ["MERGED_URL"], "apiKey": "merged-key",
                                    "api": "openai-completions",
                                    "models": [{"id": "m1", "contextWindow": 8000, "maxTokens": 1000}]})
    pi.register_command("again", handler=lambda args, ctx: pi.register_provider(
        "merged", {"headers": {"x-second": "yes"}}))
"""
MERGE_TS = """
export default function (pi) {
  pi.registerProvider("merged", { baseUrl: process.env.MERGED_URL, apiKey: "merged-key", api: "openai-completions",
    models: [{ id: "m1", name: "m1", reasoning: false, input: ["text"],
               cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 8000, maxTokens: 1000 }] });
  pi.registerCommand("again", { handler: async () => { pi.registerProvider("merged", { headers: { "x-second": "yes" } }); } });
}
"""


async def _merge(conv: Conversation) -> None:
    await conv.request({"type": "prompt", "message": "/again"})
    listed = await conv.request({"type": "get_available_models"})
    conv.records.append({"type": "listed", "models": sorted(m["id"] for m in listed["data"]["models"]
                                                            if m["provider"] == "merged")})
    await conv.prompt("hi")


async def _merge_outcome(kind: str, root: Path) -> dict[str, Any]:
    extension = root / "merged.py"
    root.mkdir(parents=True, exist_ok=True)
    extension.write_text(MERGE_PY)
    played = await play_example(kind, str(extension), MERGE_TS, _merge, root / kind, ("--provider", "merged",
                                "--model", "m1"), ANSWER, env_of=lambda url: {"MERGED_URL": f"{url}/v1"})
    headers = played.requests[0]["headers"]
    return {"listed": next(r["models"] for r in played.records if r["type"] == "listed"),
            "sent": (headers.get("x-second"), headers.get("authorization"), played.requests[0]["body"]["model"])}


@pytest.mark.slow
async def test_registering_again_by_name_merges(tmp_path: Path) -> None:
    """pi merges a second ``register_provider(name, config)`` over the first: what it leaves out stays."""
    assert await ours_once(_merge_outcome, tmp_path) == {"listed": ["m1"], "sent": ("yes", "Bearer merged-key", "m1")}


@needs_reference
async def test_registering_again_matches_reference(tmp_path: Path) -> None:
    assert await ours_once(_merge_outcome, tmp_path / "ours") == await _merge_outcome("reference", tmp_path / "reference")
