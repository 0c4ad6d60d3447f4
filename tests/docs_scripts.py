"""The scripts under docs/ (architecture.py, cli_reference.py, examples.py), loaded by their
path as the tests of the docs read them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

DOCS = Path(__file__).resolve().parent.parent / "docs"


def load(name: str) -> ModuleType:
    """``docs/NAME.py`` as a module (loaded once per process)."""
    key = f"docs_script_{name}"  # never another module's name (examples/ is a folder too)
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module
