"""Many workers on one study in PostgreSQL: finished trials per hour against the number of
workers, and what the storage and the sampler cost per trial.

    python benchmarks/distributed.py --storage postgresql+psycopg://postgres@127.0.0.1:5432/test

Part 1, for each N in --workers (default 1,2,4,8,16): a fresh study, N worker processes
(real `autotune.search.Search` loops: storage, heartbeats, TPE with constant liar, budget,
records) whose trial body is a fixed sleep (benchmarks/sleep_runner.py), run for
--seconds; the figure is the study's finished trials per hour, and each worker's seconds in
the sampler (ask and suggest, with the storage reads they make) and in the storage (records,
tells, heartbeats, budget checks), per trial, with the SQL statements and connections per
worker.

Part 2: TPE's ask (+ suggest) time against the number of finished trials of the study
(--history, default 100,1000), on the same storage and in memory.

Writes benchmarks/results/distributed_<storage>_<cores>core.md and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODEL = str(HERE / "models" / "tiny_mlp.py")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", required=True)
    parser.add_argument("--workers", default="1,2,4,8,16")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window per N")
    parser.add_argument("--trial-seconds", type=float, default=2.0)
    parser.add_argument("--history", default="100,1000")
    parser.add_argument("--worker", metavar="STUDY", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _worker(args)
    rows = [_point(args, int(n)) for n in args.workers.split(",")]
    history = [_sampler_cost(args.storage, int(n)) for n in args.history.split(",")]
    report = _report(args, rows, history)
    out = HERE / "results" / f"distributed_{_slug(args.storage)}_{os.cpu_count()}core.md"
    out.write_text(report)
    print(report)
    return 0


def _settings() -> Any:
    import torch

    from autotune.settings import StudySettings
    from autotune.space import load_space

    space = load_space("cpu", "cpu")
    return StudySettings(
        model_path=MODEL, device="cpu", space=space.to_dict(), space_hash=space.content_hash(),
        torch_version=torch.__version__, scope="whole", trials=1_000_000, finalists=0,
    )  # fmt: skip


def _point(args: argparse.Namespace, workers: int) -> dict[str, Any]:
    """N workers for --seconds on a fresh study; the study's finished trials per hour."""
    from autotune.records import RecordStore
    from autotune.search import Search, SearchRequest

    study = f"bench-{workers}-{uuid.uuid4().hex[:6]}"
    Search(SearchRequest(study, args.storage, _settings())).prepare()  # create it, queue baselines
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(HERE)]))
    argv = [sys.executable, __file__, "--storage", args.storage, "--worker", study, "--seconds",
            str(args.seconds), "--trial-seconds", str(args.trial_seconds)]  # fmt: skip
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(workers)]  # fmt: skip
    connections = _peak_connections(args.storage, procs)
    stats = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    with RecordStore(args.storage) as store:
        records = store.trials(study)
    # A configuration proposed again reuses the recorded result (a duplicate, no sleep): the
    # throughput figure counts only the trials that ran their body.
    measured = sum(1 for r in records if r.duplicate_of is None)
    window = statistics.median(s["wall_s"] for s in stats)
    trials = sum(s["trials"] for s in stats) or 1
    return {
        "workers": workers,
        "finished": len(records),
        "measured": measured,
        "per_hour": measured / window * 3600,
        "sampler_s": sum(s["ask"] + s["suggest"] for s in stats) / trials,
        "storage_s": sum(s["database"] for s in stats) / trials,
        "statements": sum(s["statements"] for s in stats) / trials,
        "connections": connections / workers if connections else None,
    }


def _worker(args: argparse.Namespace) -> int:
    """One worker process: the study's search loop with a sleep for a trial body."""
    import sqlalchemy as sa
    from sleep_runner import SleepRunner

    from autotune._deadline import Deadline
    from autotune.search import Search, SearchRequest

    statements = 0

    def count(*_: object) -> None:
        nonlocal statements
        statements += 1

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", count)
    request = SearchRequest(args.worker, args.storage, None)
    search = Search(request, SleepRunner(args.trial_seconds))
    request.deadline = Deadline.after(args.seconds)  # the window starts with the loop
    started = time.monotonic()
    search.run()
    session = search.session
    mine = sum(1 for r in session.records.trials(args.worker)
               if r.environment.get("worker", {}).get("id") == session.worker_id)  # fmt: skip
    print(json.dumps({"trials": mine, "wall_s": time.monotonic() - started,
                      "ended": search.ended_text,
                      "statements": statements, **{k: session.seconds.get(k, 0.0)
                      for k in ("ask", "suggest", "database")}}))  # fmt: skip
    return 0


def _peak_connections(storage: str, procs: list[subprocess.Popen[str]]) -> int | None:
    """The most connections PostgreSQL had open to this database while the workers ran."""
    import sqlalchemy as sa

    if not storage.startswith("postgresql"):
        for proc in procs:
            proc.wait()
        return None
    engine = sa.create_engine(storage, pool_size=1)
    query = sa.text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
    peak = 0
    while any(p.poll() is None for p in procs):
        with engine.connect() as conn:
            peak = max(peak, int(conn.execute(query).scalar_one()) - 1)
        time.sleep(0.5)
    engine.dispose()
    return peak


def _sampler_cost(storage: str, history: int) -> dict[str, Any]:
    """Seconds of TPE's ask + suggest with ``history`` finished trials in the study, on the
    storage and in memory (the sampler alone)."""
    return {
        "history": history,
        "storage_s": _time_asks(storage, history),
        "memory_s": _time_asks(None, history),
    }


def _time_asks(storage: str | None, history: int, asks: int = 10) -> float:
    import optuna

    from autotune.space import load_space

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = load_space("cpu", "cpu")
    name = f"tpe-{history}-{uuid.uuid4().hex[:6]}"
    fill = optuna.create_study(study_name=name, storage=storage,
                               sampler=optuna.samplers.RandomSampler(seed=0))  # fmt: skip
    for _ in range(history):
        trial = fill.ask()
        config = space.suggest(trial)
        fill.tell(trial, 0.8 + 0.8 * (hash(config.config_hash()) % 256) / 255)
    tpe = optuna.samplers.TPESampler(seed=0, constant_liar=True)
    study = optuna.load_study(study_name=name, storage=storage or fill._storage, sampler=tpe)
    spent = []
    for _ in range(asks):
        started = time.perf_counter()
        trial = study.ask()
        space.suggest(trial)
        spent.append(time.perf_counter() - started)
        study.tell(trial, 1.0)
    return statistics.median(spent)


def _report(
    args: argparse.Namespace, rows: list[dict[str, Any]], history: list[dict[str, Any]]
) -> str:
    import optuna
    import sqlalchemy as sa
    import torch

    from autotune.records import redact_url

    base = rows[0]["per_hour"] / rows[0]["workers"]
    lines = [
        f"# Many workers on one study ({_slug(args.storage)})",
        "",
        f"`python benchmarks/distributed.py --storage {redact_url(args.storage)} --workers "
        f"{args.workers} --seconds {args.seconds:g} --trial-seconds {args.trial_seconds:g}`",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, torch {torch.__version__}, optuna "
        f"{optuna.__version__}, SQLAlchemy {sa.__version__}; the storage on the same machine. "
        f"Trial body: a {args.trial_seconds:g} s sleep (benchmarks/sleep_runner.py); the "
        "search space: the built-in `cpu` space; TPE with constant liar. Finished trials "
        "include duplicates (a configuration proposed again reuses the recorded result "
        "without running); the rates count only measured trials, over the median worker's "
        "window (from its first ask to its timeout).",
        "",
        "| workers | finished trials | of them measured | measured per hour | vs N x one worker "
        "| sampler s/trial | storage s/trial | SQL statements/trial | connections/worker |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        efficiency = r["per_hour"] / (base * r["workers"])
        conns = "-" if r["connections"] is None else f"{r['connections']:.1f}"
        lines.append(
            f"| {r['workers']} | {r['finished']} | {r['measured']} | {r['per_hour']:,.0f} | "
            f"{efficiency:.2f} | "
            f"{r['sampler_s']:.3f} | {r['storage_s']:.3f} | {r['statements']:.0f} | {conns} |"
        )
    lines += [
        "",
        "TPE's ask + suggest with N finished trials in the study (median of 10 asks):",
        "",
        "| finished trials | on the storage | in memory |",
        "|---|---|---|",
    ]
    for h in history:
        lines.append(f"| {h['history']:,} | {h['storage_s']:.3f} s | {h['memory_s']:.3f} s |")
    return "\n".join(lines) + "\n"


def _slug(storage: str) -> str:
    return storage.split(":", 1)[0].split("+", 1)[0]


if __name__ == "__main__":
    sys.exit(main())
