""".ci/settings_once.py: each setting is declared once, in the settings table; a second
declaration anywhere in the package fails CI, its uses pass."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import docs_scripts

SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "settings_once.py"
TABLE = """
SEARCH_OPTIONS = (
    Option("--trials", default=20, field="trials", help="..."),
    Option("--workload", default="infer", field="workload", help="..."),
    Option("--no-prune", dest="prune", field="prune", help="..."),
)
"""
USES = """
from dataclasses import dataclass

@dataclass
class Settings:
    trials: int = DEFAULT["trials"]
    workload: str = DEFAULT["workload"]
    prune: bool = False  # "not given" declares nothing

def add_parser(p):
    add(p, "--trials", help="as search says it")
    p.add_argument("--width", type=int)

DATA = {"trials": 3, "workload": "train"}  # values, not rules
"""
SECOND = """
from dataclasses import dataclass

@dataclass
class Spec:
    workload: str = "infer"
    trials: int = 20

def add_parser(p):
    p.add_argument("--trials", type=int)

ROW = Option("--prune", help="again")
STORED_RULES = {"prune": check_flag}
"""


def _script() -> ModuleType:
    return docs_scripts.load("settings_once", docs_scripts.CI)


def _root(tmp_path: Path, **modules: str) -> Path:
    (tmp_path / "autotune" / "settings").mkdir(parents=True)
    (tmp_path / "autotune" / "settings" / "_table.py").write_text(TABLE)
    for name, text in modules.items():
        (tmp_path / "autotune" / f"{name}.py").write_text(text)
    return tmp_path


def test_the_table_is_read_and_uses_of_its_settings_pass(tmp_path, capsys):
    script = _script()
    root = _root(tmp_path, uses=USES)
    assert [s.flag for s in script.table(root)] == ["--trials", "--workload", "--no-prune"]
    assert script.main(root) == 0
    assert "settings: 3, each declared once" in capsys.readouterr().out


def test_every_second_declaration_is_named_with_its_line(tmp_path, capsys):
    script = _script()
    assert script.main(_root(tmp_path, second=SECOND)) == 1
    err = capsys.readouterr().err
    assert "autotune/second.py:6: Spec.workload declares a default of its own" in err
    assert "autotune/second.py:7: Spec.trials declares a default of its own" in err
    assert "autotune/second.py:10: argparse declares --trials again" in err
    assert "autotune/second.py:12: a settings-table row outside the table" in err
    assert "autotune/second.py:13: STORED_RULES holds a rule for the setting 'prune'" in err


def test_the_real_package_declares_each_setting_once():
    assert _script().problems(SCRIPT.parent.parent, _script().table(SCRIPT.parent.parent)) == []
