"""The scripts under docs/ (architecture.py, cli_reference.py, examples.py) and .ci/
(cycles.py, settings_once.py), loaded by their path as their tests read them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

DOCS = Path(__file__).resolve().parent.parent / "docs"
CI = DOCS.parent / ".ci"


def load(name: str, folder: Path = DOCS) -> ModuleType:
    """``docs/NAME.py`` (or ``FOLDER/NAME.py``) as a module (loaded once per process)."""
    # Never another module's name (examples/ is a folder too).
    key = f"{folder.name.lstrip('.')}_script_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module
