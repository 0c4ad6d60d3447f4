"""`autotune worker`: many processes share one study in a database, and survive each other.

The processes here are real (`python -m autotune.cli`); where a test is about orchestration,
the trial body is a scripted pause (tests/scripted.py through $AUTOTUNE_TRIAL_RUNNER), and
heartbeats are short ($AUTOTUNE_HEARTBEAT_S=1, $AUTOTUNE_GRACE_S=3) so that a dead worker is
found in seconds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import postgres
import pytest
import scripted
from procs import alive, descendants, wait_for

import autotune
from autotune.cli import main
from autotune.records import RecordStore

ROOT = Path(__file__).parents[2]
TESTS = ROOT / "tests"
RUNNING = optuna.trial.TrialState.RUNNING
COMPLETE = optuna.trial.TrialState.COMPLETE


def env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join([str(ROOT), str(TESTS)])
    base = dict(os.environ, PYTHONUNBUFFERED="1", AUTOTUNE_HEARTBEAT_S="1",
                AUTOTUNE_GRACE_S="3", PYTHONPATH=path)  # fmt: skip
    return {**base, **extra}


def autotune_cli(*argv: str, environ: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "autotune.cli", *argv], env=environ, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def scripted_env(pause_s: float) -> dict[str, str]:
    return env(AUTOTUNE_TRIAL_RUNNER="scripted:make", AUTOTUNE_SCRIPTED_PAUSE_S=str(pause_s))


def create(storage: str, model: str, space: str, trials: int, out: Path, *extra: str,
           environ: dict[str, str]) -> subprocess.Popen[str]:  # fmt: skip
    return autotune_cli(
        "search", model, "--storage", storage, "--study", "w", "--space", space,
        "--scope", "whole", "--device", "cpu", "--trials", str(trials), "--out", str(out),
        *extra, environ=environ,
    )  # fmt: skip


def worker(storage: str, environ: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    return autotune_cli("worker", "--study", "w", "--storage", storage, *extra, environ=environ)


def finish(proc: subprocess.Popen[str], timeout: float = 300) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def check_study(storage: str, budget: int, processes: int) -> list:
    """The budget measured (overshot by at most one trial per process; a duplicate proposal
    reuses a result and does not count), nothing RUNNING, no configuration measured twice, and
    autotune's rows and Optuna's trials agree trial by trial."""
    study = optuna.load_study(study_name="w", storage=storage)
    with RecordStore(storage) as store:
        records = store.trials("w")
    assert [t.number for t in study.trials if t.state == RUNNING] == []
    searched = [r for r in records if r.baseline is None and r.duplicate_of is None]
    states = [(t.number, t.state.name) for t in study.trials]
    assert budget <= len(searched) <= budget + processes - 1, f"{states} {len(searched)}"
    assert len({r.config_hash for r in searched}) == len(searched)
    complete = {t.number for t in study.trials if t.state == COMPLETE}
    assert complete == {r.trial_number for r in records}
    return records


@pytest.mark.postgres
def test_search_and_two_workers_finish_the_budget_while_one_is_killed_mid_trial(
    postgres_url, tmp_path, model_file, space_file, monkeypatch
):
    """The done-when of distributed studies: real trial processes (aot_eager), PostgreSQL,
    a budget of 8, one worker SIGKILLed while it runs a trial. The study compiles into a cache
    of its own, as a real study does: with the suite's shared one, the full run once saw the
    search spend the budget before a worker ran a trial to kill."""
    monkeypatch.delenv("AUTOTUNE_CACHE_DIR", raising=False)
    environ = env()
    out = tmp_path / "best_config.json"
    search = create(postgres_url, model_file("slow"), space_file("workers"), 8, out,
                    "--measure-seconds", "3", "--finalists", "1", environ=environ)  # fmt: skip
    workers = [worker(postgres_url, environ, "--model", model_file("slow")) for _ in range(2)]
    try:
        killed, orphans = _kill_mid_trial(postgres_url, workers[0])
        code, printed = finish(search)
        assert code == 0, printed
        code, printed = finish(workers[1])
        assert code == 0, printed
        assert workers[0].wait() == -signal.SIGKILL
    finally:
        for proc in (search, *workers):
            proc.kill()
    records = check_study(postgres_url, 8, processes=3)
    study = optuna.load_study(study_name="w", storage=postgres_url)
    failed = [t for t in study.trials if t.number == killed]
    assert failed and failed[0].state == optuna.trial.TrialState.FAIL
    # The killed worker's configuration was measured by another process, and both survivors
    # measured trials (the killed one may have died before it finished any).
    measured = [r for r in records if r.duplicate_of is None]
    assert failed[0].user_attrs["autotune.key"] in {r.config_hash for r in measured}
    killed_id = failed[0].user_attrs["autotune.worker"]
    ran_on = {r.environment["worker"]["id"] for r in measured if "worker" in r.environment}
    assert len(ran_on - {killed_id}) == 2
    assert autotune.load(out).source["study"] == "w"
    assert orphans, "the killed worker had no trial processes"
    assert wait_for(lambda: not alive(orphans), 30), "the killed worker's trials outlived it"


def _kill_mid_trial(storage: str, proc: subprocess.Popen[str]) -> tuple[int, set[int]]:
    """SIGKILLs ``proc`` while it runs a search trial; returns that trial's number and the
    processes it had started (its trial host and the trial)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        time.sleep(0.3)
        try:
            with RecordStore(storage) as store:
                ids = [w.id for w in store.workers("w") if w.pid == proc.pid]
            study = optuna.load_study(study_name="w", storage=storage)
        except Exception:  # noqa: BLE001 - the study is being created
            continue
        # Mid-trial: a search trial of that worker whose configuration is drawn (its key is
        # set just before the trial process runs it), not one between ask and suggest.
        mine = [t for t in study.get_trials(states=(RUNNING,))
                if ids and t.user_attrs.get("autotune.worker") == ids[0]
                and "autotune.baseline" not in t.user_attrs
                and "autotune.key" in t.user_attrs]  # fmt: skip
        # Its key is set a few database reads before the trial process starts: on a loaded
        # machine a poll can fall between the two, so the kill waits for the processes too.
        started = descendants(proc.pid) if mine else set()
        if started:
            proc.send_signal(signal.SIGKILL)
            return mine[0].number, started
        if proc.poll() is not None:
            raise AssertionError(f"the worker ended first: {proc.communicate()[0]}")
    raise AssertionError("the worker never ran a search trial")


@pytest.mark.skipif(not postgres.can_run_a_cluster(), reason="needs initdb and root")
def test_workers_ride_out_a_database_restart(tmp_path, model_file, space_file):
    environ = scripted_env(pause_s=1.0)
    with postgres.throwaway_cluster() as cluster:
        made = create(cluster.url, model_file("tiny"), space_file("workers"), 10,
                      tmp_path / "b.json", "--no-worker", environ=environ)  # fmt: skip
        code, out = finish(made)
        assert code == 0 and "no trial ran (--no-worker)" in out, out
        workers = [worker(cluster.url, environ, "--model", model_file("tiny")) for _ in range(2)]
        try:
            assert wait_for(lambda: _recorded(cluster.url) >= 3, 120)
            cluster.stop()  # a crash: connections cut, then refused while it is down
            time.sleep(4)  # longer than a trial, so every worker meets the outage
            cluster.start()
            before = _recorded(cluster.url)
            outs = [finish(w) for w in workers]
        finally:
            for proc in workers:
                proc.kill()
        assert [code for code, _ in outs] == [0, 0], "\n\n".join(text for _, text in outs)
        assert any("the database is unreachable" in text for _, text in outs)
        assert _recorded(cluster.url) > before  # the workers carried on after it came back
        check_study(cluster.url, 10, processes=2)


def _recorded(storage: str) -> int:
    try:
        with RecordStore(storage) as store:
            return len(store.trials("w"))
    except Exception:  # noqa: BLE001 - not created yet
        return 0


def test_sigterm_fails_the_running_trial_and_the_worker_exits_0(tmp_path, model_file,
                                                                space_file):  # fmt: skip
    storage = f"sqlite:///{tmp_path}/w.db"
    environ = scripted_env(pause_s=60.0)
    assert finish(create(storage, model_file("tiny"), space_file("aot_eager"), 4,
                         tmp_path / "b.json", "--no-worker", environ=environ))[0] == 0  # fmt: skip
    proc = worker(storage, environ, "--model", model_file("tiny"))
    try:
        assert wait_for(lambda: _running(storage), 60), "no trial started"
        proc.send_signal(signal.SIGTERM)
        code, out = finish(proc, timeout=30)
    finally:
        proc.kill()
    assert code == 0, out
    assert "autotune: terminated; the running trial was failed in the study" in out
    study = optuna.load_study(study_name="w", storage=storage)
    assert [t.state for t in study.trials if "autotune.baseline" in t.user_attrs][0] == (
        optuna.trial.TrialState.FAIL
    )
    assert not _running(storage)


def _running(storage: str) -> bool:
    study = optuna.load_study(study_name="w", storage=storage)
    return bool(study.get_trials(states=(RUNNING,)))


def test_workers_on_one_sqlite_file_never_measure_a_configuration_twice(
    tmp_path, model_file, space_file
):
    """Two workers on a space of 4 configurations with a budget of 10: each configuration is
    measured once; the other proposals reuse its result (or wait for it, while it runs)."""
    storage = f"sqlite:///{tmp_path}/w.db"
    environ = scripted_env(pause_s=0.5)
    assert finish(create(storage, model_file("tiny"), space_file("aot_eager"), 10,
                         tmp_path / "b.json", "--no-worker", environ=environ))[0] == 0  # fmt: skip
    tiny = model_file("tiny")
    outs = [finish(p) for p in [worker(storage, environ, "--model", tiny) for _ in range(2)]]
    assert [code for code, _ in outs] == [0, 0], outs
    with RecordStore(storage) as store:
        records = store.trials("w")
    measured = [r.config_hash for r in records if r.duplicate_of is None and r.baseline is None]
    assert len(measured) == len(set(measured)) <= 4
    assert {r.environment["worker"]["id"] for r in records if r.duplicate_of is None} == {1, 2}


def test_no_worker_creates_the_study_and_a_worker_needs_only_its_name(
    tmp_path, model_file, space_file, capsys, monkeypatch
):
    storage = f"sqlite:///{tmp_path}/w.db"
    tiny = model_file("tiny")
    runs = scripted.use(monkeypatch, scripted.by_config(default=1.5))
    assert main(["search", model_file("tiny"), "--storage", storage, "--study", "w",
                 "--space", space_file("aot_eager"), "--scope", "whole", "--device", "cpu",
                 "--trials", "2", "--seed", "5", "--no-worker"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert runs == [] and f"autotune worker --study w --storage {storage} --model " in out
    assert main(["worker", "--study", "w", "--storage", storage]) == 2  # names no model file
    assert "pass --model PATH" in capsys.readouterr().err and runs == []
    assert main(["worker", "--study", "w", "--storage", storage, "--model", tiny]) == 0
    printed = capsys.readouterr().out
    assert "worker for study 'w' (0 of 2 trials done)" in printed
    assert printed.rstrip().endswith("worker done: budget met")
    assert [spec.config is None for spec in runs[:1]] == [True]  # the eager baseline first
    assert {spec.seed for spec in runs} == {5}  # the study's settings, not the defaults
    assert main(["finalize", "--study", "w", "--storage", storage, "--model", tiny,
                 "--out", str(tmp_path / "b.json")]) == 0  # fmt: skip
    assert autotune.load(tmp_path / "b.json").workload["seed"] == 5


def test_a_worker_without_its_study_or_with_another_model_file_is_refused(
    tmp_path, model_file, space_file, capsys, monkeypatch
):
    storage = f"sqlite:///{tmp_path}/w.db"
    scripted.use(monkeypatch, scripted.by_config())
    assert main(["worker", "--study", "w", "--storage", storage, "--timeout", "1"]) == 2
    # workers may start first: it waited its second (tests/search_tests/test_open.py)
    assert "There is no study 'w' in this storage to join" in capsys.readouterr().err
    model = tmp_path / "m.py"
    model.write_bytes(Path(model_file("tiny")).read_bytes())
    assert main(["search", str(model), "--storage", storage, "--study", "w", "--space",
                 space_file("aot_eager"), "--device", "cpu", "--no-worker"]) == 0  # fmt: skip
    model.write_text(model.read_text() + "\nprint('changed')\n")
    capsys.readouterr()
    assert main(["worker", "--study", "w", "--storage", storage, "--model", str(model)]) == 2
    err = capsys.readouterr().err
    assert "is not the one study 'w' was created with" in err and "Traceback" not in err
    assert main(["worker", "--study", "w", "--storage", storage, "--model", str(model),
                 "--trust-model-path", "--timeout", "0.001"]) == 0  # fmt: skip


def test_a_password_in_the_storage_url_is_never_printed(capsys, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_STORAGE", "postgresql+psycopg://tuner:s3cret@127.0.0.1:1/x")
    assert main(["worker", "--study", "w", "--timeout", "1"]) == 2
    err = capsys.readouterr().err
    assert "s3cret" not in err and "tuner:***@127.0.0.1:1/x" in err


def test_gpus_start_one_worker_process_per_gpu(tmp_path):
    """On this CPU-only machine each GPU's worker refuses (no CUDA), which shows they ran: one
    per GPU, their lines prefixed with it."""
    proc = autotune_cli("worker", "--study", "w", "--storage", f"sqlite:///{tmp_path}/w.db",
                        "--gpus", "0,3", environ=env())  # fmt: skip
    code, out = finish(proc, timeout=120)
    if "needs CUDA" not in out:
        pytest.skip("this machine has CUDA")
    assert code == 2
    assert {line.split("]")[0] + "]" for line in out.splitlines() if line.startswith("[gpu")} == {
        "[gpu 0]",
        "[gpu 3]",
    }


def test_each_gpus_worker_gets_the_command_line_less_gpus_and_device():
    from autotune.cli.worker import _without_gpus

    argv = ["worker", "--study", "w", "--gpus", "0,1", "--device=cuda:1", "--timeout", "9"]
    assert _without_gpus(argv) == ["worker", "--study", "w", "--timeout", "9"]
    assert _without_gpus(["worker", "--gpus=2", "--device", "cpu", "--jobs", "1"]) == [
        "worker",
        "--jobs",
        "1",
    ]


def test_a_quiet_worker_prints_only_that_it_is_done(
    tmp_path, model_file, space_file, capsys, monkeypatch
):
    storage = f"sqlite:///{tmp_path}/w.db"
    runs = scripted.use(monkeypatch, scripted.by_config())
    assert main(["search", model_file("tiny"), "--storage", storage, "--study", "w",
                 "--space", space_file("aot_eager"), "--scope", "whole", "--device", "cpu",
                 "--trials", "2", "--no-worker"]) == 0  # fmt: skip
    capsys.readouterr()
    tiny = model_file("tiny")
    assert main(["worker", "--study", "w", "--storage", storage, "--model", tiny, "--quiet"]) == 0
    assert capsys.readouterr().out == "worker done: budget met\n" and len(runs) == 4


def test_with_out_the_worker_that_ends_the_study_writes_its_file(
    tmp_path, model_file, space_file, monkeypatch, capsys
):
    """create (--no-worker) -> worker --out: the worker runs the budget, then chooses the winner
    and writes the file as finalize would; a worker stopped by its timeout writes nothing."""
    scripted.use(monkeypatch, lambda s: scripted.ok(1.0 if s.config is None else 1.5))
    storage, out = f"sqlite:///{tmp_path}/a.db", tmp_path / "best.json"
    model = model_file("tiny")
    created = main(["search", model, "--storage", storage, "--study", "w", "--space",
                    space_file("aot_eager"), "--scope", "whole", "--device", "cpu", "--trials",
                    "2", "--finalists", "0", "--no-worker"])  # fmt: skip
    assert created == 0
    capsys.readouterr()
    argv = ["worker", "--study", "w", "--storage", storage, "--model", model, "--device", "cpu"]
    assert main([*argv, "--out", str(out), "--timeout", "0.001"]) == 0
    printed = capsys.readouterr().out
    assert "worker done: timeout; no file was written: eager is not measured yet" in printed
    assert not out.exists()
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Wrote" in printed and "worker done: budget met" in printed
    best = autotune.load(out)
    assert best.decision == "compile" and best.metrics["speedup_vs_eager"] == 1.5
    with RecordStore(storage) as store:
        assert store.claim_of("w", "best_config_file") is None  # released: a later run writes


def test_an_out_in_a_folder_that_does_not_exist_is_refused_before_any_trial(tmp_path, capsys):
    out = tmp_path / "missing" / "best.json"
    code = main(["worker", "--study", "w", "--storage", f"sqlite:///{tmp_path}/a.db",
                 "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--out" in err and "does not exist" in err and "Traceback" not in err


def test_each_gpus_worker_keeps_to_its_share_of_the_cores(monkeypatch):
    from autotune.cli import worker

    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(16)))
    shares = worker._core_shares(4)
    assert shares == [set(range(i * 4, i * 4 + 4)) for i in range(4)]
    assert worker._core_shares(2)[1] == set(range(8, 16))  # 8 each
    assert worker._core_shares(32) == [None] * 32  # fewer cores than GPUs: shared, as before
