"""pi's short string hash (shortened replay ids): fixed values, then random strings against pi 1.6.0's own."""

from __future__ import annotations

import json
import random
import subprocess

from pi_coding_agent.ai.apis.openai_completions import normalize_tool_call_id
from pi_coding_agent.ai.apis.short_hash import short_hash
from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_ROOT
from tests.support.rpc_compare import needs_reference

HASH_JS = REFERENCE_ROOT / "pi-1.6.0/node_modules/@earendil-works/pi-ai/dist/utils/hash.js"


def test_known_values() -> None:
    assert short_hash("") == "k4n83c7h0j2b"
    assert short_hash("rs_abc|fc_123") == "tw1e6mhxsqyl"
    assert short_hash("héllo wörld ✓ 😀") == "1cqmh57vgm3i"  # UTF-16 units, a surrogate pair included


def test_long_chat_completions_ids_end_in_the_hash() -> None:
    call_id = "call_" + "a" * 30 + "|fc_" + "b" * 300
    assert normalize_tool_call_id({"provider": "x"}, call_id) == f"call_{'a' * 26}_{short_hash(call_id)[:8]}"  # type: ignore[arg-type]


@needs_reference
def test_matches_the_reference_on_random_strings() -> None:
    rng = random.Random(7)
    alphabet = "abcXYZ019|_-+/=é✓😀\u0000"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 400))) for _ in range(200)]
    script = (f"import {{ shortHash }} from {json.dumps(str(HASH_JS))};"
              "let d='';process.stdin.on('data',c=>d+=c).on('end',()=>"
              "console.log(JSON.stringify(JSON.parse(d).map(shortHash))));")
    node = str(REFERENCE_NODE_BIN / "node")
    done = subprocess.run([node, "--input-type=module", "-e", script], input=json.dumps(texts),
                          capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == [short_hash(text) for text in texts]
