"""The documentation site: its generated page is the generator's output today, and its nav
holds every page (CI builds it with `mkdocs build --strict`, which checks links and anchors)."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cli_reference():
    spec = importlib.util.spec_from_file_location(
        "cli_reference", ROOT / "docs" / "cli_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("cli_reference", module)
    spec.loader.exec_module(module)
    return module


def test_the_cli_page_is_the_generators_output(monkeypatch):
    for key in ("AUTOTUNE_MODEL", "AUTOTUNE_STORAGE"):  # what a deployment may have set
        monkeypatch.setenv(key, "/somewhere/else")
    page = (ROOT / "docs" / "cli.md").read_text()
    assert _cli_reference().reference() == page, "run: python docs/cli_reference.py > docs/cli.md"


def test_the_generator_leaves_the_environment_as_it_found_it(monkeypatch):
    monkeypatch.setenv("AUTOTUNE_MODEL", "model.py")
    _cli_reference().reference()
    assert os.environ["AUTOTUNE_MODEL"] == "model.py"


def test_the_nav_lists_every_page_once():
    nav = re.findall(r"^\s+- .*?\b([\w-]+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert sorted(nav) == pages
