"""A subscription provider with a sign-in of its own: ``register_provider(..., oauth=...)``.

    CORP_AI_URL=https://ai.corp.example/v1 CORP_SSO_URL=https://sso.corp.example \\
        pi --mode rpc -e examples/extensions/subscription_provider.py

then the prompt ``/login corp-ai`` (or ``/login`` and pick "Corp AI (SSO)"): the client gets the
authorization URL in a ``notify`` and is asked for the code the sign-in page shows. The credential
goes to auth.json under ``corp-ai`` (``type: "oauth"``, ``access``, ``refresh``, ``expires``), like
a built-in subscription's; before a request whose token has less than five minutes left,
``refresh_token`` renews it under auth.json's lock, and ``get_api_key`` turns it into the request's
key; ``modify_models`` offers the large model only to a credential of the ``max`` tier (which the
SSO names in its token response). The SSO here is a plain OAuth 2 authorization-code flow with PKCE
at ``<sso>/v1/oauth/token``.
"""

import asyncio
import base64
import hashlib
import json
import os
import secrets
import time
import urllib.parse
import urllib.request

SSO = os.environ.get("CORP_SSO_URL", "https://sso.corp.example")
CLIENT_ID = "pi-corp"
REDIRECT_URI = "https://ai.corp.example/callback"


async def _tokens(form):
    """POST to the token endpoint (on a thread: urllib blocks) and build pi's credential."""
    def post():
        request = urllib.request.Request(f"{SSO}/v1/oauth/token", data=urllib.parse.urlencode(form).encode(),
                                         headers={"content-type": "application/x-www-form-urlencoded"})
        with urllib.request.urlopen(request, timeout=15) as response:
            return json.loads(response.read())

    body = await asyncio.to_thread(post)
    expires = int(time.time() * 1000 + body["expires_in"] * 1000 - 60_000)  # a minute early
    credential = {"refresh": body["refresh_token"], "access": body["access_token"], "expires": expires}
    return {**credential, "tier": body["tier"]} if "tier" in body else credential


async def login(callbacks):
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urllib.parse.urlencode({"response_type": "code", "client_id": CLIENT_ID, "redirect_uri": REDIRECT_URI,
                                    "code_challenge": challenge, "code_challenge_method": "S256",
                                    "state": secrets.token_hex(8)})
    callbacks.on_auth({"url": f"{SSO}/authorize?{query}", "instructions": "Sign in, then paste the code shown."})
    code = await callbacks.on_prompt({"message": "Enter code:"})
    callbacks.on_progress("Exchanging the code for tokens...")
    return await _tokens({"grant_type": "authorization_code", "client_id": CLIENT_ID, "code": code.strip(),
                          "code_verifier": verifier, "redirect_uri": REDIRECT_URI})


async def refresh_token(credentials, signal):
    return await _tokens({"grant_type": "refresh_token", "client_id": CLIENT_ID,
                          "refresh_token": credentials["refresh"]})


def tier_models(models, credentials):
    return [m for m in models if credentials.get("tier") == "max" or not m["id"].endswith("-max")]


def setup(pi):
    pi.register_provider("corp-ai", {
        "name": "Corp AI",
        "baseUrl": os.environ.get("CORP_AI_URL", "https://ai.corp.example/v1"),
        "api": "openai-completions",
        "models": [{"id": "corp-model", "name": "Corp model", "contextWindow": 64000, "maxTokens": 4096},
                   {"id": "corp-max", "name": "Corp max", "contextWindow": 200000, "maxTokens": 16384}],
    }, oauth={"name": "Corp AI (SSO)", "login": login, "refresh_token": refresh_token,
              "get_api_key": lambda credentials: credentials["access"], "modify_models": tier_models})
