"""The finalists' round is one process's at a time: a holder that died on this machine is taken
over at once, and one elsewhere is named with when its claim lapses (issue 41, item 9: a resume
after a SIGKILL was refused for two minutes by a message that suggested itself)."""

from __future__ import annotations

from pathlib import Path

import scripted

from autotune import _scratch
from autotune.cli import main
from autotune.decide._finalize import FINALISTS_CLAIM
from autotune.records import RecordStore

NEVER_A_PID = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1


def _study(tmp_path, model_file, space_file, monkeypatch, capsys) -> list[str]:
    scripted.use(monkeypatch, scripted.by_config())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    argv = ["--storage", f"sqlite:///{tmp_path}/s.db", "--study", "s", "--device", "cpu"]
    assert main(["search", model_file("tiny"), *argv, "--space", space_file("aot_eager"),
                 "--scope", "whole", "--trials", "2", "--finalists", "1", "--no-prune",
                 "--out", str(tmp_path / "best.json")]) == 0  # fmt: skip
    capsys.readouterr()
    return argv


def test_a_round_held_by_a_process_that_died_here_is_taken_over_at_once(
    tmp_path, model_file, space_file, monkeypatch, capsys
):
    argv = _study(tmp_path, model_file, space_file, monkeypatch, capsys)
    dead = f"{_scratch.process_owner().split(':')[0]}:{NEVER_A_PID}:12345"
    with RecordStore(argv[1]) as store:
        assert store.claim("s", FINALISTS_CLAIM, dead, 120)
    code = main(["finalize", *argv, "--model", model_file("tiny"), "--remeasure"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"finalists: took over the round of {dead}, which is gone" in out


def test_a_round_held_elsewhere_is_refused_saying_when_its_claim_lapses(
    tmp_path, model_file, space_file, monkeypatch, capsys
):
    argv = _study(tmp_path, model_file, space_file, monkeypatch, capsys)
    with RecordStore(argv[1]) as store:
        assert store.claim("s", FINALISTS_CLAIM, "gpu-node-7.pidns1:4242:99", 120)
    assert main(["finalize", *argv, "--model", model_file("tiny"), "--remeasure"]) == 2
    err = capsys.readouterr().err
    assert "Another process (gpu-node-7.pidns1:4242:99) is measuring the finalists" in err
    assert "its claim lapses at " in err and "UTC ($AUTOTUNE_GRACE_S after" in err
