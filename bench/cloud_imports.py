"""Import cost of the cloud credential and transport libraries, paid on the first request to their provider.

Each measurement is a fresh interpreter importing exactly what the adapter imports on first use
(after asyncio and httpx, which every provider request has loaded already). Run: ``python bench/cloud_imports.py [runs]``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys

CASES = {
    "httpx (every provider)": "import httpx, httpx_sse",
    "bedrock, env keys or bearer (botocore.auth, eventstream)":
        "import botocore.auth, botocore.awsrequest, botocore.credentials, botocore.eventstream",
    "bedrock, profile chain (+ botocore.session)":
        "import botocore.auth, botocore.awsrequest, botocore.eventstream, botocore.session",
    "vertex ADC (google.auth)": "import google.auth, google.auth.transport, google.oauth2.service_account",
    "codex websocket (websockets client)": "import websockets.asyncio.client, websockets.exceptions",
    "codex zstd body (backports.zstd)": "from backports import zstd",
}
PROBE = "import asyncio, time, httpx, httpx_sse; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"


def measure(code: str, runs: int) -> list[float]:
    probe = PROBE.format(code=code) if "httpx_sse" not in code else (
        "import time; t = time.perf_counter(); " + code + "; print(time.perf_counter() - t)")
    return [float(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)
            for _ in range(runs)]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    for name, code in CASES.items():
        times = measure(code, runs)
        print(f"{name:60s} median {statistics.median(times) * 1000:7.1f} ms  min {min(times) * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
