"""Studies as files: `autotune search STUDY.toml` runs the study the file defines; options on
the command line override it; a bad file is one error listing every problem."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import scripted

from autotune.cli import _study_file, build_parser, main, parse
from autotune.records import RecordStore

STUDIES = Path(__file__).parents[2] / "studies"


def _study(tmp_path: Path, model_file, space_file, **extra: object) -> Path:
    lines = [
        f'model = "{Path(model_file("tiny")).name}"',
        f'space = "{space_file("aot_eager")}"',
        "trials = 2", 'device = "cpu"', "finalists = 0", "measure_seconds = 0.2",
        'scope = "whole"', 'study = "from-file"', "seed = 5",
        f'storage = "sqlite:///{tmp_path}/t.db"', f'out = "{tmp_path}/best.json"',
        *(f"{k} = {v}" for k, v in extra.items()),
    ]  # fmt: skip
    models = tmp_path / "models"  # the model path is relative to the study file
    models.mkdir()
    shutil.copy(model_file("tiny"), models / "tiny.py")
    path = models / "study.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_study_file_runs_its_study_and_the_command_line_overrides_it(
    tmp_path, model_file, space_file, monkeypatch, capsys
):
    scripted.use(monkeypatch, scripted.by_config())
    path = _study(tmp_path, model_file, space_file)
    assert main(["search", str(path), "--trials", "3"]) == 0

    with RecordStore(f"sqlite:///{tmp_path}/t.db") as store:
        settings = store.study_settings("from-file")
        searched = [r for r in store.trials("from-file") if r.baseline is None]
    assert settings is not None and settings["trials"] == 3 and settings["seed"] == 5
    assert settings["model_path"] == str(tmp_path / "models" / "tiny.py")
    assert len(searched) >= 3
    assert (tmp_path / "best.json").exists()


def test_every_problem_of_a_study_file_is_listed_at_once(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text('model = 3\ntrails = 2\nallow_numerics_changes = "yes"\n')

    with pytest.raises(SystemExit) as info:
        main(["search", str(path)])

    err = " ".join(capsys.readouterr().err.split())
    assert info.value.code == 2 and "has 3 problem(s)" in err
    assert "unknown key `trails` (did you mean `trials`?)" in err
    assert "`allow_numerics_changes` must be true or false, got 'yes'" in err
    assert "`model` must be the model file's path" in err


def test_a_value_out_of_range_is_refused_like_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text('model = "m.py"\nfinalists = -1\n')

    with pytest.raises(SystemExit) as info:
        main(["search", str(path)])

    assert (
        info.value.code == 2 and "`finalists` must be 0 or more, got -1" in capsys.readouterr().err
    )


@pytest.mark.parametrize("name", ["convnet", "mlp", "bert_tiny"])
def test_the_shipped_study_files_name_their_model_and_valid_options(name):
    model, values = _study_file.read(STUDIES / f"{name}.toml")

    assert model == str(STUDIES / f"{name}.py") and Path(model).exists()
    assert values["device"] == "cpu" and values["study"] == f"{name}-cpu"
    parser, commands = build_parser()
    args = parse(parser, commands, ["search", str(STUDIES / f"{name}.toml")])
    assert (args.model, args.study, args.seed) == (model, f"{name}-cpu", 0)
