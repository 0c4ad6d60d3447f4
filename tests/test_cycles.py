""".ci/cycles.py finds import cycles, deferred ones too, and only real ones: a package's
``__init__`` importing its modules, imports only type checkers see and a lazy ``__getattr__``
map are none."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import docs_scripts
import pytest

SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "cycles.py"


def _script() -> ModuleType:
    return docs_scripts.load("cycles", docs_scripts.CI)


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


# No cycle: an __init__ re-exporting its modules, siblings importing each other (through the
# package too), a relative import, an import only type checkers see, a lazy __getattr__ map.
ACYCLIC = {
    "pkg/__init__.py": "from pkg.sub import y\n",
    "pkg/base.py": "import os\n",
    "pkg/sub/__init__.py": (
        "import importlib\n"
        "from pkg.sub._y import y\n"
        "_NAMES = {'z': '_z'}\n"
        "def __getattr__(name):\n"
        "    return getattr(importlib.import_module(f'pkg.sub.{_NAMES[name]}'), name)\n"
    ),
    "pkg/sub/_y.py": "from pkg.sub import _z\nfrom . import _z as again\ny = 1\n",
    "pkg/sub/_z.py": (
        "from typing import TYPE_CHECKING\n"
        "from pkg import base\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.sub._y import y\n"
        "z = 2\n"
    ),
}


def test_a_package_without_cycles_passes(tmp_path, capsys):
    root = _package(tmp_path, ACYCLIC)
    assert _script().main([str(root)]) == 0
    assert capsys.readouterr().out == "import cycles: none\n"


def test_a_deferred_cycle_and_a_name_taken_from_the_own_package_fail(tmp_path, capsys):
    files = {
        **ACYCLIC,
        "pkg/a.py": "import pkg.b\n",
        "pkg/b.py": "def later():\n    from . import a\n    return a\n",
        # the __init__ imports _y, which takes a name from that __init__
        "pkg/sub/_y.py": "y = 1\ndef later():\n    from pkg.sub import z\n",
    }
    root = _package(tmp_path, files)
    assert _script().main([str(root)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "pkg.a -> pkg.b -> pkg.a",
        "pkg.sub -> pkg.sub._y -> pkg.sub",
    ]


@pytest.mark.parametrize(
    ("text", "cyclic"),
    [
        ("if TYPE_CHECKING:\n    import pkg.a\n", False),
        ("if typing.TYPE_CHECKING:\n    pass\nelse:\n    import pkg.a\n", True),
        ("def f():\n    class C:\n        def g(self):\n            import pkg.a\n", True),
        ("import importlib\nimportlib.import_module('pkg.a')\n", False),
    ],
)
def test_what_counts_as_an_import(tmp_path, text, cyclic):
    files = {"pkg/__init__.py": "", "pkg/a.py": "from pkg import b\n", "pkg/b.py": text}
    edges = _script().graph(_package(tmp_path, files))
    assert ("pkg.a" in edges["pkg.b"]) is cyclic
    assert _script().cycles(edges) == ([["pkg.a", "pkg.b", "pkg.a"]] if cyclic else [])
