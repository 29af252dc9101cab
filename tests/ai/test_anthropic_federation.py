"""Anthropic workload identity federation: the identity token file traded for an access token.

Real processes: ours in print mode against the fake LLM server (anthropic's ``baseUrl``) and the fake
authorization server's ``jwt-bearer`` grant (``PI_OAUTH_ORIGIN``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.coding.cli.test_auth_cli import home, ours
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.fakes.oauth_server import FakeOAuthServer

MODEL = "anthropic/claude-sonnet-4-5"
IDENTITY = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJjaSJ9.identity-sig"


@pytest.fixture
def oauth(monkeypatch: pytest.MonkeyPatch):
    with FakeOAuthServer() as server:
        monkeypatch.setenv("PI_OAUTH_ORIGIN", server.url)
        server.identity_tokens.add(IDENTITY)
        yield server


def federated_env(tmp_path: Path, llm_url: str) -> dict[str, str]:
    token_file = tmp_path / "identity.jwt"
    token_file.write_text(IDENTITY + "\n")
    return {**home(tmp_path, {}, llm_url), "ANTHROPIC_FEDERATION_RULE_ID": "fdrl_1", "ANTHROPIC_ORGANIZATION_ID": "org-1",
            "ANTHROPIC_IDENTITY_TOKEN_FILE": str(token_file), "ANTHROPIC_WORKSPACE_ID": "wrkspc_1"}


@pytest.mark.slow
def test_identity_token_is_exchanged_and_exchanged_again_after_a_401(tmp_path: Path, oauth: FakeOAuthServer,
                                                                     fake_llm: FakeLLMServer):
    env = federated_env(tmp_path, fake_llm.url)
    fake_llm.add({"status": 401, "body": {"type": "error", "error": {"type": "authentication_error", "message": "no"}}},
                 {"content": [{"type": "text", "text": "federated"}]})
    done = ours(env, "-p", "--model", MODEL, "hi")
    assert (done.returncode, done.stdout.strip()) == (0, "federated"), done.stderr
    grants = oauth.grants("urn:ietf:params:oauth:grant-type:jwt-bearer")
    assert grants == [{"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": IDENTITY,
                       "federation_rule_id": "fdrl_1", "organization_id": "org-1", "workspace_id": "wrkspc_1"}] * 2
    exchange = next(r for r in oauth.requests if r["path"] == "/v1/oauth/token")
    assert exchange["headers"]["anthropic-beta"] == "oauth-2025-04-20,oidc-federation-2026-04-01"
    sent = [r["headers"] for r in fake_llm.requests]
    assert [h["authorization"] for h in sent] == ["Bearer fed-access-1", "Bearer fed-access-2"]
    assert all("oauth-2025-04-20" in h["anthropic-beta"].split(",") and "x-api-key" not in h for h in sent)
    sessions = "".join(p.read_text() for p in (Path(env["HOME"]) / ".pi").rglob("*.jsonl"))
    for text in (done.stdout, done.stderr, sessions):
        assert "fed-access-" not in text and IDENTITY not in text


@pytest.mark.slow
def test_a_key_wins_over_federation_and_a_rejected_identity_fails_clearly(tmp_path: Path, oauth: FakeOAuthServer,
                                                                          fake_llm: FakeLLMServer):
    env = federated_env(tmp_path, fake_llm.url)
    fake_llm.add({"content": [{"type": "text", "text": "keyed"}]})
    keyed = ours({**env, "ANTHROPIC_API_KEY": "sk-ant-api-1"}, "-p", "--no-session", "--model", MODEL, "hi")
    assert keyed.stdout.strip() == "keyed" and fake_llm.requests[0]["headers"]["x-api-key"] == "sk-ant-api-1"
    assert oauth.grants("urn:ietf:params:oauth:grant-type:jwt-bearer") == []
    Path(env["ANTHROPIC_IDENTITY_TOKEN_FILE"]).write_text("eyJ.rotated.unknown")
    refused = ours(env, "-p", "--no-session", "--model", MODEL, "hi")
    assert refused.returncode == 1
    assert "Anthropic workload identity token exchange failed (HTTP 401): invalid_grant" in refused.stderr
    assert "rotated" not in refused.stderr and len(fake_llm.requests) == 1
