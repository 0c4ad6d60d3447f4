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
    assert script.main(root, ratchet=0) == 0
    assert "settings: 3, each declared once" in capsys.readouterr().out


def test_every_second_declaration_is_named_with_its_line(tmp_path, capsys):
    script = _script()
    assert script.main(_root(tmp_path, second=SECOND), ratchet=0) == 1
    err = capsys.readouterr().err
    assert "autotune/second.py:6: Spec.workload declares a default of its own" in err
    assert "autotune/second.py:7: Spec.trials declares a default of its own" in err
    assert "autotune/second.py:10: argparse declares --trials again" in err
    assert "autotune/second.py:12: a settings-table row outside the table" in err
    assert "autotune/second.py:13: STORED_RULES holds a rule for the setting 'prune'" in err


CARRIED = """
from dataclasses import dataclass

@dataclass
class Spec:
    workload: str
    trials: int
    prune: bool
    width: int = 3
"""


def test_a_field_restated_by_hand_fails_with_or_without_a_default(tmp_path, capsys, monkeypatch):
    """A dataclass carrying settings restates them by hand, defaults or none: the count may
    only fall, and a count below the ratchet asks for the ratchet to be lowered."""
    script = _script()
    monkeypatch.setattr(script, "CARRIES", 3)
    root = _root(tmp_path, carried=CARRIED, second=SECOND)
    assert script.restated(root, script.table(root)) == [
        "autotune/carried.py:6: Spec.workload",
        "autotune/carried.py:7: Spec.trials",
        "autotune/carried.py:8: Spec.prune",
    ]  # SECOND's Spec has two: a coincidence of names, not a carrier
    (root / "autotune" / "second.py").unlink()
    assert script.main(root, ratchet=2) == 1
    assert "3 fields restated by hand, RESTATED says 2: derive the new one" in (
        capsys.readouterr().err
    )
    assert script.main(root, ratchet=4) == 1
    assert "lower RESTATED" in capsys.readouterr().err
    assert script.main(root, ratchet=3) == 0


def test_the_real_package_declares_each_setting_once():
    assert _script().problems(SCRIPT.parent.parent, _script().table(SCRIPT.parent.parent)) == []


def test_the_real_package_restates_no_more_fields_than_the_ratchet_allows():
    script = _script()
    root = SCRIPT.parent.parent
    assert len(script.restated(root, script.table(root))) == script.RESTATED
