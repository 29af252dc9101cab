"""Where a Bedrock request goes and how it is authorised: region, endpoint, bearer token or SigV4.

The rules are pi's (its AWS SDK configuration), read from the environment on every request:

* region: an inference-profile ARN's own region, else ``AWS_REGION``/``AWS_DEFAULT_REGION``, else the
  catalog endpoint's region, else (with no ``AWS_PROFILE``) ``us-east-1``, else the profile's region;
* endpoint: the model's ``baseUrl`` when it is not a standard ``bedrock-runtime.<region>`` host (a
  proxy or VPC endpoint), or when no region or profile is configured; otherwise the region's host;
* auth: a bearer token (the stored key, or ``AWS_BEARER_TOKEN_BEDROCK``) unless
  ``AWS_BEDROCK_SKIP_AUTH=1``; otherwise SigV4 with ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``
  (``AWS_SESSION_TOKEN``), or botocore's credential chain (profiles in the shared config and
  credentials files, SSO token cache, credential processes, container and instance roles).

botocore is imported on the first signed request only (its import cost is recorded in
docs/architecture.md); the credential chain runs in a thread because it may do blocking I/O.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.auth.provider_env import env_value as _env
from pi_coding_agent.ai.stream import ProviderError

if TYPE_CHECKING:
    from botocore.credentials import Credentials

SERVICE = "bedrock"
DEFAULT_REGION = "us-east-1"
_ARN_REGION = re.compile(r"^arn:aws(?:-[a-z0-9-]+)?:bedrock:([a-z0-9-]+):")
_STANDARD_HOST = re.compile(r"^bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")
DUMMY_CREDENTIALS = ("dummy-access-key", "dummy-secret-key")

# botocore credential objects by profile ("" = default chain); refreshable ones renew themselves.
_chains: dict[str, Any] = {}


def configured_region() -> str | None:
    return _env("AWS_REGION") or _env("AWS_DEFAULT_REGION")


def endpoint_region(base_url: str) -> str | None:
    from urllib.parse import urlsplit

    match = _STANDARD_HOST.match((urlsplit(base_url).hostname or "").lower()) if base_url else None
    return match.group(1) if match else None


def uses_explicit_endpoint(base_url: str) -> bool:
    if endpoint_region(base_url) is None:
        return True
    return not configured_region() and not _env("AWS_PROFILE")


def region_for(model_id: str, base_url: str) -> str | None:
    """The signing region, or None when only the profile's configuration can tell."""
    arn = _ARN_REGION.match(model_id)
    if arn:
        return arn.group(1)
    region = configured_region()
    if region:
        return region
    endpoint = endpoint_region(base_url)
    if endpoint and uses_explicit_endpoint(base_url):
        return endpoint
    return None if _env("AWS_PROFILE") else DEFAULT_REGION


def endpoint_for(base_url: str, region: str) -> str:
    if uses_explicit_endpoint(base_url):
        return base_url.rstrip("/")
    suffix = ".amazonaws.com.cn" if region.startswith("cn-") else ".amazonaws.com"
    return f"https://bedrock-runtime.{region}{suffix}"


def bearer_token(api_key: str | None) -> str | None:
    """The bearer token to send, or None for SigV4 (``<authenticated>``-style markers are not tokens)."""
    if _env("AWS_BEDROCK_SKIP_AUTH") == "1":
        return None
    key = api_key if api_key and not re.fullmatch(r"<[^>]+>", api_key) else None
    return key or _env("AWS_BEARER_TOKEN_BEDROCK")


def _chain_credentials(profile: str | None) -> tuple[Credentials | None, str | None]:
    """botocore's default chain for a profile: (frozen credentials, the profile's region). Blocking."""
    import botocore.session
    from botocore.exceptions import BotoCoreError, ClientError

    key = profile or ""
    try:
        session = _chains.get(key)
        if session is None:
            session = botocore.session.Session(profile=profile)
            _chains[key] = session
        credentials = session.get_credentials()
        region = session.get_config_variable("region")
        return (credentials.get_frozen_credentials() if credentials is not None else None), region
    except (BotoCoreError, ClientError) as exc:
        raise ProviderError(f"AWS credentials: {exc}") from exc


async def signing_credentials() -> tuple[Credentials, str | None]:
    """Credentials for SigV4 and the profile's region (None unless the chain was consulted)."""
    from botocore.credentials import Credentials

    if _env("AWS_BEDROCK_SKIP_AUTH") == "1":
        return Credentials(*DUMMY_CREDENTIALS), None
    profile = _env("AWS_PROFILE")
    access, secret = _env("AWS_ACCESS_KEY_ID"), _env("AWS_SECRET_ACCESS_KEY")
    if access and secret and not profile:
        return Credentials(access, secret, _env("AWS_SESSION_TOKEN")), None
    credentials, region = await asyncio.to_thread(_chain_credentials, profile)
    if credentials is None:
        raise ProviderError("Could not load credentials from any providers")
    return credentials, region


def sign(credentials: Credentials, region: str, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
    """The request headers with SigV4's ``Authorization``, ``X-Amz-Date`` and session token added."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    request = AWSRequest(method="POST", url=url, data=body, headers=headers)
    SigV4Auth(credentials, SERVICE, region).add_auth(request)
    return dict(request.headers.items())
