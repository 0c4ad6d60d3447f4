"""A running trial's phase file: written whole, read back, never a trial's failure."""

from __future__ import annotations

from autotune.trials import TrialSpec
from autotune.trials._phase import read_phase, write_phase


def test_a_phase_written_is_read_back_and_replaced_whole(tmp_path):
    path = str(tmp_path / "trial-3.phase")
    assert read_phase(path) is None
    write_phase(path, "compiling")
    assert read_phase(path) == "compiling"
    write_phase(path, "measuring")
    assert read_phase(path) == "measuring"
    assert [p.name for p in tmp_path.iterdir()] == ["trial-3.phase"]  # no temporary file left


def test_a_phase_that_cannot_be_written_is_left_out(tmp_path):
    write_phase(str(tmp_path / "gone" / "trial-3.phase"), "compiling")  # raises nothing
    write_phase(None, "compiling")
    assert read_phase(str(tmp_path / "gone" / "trial-3.phase")) is None


def test_the_spec_carries_its_progress_path_through_json():
    spec = TrialSpec(
        model_path="m.py", device="cpu", config=None, progress_path="/tmp/phases/trial-3.phase"
    )
    assert TrialSpec.from_dict(spec.to_dict()) == spec
    assert (
        TrialSpec.from_dict(
            TrialSpec(model_path="m.py", device="cpu", config=None).to_dict()
        ).progress_path
        is None
    )
