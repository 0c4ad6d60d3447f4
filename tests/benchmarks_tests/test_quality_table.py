"""benchmarks/quality_table.py: a configuration's passes pool into one row, a busy machine is
waited out and then refused, and a refused run writes no table but keeps what it measured."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import quality_table  # noqa: E402


def _run(speedup: float | None, compile_s: float, status: str = "ok") -> dict:
    return {
        "status": status, "failure_kind": None if status == "ok" else "crash",
        "speedup": speedup, "q1": speedup and speedup - 0.1, "q3": speedup and speedup + 0.2,
        "compile_s": compile_s, "timing_s": 1.0, "wall_s": compile_s + 2, "code_hash": "c",
        "graphs": 1, "rounds": 10,
    }  # fmt: skip


def test_two_passes_pool_into_one_row():
    row = quality_table._row("h", {"x": 1}, "brief", [_run(2.0, 4.0), _run(2.4, 1.0)])
    assert row["status"] == "ok" and row["speedup"] == pytest.approx(2.2)
    assert (row["q1"], row["q3"]) == pytest.approx((1.9, 2.6))  # the widest quartiles
    assert (row["compile_s"], row["warm_compile_s"]) == (4.0, 1.0)  # cold, then warm
    assert row["code_hash"] == "c" and len(json.loads(row["runs"])) == 2


def test_a_configuration_that_failed_in_one_pass_failed():
    row = quality_table._row("h", {}, "b", [_run(2.0, 4.0), _run(None, 1.0, "failed")])
    assert row["status"] == "failed" and row["failure_kind"] == "crash"
    assert row["speedup"] is None


def test_the_machines_busy_share_is_a_fraction():
    assert 0.0 <= quality_table.busy_share(0.05) <= 1.0


def test_a_busy_machine_is_waited_out_then_refused(monkeypatch):
    shares = iter([0.9, 0.05])
    monkeypatch.setattr(quality_table, "busy_share", lambda: next(shares))
    monkeypatch.setattr(quality_table.time, "sleep", lambda s: None)
    log: list[float] = []
    quality_table.wait_for_quiet(0.15, 60, log)  # busy, then quiet: it waited
    assert log == [0.9, 0.05]
    monkeypatch.setattr(quality_table, "busy_share", lambda: 0.9)
    with pytest.raises(quality_table.NotQuiet, match="stayed 90% busy"):
        quality_table.wait_for_quiet(0.15, 0, [])


def _args(out: Path, space_file) -> argparse.Namespace:
    """The command line of a two-configuration table of the presets fixture space."""
    return argparse.Namespace(
        model="m.py", space=space_file("presets"), device="cpu", out=str(out), processes=2,
        measure_seconds=0.5, max_busy=0.15, quiet_wait=0.0, limit=2,
    )  # fmt: skip


def test_a_run_measured_under_load_writes_no_table(tmp_path, monkeypatch, space_file, capsys):
    def busy(max_busy, patience, log):
        raise quality_table.NotQuiet("the machine stayed 90% busy")

    monkeypatch.setattr(quality_table, "wait_for_quiet", busy)
    out = tmp_path / "t.parquet"
    args = _args(out, space_file)
    assert quality_table.measure(args) == 2
    assert not out.exists()
    assert "refused: the machine stayed 90% busy" in capsys.readouterr().err


class _Runner:
    """Stands in for the warm trial host: every trial 2.0x."""

    specs: list = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def run(self, spec):
        from autotune.trials import TrialResult

        _Runner.specs.append(spec)
        return TrialResult(
            status="ok", speedup_vs_eager=2.0, speedup_vs_eager_q1=1.9,
            speedup_vs_eager_q3=2.1, compile_time_s=1.0, code_hash="c", graphs=1, rounds=10,
            phases={"timing_s": 1.0},
        )  # fmt: skip


def test_a_stopped_run_resumes_where_it_stopped(tmp_path, monkeypatch, space_file):
    import pyarrow.parquet as pq

    import autotune.trials

    monkeypatch.setattr(autotune.trials, "PreloadedHostRunner", _Runner)
    quiet = iter([True, True, True, False])

    def wait(max_busy, patience, log):
        log.append(0.0)
        if not next(quiet, True):
            raise quality_table.NotQuiet("busy")

    monkeypatch.setattr(quality_table, "wait_for_quiet", wait)
    out = tmp_path / "t.parquet"
    args = _args(out, space_file)
    _Runner.specs = []
    assert quality_table.measure(args) == 2 and not out.exists()
    assert len(_Runner.specs) == 3  # the fourth trial found the machine busy
    assert quality_table.measure(args) == 0
    assert len(_Runner.specs) == 4  # only the trial not yet measured ran
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == 2 and all(len(json.loads(r["runs"])) == 2 for r in rows)
