"""An independent SigV4 verifier for requests logged by the fake server (hashlib/hmac only, no botocore).

It recomputes the signature of a received request from AWS's published algorithm (canonical request,
string to sign, derived key) and returns what it found, so a test can compare the signature, the
credential scope and the session token with what the client was configured with.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any
from urllib.parse import quote, urlsplit

AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                  r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})")


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def verify(request: dict[str, Any], raw_body: bytes, secret_key: str) -> dict[str, str]:
    """``{"accessKey", "region", "service", "signature", "expected"}`` for one logged request."""
    headers = request["headers"]
    match = AUTH.fullmatch(headers["authorization"])
    assert match, headers["authorization"]
    access_key, date, region, service, signed, signature = match.groups()
    parts = urlsplit(request["path"])
    canonical_uri = quote(parts.path, safe="/~")  # services other than S3 encode the path once more
    query = "&".join(sorted(parts.query.split("&"))) if parts.query else ""
    names = signed.split(";")
    canonical_headers = "".join(f"{n}:{' '.join(headers[n].split())}\n" for n in names)
    canonical = "\n".join(["POST", canonical_uri, query, canonical_headers, signed,
                           hashlib.sha256(raw_body).hexdigest()])
    amz_date = headers["x-amz-date"]
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret_key}".encode(), date), region), service), "aws4_request")
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return {"accessKey": access_key, "region": region, "service": service, "signature": signature,
            "expected": expected, "signedHeaders": signed}
