"""Imports only go downward: ai <- agent <- coding, a fixed order inside coding, and no cycle anywhere.

Every import counts, ``TYPE_CHECKING`` and function-local ones included: a cycle that only a type
annotation closes still means two modules cannot be read, or changed, one without the other.
"""

import ast
import functools
import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "src" / "pi_coding_agent"
FORBIDDEN = {
    "ai": ("pi_coding_agent.agent", "pi_coding_agent.coding", "pi_coding_agent.client"),
    "agent": ("pi_coding_agent.coding", "pi_coding_agent.client"),
    "client": ("pi_coding_agent.ai", "pi_coding_agent.agent", "pi_coding_agent.coding"),
}

# Inside coding/, from the bottom up (module paths relative to coding/; the longest prefix decides).
# A module may import its own level and the levels below it, never one above.
CODING_ORDER: list[tuple[str, tuple[str, ...]]] = [
    ("foundations", ("paths", "options", "session_options", "errors", "messages", "events", "event_stream", "retry", "session_host", "ui",
                     "auth_help", "session", "sandbox", "tools", "codemode", "resources", "packages", "export",
                     "extensions.loader", "extensions.registry", "extensions.examples", "extensions.builtins", "compaction",
                     "virtual_models")),
    ("runtime", ("runtime",)),
    ("services the session owns", ("services", "compaction.controller", "extensions", "mcp", "commands")),
    ("session", ("agent_session",)),
    ("assembly", ("bootstrap", "sdk")),
    ("front ends", ("modes",)),
    ("command line", ("cli",)),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PKG.rglob("*.py")}


def _imports(path: Path) -> set[str]:
    """Every module named by an import statement anywhere in the file (relative ones resolved)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = {f"{base}.{alias.name}" for alias in node.names} & MODULES.keys()
            names.update(submodules)
            if len(submodules) < len(node.names):  # names defined in ``base`` itself
                names.add(base)
    return names


def _internal(name: str) -> str | None:
    """The package module an imported name lives in (None for third-party and stdlib names)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Each module's package imports; parsed on first use, not while every worker collects the suite."""
    return {m: {d for n in _imports(p) if (d := _internal(n)) is not None and d != m} for m, p in MODULES.items()}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
@pytest.mark.slow
def test_layer_imports_only_downward(layer: str) -> None:
    files = list((PKG / layer).rglob("*.py"))
    assert files, f"layer {layer} has no modules"
    bad = [
        f"{path.relative_to(PKG)} imports {name}"
        for path in files
        for name in _imports(path)
        if name.startswith(FORBIDDEN[layer])
    ]
    assert not bad, "\n".join(bad)


def _coding_level(module: str) -> int | None:
    relative = module.removeprefix("pi_coding_agent.coding").lstrip(".")
    best: tuple[int, int] | None = None  # (prefix length, level)
    for level, (_, prefixes) in enumerate(CODING_ORDER):
        for prefix in prefixes:
            if (relative == prefix or relative.startswith(prefix + ".")) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), level)
    return None if best is None else best[1]


def test_every_coding_module_has_a_place_in_the_order() -> None:
    unplaced = [m for m in MODULES if m.startswith("pi_coding_agent.coding.") and _coding_level(m) is None]
    assert not unplaced, "add these to CODING_ORDER in tests/test_layers.py:\n" + "\n".join(sorted(unplaced))


@pytest.mark.slow
def test_coding_modules_import_only_their_level_and_below() -> None:
    bad = []
    for module, deps in _graph().items():
        level = _coding_level(module) if module.startswith("pi_coding_agent.coding.") else None
        if level is None:
            continue
        for dep in deps:
            dep_level = _coding_level(dep) if dep.startswith("pi_coding_agent.coding.") else None
            if dep_level is not None and dep_level > level:
                bad.append(f"{module} ({CODING_ORDER[level][0]}) imports {dep} ({CODING_ORDER[dep_level][0]})")
    assert not bad, "\n".join(sorted(bad))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.slow
def test_no_import_cycles_anywhere() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


@pytest.mark.slow
def test_below_the_assembly_no_module_takes_the_command_line_options() -> None:
    """The runtime and the services it runs read ``SessionOptions``, which the assembly builds once:
    ``CliArgs`` stays with bootstrap, the SDK, the modes and the CLI."""
    assembly = next(level for level, (name, _) in enumerate(CODING_ORDER) if name == "assembly")
    bad = [
        module
        for module, path in MODULES.items()
        if module.startswith("pi_coding_agent.coding.") and module != "pi_coding_agent.coding.options"
        and (_coding_level(module) or 0) < assembly
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and any(alias.name == "CliArgs" for alias in node.names)
    ]
    assert not bad, "\n".join(sorted(bad))


def test_settings_are_read_through_their_typed_accessors() -> None:
    """One way in per setting: a property of ``Settings``. A ``settings.get("key")`` elsewhere
    bypasses its type check and default; only the ``/settings`` screen, which walks its own table
    of keys, reads by name."""
    allowed = {"coding/resources/settings.py", "coding/modes/interactive/settings_screen.py"}
    bad = [
        f"{path.relative_to(PKG)}:{number}"
        for path in PKG.rglob("*.py")
        if str(path.relative_to(PKG)) not in allowed
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"settings\.get\(", line)
    ]
    assert not bad, "\n".join(bad)
