"""Issue 12, providers that extensions register: a subscription sign-in (``oauth``), a live model list
(``refresh_models``), the ``Provider`` object (``filter_models``) and ``provider_stream_event`` on
Bedrock's binary stream. Each shipped example runs in the real ``pi --mode rpc`` process against fake
servers on 127.0.0.1 (LLM, OAuth, a llama.cpp-style catalog), and, where pi shows the same behaviour
from outside, beside its TypeScript twin on the reference pi 1.6.0."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import textwrap
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.llama_server import FakeLlamaRouter
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.oauth_server import FakeOAuthServer
from tests.rpc_compare import Conversation, Played, Workspace, needs_reference
from tests.test_extensions_fidelity import EXAMPLES, notes, play_example

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


async def _dialog(conv: Conversation) -> dict[str, Any]:
    records = await conv.read_until(lambda r: r["type"] == "extension_ui_request" and r["method"] != "notify")
    return records[-1]


async def _sign_in_and_prompt(conv: Conversation, sso: FakeOAuthServer) -> None:
    login = await conv.send({"type": "prompt", "message": "/login"})
    menu = await _dialog(conv)
    conv.records.append({"type": "menu", "options": menu["options"]})
    await conv.proc.send({"type": "extension_ui_response", "id": menu["id"], "value": "Corp AI (SSO)"})
    code = await _dialog(conv)
    url = next(n for n in notes(conv.records) if n.startswith("Open this URL")).splitlines()[1]
    redirect = sso.approve(url)  # the user signs in at the SSO page, which shows the code
    await conv.proc.send({"type": "extension_ui_response", "id": code["id"],
                          "value": redirect.split("code=")[1].split("&")[0]})
    await conv.response(login)
    await conv.request({"type": "set_model", "provider": "corp-ai", "modelId": "corp-model"})
    await conv.prompt("hello corp")


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
async def test_stored_credential_is_refreshed_before_a_request(left_ms: int, tmp_path: Path) -> None:
    outcome = await _refresh_outcome("ours", tmp_path, left_ms)
    due = left_ms < 5 * 60_000  # less than five minutes left
    assert outcome["refreshed"] == (1 if due else 0)
    assert outcome["sentStored"] and outcome["sentOld"] is not due
    assert outcome["keys"] == (["refresh", "access", "expires", "type"] if due else
                               ["type", "refresh", "access", "expires"])


@needs_reference
@pytest.mark.parametrize("left_ms", [-1000, 2 * 60_000, 60 * 60_000])
async def test_refresh_matches_reference(left_ms: int, tmp_path: Path) -> None:
    assert await _refresh_outcome("ours", tmp_path, left_ms) == await _refresh_outcome("reference", tmp_path, left_ms)


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
async def test_modify_models_shapes_what_a_credential_sees(tier: str | None, expected: list[str],
                                                           tmp_path: Path) -> None:
    assert await _tier_listing("ours", tmp_path, tier) == expected


@needs_reference
@pytest.mark.parametrize("tier", [None, "max"])
async def test_modify_models_matches_reference(tier: str | None, tmp_path: Path) -> None:
    assert await _tier_listing("ours", tmp_path, tier) == await _tier_listing("reference", tmp_path, tier)


async def _refused_prompt(conv: Conversation) -> None:
    conv.records.append({"type": "answer", "response": await conv.request({"type": "prompt", "message": "hi"})})


async def test_a_failing_refresh_fails_the_prompt_and_keeps_the_credential(tmp_path: Path) -> None:
    """Ours only: the prompt is refused with the refresh error, as for a built-in subscription (pi
    starts the run and ends it with that error as the assistant message)."""
    with FakeOAuthServer() as sso:
        def revoked(workspace: Workspace) -> None:
            _expiring(sso, -1000)(workspace)
            sso.live_refresh.clear()  # the SSO no longer knows the refresh token

        played = await play_example("ours", "subscription_provider.py", "", _refused_prompt, tmp_path, CORP_ARGS,
                                    ANSWER, _corp_env(sso), revoked)
    response = next(r["response"] for r in played.records if r["type"] == "answer")
    assert response["success"] is False
    assert response["error"] == "OAuth refresh failed for corp-ai: HTTP Error 400: Bad Request"
    assert played.requests == [] and _auth(played)["corp-ai"]["access"] == "expired-access"


BAD_INPUT = """
import json

from pi_coding_agent.coding.extensions.providers import Provider

async def boom(callbacks):
    raise RuntimeError("the SSO is down")

async def garbage(callbacks):
    return {"access": "only-an-access-token"}

async def refresh(credentials, signal):
    return credentials

def setup(pi):
    base = {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
            "models": [{"id": "m", "contextWindow": 8000, "maxTokens": 1000}]}
    pi.register_provider("down", base, oauth={"name": "Down SSO", "login": boom, "refresh_token": refresh,
                                              "get_api_key": lambda c: c["access"]})
    pi.register_provider("odd", base, oauth={"name": "Odd SSO", "login": garbage, "refresh_token": refresh,
                                             "get_api_key": lambda c: c["access"]})

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


async def test_bad_registrations_and_failing_sign_ins(tmp_path: Path) -> None:
    """Ours: a registration that could not work raises at once and changes nothing; a raising or
    malformed login fails the sign-in with a message and stores nothing."""
    async with inline_extension(tmp_path, BAD_INPUT) as conv:
        await conv.request({"type": "prompt", "message": "/bad"})
        await conv.request({"type": "prompt", "message": "/login down"})
        await conv.request({"type": "prompt", "message": "/login odd"})
        listed = await conv.request({"type": "get_available_models"})
    found = json.loads(notes(conv.records)[0])
    assert found["no functions"].startswith("ValueError: oauth: ")
    assert found["unknown field"].startswith("ValueError: oauth must be a ProviderOAuth or a dict of ")
    assert found["no baseUrl"] == 'ValueError: Provider x: "baseUrl" is required when "oauth" is set.'
    assert found["stream without api"] == 'ValueError: Provider x: a custom stream needs the provider\'s "api"'
    assert found["no config"] == "TypeError: register_provider(name, config) needs the provider's config"
    assert found["empty id"] == "ValueError: Provider id must not be empty."
    assert found["object and config"] == "TypeError: register_provider(Provider) takes no other arguments"
    assert notes(conv.records)[1:] == [
        "Failed to log in to Down SSO: the SSO is down",
        "Failed to log in to Odd SSO: login must return a dict with access, refresh and expires"]
    assert json.loads((conv.workspace.agent_dir / "auth.json").read_text()) == {}
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


async def test_registering_again_by_name_merges(tmp_path: Path) -> None:
    """pi merges a second ``register_provider(name, config)`` over the first: what it leaves out stays."""
    assert await _merge_outcome("ours", tmp_path) == {"listed": ["m1"], "sent": ("yes", "Bearer merged-key", "m1")}


@needs_reference
async def test_registering_again_matches_reference(tmp_path: Path) -> None:
    assert await _merge_outcome("ours", tmp_path / "ours") == await _merge_outcome("reference", tmp_path / "reference")


# --------------------------------------------------------------------------- refresh_models

LIVE_TS = """
export default function (pi) {
  const SERVER = process.env.TEAM_LLM_URL;
  pi.registerProvider("team-llm", {
    baseUrl: `${SERVER}/v1`, apiKey: "$TEAM_LLM_KEY", api: "openai-completions", models: [],
    async refreshModels(context) {
      const key = context.credential?.key ?? process.env.TEAM_LLM_KEY ?? "";
      const response = await fetch(`${SERVER}/models`, { headers: { authorization: `Bearer ${key}` }, signal: context.signal });
      const { data } = await response.json();
      return data.filter((entry) => entry.status?.value === "loaded").map((entry) => ({
        id: entry.id, name: entry.id, reasoning: false, input: ["text"],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 32000, maxTokens: 4096 }));
    },
  });
}
"""
CATALOG = {"alpha": {"status": {"value": "loaded"}}, "beta": {"status": {"value": "loaded"}},
           "gamma": {"status": {"value": "unloaded"}}}


def _team_env(router: FakeLlamaRouter) -> Any:
    return lambda _url: {"TEAM_LLM_URL": router.url, "TEAM_LLM_KEY": "team-key"}


async def _live(conv: Conversation) -> None:
    listed = await conv.request({"type": "get_available_models"})
    conv.records.append({"type": "listed", "models": sorted(f"{m['provider']}/{m['id']}"
                                                            for m in listed["data"]["models"])})
    await conv.prompt("hello team")


async def _live_outcome(kind: str, root: Path) -> dict[str, Any]:
    with FakeLlamaRouter(dict(CATALOG), api_key="team-key") as router:
        played = await play_example(kind, "live_catalog.py", LIVE_TS, _live, root, ("--provider", "team-llm",
                                    "--model", "beta"), env_of=_team_env(router))
        chats = [r for r in router.requests if r["path"] == "/v1/chat/completions"]
    end = [r["message"] for r in played.records if r["type"] == "message_end"][-1]
    return {"listed": next(r["models"] for r in played.records if r["type"] == "listed"),
            "model": (end["provider"], end["model"]), "text": end["content"][0]["text"],
            "chat": [(c["body"]["model"], c["authorization"]) for c in chats]}


async def test_refresh_models_lists_the_server_models(tmp_path: Path) -> None:
    outcome = await _live_outcome("ours", tmp_path)
    assert outcome == {"listed": ["fake/fake-model", "team-llm/alpha", "team-llm/beta"],
                       "model": ("team-llm", "beta"), "text": "from llama",
                       "chat": [("beta", "Bearer team-key")]}


@needs_reference
async def test_refresh_models_matches_reference(tmp_path: Path) -> None:
    assert await _live_outcome("ours", tmp_path / "ours") == await _live_outcome("reference", tmp_path / "reference")


def _list_models(kind: str, root: Path, example: str, ts: str, env: dict[str, str], term: str,
                 auth: dict[str, Any] | None = None) -> list[str]:
    """``pi --list-models <term>`` with the example (ours) or its twin (reference), ``auth`` in auth.json."""
    from tests.reference_pi import REFERENCE_NODE_BIN, REFERENCE_PI
    from tests.rpc_helpers import PYTHON

    workspace = Workspace.create(root / kind, "http://127.0.0.1:9")
    if auth is not None:
        (workspace.agent_dir / "auth.json").write_text(json.dumps(auth))
    path = EXAMPLES / example
    if kind != "ours":
        path = root / kind / "ext.ts"
        path.write_text(textwrap.dedent(ts))
    argv = [PYTHON, "-m", "pi_coding_agent"] if kind == "ours" else [str(REFERENCE_PI)]
    done = subprocess.run([*argv, "--list-models", term, "-e", str(path)], cwd=workspace.cwd, capture_output=True,
                          env={**workspace.env, **env, "PATH": f"{REFERENCE_NODE_BIN}:{os.environ.get('PATH', '')}"},
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [" ".join(line.split()) for line in done.stdout.splitlines()]


def test_list_models_shows_refreshed_models(tmp_path: Path) -> None:
    with FakeLlamaRouter(dict(CATALOG), api_key="team-key") as router:
        rows = _list_models("ours", tmp_path, "live_catalog.py", LIVE_TS, _team_env(router)(""), "team")
    assert rows == ["provider model context max-out thinking images", "team-llm alpha 32K 4.1K no no",
                    "team-llm beta 32K 4.1K no no"]


@needs_reference
def test_list_models_with_refresh_matches_reference(tmp_path: Path) -> None:
    with FakeLlamaRouter(dict(CATALOG), api_key="team-key") as router:
        env = _team_env(router)("")
        sides = [_list_models(kind, tmp_path, "live_catalog.py", LIVE_TS, env, "team") for kind in ("ours", "reference")]
    assert sides[0] == sides[1]


PHASES = """
import json

calls = []

def refresher(name):
    async def refresh(context):
        calls.append({"provider": name, "network": context.allow_network,
                      "credential": (context.credential or {}).get("type"), "baseUrl": context.base_url})
        if name == "later" and len([c for c in calls if c["provider"] == "later"]) == 2:
            raise RuntimeError("catalog unreachable")
        return [{"id": f"{name}-model", "contextWindow": 8000, "maxTokens": 1000}]
    return refresh

def provider(name):
    return {"baseUrl": f"http://127.0.0.1:9/{name}", "apiKey": "k", "api": "openai-completions"}

def setup(pi):
    pi.register_provider("early", provider("early"), refresh_models=refresher("early"))
    pi.register_command("later", handler=lambda args, ctx: pi.register_provider(
        "later", provider("later"), refresh_models=refresher("later")))
    pi.register_command("calls", handler=lambda args, ctx: ctx.ui.notify(json.dumps(calls), "info"))
"""


async def _calls(conv: Conversation, provider: str, count: int) -> list[dict[str, Any]]:
    """The calls the extension recorded, once ``provider`` has had ``count`` of them."""
    for _ in range(100):
        await conv.request({"type": "prompt", "message": "/calls"})
        calls: list[dict[str, Any]] = json.loads(notes(conv.records)[-1])
        if len([c for c in calls if c["provider"] == provider]) >= count:
            return calls
        await asyncio.sleep(0.05)
    raise AssertionError(f"{provider} was not refreshed {count} times: {calls}")


async def test_refresh_models_phases_and_failures(tmp_path: Path) -> None:
    """Ours: at start-up without network, then in RPC mode in the background with the resolved key; a
    provider registered later at once; a raising refresh is named on stderr and the session goes on."""
    async with inline_extension(tmp_path, PHASES) as conv:
        early = [c for c in await _calls(conv, "early", 2) if c["provider"] == "early"]
        await conv.request({"type": "prompt", "message": "/later"})
        later = [c for c in await _calls(conv, "later", 1) if c["provider"] == "later"]
        listed = await conv.request({"type": "get_available_models"})
        await conv.request({"type": "prompt", "message": "/later"})  # registered again: refreshed again
        await _calls(conv, "later", 2)
        alive = await conv.request({"type": "get_state"})
    stderr = await conv.proc.stderr_text()
    assert early == [{"provider": "early", "network": False, "credential": None, "baseUrl": "http://127.0.0.1:9/early"},
                     {"provider": "early", "network": True, "credential": "api_key",
                      "baseUrl": "http://127.0.0.1:9/early"}]
    assert later == [{"provider": "later", "network": False, "credential": None, "baseUrl": "http://127.0.0.1:9/later"}]
    assert sorted(m["id"] for m in listed["data"]["models"] if m["provider"] in ("early", "later")) == [
        "early-model", "later-model"]
    assert "Extension provider later: model refresh failed: catalog unreachable" in stderr
    assert alive["success"] is True


PER_ACCOUNT = """
async def login(callbacks):
    account = await callbacks.on_prompt({"message": "Account:"})
    return {"refresh": "r", "access": f"token-of-{account}", "expires": 4102444800000}

async def refresh_token(credentials, signal):
    return credentials

async def refresh_models(context):
    credential = context.credential or {}
    if not context.allow_network or credential.get("type") != "oauth":
        return None
    return [{"id": credential["access"].removeprefix("token-of-") + "-model", "contextWindow": 8000, "maxTokens": 100}]

def setup(pi):
    pi.register_provider("accounts", {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "models": []},
                         oauth={"name": "Accounts", "login": login, "refresh_token": refresh_token,
                                "get_api_key": lambda c: c["access"]}, refresh_models=refresh_models)
"""


async def test_sign_in_refreshes_the_catalog(tmp_path: Path) -> None:
    """Ours, as pi's ``/login``: once signed in, the provider's models are refreshed with the new credential."""
    async with inline_extension(tmp_path, PER_ACCOUNT) as conv:
        before = await conv.request({"type": "get_available_models"})
        login = await conv.send({"type": "prompt", "message": "/login accounts"})
        account = await _dialog(conv)
        await conv.proc.send({"type": "extension_ui_response", "id": account["id"], "value": "ada"})
        await conv.response(login)
        for _ in range(100):
            listed = await conv.request({"type": "get_available_models"})
            ids = [m["id"] for m in listed["data"]["models"] if m["provider"] == "accounts"]
            if ids:
                break
            await asyncio.sleep(0.05)
    assert [m for m in before["data"]["models"] if m["provider"] == "accounts"] == []
    assert ids == ["ada-model"]


# --------------------------------------------------------------------------- the Provider object


PROVIDER_OBJECT_TS = """
import { createProvider, openAICompletionsApi } from "@earendil-works/pi-ai/compat";

export default function (pi) {
  const baseUrl = process.env.ACME_URL;
  const model = (id, name, contextWindow, maxTokens) => ({ id, name, api: "openai-completions", provider: "acme",
    baseUrl, reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow, maxTokens });
  const provider = createProvider({
    id: "acme", name: "Acme", baseUrl,
    auth: { apiKey: { name: "Acme key", async resolve({ ctx, credential }) {
      const key = credential?.key ?? (await ctx.env("ACME_KEY"));
      return key ? { auth: { apiKey: key }, source: credential ? "stored credential" : "ACME_KEY" } : undefined;
    } } },
    models: [model("acme-mini", "Acme Mini", 32000, 4096), model("acme-max", "Acme Max", 200000, 16384)],
    api: openAICompletionsApi(),
  });
  provider.filterModels = (models, credential) => {
    const basic = String(credential?.key ?? "").startsWith("acme-basic-");
    return models.filter((m) => !(basic && m.id === "acme-max"));
  };
  pi.registerProvider(provider);
}
"""
ACME_ENV = {"ACME_KEY": "acme-pro-1", "ACME_URL": "http://127.0.0.1:9/v1", "PI_OFFLINE": "1"}
BASIC_KEY = {"acme": {"type": "api_key", "key": "acme-basic-1"}}


@pytest.mark.parametrize(("stored", "expected"), [
    (None, ["acme acme-max 200K 16.4K no no", "acme acme-mini 32K 4.1K no no"]),
    (BASIC_KEY, ["acme acme-mini 32K 4.1K no no"]),
])
def test_provider_object_filters_its_models(stored: dict[str, Any] | None, expected: list[str],
                                            tmp_path: Path) -> None:
    rows = _list_models("ours", tmp_path, "provider_object.py", "", ACME_ENV, "acme", stored)
    assert rows[1:] == expected


@needs_reference
@pytest.mark.parametrize("stored", [None, BASIC_KEY])
def test_provider_object_matches_reference(stored: dict[str, Any] | None, tmp_path: Path) -> None:
    sides = [_list_models(kind, tmp_path, "provider_object.py", PROVIDER_OBJECT_TS, ACME_ENV, "acme", stored)
             for kind in ("ours", "reference")]
    assert sides[0] == sides[1]


async def _acme_listed(kind: str, root: Path, stored: dict[str, Any] | None) -> list[str]:
    """``get_available_models`` over RPC with the Provider example (or its twin), ``stored`` in auth.json."""
    async def listed(conv: Conversation) -> None:
        response = await conv.request({"type": "get_available_models"})
        conv.records.append({"type": "listed", "models": sorted(m["id"] for m in response["data"]["models"]
                                                                if m["provider"] == "acme")})

    def prepare(workspace: Workspace) -> None:
        workspace.env.update(ACME_ENV)
        if stored is not None:
            (workspace.agent_dir / "auth.json").write_text(json.dumps(stored))

    played = await play_example(kind, "provider_object.py", PROVIDER_OBJECT_TS, listed, root / kind, prepare=prepare)
    return next(r["models"] for r in played.records if r["type"] == "listed")


async def test_provider_object_filter_reaches_rpc_clients(tmp_path: Path) -> None:
    assert await _acme_listed("ours", tmp_path / "env", None) == ["acme-max", "acme-mini"]
    assert await _acme_listed("ours", tmp_path / "basic", BASIC_KEY) == ["acme-mini"]


@needs_reference
@pytest.mark.parametrize("stored", [None, BASIC_KEY])
async def test_provider_object_rpc_listing_matches_reference(stored: dict[str, Any] | None, tmp_path: Path) -> None:
    assert await _acme_listed("ours", tmp_path, stored) == await _acme_listed("reference", tmp_path, stored)


# --------------------------------------------------------------------------- Bedrock's raw stream events

BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
STREAM_WATCH_TS = """
export default function (pi) {
  const seen = [];
  pi.on("agent_start", () => { seen.length = 0; });
  pi.on("provider_stream_event", (event) => { seen.push(event.data); });
  pi.registerCommand("stream-events", {
    description: "The raw events of the last prompt",
    handler: async (_args, ctx) => { ctx.ui.notify(JSON.stringify(seen), "info"); },
  });
}
"""


def _bedrock(workspace: Workspace) -> None:
    models = json.loads((workspace.agent_dir / "models.json").read_text())
    server = models["providers"]["fake"]["baseUrl"].removesuffix("/v1")
    models["providers"]["amazon-bedrock"] = {"baseUrl": server}
    (workspace.agent_dir / "models.json").write_text(json.dumps(models))
    workspace.env.update({"AWS_BEARER_TOKEN_BEDROCK": "bedrock-key", "AWS_BEDROCK_FORCE_HTTP1": "1",
                          "AWS_REGION": "us-west-2", "PI_OFFLINE": "1"})


async def _watch(conv: Conversation) -> None:
    await conv.prompt("hi")
    await conv.request({"type": "prompt", "message": "/stream-events"})


async def _bedrock_events(kind: str, root: Path) -> list[Any]:
    script = [{"content": [{"type": "text", "text": "Hello there"}], "usage": {"input": 12, "output": 3}}]
    played = await play_example(kind, "stream_watch.py", STREAM_WATCH_TS, _watch, root / kind,
                                ("--provider", "amazon-bedrock", "--model", BEDROCK_MODEL), script,
                                prepare=_bedrock)
    events: list[Any] = json.loads(notes(played.records)[-1])
    return events


async def test_bedrock_frames_reach_provider_stream_event(tmp_path: Path) -> None:
    events = await _bedrock_events("ours", tmp_path)
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "messageStart" and events[0] == {"messageStart": {"role": "assistant"}}
    assert {"contentBlockDelta", "messageStop", "metadata"} <= set(kinds)
    text = "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e)
    assert text == "Hello there"


@needs_reference
async def test_bedrock_stream_events_match_reference(tmp_path: Path) -> None:
    assert await _bedrock_events("ours", tmp_path) == await _bedrock_events("reference", tmp_path)
