"""Issue #32 layout: move modules (git mv) and rewrite every reference to them.

Idempotent: `python relayout.py rewrite <dir>` only rewrites references (for merging branches).
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path.cwd()
PKG = ROOT / "src" / "pi_coding_agent"

AI_APIS_OUT = {"http": "transport/http", "http11": "transport/http11", "sse": "transport/sse",
               "aws_auth": "auth/aws", "google_transport": "auth/google_transport"}
FILE_MOVES: dict[str, str] = {  # relative to src/pi_coding_agent, without .py
    "ai/keys": "ai/auth/keys",
    "ai/cloud_auth": "ai/auth/cloud",
    "ai/anthropic_federation": "ai/auth/anthropic_federation",
    "ai/provider_env": "ai/auth/provider_env",
    "ai/models": "ai/models/catalog",
    "ai/catalog": "ai/models/index",
    "ai/models_json": "ai/models/models_json",
    "ai/models_store": "ai/models/store",
    "ai/model_resolution": "ai/models/resolution",
    "ai/radius_catalog": "ai/providers/radius",
    "ai/llama_router": "ai/providers/llama_cpp",
    "ai/classifiers": "ai/nonchat/classifiers",
    "ai/images": "ai/nonchat/images",
    "ai/nonchat_models": "ai/nonchat/models",
    "ai/nonchat_requests": "ai/nonchat/requests",
    "ai/llama_classify": "ai/nonchat/llama_classify",
    "ai/system_one": "ai/nonchat/system_one",
    "ai/openai_decisions": "ai/nonchat/openai_decisions",
    "coding/session_replacement": "coding/services/replacement",
    "coding/model_selection": "coding/services/model_selection",
    "coding/tree_navigation": "coding/services/tree_navigation",
    "coding/queue_mirror": "coding/services/queue_mirror",
    "coding/bash_runs": "coding/services/bash_runs",
    "coding/cache_warming": "coding/services/cache_warming",
    "coding/cli": "coding/cli/main",
    "coding/file_args": "coding/cli/file_args",
    "coding/login_ui": "coding/commands/login",
    "coding/llama_command": "coding/commands/llama",
    "coding/tool_ranking": "coding/tools/ranking",
    "coding/nonchat_calls": "coding/codemode/nonchat_calls",
    "coding/provider_settings": "coding/resources/provider_settings",
    "coding/print_report": "coding/modes/print_report",
    "coding/modes/rpc": "coding/modes/rpc/mode",
    "coding/modes/rpc_commands": "coding/modes/rpc/commands",
    "coding/modes/rpc_transport": "coding/modes/rpc/transport",
    "coding/modes/ui_bridge": "coding/modes/rpc/ui_bridge",
    "coding/modes/acp": "coding/modes/acp/mode",
    "coding/extensions/ui": "coding/ui",
}
INIT_MOVES = {"coding/mcp/__init__": "coding/mcp/session", "coding/codemode/__init__": "coding/codemode/activation"}
DIR_MOVES = {"ai/oauth": "ai/auth/oauth", "coding/subcommands": "coding/cli/subcommands",
             "coding/acp": "coding/modes/acp", "ai/data": "ai/models/data"}


def old_tree_moves() -> dict[str, str]:
    """Every moved module, old dotted name -> new dotted name (packages by their __init__)."""
    moves = dict(FILE_MOVES)  # not INIT_MOVES: a bare package name is as likely the new package
    for name in ["accumulate", "anthropic_messages", "anthropic_system", "anthropic_threads", "anthropic_tools",
                 "azure_openai", "bedrock_converse", "codex_websocket", "diagnostics", "faux",
                 "google_generative_ai", "google_transport", "google_vertex", "grammar_tools", "http", "http11",
                 "openai_codex", "openai_compat", "openai_completions", "openai_responses", "partial_json",
                 "pi_messages", "reasoning_details", "responses_tools", "sampling", "short_hash", "sse",
                 "strict_schema", "usage", "aws_auth"]:
        moves[f"ai/providers/{name}"] = "ai/" + AI_APIS_OUT.get(name, f"apis/{name}")
    for old, new in [("ai/oauth", "ai/auth/oauth"), ("coding/subcommands", "coding/cli/subcommands"),
                     ("coding/acp", "coding/modes/acp")]:
        for sub in ["__init__", "flows", "http", "lock", "login", "providers", "refresh", "store",
                    "auth", "auth_login", "mcp", "client_tools", "config", "host", "jsonrpc", "live_session",
                    "permissions", "port", "prompt", "tool_calls", "ui", "updates"]:
            moves[f"{old}/{sub}"] = f"{new}/{sub}"
    return moves


def dotted(rel: str) -> str:
    rel = rel.removesuffix("/__init__")
    return "pi_coding_agent." + rel.replace("/", ".")


MOVES = {dotted(o): dotted(n) for o, n in old_tree_moves().items()}
PATH_MOVES = {o + ".py": n + ".py" for o, n in old_tree_moves().items() if not o.endswith("__init__")}
PATH_MOVES.update({d + "/": n + "/" for d, n in DIR_MOVES.items()})
PATH_MOVES["ai/providers/"] = "ai/apis/"


def new_modules() -> set[str]:
    names = set()
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


TOKEN = re.compile(r"pi_coding_agent(?:\.[A-Za-z_]\w*)+(?!\w|\.\{)")


def rewrite_token(tok: str, news: set[str]) -> str:
    parts = tok.split(".")
    l_new = max((i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in news), default=0)
    l_old = max((i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in MOVES), default=0)
    if l_old == 0 or l_new > l_old:
        return tok
    head = ".".join(parts[:l_old])
    return ".".join([MOVES[head], *parts[l_old:]])


def split_from_imports(text: str, news: set[str]) -> str:
    """`from pkg import a, b` where pkg.a moved: one import line per new parent."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        if not node.module.startswith("pi_coding_agent"):
            continue
        groups: dict[str, list[str]] = {}
        changed = False
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            target = node.module
            name = alias.name
            if full in MOVES and full not in news | {MOVES[full]}:
                parent, _, leaf = MOVES[full].rpartition(".")
                target, name = parent, leaf
                changed = True
                if leaf != alias.name and alias.asname is None:
                    name = f"{leaf} as {alias.name}"
            piece = name if alias.asname is None else f"{name} as {alias.asname}"
            groups.setdefault(target, []).append(piece)
        if changed:
            indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)
            new = "".join(f"{indent}from {mod} import {', '.join(names)}\n" for mod, names in groups.items())
            edits.append((node.lineno - 1, node.end_lineno, new))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = [new]
    return "".join(lines)


PATH_TOKEN = re.compile(r"(?<![\w.])((?:src/)?(?:pi_coding_agent/)?)((?:ai|coding)/[\w/]*(?:\.py|/))")


def rewrite_paths(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        rel = m.group(2)
        if (PKG / rel).exists():
            return m.group(0)  # a path of the new tree (ai/providers/ holds vendors now)
        for old in sorted(PATH_MOVES, key=len, reverse=True):
            if rel == old or (old.endswith("/") and rel.startswith(old)):
                return m.group(1) + PATH_MOVES[old] + rel[len(old):]
        return m.group(0)
    return PATH_TOKEN.sub(sub, text)


FROM_LINE = re.compile(r"\s*from (pi_coding_agent[\w.]*) import ([\w, ]+?)\s*$")


def _imports_new_submodules(line: str, news: set[str]) -> bool:
    """`from <new package> import <its submodules>`: already in the new tree's terms."""
    m = FROM_LINE.match(line)
    if not m:
        return False
    names = [part.split(" as ")[0].strip() for part in m.group(2).split(",") if part.strip()]
    return bool(names) and all(f"{m.group(1)}.{n}" in news for n in names)


def rewrite(files: list[Path]) -> None:
    news = new_modules()
    for f in files:
        text = f.read_text()
        new = text
        if f.suffix == ".py":
            new = split_from_imports(new, news)
        new = "".join(
            line if _imports_new_submodules(line, news) else TOKEN.sub(lambda m: rewrite_token(m.group(0), news), line)
            for line in new.splitlines(keepends=True)
        )
        new = rewrite_paths(new)
        if new != text:
            f.write_text(new)


def tracked(*dirs: str) -> list[Path]:
    """The files to rewrite (never this script: its mapping names the old paths)."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", *dirs], capture_output=True, text=True,
                         check=True).stdout.split()
    return [ROOT / p for p in out if p.endswith((".py", ".md", ".toml", ".sh", ".json", ".js", ".txt"))
            and (ROOT / p).is_file() and "/data/" not in p and not p.endswith("relayout.py")]


def move() -> None:
    def mv(src: Path, dst: Path) -> None:
        dst.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", str(src), str(dst)], check=True)
    staged = []
    for d, n in DIR_MOVES.items():
        tmp = PKG / f"{d}__moving"
        mv(PKG / d, tmp)
        staged.append((tmp, PKG / n))
    for old, new in FILE_MOVES.items():
        tmp = PKG / f"{old}__moving.py"
        mv(PKG / f"{old}.py", tmp)
        staged.append((tmp, PKG / f"{new}.py"))
    mv(PKG / "ai/providers", PKG / "ai/apis__moving")
    staged.append((PKG / "ai/apis__moving", PKG / "ai/apis"))
    for tmp, dst in staged:
        mv(tmp, dst)
    for name, out in AI_APIS_OUT.items():
        mv(PKG / f"ai/apis/{name}.py", PKG / f"ai/{out}.py")
    for old, new in INIT_MOVES.items():
        mv(PKG / f"{old}.py", PKG / f"{new}.py")


if __name__ == "__main__":
    if sys.argv[1] == "move":
        move()
    targets = sys.argv[2:] or ["src", "tests", "bench", "examples", "scripts", "docs", "README.md", "pyproject.toml"]
    rewrite(tracked(*targets))
