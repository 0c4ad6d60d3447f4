"""What a model file imports, read from its syntax tree and imported ahead of it (the preloaded
trial host's): never its own code, and never a module that stands beside it."""

from __future__ import annotations

import sys
import textwrap

from autotune.workload import found_beside, preload
from autotune.workload._preload import installed_imports

MODEL = textwrap.dedent("""
    import sys
    import json as js
    import xml.dom
    from email import message, nosuchname
    from . import sibling
    from beside import helper
    import torch

    raise SystemExit("the file itself is never run")

    def get_model(device):
        from wave import Wave_read  # inside a function, as get_model often imports
        return js.loads, js.dumps, torch.nn.Linear, Wave_read
""")


def test_the_top_level_absolute_imports_and_the_names_read_off_them(tmp_path):
    model = tmp_path / "model.py"
    model.write_text(MODEL)
    (tmp_path / "beside.py").write_text("helper = 1\n")

    assert installed_imports(model) == [
        ("sys", ()),
        ("json", ("dumps", "loads")),
        ("xml.dom", ()),
        ("email", ("message", "nosuchname")),
        ("torch", ("nn",)),
        ("wave", ("Wave_read",)),
    ]


def test_a_file_that_cannot_be_parsed_or_read_has_no_imports(tmp_path):
    (tmp_path / "broken.py").write_text("import (\n")
    assert installed_imports(tmp_path / "broken.py") == []
    assert installed_imports(tmp_path / "missing.py") == []


def test_preload_imports_them_and_skips_what_fails(tmp_path, monkeypatch):
    model = tmp_path / "model.py"
    model.write_text("import colorsys\nfrom email import message, nosuchname\nimport nosuchpkg\n")
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)

    assert preload(model) == ["colorsys"]  # email has no submodule nosuchname: skipped
    assert "colorsys" in sys.modules and "email.message" in sys.modules


def test_a_module_or_package_beside_the_file_is_found_there(tmp_path):
    model = tmp_path / "model.py"
    (tmp_path / "utils.py").write_text("")
    (tmp_path / "pkg").mkdir()
    assert found_beside(model, "utils") and found_beside(model, "pkg.sub")
    assert not found_beside(model, "json")
