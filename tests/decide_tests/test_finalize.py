"""The finalists' round is one process's at a time: a holder that died on this machine is taken
over at once, and one elsewhere is named with when its claim lapses (issue 41, item 9: a resume
after a SIGKILL was refused for two minutes by a message that suggested itself)."""

from __future__ import annotations

import threading
from pathlib import Path

import homes
import scripted

from autotune import _scratch
from autotune.cli import main
from autotune.decide._finalize import FINALISTS_CLAIM
from autotune.records import RecordStore

NEVER_A_PID = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1


def _study(tmp_path, model_file, space_file, monkeypatch, capsys) -> list[str]:
    scripted.use(monkeypatch, scripted.by_config())
    homes.fresh(monkeypatch, tmp_path)
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


def test_the_round_s_claim_beats_while_one_finalist_runs_longer_than_a_heartbeat(
    tmp_path, model_file, space_file, monkeypatch, capsys
):
    """A finalist's run may outlast the grace period (a large model's cold compile): the claim
    beats in the background, not only when a run ends, so no other host takes the round over
    mid-run."""
    argv = _study(tmp_path, model_file, space_file, monkeypatch, capsys)
    monkeypatch.setenv("AUTOTUNE_HEARTBEAT_S", "1")
    beats: list[object] = []

    def slow_finalist(spec):
        if spec.config is not None and "finalist-" in (spec.cache_dir or ""):
            with RecordStore(argv[1]) as store:
                first = store.claim_of("s", FINALISTS_CLAIM)
                for _ in range(100):  # until the claim beats during this run (10 s at most)
                    now = store.claim_of("s", FINALISTS_CLAIM)
                    if first and now and now.heartbeat_at > first.heartbeat_at:
                        beats.append(now.heartbeat_at)
                        break
                    threading.Event().wait(0.1)
        return scripted.by_config()(spec)

    scripted.use(monkeypatch, slow_finalist)
    assert main(["finalize", *argv, "--model", model_file("tiny"), "--remeasure"]) == 0
    assert beats  # the claim was beaten while a finalist ran
    with RecordStore(argv[1]) as store:
        assert store.claim_of("s", FINALISTS_CLAIM) is None  # released at the end
