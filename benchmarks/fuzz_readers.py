"""Fuzzes the readers of files and rows autotune is handed (the best-config reader, the space
and study TOML readers, the settings-row reader) for a fixed time each, coverage-guided.

    python benchmarks/fuzz_readers.py [--minutes 10] [--readers best_config,space,...]

atheris (libFuzzer) drives the Hypothesis tests of ``tests/fuzz_tests/test_readers.py``
through ``test.hypothesis.fuzz_one_input``: libFuzzer mutates the bytes Hypothesis draws its
structured inputs from (mutated valid documents, hostile text, random bytes), guided by the
branches of ``autotune`` and ``tomllib`` it reaches. Each reader runs in a process of its own
(libFuzzer's loop never returns); a failing input is recorded and the run goes on, and a
process that libFuzzer ends early (an input past ``-timeout``) is restarted on its corpus
until the reader's time is spent. Writes ``benchmarks/results/fuzz_readers.md`` and the raw
figures beside it (``.json``).

Needs ``pip install atheris hypothesis``: a tool, not a test (CI runs the bounded tests).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TESTS = {
    "best_config": "test_best_config_reader",
    "space": "test_space_reader",
    "study": "test_study_reader",
    "settings": "test_settings_row_reader",
}
TITLES = {
    "best_config": "best-config reader (`autotune.load`, `ConfigFile`, `from_dict`, "
    "`autotune.apply` short of compiling)",
    "space": "space TOML reader (`load_space`, `space_from_dict`)",
    "study": "study TOML reader (`autotune search STUDY.toml`: expand, then the CLI's parser)",
    "settings": "settings-row reader (`settings_from_row`)",
}
# Imported under instrumentation, so that libFuzzer sees their branches (lazy imports too).
INSTRUMENTED = (
    "tomllib", "autotune.runtime.apply", "autotune.runtime.select", "autotune.space",
    "autotune.cli", "autotune.search", "autotune.storage._settings", "autotune.records",
)  # fmt: skip
PER_INPUT_TIMEOUT_S = 60
_LIBFUZZER_LINE = re.compile(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)")


# --- one reader, in a process of its own ---


def fuzz_one_reader(reader: str, seconds: int, stats_path: Path, work: Path) -> None:
    """libFuzzer's loop over the reader's Hypothesis test; never returns."""
    import atheris

    sys.path.insert(0, str(ROOT / "tests"))
    with atheris.instrument_imports(include=["autotune", "tomllib"]):
        for name in INSTRUMENTED:
            importlib.import_module(name)
        from fuzz_tests import properties, test_readers
    fuzz = getattr(test_readers, TESTS[reader]).hypothesis.fuzz_one_input
    stats: dict[str, Any] = {"target_calls": 0, "failures": [], "failure_kinds": {}}
    last_write = [time.monotonic()]

    def target(data: bytes) -> None:
        stats["target_calls"] += 1
        try:
            fuzz(data)
        except Exception as exc:  # noqa: BLE001 - a failing property: recorded, fuzzing goes on
            _record_failure(stats, exc, data, work)
        if time.monotonic() - last_write[0] > 2:  # libFuzzer's exit runs no atexit hook
            _write_stats(stats_path, stats, properties)
            last_write[0] = time.monotonic()

    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    atheris.Setup(
        [
            sys.argv[0],
            f"-max_total_time={seconds}",
            f"-timeout={PER_INPUT_TIMEOUT_S}",
            "-rss_limit_mb=4096",
            # Inputs of any length from the start: Hypothesis draws a case's choices from
            # them, and short ones allow only small cases.
            "-max_len=4096",
            "-len_control=0",
            "-print_final_stats=1",
            f"-artifact_prefix={work}/",
            str(corpus),
        ],
        target,
        internal_libfuzzer=True,
    )
    atheris.Fuzz()


def _record_failure(stats: dict[str, Any], exc: Exception, data: bytes, work: Path) -> None:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/autotune/" in f.filename]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "-"
    kind = f"{type(exc).__name__} at {where}"
    stats["failure_kinds"][kind] = stats["failure_kinds"].get(kind, 0) + 1
    if stats["failure_kinds"][kind] == 1:
        saved = work / f"failure-{len(stats['failures'])}.bin"
        saved.write_bytes(data)
        message = str(exc).splitlines()[0][:300] if str(exc) else ""
        stats["failures"].append({"kind": kind, "message": message, "input": str(saved)})


def _write_stats(path: Path, stats: dict[str, Any], properties: Any) -> None:
    stats["cases"] = sum(properties.CASES.values())
    outcomes = {f"{r}:{o}": n for (r, o), n in sorted(properties.OUTCOMES.items())}
    rules = {f"{r}:{o}": len(m) for (r, o), m in sorted(properties.MESSAGES.items())}
    path.write_text(json.dumps({**stats, "outcomes": outcomes, "distinct_rules": rules}))


# --- the driver ---


def run_reader(reader: str, seconds: int, work: Path) -> dict[str, Any]:
    """Fuzzes ``reader`` for ``seconds`` of wall time in child processes; its figures."""
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes")
    started = time.monotonic()
    runs: list[dict[str, Any]] = []
    while (left := int(seconds - (time.monotonic() - started))) > 5:
        stats_path = work / f"stats-{len(runs)}.json"
        log = work / f"libfuzzer-{len(runs)}.log"
        command = [sys.executable, __file__, "--worker", reader, "--seconds", str(left),
                   "--stats", str(stats_path), "--work", str(work)]  # fmt: skip
        print(f"{reader}: fuzzing for {left} s (log {log})", flush=True)
        began = time.monotonic()
        with log.open("w") as out:
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, cwd=work)
        figures = _libfuzzer_figures(log.read_text(errors="replace"))
        # A process that libFuzzer ended early prints no "Done N runs in S second(s)".
        figures["fuzzing_s"] = figures["fuzzing_s"] or round(time.monotonic() - began)
        runs.append({"exit_code": done.returncode, **figures, **_stats(stats_path)})
    summary = _summary(reader, runs, time.monotonic() - started, load_before, os.getloadavg())
    return {**summary, "started": when}


def _libfuzzer_figures(text: str) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    lines = _LIBFUZZER_LINE.findall(text)
    if lines:
        executions, cov, ft, corpus = map(int, lines[-1])
        figures.update(progress_executions=executions, cov=cov, ft=ft, corpus=corpus)
    for key, value in re.findall(r"stat::(\w+):\s+([\d.]+)", text):
        figures[key] = float(value)
    done = re.search(r"Done (\d+) runs in (\d+) second", text)
    figures["fuzzing_s"] = int(done.group(2)) if done else None
    figures["ended_by"] = _ended_by(text)
    return figures


def _ended_by(text: str) -> str:
    for marker, why in (
        ("ALARM: working on the last Unit", "an input past -timeout"),
        ("out-of-memory", "out of memory"),
        ("fuzz target exited", "the target exited"),
        ("Uncaught Python exception", "an uncaught exception"),
        ("Done ", "its time"),
    ):
        if marker in text:
            return why
    return "unknown (see the log)"


def _stats(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def _summary(
    reader: str, runs: list[dict[str, Any]], wall_s: float, before: Any, after: Any
) -> dict[str, Any]:
    executions = sum(int(r.get("number_of_executed_units", r.get("progress_executions", 0)))
                     for r in runs)  # fmt: skip
    outcomes: dict[str, int] = {}
    rules: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for run in runs:
        for key, n in run.get("outcomes", {}).items():
            outcomes[key] = outcomes.get(key, 0) + n
        for key, n in run.get("distinct_rules", {}).items():
            rules[key] = max(rules.get(key, 0), n)
        for key, n in run.get("failure_kinds", {}).items():
            kinds[key] = kinds.get(key, 0) + n
    last = runs[-1] if runs else {}
    fuzzing_s = sum(r["fuzzing_s"] for r in runs)
    return {
        "reader": reader,
        "minutes": round(wall_s / 60, 1),
        "executions": executions,
        "fuzzing_s": fuzzing_s,
        "executions_per_s": round(executions / fuzzing_s, 1) if fuzzing_s else None,
        "cases": sum(int(r.get("cases", 0)) for r in runs),
        "reader_calls": sum(outcomes.values()),
        "cov": last.get("cov"),
        "ft": last.get("ft"),
        "corpus": last.get("corpus"),
        "new_units_added": sum(int(r.get("new_units_added", 0)) for r in runs),
        "peak_rss_mb": max((int(r.get("peak_rss_mb", 0)) for r in runs), default=0),
        "processes": len(runs),
        "ended_by": [r.get("ended_by") for r in runs],
        "failures": sum(kinds.values()),
        "failure_kinds": kinds,
        "failure_inputs": [f for r in runs for f in r.get("failures", [])],
        "outcomes": outcomes,
        "distinct_rules": rules,
        "load_before": list(before),
        "load_after": list(after),
    }


def machine() -> dict[str, Any]:
    import hypothesis
    import torch

    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s+(.*)", lscpu)
    return {
        "cpu": model.group(1).strip() if model else platform.processor(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "hypothesis": hypothesis.__version__,
        "atheris": importlib.metadata.version("atheris"),
    }


def report(results: list[dict[str, Any]], info: dict[str, Any], minutes: float) -> str:
    lines = [
        "# Fuzzing the readers",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, shared with other engineers' test runs "
        "(load average below); Python "
        f"{info['python']}, torch {info['torch']}, Hypothesis {info['hypothesis']}, atheris "
        f"{info['atheris']}. `python benchmarks/fuzz_readers.py --minutes {minutes:g}`: one "
        "reader after another, each in its own process, atheris (libFuzzer, coverage of "
        "`autotune` and `tomllib`) driving the reader's Hypothesis test of "
        "`tests/fuzz_tests/test_readers.py` through `fuzz_one_input`.",
        "",
        "A property holds when every input ends in the reader's documented error or in success "
        "(and what succeeded is usable: written back and read the same, sized, hashed). An "
        "*execution* is one libFuzzer input; one too short for Hypothesis to draw a case from "
        "ends there, so *cases* counts the inputs that reached the reader (a case may call it "
        "more than once: a file is read by both loaders). *Coverage* is libFuzzer's count of "
        "instrumented edges (`cov`) and features (`ft`) reached; *minutes* is the wall time, "
        "start-up included, *exec/s* is over libFuzzer's own time.",
        "",
        "| reader | minutes | executions | exec/s | cases | reader calls | coverage (edges / "
        "features) | corpus | failures | load before → after (1, 5, 15 min) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['reader']} | {r['minutes']} | {r['executions']:,} | "
            f"{r['executions_per_s'] or 0:.0f} | {r['cases']:,} | {r['reader_calls']:,} | "
            f"{r['cov']} / {r['ft']} | {r['corpus']} | {r['failures']} | "
            f"{_load(r['load_before'])} → {_load(r['load_after'])} |"
        )
    lines += ["", "Outcomes per documented result (messages told apart with values masked):", ""]
    for r in results:
        shown = ", ".join(
            f"{key.split(':', 1)[1]} {n:,}{_distinct(r['distinct_rules'].get(key, 0))}"
            for key, n in sorted(r["outcomes"].items())
        )
        when = f", run at {r['started']} UTC" if r.get("started") else ""
        lines.append(f"- {TITLES[r['reader']]}{when}: {shown or '-'}")
    lines += ["", _failures(results), ""]
    return "\n".join(lines)


def _failures(results: list[dict[str, Any]]) -> str:
    found = [(r["reader"], kind, n) for r in results for kind, n in r["failure_kinds"].items()]
    if not found:
        return (
            "No input broke a property in these runs. The inputs that did before the readers "
            "were fixed are regression tests in `tests/fuzz_tests/test_regressions.py`."
        )
    return "Failing inputs (the first of each kind is kept under the run's work folder):\n\n" + (
        "\n".join(f"- {reader}: {kind} x{n}" for reader, kind, n in found)
    )


def _distinct(count: int) -> str:
    if not count:
        return ""
    # tests/fuzz_tests/properties.py keeps at most this many messages per outcome
    shown = f"{count:,}+" if count >= 2_000 else f"{count:,}"
    return f" ({shown} distinct message{'s' if count > 1 else ''})"


def _load(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="per reader")
    parser.add_argument("--readers", default=",".join(TESTS))
    parser.add_argument("--out", type=Path, default=HERE / "results" / "fuzz_readers.md")
    parser.add_argument("--work", type=Path, help="corpora, logs, failing inputs")
    parser.add_argument(
        "--keep", type=Path, help="an earlier run's .json: its figures of the readers not run now "
        "are kept (re-running one reader after a fix)",
    )  # fmt: skip
    parser.add_argument("--worker", choices=TESTS, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--stats", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        fuzz_one_reader(args.worker, args.seconds, args.stats, args.work)
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="fuzz_readers-"))
    fresh = {}
    for reader in filter(None, args.readers.split(",")):  # none: re-render the kept figures
        fresh[reader] = run_reader(reader, int(args.minutes * 60), work / reader)
        print(json.dumps({k: v for k, v in fresh[reader].items() if k != "failure_inputs"}))
    kept = json.loads(args.keep.read_text())["results"] if args.keep else []
    by_reader = {r["reader"]: r for r in kept} | fresh
    results = [by_reader[reader] for reader in TESTS if reader in by_reader]
    info = machine()
    text = report(results, info, args.minutes)
    args.out.write_text(text)
    raw = {"machine": info, "minutes_per_reader": args.minutes, "work": str(work)}
    args.out.with_suffix(".json").write_text(
        json.dumps({**raw, "results": results}, indent=1) + "\n"
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
