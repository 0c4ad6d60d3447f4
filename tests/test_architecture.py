"""docs/architecture.md matches the tree: every package described and listed in its layout, the
import graph regenerated from the code; the README links to the layout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docs_scripts import load

ROOT = Path(__file__).resolve().parent.parent


def _architecture_module():
    pytest.importorskip("grimp")  # the dev extra (import-linter) brings it
    return load("architecture")


def _packages() -> set[str]:
    root = ROOT / "autotune"
    return {p.name for p in root.iterdir() if (p / "__init__.py").exists()}


def test_the_page_describes_every_package_and_its_layout_lists_it():
    page = (ROOT / "docs" / "architecture.md").read_text()
    layout = page.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    for name in _packages():
        shown = f"{name}/"
        assert f"**`{shown}`**" in page, f"docs/architecture.md does not describe {shown}"
        assert re.search(rf"^  {re.escape(shown)}\s", layout, re.M), f"the layout lacks {shown}"
    assert "](docs/architecture.md#layout)" in (ROOT / "README.md").read_text()


def test_the_graph_on_the_page_is_the_graph_of_the_code():
    architecture = _architecture_module()
    assert set(architecture.PACKAGES) == _packages()
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert architecture.mermaid() in page, "run: python docs/architecture.py"


# A package's private modules are its own: others import what its __init__ exports.
PRIVATE_REACH: set[str] = set()


def test_no_package_imports_another_packages_private_module():
    import ast

    found = set()
    for path in (ROOT / "autotune").rglob("*.py"):
        parts = path.relative_to(ROOT / "autotune").with_suffix("").parts
        package = parts[0] if len(parts) > 1 else None
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(
                "autotune."
            ):
                continue
            module = node.module.split(".")[1:]
            # from autotune.pkg._mod import x, and from autotune.pkg import _mod
            targets = [module] + [module + [a.name] for a in node.names if len(module) == 1]
            for target in targets:
                if len(target) >= 2 and target[1].startswith("_") and target[0] != package:
                    found.add(f"{'.'.join(parts)} -> {'.'.join(target[:2])}")
    assert found <= PRIVATE_REACH, sorted(found - PRIVATE_REACH)
    assert PRIVATE_REACH <= found, f"gone now, remove from PRIVATE_REACH: {PRIVATE_REACH - found}"
