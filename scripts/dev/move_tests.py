"""Moves tests/ into folders that mirror the package (issue 35), with ``git mv`` and import rewrites.

    python scripts/dev/move_tests.py            # print the plan
    python scripts/dev/move_tests.py --apply    # git mv, rewrite imports and __file__ depths

A test module goes to the folder of the first rule whose prefix its name starts with (RULES, longest
prefix wins); the shared helpers, fakes and fixtures go to tests/support/. The side-by-side
comparisons whose subject is pi itself go to tests/reference/. A module no rule covers is listed and
left where it is. Afterwards ``tests.<old>`` imports (tests, bench, docs, README) name the new place,
``Path(__file__)`` climbs as many more levels as the file went down, and each new folder gets an
``__init__.py``. What it cannot rewrite (a file that reads a sibling test by name) it prints at the end.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"

SUPPORT = ["acp_client", "cli_sides", "mcp_helpers", "recorded_streams", "reference_pi", "requirements",
           "rpc_compare", "rpc_helpers", "fakes", "fixtures"]
"""Helpers, fakes and data: tests/support/<name>."""

REFERENCE = ["test_rpc_reference", "test_cli_reference", "test_cloud_reference", "test_codex_reference",
             "test_codemode_reference", "test_openai_compat_reference", "test_recorded_streams_reference",
             "test_extensions_parity", "test_session_fixtures", "test_short_hash"]
"""Modules whose subject is agreement with pi 1.6.0: tests/reference/. Other modules keep their
side-by-side cases beside their subject, marked ``reference``."""

PROJECT = ["test_layers", "test_startup_imports", "test_docs_examples", "test_docs_truth", "test_orphans",
           "test_deferred_module"]
"""Project-wide checks stay in tests/."""

RULES: dict[str, str] = {
    # ai: the LLM layer
    "test_adapter_contract": "ai", "test_anthropic_": "ai", "test_azure_openai": "ai", "test_bedrock": "ai",
    "test_codex_transport": "ai", "test_google_": "ai", "test_openai_": "ai", "test_vertex_": "ai",
    "test_provider_helpers": "ai", "test_sse": "ai", "test_http11": "ai", "test_first_request": "ai",
    "test_stream_faux": "ai", "test_transform": "ai", "test_thinking": "ai", "test_errors": "ai",
    "test_recorded_streams": "ai", "test_images": "ai", "test_session_resources": "ai", "test_records": "ai",
    "test_keys": "ai/auth", "test_credential_env": "ai/auth", "test_oauth": "ai/auth",
    "test_models": "ai/models", "test_models_json": "ai/models", "test_nonchat_models": "ai/nonchat",
    "test_radius_catalog": "ai/providers", "test_llama": "ai/providers", "test_api_key_models": "ai/models",
    "test_compat_tools": "ai", "test_mid_convo_system": "ai", "test_provider_requests": "ai",
    "test_fake_server": "support", "test_test_deps": "support",
    # agent: the agent core
    "test_agent_": "agent", "test_listeners": "agent",
    # coding, by area
    "test_acp_": "coding/acp", "test_pi_acp": "coding/acp",
    "test_cli": "coding/cli", "test_file_args": "coding/cli", "test_auth_cli": "coding/cli",
    "test_print_failures": "coding/cli", "test_startup_sessions": "coding/cli",
    "test_rpc_": "coding/rpc", "test_login_rpc": "coding/rpc", "test_client": "coding/rpc",
    "test_record_writer_backlog": "coding/rpc", "test_reliability": "coding/rpc",
    "test_session_": "coding/session", "test_tool_": "coding/tools", "test_compaction_": "coding/compaction",
    "test_cache_warming": "coding/services", "test_mcp_": "coding/mcp", "test_codemode_": "coding/codemode",
    "test_extension_": "coding/extensions", "test_extensions_": "coding/extensions",
    "test_resources_": "coding/resources", "test_export_html": "coding/export", "test_sandbox": "coding/sandbox",
    "test_sdk": "coding/sdk",
}


def destination(name: str) -> str | None:
    """The folder under tests/ for a module or helper named ``name`` (no ``.py``), or None (stays)."""
    if name in SUPPORT:
        return "support"
    if name in REFERENCE:
        return "reference"
    if name in PROJECT:
        return ""
    matches = [prefix for prefix in RULES if name == prefix or name.startswith(prefix)]
    return RULES[max(matches, key=len)] if matches else None


def plan() -> tuple[dict[str, str], list[str]]:
    """``{old dotted name: new dotted name}`` for every move, and the modules no rule covers."""
    moves: dict[str, str] = {}
    unplaced: list[str] = []
    for path in sorted(TESTS.iterdir()):
        name = path.stem if path.suffix == ".py" else path.name
        if name.startswith(("__", "conftest")) or not (path.suffix == ".py" or path.is_dir()):
            continue
        folder = destination(name)
        if folder is None:
            unplaced.append(path.name)
        elif folder:
            moves[f"tests.{name}"] = f"tests.{folder.replace('/', '.')}.{name}"
    return moves, unplaced


def _rewrite_imports(moves: dict[str, str]) -> None:
    pattern = re.compile(r"\btests\.(" + "|".join(re.escape(old[6:]) for old in moves) + r")\b")
    names = "|".join(re.escape(old[6:]) for old in moves)
    files = [*ROOT.glob("tests/**/*.py"), *ROOT.glob("bench/**/*.py"), *ROOT.glob("docs/*.md"),
             *ROOT.glob("src/**/*.py"), ROOT / "README.md", *ROOT.glob("scripts/**/*.sh")]
    for file in files:
        text = file.read_text()
        new = re.sub(r"\bfrom tests import (" + names + r")\b",
                     lambda match: "from {} import {}".format(*moves["tests." + match.group(1)].rsplit(".", 1)), text)
        new = pattern.sub(lambda match: moves["tests." + match.group(1)], new)
        new = re.sub(r"\btests/(" + names + r")\b",
                     lambda match: moves["tests." + match.group(1)].replace(".", "/"), new)
        if new != text:
            file.write_text(new)


def _deepen(file: Path, levels: int) -> None:
    """``Path(__file__)`` walks ``levels`` more folders up to reach what it reached before the move."""
    text = file.read_text()
    text = re.sub(r"Path\(__file__\)(\.resolve\(\))?\.parents\[(\d+)\]",
                  lambda m: f"Path(__file__){m.group(1) or ''}.parents[{int(m.group(2)) + levels}]", text)
    text = re.sub(r"Path\(__file__\)(\.resolve\(\))?\.parent\b(?! /)",
                  lambda m: f"Path(__file__){m.group(1) or ''}.parents[{levels}]", text)
    text = re.sub(r"Path\(__file__\)(\.resolve\(\))?\.parent / \"(fixtures|fakes)\"",
                  lambda m: f"Path(__file__){m.group(1) or ''}.parents[{levels}] / \"support\" / \"{m.group(2)}\"",
                  text)
    file.write_text(text)


def apply(moves: dict[str, str]) -> None:
    for old, new in moves.items():
        source, target = TESTS / old[6:], ROOT / new.replace(".", "/")
        source = source if source.is_dir() else source.with_suffix(".py")
        target = target if source.is_dir() else target.with_suffix(".py")
        for depth in range(1, len(target.relative_to(TESTS).parts)):
            folder = TESTS.joinpath(*target.relative_to(TESTS).parts[:depth])
            folder.mkdir(exist_ok=True)
            (folder / "__init__.py").touch()
        subprocess.run(["git", "mv", str(source), str(target)], cwd=ROOT, check=True)
        if target.suffix == ".py":
            _deepen(target, len(target.relative_to(TESTS).parts) - 1)
    _rewrite_imports(moves)
    subprocess.run(["git", "add", "tests"], cwd=ROOT, check=True)


def main() -> None:
    moves, unplaced = plan()
    for old, new in moves.items():
        print(f"{old:45} -> {new}")
    for name in unplaced:
        print(f"no rule, stays: tests/{name}", file=sys.stderr)
    if "--apply" in sys.argv:
        apply(moves)
        leftovers = subprocess.run(["git", "grep", "-n", r"Path(__file__).parent / \(\"[a-z_]*\.\(py\|json\)\"\|name\)",
                                    "--", "tests"], cwd=ROOT, capture_output=True, text=True).stdout
        print("check by hand (reads a file beside it):\n" + leftovers if leftovers else "done")


if __name__ == "__main__":
    main()
