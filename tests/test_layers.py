"""The three layers only import downward: ai <- agent <- coding; the client imports none of them."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "src" / "pi_coding_agent"
FORBIDDEN = {
    "ai": ("pi_coding_agent.agent", "pi_coding_agent.coding", "pi_coding_agent.client"),
    "agent": ("pi_coding_agent.coding", "pi_coding_agent.client"),
    "client": ("pi_coding_agent.ai", "pi_coding_agent.agent", "pi_coding_agent.coding"),
}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
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
