"""How close does the search get to the exhaustive optimum? Measure a whole space once, then
replay search strategies against the table.

    python benchmarks/search_quality.py --measure studies/mlp.py \\
        --space benchmarks/quality_cpu.toml --out benchmarks/results/quality_mlp_cpu.parquet
    python benchmarks/search_quality.py --replay benchmarks/results/quality_mlp_cpu.parquet \\
        --seeds 50 --budgets 5,10,20,30 [--json out.json]

``--measure`` runs every configuration of the space once through the normal trial path (the
warm trial host, a shared kernel cache, interleaved timing against eager inside each trial)
and writes one row per configuration: its Optuna parameters, config hash, speedup over eager
with its quartiles, compile time and status.

``--replay`` runs each strategy as an in-memory Optuna study whose trials look their
configuration up in the table instead of measuring it, with the table's own measured noise
added (a normal draw with the spread its quartiles give), as the search sees it; a repeated
configuration is reused and does not count against the budget (as autotune does). The pick
at each budget is made as autotune makes it: the three best *observed* trials are re-measured
as finalists (with a third of the noise: finalists time about ten times the rounds), and the
best of them is scored by its *true* (tabled) speedup. Reported
per strategy and budget: the median and worst-decile fraction of the exhaustive optimum's
speedup the pick reaches, and how often the pick is the optimum within noise (its true speedup
at least the optimum's lower quartile). The warm-start line replays a study warm-started from
an earlier replayed study of the same table (another seed): trials until it first measures a
config within noise of the optimum, against a cold study.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna

# tpe-liar: TPE with constant_liar and the duplicate explorer (autotune before this benchmark);
# tpe-multivariate: the same, multivariate with group=True and a random start of a quarter of
# the budget (autotune's default since). "+presets": the space's presets are measured first.
STRATEGIES = ("random", "tpe-optuna-defaults", "tpe-liar", "tpe-liar+presets",
              "tpe-multivariate", "tpe-multivariate+presets", "gp+presets")  # fmt: skip


# --- measure -----------------------------------------------------------------------------


def every_assignment(space: Any) -> list[dict[str, Any]]:
    """Every assignment of the space's active knobs (conditions honoured), as knob values."""
    plan, context = space._plan, space._context
    out: list[dict[str, Any]] = []

    def walk(i: int, env: dict[str, Any], values: dict[str, Any]) -> None:
        if i == len(plan.order):
            out.append(dict(values))
            return
        knob = plan.order[i]
        if plan.active(knob, env):
            for value in knob.values():
                env[knob.param] = values[knob.param] = value
                walk(i + 1, env, values)
                del values[knob.param]
        else:
            env[knob.param] = None
            walk(i + 1, env, values)
        env.pop(knob.param, None)

    walk(0, dict(context), {})
    return out


def configs_of(space: Any) -> dict[str, tuple[dict[str, Any], Any]]:
    """Every distinct configuration of the space (and of its presets), by config hash, with
    the Optuna parameters that draw it (none for a preset the knobs cannot express)."""
    from autotune.space import config_from_values

    drawn = {k.param for k in space.knobs if k.count > 1}
    configs: dict[str, tuple[dict[str, Any], Any]] = {}
    for values in every_assignment(space):
        config = config_from_values(values)
        params = {k: v for k, v in values.items() if k in drawn}
        configs.setdefault(config.config_hash(), (params, config))
    for preset in space.presets:
        config = space.preset_config(preset)
        configs.setdefault(config.config_hash(), ({}, config))
    return configs


def measure(model: str, space_path: str, out: str, device: str, limit: int | None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from autotune.space import load_space
    from autotune.trials import MeasureSettings, TrialSpec, WarmHostRunner

    space = load_space(space_path, device)
    configs = configs_of(space)
    items = list(configs.items())[:limit] if limit else list(configs.items())
    print(f"{space.name}: {len(items)} distinct configurations of {space.size}", file=sys.stderr)
    rows: list[dict[str, Any]] = []
    cache = Path(out).with_suffix(".kernels")
    started = time.monotonic()
    with WarmHostRunner() as runner:
        for i, (digest, (params, config)) in enumerate(items):
            spec = TrialSpec(model_path=model, device=device, config=config.to_dict(),
                             measure=MeasureSettings(target_seconds=1.0), cache_dir=str(cache),
                             budget_s=300.0)  # fmt: skip
            result = runner.run(spec)
            rows.append({
                "config_hash": digest, "params": json.dumps(params, sort_keys=True),
                "brief": config.brief(), "status": result.status,
                "failure_kind": result.failure_kind, "speedup": result.speedup_vs_eager,
                "q1": result.speedup_vs_eager_q1, "q3": result.speedup_vs_eager_q3,
                "compile_s": result.compile_time_s, "wall_s": result.wall_time_s,
            })  # fmt: skip
            left = (time.monotonic() - started) / (i + 1) * (len(items) - i - 1)
            print(f"{i + 1}/{len(items)} {config.brief()[:70]}: {result.status} "
                  f"{result.speedup_vs_eager or 0:.3f}x (about {left / 60:.0f} min left)",
                  file=sys.stderr, flush=True)  # fmt: skip
    table = pa.Table.from_pylist(rows)
    meta = {"model": model, "space": space.to_dict(), "device": device}
    table = table.replace_schema_metadata({"autotune": json.dumps(meta)})
    pq.write_table(table, out)


# --- replay ------------------------------------------------------------------------------


class Table:
    def __init__(self, path: str) -> None:
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        meta = json.loads(table.schema.metadata[b"autotune"])
        from autotune.space import space_from_dict

        self.space = space_from_dict(meta["space"], meta["device"])
        self.model = meta["model"]
        self.rows = {r["config_hash"]: r for r in table.to_pylist()}
        ok = [r for r in self.rows.values() if r["status"] == "ok" and r["speedup"]]
        self.best = max(ok, key=lambda r: r["speedup"])
        self.optimum = self.best["speedup"]
        self.noise_floor = self.best["q1"] or self.optimum

    def true_speedup(self, digest: str) -> float:
        row = self.rows.get(digest)
        return row["speedup"] if row and row["status"] == "ok" and row["speedup"] else 0.0

    def observe(self, digest: str, rng: random.Random, scale: float = 1.0) -> float | None:
        """What a search trial would measure: the tabled speedup plus its measured noise (the
        spread its quartiles give, times ``scale``)."""
        row = self.rows.get(digest)
        if row is None or row["status"] != "ok" or not row["speedup"]:
            return None
        sigma = max(0.0, (row["q3"] or row["speedup"]) - (row["q1"] or row["speedup"])) / 1.349
        return max(0.0, rng.gauss(row["speedup"], sigma * scale))


def _sampler(strategy: str, seed: int, budget: int) -> optuna.samplers.BaseSampler:
    from autotune.study._explore import ExploringSampler

    if strategy == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if strategy == "tpe-optuna-defaults":
        return optuna.samplers.TPESampler(seed=seed)
    if strategy.startswith("tpe-liar"):
        return ExploringSampler(optuna.samplers.TPESampler(seed=seed, constant_liar=True), seed)
    if strategy.startswith("tpe-multivariate"):
        base = optuna.samplers.TPESampler(
            seed=seed, constant_liar=True, multivariate=True, group=True,
            n_startup_trials=max(3, budget // 4),
        )  # fmt: skip
        return ExploringSampler(base, seed)
    if strategy.startswith("gp"):
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=max(3, budget // 4))
    raise ValueError(strategy)


def run_study(
    table: Table,
    strategy: str,
    seed: int,
    budget: int,
    prior: list[tuple[dict[str, Any], float]] | None = None,
    on_trial: Callable[[int, str], None] = lambda n, digest: None,
) -> list[tuple[str, float | None]]:
    """One replayed study: the (config hash, observed speedup) of each measured trial, in
    order; duplicates reuse the first measurement and do not count."""
    from autotune.study._explore import ExploringSampler

    rng = random.Random(seed * 7919 + 17)
    sampler = _sampler(strategy, seed, budget)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    space = table.space
    if "+presets" in strategy:
        for preset in space.presets:
            study.enqueue_trial({}, {"preset": preset.name})
    if prior:
        for params, _ in prior[:5]:
            study.enqueue_trial(params)
        for params, value in prior:
            _add_prior(study, space, params, value)
    seen: dict[str, float | None] = {}
    measured: list[tuple[str, float | None]] = []
    asks = 0
    while len(measured) < budget and asks < budget * 8 and len(seen) < len(table.rows):
        asks += 1
        trial = study.ask()
        name = trial.user_attrs.get("preset")
        preset = space.preset(name) if name else None
        config = space.preset_config(preset) if preset else space.suggest(trial)
        digest = config.config_hash()
        if digest in seen:
            value = seen[digest]
            if isinstance(sampler, ExploringSampler):
                sampler.explore_next()
        else:
            value = seen[digest] = table.observe(digest, rng)
            measured.append((digest, value))
            on_trial(len(measured), digest)
        study.tell(trial, value if value is not None else 0.0)
    return measured


def _add_prior(study: optuna.Study, space: Any, params: dict[str, Any], value: float) -> None:
    """Tells the sampler an earlier study's result (as ``--start-from`` does)."""
    study.add_trial(optuna.trial.create_trial(
        params=params, distributions=_distributions(space, params), value=value
    ))  # fmt: skip


def _distributions(space: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The distributions a trial drawing ``params`` from ``space`` suggests them with."""
    recorder = optuna.create_study()
    recorder.enqueue_trial(params)
    trial = recorder.ask()
    space.suggest(trial)
    return dict(trial.distributions)


# As autotune's finalists: the best observed configs are re-measured in fresh processes, timed
# until the median is known within +-2% (about ten times the rounds: a third of the noise).
FINALISTS = 3
FINALIST_NOISE = 1 / 3


def pick_at(
    measured: list[tuple[str, float | None]], budget: int, table: Table, rng: random.Random
) -> str | None:
    """The config the study ships at ``budget``: its best observed ones, re-measured."""
    seen = sorted(
        ((d, v) for d, v in measured[:budget] if v is not None), key=lambda dv: dv[1], reverse=True
    )[:FINALISTS]
    again = [(d, table.observe(d, rng, FINALIST_NOISE) or 0.0) for d, _ in seen]
    return max(again, key=lambda dv: dv[1])[0] if again else None


def replay(path: str, seeds: int, budgets: list[int], strategies: list[str]) -> dict[str, Any]:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")
    table = Table(path)
    out: dict[str, Any] = {
        "table": path, "model": table.model, "configurations": len(table.rows),
        "optimum": {"speedup": table.optimum, "q1": table.noise_floor,
                    "brief": table.best["brief"]},
        "spread": _spread(table), "seeds": seeds, "budgets": budgets, "strategies": {},
    }  # fmt: skip
    for strategy in strategies:
        if strategy.startswith("gp") and importlib.util.find_spec("scipy") is None:
            out.setdefault("skipped", {})[strategy] = "Optuna's GPSampler needs scipy"
            continue
        fractions: dict[int, list[float]] = {b: [] for b in budgets}
        hits: dict[int, int] = dict.fromkeys(budgets, 0)
        started = time.monotonic()
        for seed in range(seeds):
            measured = run_study(table, strategy, seed, max(budgets))
            rng = random.Random(seed)
            for budget in budgets:
                pick = pick_at(measured, budget, table, rng)
                true = table.true_speedup(pick) if pick else 0.0
                fractions[budget].append(true / table.optimum)
                hits[budget] += true >= table.noise_floor
        out["strategies"][strategy] = {
            str(b): {
                "median_fraction": statistics.median(fractions[b]),
                "worst_decile_fraction": _decile(fractions[b]),
                "optimum_within_noise": hits[b] / seeds,
            }
            for b in budgets
        }
        print(f"{strategy}: {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    out["warm_start"] = _warm_start(table, seeds, max(budgets))
    return out


def _warm_start(table: Table, seeds: int, budget: int) -> dict[str, Any]:
    """Trials until a config within noise of the optimum is first measured: a cold study
    against one warm-started from an earlier study of the same table (another seed)."""
    cold, warm = [], []
    for seed in range(seeds):
        earlier = run_study(table, "tpe-multivariate+presets", 1000 + seed, budget)
        prior = []
        for digest, value in earlier:
            params = json.loads(table.rows[digest]["params"])
            if value is not None and params:  # a preset has no params: measured here anyway
                prior.append((params, value))
        prior.sort(key=lambda pv: pv[1], reverse=True)
        cold.append(_first_hit(table, run_study(table, "tpe-multivariate+presets", seed, budget)))
        warm.append(_first_hit(table, run_study(table, "tpe-multivariate+presets", seed, budget,
                                                prior=prior)))  # fmt: skip
    return {
        "budget": budget,
        "cold_median_trials_to_optimum": _median_or_none(cold),
        "warm_median_trials_to_optimum": _median_or_none(warm),
        "cold_reached": sum(c is not None for c in cold) / seeds,
        "warm_reached": sum(w is not None for w in warm) / seeds,
    }


def _first_hit(table: Table, measured: list[tuple[str, float | None]]) -> int | None:
    for i, (digest, _) in enumerate(measured, start=1):
        if table.true_speedup(digest) >= table.noise_floor:
            return i
    return None


def _median_or_none(values: list[int | None]) -> float | None:
    # a study that never reached it counts as one past the budget (an upper bound)
    if not values:
        return None
    worst = max((v for v in values if v is not None), default=0) + 1
    return statistics.median(v if v is not None else worst for v in values)


def _decile(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * 0.1) - 1)]


def _spread(table: Table) -> dict[str, Any]:
    ok = sorted(r["speedup"] for r in table.rows.values() if r["status"] == "ok" and r["speedup"])
    failed = sum(r["status"] != "ok" for r in table.rows.values())
    return {"min": ok[0], "median": statistics.median(ok), "max": ok[-1], "failed": failed,
            "within_noise_of_optimum": sum(s >= table.noise_floor for s in ok)}  # fmt: skip


def render(result: dict[str, Any]) -> str:
    lines = [
        f"table {result['table']}: {result['configurations']} configurations of "
        f"{Path(result['model']).name}; optimum {result['optimum']['speedup']:.3f}x "
        f"(q1 {result['optimum']['q1']:.3f}x): {result['optimum']['brief']}",
        f"spread: {json.dumps(result['spread'])}; {result['seeds']} seeds per strategy",
        "",
        "| strategy | " + " | ".join(f"budget {b}" for b in result["budgets"]) + " |",
        "|---|" + "---|" * len(result["budgets"]),
    ]
    for strategy, by_budget in result["strategies"].items():
        cells = [
            f"{v['median_fraction']:.3f} / {v['worst_decile_fraction']:.3f} / "
            f"{v['optimum_within_noise']:.0%}"
            for v in by_budget.values()
        ]
        lines.append(f"| {strategy} | " + " | ".join(cells) + " |")
    for strategy, why in result.get("skipped", {}).items():
        lines.append(f"| {strategy} | not run: {why} |")
    lines += ["", "cells: median fraction of the optimum / worst decile / optimum within noise",
              "", f"warm start: {json.dumps(result['warm_start'])}"]  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", metavar="MODEL.py")
    parser.add_argument("--space", default="cpu")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", metavar="TABLE.parquet")
    parser.add_argument("--limit", type=int, help="measure only the first N configurations")
    parser.add_argument("--replay", metavar="TABLE.parquet")
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--budgets", default="5,10,20,30")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    if args.measure:
        if not args.out:
            parser.error("--measure needs --out TABLE.parquet")
        measure(args.measure, args.space, args.out, args.device, args.limit)
    if args.replay:
        budgets = [int(b) for b in args.budgets.split(",")]
        result = replay(args.replay, args.seeds, budgets, args.strategies.split(","))
        print(render(result))
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
