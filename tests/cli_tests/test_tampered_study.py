"""A study's database row is data: someone holding only database credentials edits it, and no
worker imports another file or runs a program because of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import scripted
import sqlalchemy as sa

from autotune.cli import main
from autotune.settings import model_sha256


@pytest.fixture
def study(tmp_path, model_file, space_file, monkeypatch, capsys):
    """A study created with --no-worker, the trials it will run recorded by a script."""
    storage = f"sqlite:///{tmp_path}/w.db"
    runs = scripted.use(monkeypatch, scripted.by_config())
    assert main(["search", model_file("tiny"), "--storage", storage, "--study", "w",
                 "--space", space_file("aot_eager"), "--scope", "whole", "--device", "cpu",
                 "--trials", "2", "--no-worker"]) == 0  # fmt: skip
    capsys.readouterr()
    return storage, runs


def _tamper(storage: str, **changes: object) -> None:
    engine = sa.create_engine(storage)
    with engine.begin() as conn:
        text = conn.execute(sa.text("SELECT settings_json FROM autotune_studies")).scalar_one()
        settings = {**json.loads(text), **changes}
        conn.execute(
            sa.text("UPDATE autotune_studies SET settings_json = :s"), {"s": json.dumps(settings)}
        )
    engine.dispose()


def _evil(tmp_path: Path) -> Path:
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(tmp_path / 'imported')!r}, 'w').close()\n")
    return evil


@pytest.mark.parametrize("stored_hash", ["null", "its own"])
def test_a_row_pointing_at_another_file_makes_no_worker_run_it(
    study, tmp_path, model_file, capsys, stored_hash
):
    storage, runs = study
    evil = _evil(tmp_path)
    _tamper(storage, model_path=str(evil),
            model_sha256=None if stored_hash == "null" else model_sha256(evil))  # fmt: skip

    assert main(["worker", "--study", "w", "--storage", storage]) == 2
    assert "never runs a file because a database names it" in capsys.readouterr().err

    assert (
        main(["worker", "--study", "w", "--storage", storage, "--model", model_file("tiny")]) == 2
    )
    err = capsys.readouterr().err
    assert "records no SHA-256" in err or "is not the one study 'w' was created with" in err
    assert runs == [] and not (tmp_path / "imported").exists()


def test_a_worker_runs_the_file_its_operator_names_whatever_the_row_says(
    study, tmp_path, model_file, capsys
):
    storage, runs = study
    _tamper(storage, model_path=str(_evil(tmp_path)))  # the hash still the study's own

    assert (
        main(["worker", "--study", "w", "--storage", storage, "--model", model_file("tiny")]) == 0
    )

    assert runs and {spec.model_path for spec in runs} == {str(Path(model_file("tiny")))}


@pytest.mark.parametrize("opt_in", [False, True])
def test_a_stored_space_that_names_a_compiler_is_refused(study, tmp_path, model_file, capsys,
                                                         opt_in):  # fmt: skip
    """``inductor."cpp.cxx"`` in the row's space would make Inductor run that program as its C++
    compiler; an ``[unsafe]`` table in the row cannot opt in either."""
    storage, runs = study
    engine = sa.create_engine(storage)
    with engine.connect() as conn:
        stored = json.loads(
            conn.execute(sa.text("SELECT settings_json FROM autotune_studies")).scalar_one()
        )
    engine.dispose()
    space = stored["space"]
    space.setdefault("inductor", {})["cpp.cxx"] = [str(tmp_path / "prog")]
    if opt_in:
        space["unsafe"] = {"knobs": ["inductor.cpp.cxx"]}
    _tamper(storage, space=space)

    assert (
        main(["worker", "--study", "w", "--storage", storage, "--model", model_file("tiny")]) == 2
    )

    err = " ".join(capsys.readouterr().err.split())
    assert "inductor.cpp.cxx names a program or compiler that torch runs" in err
    if opt_in:
        assert "a space read from a database cannot" in err
    assert runs == [] and "Traceback" not in err


def test_finalize_never_writes_or_signs_a_row_edited_to_name_a_program(
    tmp_path, model_file, space_file, monkeypatch, capsys
):
    """Issue 41, item 1: a trial row whose config was edited to name a compiler, its speedup
    raised, became the file's config, signed with the operator's key; the knob registry ran
    only in the trial child, not where the entry is built."""
    storage = f"sqlite:///{tmp_path}/w.db"
    scripted.use(monkeypatch, scripted.by_config())
    argv = ["--storage", storage, "--study", "w", "--device", "cpu"]
    assert main(["search", model_file("tiny"), *argv, "--space", space_file("aot_eager"),
                 "--scope", "whole", "--trials", "2", "--finalists", "0",
                 "--out", str(tmp_path / "first.json")]) == 0  # fmt: skip
    evil = {"backend": "inductor", "mode": "default", "dynamic": None, "fullgraph": False,
            "options": {"cpp.cxx": [None, str(_evil(tmp_path))]}, "dynamo": {},
            "scope": {"compile": [""], "disable": []}}  # fmt: skip
    engine = sa.create_engine(storage)
    with engine.begin() as conn:
        number = conn.execute(sa.text(
            "SELECT trial_number FROM autotune_trials WHERE baseline IS NULL LIMIT 1"
        )).scalar_one()  # fmt: skip
        conn.execute(
            sa.text("UPDATE autotune_trials SET config_json = :c, speedup_vs_eager = 9.0, "
                    "speedup_vs_eager_q1 = 8.9, speedup_vs_eager_q3 = 9.1 "
                    "WHERE trial_number = :n"),
            {"c": json.dumps(evil), "n": number},
        )  # fmt: skip
    engine.dispose()
    capsys.readouterr()
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", "0123456789abcdef-operator")
    out = tmp_path / "best.json"
    code = main(["finalize", *argv, "--model", model_file("tiny"), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"The config of trial {number} of study 'w' sets knobs that autotune never takes" in err
    assert "options.cpp.cxx: names a program or compiler" in err and "nothing was written" in err
    assert not out.exists() and not (tmp_path / "imported").exists()
