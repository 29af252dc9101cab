"""Keeping a stored OAuth credential fresh, safely across processes.

Double-checked: a credential that looks due is refreshed inside ``CredentialFile.modify``, which
re-reads auth.json under pi's lock and re-checks, so of several processes (ours or pi's) finding
the same expiring token only the first refreshes; the others read its result. Once a refresh
request is sent the provider may already have rotated the refresh token, so cancelling the caller
never abandons it half-way: the refresh and its write are shielded and bounded by a timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pi_coding_agent.ai.auth.oauth.http import OAuthError
from pi_coding_agent.ai.auth.oauth.providers import PROVIDERS, Credential, OAuthProvider, now_ms
from pi_coding_agent.ai.auth.oauth.store import CredentialFile, is_oauth

DEFAULT_MIN_VALIDITY_MS = 5 * 60_000  # pi refreshes tokens with less than five minutes left
REFRESH_TIMEOUT_S = 15.0


def expires_within(min_validity_ms: int) -> Callable[[Credential], bool]:
    return lambda cred: now_ms() + min_validity_ms >= cred["expires"]


async def _refresh_locked(file: CredentialFile, provider: str, due: Callable[[Credential], bool],
                          spec: OAuthProvider) -> Credential | None:
    async def replace(current: Credential | None) -> Credential | None:
        if not is_oauth(current) or current is None or not due(current):
            return None  # logged out meanwhile, or another process refreshed it
        try:
            return await asyncio.wait_for(spec.refresh(current), REFRESH_TIMEOUT_S)
        except TimeoutError:
            raise OAuthError(f"OAuth refresh failed for {provider}: timed out") from None
        except OAuthError as exc:
            raise OAuthError(f"OAuth refresh failed for {provider}: {exc}") from None

    post = await asyncio.shield(asyncio.ensure_future(file.modify(provider, replace)))
    return post if is_oauth(post) else None


async def fresh_credential(file: CredentialFile, provider: str, min_validity_ms: int | None = None,
                           stale_access: str | None = None, spec: OAuthProvider | None = None) -> Credential | None:
    """The stored OAuth credential of ``provider``, refreshed first when it is due.

    Due means less than ``min_validity_ms`` (at least pi's five minutes) left, or, with
    ``stale_access``, that the stored access token is still the one a server just rejected (401).
    ``spec`` is the provider's sign-in when it is not in pi's table (a vendor's, an extension's). None when no
    OAuth credential is stored. Raises ``OAuthError`` when a needed refresh fails, or when an
    explicitly requested ``min_validity_ms`` cannot be met.
    """
    found = file.read_all().get(provider)
    stored: Credential | None = found if is_oauth(found) else None
    spec = spec or PROVIDERS.get(provider)
    if stored is None or spec is None:
        return stored
    minimum = max(DEFAULT_MIN_VALIDITY_MS, min_validity_ms or 0)
    expiring = expires_within(minimum)

    def due(cred: Credential) -> bool:
        return expiring(cred) or (stale_access is not None and cred["access"] == stale_access)

    if not due(stored):
        return stored
    post = await _refresh_locked(file, provider, due, spec)
    if post is not None and min_validity_ms is not None and expiring(post):
        raise OAuthError(f"OAuth refresh returned a token that expires too soon for {provider}")
    return post
