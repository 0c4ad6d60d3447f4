"""What screening spares in a real search: trials whose generated code was already timed, and
trials stopped early as clearly slower than the best so far (see autotune.search._screen).

    python benchmarks/screening.py [--models convnet,bert] [--trials 20] [--device cpu]

Per model it runs ``autotune search MODEL --trials N --finalists 0`` (the search phase is what
screening changes) into a scratch SQLite storage, then reads the study's records: how many
search trials were equivalents (same code as an earlier trial: compiled and gated, not timed)
and how many stopped timing early, the seconds each kind spent timing against the trials timed
in full, and the seconds screening spared by that measure. Writes
``benchmarks/results/screening_<device>.md``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import torch

from autotune.records import RecordStore, TrialRecord
from autotune.storage._attrs import LEFT_ATTR

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite import MODELS, device_name  # noqa: E402

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--models", default="convnet,bert")
    args = parser.parse_args()
    sections = [_model(name, args) for name in args.models.split(",")]
    head = [
        f"# Screening in real searches on {args.device}",
        "",
        f"Machine: {platform.node()}, {device_name(args.device)}; torch {torch.__version__}, "
        f"Python {platform.python_version()}. `python benchmarks/screening.py --models "
        f"{args.models} --trials {args.trials} --device {args.device}`: each model's "
        f"`autotune search --trials {args.trials} --finalists 0` in a scratch storage. "
        "*Timing* is the seconds a trial spent in interleaved timing (`phases.timing_s`); "
        "*spared* counts, for each equivalent, the median timing of the trials timed in full, "
        "and for each trial stopped early, that median less what it spent.",
        "",
    ]
    report = "\n".join(head + sections)
    out = HERE / "results" / f"screening_{args.device.split(':')[0]}.md"
    out.write_text(report)
    print(report)
    return 0


def _model(name: str, args: argparse.Namespace) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        storage = f"sqlite:///{tmp}/a.db"
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "autotune.cli", "search", str(MODELS[name]), "--device",
             args.device, "--trials", str(args.trials), "--finalists", "0", "--storage",
             storage, "--study", "screening", "--out", f"{tmp}/best.json", "--cache-dir",
             f"{tmp}/c", "--quiet"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        wall_s = time.monotonic() - started
        with RecordStore(storage) as store:
            records = store.trials("screening")
        study = optuna.load_study(study_name="screening", storage=storage)
        left = [t.number for t in study.trials if t.user_attrs.get(LEFT_ATTR)]
    return _section(name, records, wall_s, left)


def _section(name: str, records: list[TrialRecord], wall_s: float, left: list[int]) -> str:
    searched = [r for r in records if r.baseline is None and r.duplicate_of is None]
    same = [r for r in searched if r.equivalent_of is not None]
    early = [r for r in searched if r.pruned and r.equivalent_of is None]
    nothing = [r for r in searched if r.failure_kind == "no_graph"]
    failed = [r for r in searched if r.status != "ok" and r not in nothing]
    full = [r for r in searched if r.status == "ok" and r not in same and r not in early]
    typical = statistics.median(_timing(r) for r in full) if full else 0.0
    spared = {
        "same": typical * len(same),
        "early": sum(max(0.0, typical - _timing(r)) for r in early),
    }
    whole = wall_s + sum(spared.values())  # the search's time had nothing been spared
    rows = [
        ("timed in full", full, None),
        ("same code as an earlier trial (not timed)", same, spared["same"]),
        ("stopped timing early (first stage out of reach, or clearly slower)", early,
         spared["early"]),
        ("compiled no graph (not timed, not counted)", nothing, None),
        ("failed", failed, None),
    ]  # fmt: skip
    lines = [
        f"## {name}",
        "",
        f"{len(searched)} search trials in {wall_s:.0f} s (baselines and presets included in "
        f"the wall time; {sum(1 for r in records if r.duplicate_of is not None)} config "
        f"duplicates reused besides). Screening spared about {sum(spared.values()):.0f} s of "
        f"timing, {sum(spared.values()) / whole:.0%} of what the search would have taken. "
        f"Trials that left a knob shown inert to torch: {len(left)}"
        + (f" (#{', #'.join(map(str, left))})." if left else "."),
        "",
        "| trials | count | share of trials | timing (median, s) | timing (sum, s) "
        "| spared (s, share of the search) |",
        "|---|---|---|---|---|---|",
    ]
    for label, group, saved in rows:
        times = [_timing(r) for r in group]
        median = f"{statistics.median(times):.2f}" if times else "-"
        share = f"{len(group) / len(searched):.0%}" if searched else "-"
        cell = f"{saved:.1f} ({saved / whole:.0%})" if saved is not None else "-"
        lines.append(
            f"| {label} | {len(group)} | {share} | {median} | {sum(times):.1f} | {cell} |"
        )
    if same:
        pairs = ", ".join(f"#{r.trial_number} = #{r.equivalent_of}" for r in same)
        lines += ["", f"Equivalents (trial = the trial that timed its code): {pairs}."]
    for r in failed + nothing:
        lines.append(f"- #{r.trial_number} {r.failure_kind}: `{r.brief}`: {(r.error or '')[:160]}")
    for r in early:
        lines.append(
            f"- #{r.trial_number} stopped after {r.result.get('rounds')} rounds at "
            f"{r.speedup_vs_eager or 0:.2f}x eager: `{r.brief}`"
        )
    return "\n".join(lines) + "\n"


def _timing(r: TrialRecord) -> float:
    return float((r.result.get("phases") or {}).get("timing_s") or 0.0)


if __name__ == "__main__":
    sys.exit(main())
