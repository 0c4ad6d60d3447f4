"""How close does the search get to the exhaustive optimum, and how many configurations an
hour does it measure? Replays searches against a space measured whole
(``benchmarks/quality_table.py``).

    python benchmarks/search_quality.py benchmarks/results/quality_convnet_cpu_quiet.parquet \\
        --seeds 50 --budgets 10,20,32 [--json out.json]

Each replayed search is an in-memory Optuna study whose trials look their configuration up in
the table instead of measuring it. A trial measures one of the tabled runs of the code its
configuration generated, drawn at random (configurations that generated the same code share
their runs: the table's own process-to-process noise); a configuration's *true* speedup is the
median of those runs. The search is replayed as autotune runs it: default compile first, then
the presets, then the sampler's trials; a configuration drawn again is reused and does not
count; and, by the search's ``Mechanisms``, a configuration whose code was timed takes that
timing, a trial clearly slower than the best stops timing at ten rounds, successive halving
times a quarter first, knobs shown inert are left to torch, and the finalists (the best three
observed, or more where their spreads reach the best's, and default compile) are re-measured
with a third of the noise; the best of them ships and is scored by its true speedup. Every
trial costs what its configuration's cold run cost in the table (compile, process, timing at
the search's ``--measure-seconds``), the finalist round too.

Reported per sampler and per search, at each budget: the median and worst-decile fraction of
the exhaustive optimum's speedup the pick reaches, how often the pick is the optimum within
noise (at least the slowest run of the optimum's code), and configurations (distinct codes)
measured per hour of search; per search, the share of trials and time each screening
mechanism spared. The warm-start line replays a study warm-started from an earlier replayed
study of the same table (another seed): trials until it first measures a config within noise
of the optimum, against a cold study.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna

from autotune.measure import MEASURE_SECONDS  # autotune search's default --measure-seconds

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


def _sampler(strategy: str, seed: int, budget: int) -> optuna.samplers.BaseSampler:
    from autotune.search._explore import ExploringSampler

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


# --- the table ---------------------------------------------------------------------------


class Table:
    """A measured space (``benchmarks/quality_table.py``): every configuration's runs, grouped
    by the identity of the code it generated. Configurations that compiled the same code run
    at the same speed, so a group's runs, from every one of its configurations and processes,
    are samples of one truth: a configuration's *true* speedup is the median of its group's
    runs. (A table without code identities, measured before they were recorded, makes each
    configuration its own group of one run.)"""

    def __init__(self, path: str) -> None:
        import pyarrow.parquet as pq

        from autotune.space import space_from_dict

        table = pq.read_table(path)
        self.meta = json.loads(table.schema.metadata[b"autotune"])
        self.space = space_from_dict(self.meta["space"], self.meta["device"])
        self.model = self.meta["model"]
        self.rows = {r["config_hash"]: r for r in table.to_pylist()}
        self.runs = {d: _runs_of(r) for d, r in self.rows.items()}
        self.code = {d: r.get("code_hash") or d for d, r in self.rows.items()}
        groups: dict[str, list[dict[str, Any]]] = {}
        for digest, row in self.rows.items():
            if _ok(row):
                groups.setdefault(self.code[digest], []).extend(self.runs[digest])
        self.groups = groups
        self.truth = {code: statistics.median(r["speedup"] for r in runs)
                      for code, runs in groups.items()}  # fmt: skip
        ok = [d for d, r in self.rows.items() if _ok(r)]
        self.best = self.rows[max(ok, key=self.true_speedup)]
        self.optimum = self.true_speedup(self.best["config_hash"])
        # Within noise of the optimum: at least the slowest of its own group's run medians
        # (its lower quartile, for a group of one run).
        best_runs = groups[self.code[self.best["config_hash"]]]
        self.noise_floor = (
            min(r["speedup"] for r in best_runs)
            if len(best_runs) > 1
            else best_runs[0]["q1"] or self.optimum
        )

    def true_speedup(self, digest: str) -> float:
        row = self.rows.get(digest)
        return self.truth[self.code[digest]] if row is not None and _ok(row) else 0.0

    def observe(self, digest: str, rng: random.Random) -> dict[str, float] | None:
        """What a search trial of ``digest`` would measure: one of its code group's runs (its
        median and quartiles), drawn at random; None when the configuration failed."""
        row = self.rows.get(digest)
        if row is None or not _ok(row):
            return None
        runs = self.groups[self.code[digest]]
        if len(runs) > 1:
            return rng.choice(runs)
        # One run (a table from before runs were kept): its quartiles' spread as noise.
        run = runs[0]
        q1, q3 = run["q1"] or run["speedup"], run["q3"] or run["speedup"]
        drawn = max(0.0, rng.gauss(run["speedup"], max(0.0, q3 - q1) / 1.349))
        shift = drawn - run["speedup"]
        return {"speedup": drawn, "q1": q1 + shift, "q3": q3 + shift}

    def remeasure(self, digest: str, rng: random.Random) -> float:
        """A finalist's figure: the truth plus a third of the spread between its group's runs
        (finalists time about ten times the rounds, in two processes)."""
        truth = self.true_speedup(digest)
        runs = self.groups.get(self.code[digest], [])
        if len(runs) > 1:
            sigma = statistics.stdev(r["speedup"] for r in runs)
        else:
            sigma = max(0.0, (runs[0]["q3"] or truth) - (runs[0]["q1"] or truth)) / 1.349
        return max(0.0, rng.gauss(truth, sigma * FINALIST_NOISE))

    def cost(self, digest: str, timing: str, measure_seconds: float) -> float:
        """Seconds a trial of ``digest`` takes in a search timing ``measure_seconds``: its cold
        run's compile and process overhead, plus ``timing``: ``full`` (the rounds of
        ``measure_seconds``, at least ten), ``short`` (a quarter of them, at least ten: the
        first stage of successive halving), ``early`` (ten rounds: stopped early), ``none``
        (same code as a trial timed before: not timed)."""
        from autotune.search._screen import SCREEN_SHARE

        row, cold = self.rows[digest], self.runs[digest][0]
        if not _ok(row):
            return float(row.get("wall_s") or 0.0)
        ten = 10 * self._timing_s(digest) / (cold.get("rounds") or 10)
        timed = {"full": max(ten, measure_seconds),
                 "short": max(ten, measure_seconds * SCREEN_SHARE),
                 "early": ten, "none": 0.0}[timing]  # fmt: skip
        return (row.get("compile_s") or 0.0) + self.overhead(digest) + timed

    def overhead(self, digest: str) -> float:
        """Seconds of a trial of ``digest`` that are neither its compile nor its timing: the
        process, its set-up and the check against eager (from its cold run)."""
        row = self.rows[digest]
        compile_s, spent = row.get("compile_s") or 0.0, self._timing_s(digest)
        return max(0.0, (row.get("wall_s") or compile_s + spent) - compile_s - spent)

    def _timing_s(self, digest: str) -> float:
        return self.runs[digest][0].get("timing_s") or 1.0

    def finalist_runs(
        self, digest: str, measure_seconds: float, warm: bool = True
    ) -> tuple[float, float, float]:
        """A finalist's two fresh processes, cold then warm (``warm`` False: the cold pass left
        it behind, and its warm run is not run), each timing about three times
        ``measure_seconds`` (finalists time to a precision, for at most five times it): the
        cold run's seconds before its timing and of its timing, and the warm run's seconds."""
        row = self.rows[digest]
        compile_s = row.get("compile_s") or 0.0
        warm_s = row.get("warm_compile_s") or compile_s / 4
        timed = 3 * measure_seconds
        after = warm_s + self.overhead(digest) + timed if warm else 0.0
        return compile_s + self.overhead(digest), timed, after

    def finalist_cost(self, digest: str, measure_seconds: float, warm: bool = True) -> float:
        """A finalist's seconds, its runs one after the other (:meth:`finalist_runs`)."""
        return sum(self.finalist_runs(digest, measure_seconds, warm))


def _ok(row: dict[str, Any]) -> bool:
    return row["status"] == "ok" and bool(row["speedup"])


def _runs_of(row: dict[str, Any]) -> list[dict[str, Any]]:
    if row.get("runs"):
        runs = [r for r in json.loads(row["runs"]) if r["status"] == "ok" and r["speedup"]]
        if runs or not _ok(row):
            return runs or [{"speedup": None, "q1": None, "q3": None}]
    return [{"speedup": row["speedup"], "q1": row["q1"], "q3": row["q3"],
             "timing_s": None, "rounds": None}]  # fmt: skip


# --- replaying a search ------------------------------------------------------------------


@dataclass(frozen=True)
class Mechanisms:
    """What a replayed search does besides sampling (see autotune.search._screen, _inert)."""

    same_code: bool = True  # a config whose code was timed before takes that timing
    early_stop: bool = True  # a sampled trial clearly slower than the best stops at ten rounds
    halving: bool = False  # a sampled trial times a quarter first; the rest only within reach
    inert: bool = False  # a knob shown to change nothing is left to torch
    wide_finalists: bool = False  # finalists: the best 3, and every one within the best's spread
    # a finalist whose cold run is clearly behind the leader's is not run warm
    # (autotune.decide._finalists.settled; modelled by its margin alone)
    settled_finalists: bool = False


# The searches compared at the same sampler (TPE multivariate, presets first): autotune before
# screening, when issue 29 was filed, today (inert knobs left to torch), and today with
# successive halving, then with finalists taken wider where the spreads overlap.
SEARCHES = {
    "no screening": Mechanisms(same_code=False, early_stop=False),
    "main at issue 29": Mechanisms(),
    "main before settled finalists": Mechanisms(inert=True),
    "main now": Mechanisms(inert=True, settled_finalists=True),
    "+ halving": Mechanisms(inert=True, halving=True, settled_finalists=True),
    "+ halving + wide finalists": Mechanisms(
        inert=True, halving=True, wide_finalists=True, settled_finalists=True
    ),
}
NOW = "main now"

# As autotune's finalists: the best observed configs are re-measured in fresh processes, timed
# until the median is known within +-2% (about ten times the rounds: a third of the noise).
FINALISTS = 3
WIDE_FINALISTS = 6
FINALIST_NOISE = 1 / 3


@dataclass
class Trial:
    digest: str
    kind: str  # default, preset, sampled
    observed: dict[str, float] | None  # the run it measured (median, quartiles); None: failed
    timing: str  # full, short, early, none
    seconds: float


@dataclass
class Replayed:
    trials: list[Trial] = field(default_factory=list)
    inert_left: int = 0  # draws that left a knob to torch


def run_study(
    table: Table,
    strategy: str,
    seed: int,
    budget: int,
    mechanisms: Mechanisms = SEARCHES[NOW],
    prior: list[tuple[dict[str, Any], float]] | None = None,
) -> Replayed:
    """One replayed search of ``budget`` trials (default compile, the presets with "+presets",
    then the sampler's): each measures one of its configuration's tabled runs. A configuration
    drawn again is reused and does not count, as in autotune."""
    from autotune.search._explore import ExploringSampler

    rng = random.Random(seed * 7919 + 17)
    sampler = _sampler(strategy, seed, budget)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    space = table.space
    default = space.config_from_params({}).config_hash()
    study.enqueue_trial({}, {"baseline": "default"})
    if "+presets" in strategy:
        for preset in space.presets:
            study.enqueue_trial({}, {"preset": preset.name})
    if prior:
        for params, _ in prior[:5]:
            study.enqueue_trial(params)
        for params, value in prior:
            _add_prior(study, space, params, value)
    out = Replayed()
    seen: dict[str, float] = {}
    timed_code: dict[str, dict[str, float]] = {}
    sampled: list[tuple[dict[str, Any], str]] = []
    left: set[str] = set()
    asks = 0
    while len(out.trials) < budget and asks < budget * 8 and len(seen) < len(table.rows):
        asks += 1
        trial = study.ask()
        name = trial.user_attrs.get("preset")
        if trial.user_attrs.get("baseline"):
            digest, kind = default, "default"
        elif name:
            digest, kind = space.preset_config(space.preset(name)).config_hash(), "preset"
        else:
            leave = sorted(left) if mechanisms.inert else []
            out.inert_left += bool(leave)
            space.suggest(trial, leave=leave)
            digest, kind = space.config_from_params(trial.params).config_hash(), "sampled"
        if digest in seen:
            if isinstance(sampler, ExploringSampler):
                sampler.explore_next()
            study.tell(trial, seen[digest])
            continue
        observed, timing = _measure(table, digest, kind, mechanisms, out.trials, timed_code, rng)
        out.trials.append(Trial(digest, kind, observed, timing,
                                table.cost(digest, timing, MEASURE_SECONDS)))  # fmt: skip
        value = seen[digest] = observed["speedup"] if observed else 0.0
        if observed and timing != "none":
            timed_code.setdefault(table.code[digest], observed)
        if kind == "sampled" and observed:
            sampled.append((dict(trial.params), table.code[digest]))
            left |= _inert(sampled)
        study.tell(trial, value)
    return out


def _measure(
    table: Table, digest: str, kind: str, mechanisms: Mechanisms, trials: list[Trial],
    timed_code: dict[str, dict[str, float]], rng: random.Random,
) -> tuple[dict[str, float] | None, str]:  # fmt: skip
    """What the trial measures and how long it times, by the search's screening rules."""
    observed = table.observe(digest, rng)
    if observed is None:
        return None, "full"
    if kind != "sampled":
        return observed, "full"
    if mechanisms.same_code and table.code[digest] in timed_code:
        return timed_code[table.code[digest]], "none"
    best = max((t.observed for t in trials if t.observed and t.timing == "full"),
               key=lambda o: o["speedup"], default=None)  # fmt: skip
    if best is None:
        return observed, "full"
    reach = best["q1"] or best["speedup"]
    spread = (observed["q3"] or observed["speedup"]) - (observed["q1"] or observed["speedup"])
    # the median's 95% interval after ten rounds: about +-half the quartiles' spread
    if mechanisms.early_stop and observed["speedup"] + spread / 2 < reach:
        return observed, "early"
    if mechanisms.halving:
        return observed, "full" if observed["speedup"] >= reach else "short"
    return observed, "full"


def _inert(sampled: list[tuple[dict[str, Any], str]]) -> set[str]:
    """The knobs two sampled trials that compiled the same code set differently."""
    from autotune.storage._inert import _differing

    by_code: dict[str, list[dict[str, Any]]] = {}
    for params, code in sampled:
        by_code.setdefault(code, []).append(params)
    found: set[str] = set()
    for group in by_code.values():
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                found |= set(_differing(a, b))
    return found


def pick_at(replayed: Replayed, budget: int, table: Table, rng: random.Random,
            wide: bool = False, settle: bool = False,
            ) -> tuple[str | None, float, list[tuple[float, float, float]]]:  # fmt: skip
    """The config the search ships at ``budget`` trials, and the finalist round's seconds: the
    best observed trials (the 3 best; ``wide``: and every other whose upper quartile reaches
    the best's lower one, up to 6) and default compile, re-measured; the best of them wins
    (``settle``: a finalist other than default whose figure is short of the leader's by the
    product's margin runs cold only). Also each finalist's runs (:meth:`Table.finalist_runs`)."""
    trials = [t for t in replayed.trials[:budget] if t.observed]
    # an equivalent (same code, not timed) is never a finalist: the trial that timed it is
    ranked = sorted((t for t in trials if t.kind != "default" and t.timing != "none"),
                    key=lambda t: t.observed["speedup"], reverse=True)  # fmt: skip
    pool = ranked[:FINALISTS]
    if wide and ranked:
        reach = ranked[0].observed["q1"] or ranked[0].observed["speedup"]
        more = [t for t in ranked[FINALISTS:] if (t.observed["q3"] or 0.0) >= reach]
        pool += more[: WIDE_FINALISTS - FINALISTS]
    digests = list(dict.fromkeys([t.digest for t in pool] +
                                 [t.digest for t in trials if t.kind == "default"]))  # fmt: skip
    if not digests:
        return None, 0.0, []
    from autotune.decide._finalists import SETTLED_MARGIN

    again = [(d, table.remeasure(d, rng)) for d in digests]
    leader = max(v for _, v in again)
    default = {t.digest for t in trials if t.kind == "default"}
    runs = [
        table.finalist_runs(d, MEASURE_SECONDS,
                            warm=not settle or d in default or v * SETTLED_MARGIN >= leader)
        for d, v in again
    ]  # fmt: skip
    return max(again, key=lambda dv: dv[1])[0], sum(sum(r) for r in runs), runs


def _figures(table: Table, runs: list[Replayed], budgets: list[int], m: Mechanisms) -> dict:
    """Per budget: how good the pick is, and how many configurations an hour the search
    measures (its trials' seconds from the table, the finalist round's included)."""
    out = {}
    for budget in budgets:
        fractions, hits, configs, codes, seconds = [], 0, 0, 0, 0.0
        for seed, replayed in enumerate(runs):
            pick, final_s, _ = pick_at(replayed, budget, table, random.Random(seed),
                                       m.wide_finalists, m.settled_finalists)  # fmt: skip
            true = table.true_speedup(pick) if pick else 0.0
            fractions.append(true / table.optimum)
            hits += true >= table.noise_floor
            trials = replayed.trials[:budget]
            configs += len(trials)
            codes += len({table.code[t.digest] for t in trials})
            seconds += sum(t.seconds for t in trials) + final_s
        hours = seconds / 3600
        out[str(budget)] = {
            "median_fraction": statistics.median(fractions),
            "worst_decile_fraction": _decile(fractions),
            "optimum_within_noise": hits / len(runs),
            "configs_per_hour": configs / hours if hours else None,
            "codes_per_hour": codes / hours if hours else None,
            "search_minutes": seconds / 60 / len(runs),
        }
    return out


def _spared(table: Table, runs: list[Replayed]) -> dict[str, Any]:
    """What each screening mechanism spared over these searches: trials and seconds."""
    total_trials = sum(len(r.trials) for r in runs)
    total_s = sum(t.seconds for r in runs for t in r.trials)
    spared: dict[str, dict[str, float]] = {}
    for r in runs:
        for t in r.trials:
            if t.timing in ("none", "early", "short"):
                full = table.cost(t.digest, "full", MEASURE_SECONDS)
                entry = spared.setdefault(t.timing, {"trials": 0, "seconds": 0.0})
                entry["trials"] += 1
                entry["seconds"] += full - t.seconds
    names = {"none": "same code, not timed", "early": "clearly slower, stopped at ten rounds",
             "short": "successive halving, stopped after the short stage"}  # fmt: skip
    return {
        "trials": total_trials, "seconds": total_s,
        "draws leaving an inert knob to torch": sum(r.inert_left for r in runs),
        **{names[k]: {"share_of_trials": v["trials"] / total_trials,
                      "share_of_time": v["seconds"] / (total_s + v["seconds"])}
           for k, v in spared.items()},
    }  # fmt: skip


def replay(path: str, seeds: int, budgets: list[int], strategies: list[str],
           searches: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")
    table = Table(path)
    out: dict[str, Any] = {
        "table": path, "model": table.model, "configurations": len(table.rows),
        "processes": table.meta.get("processes", 1), "machine": table.meta.get("machine"),
        "quiet": table.meta.get("quiet"),
        "optimum": {"speedup": table.optimum, "noise_floor": table.noise_floor,
                    "brief": table.best["brief"]},
        "spread": _spread(table), "seeds": seeds, "budgets": budgets,
        "measure_seconds": MEASURE_SECONDS, "strategies": {}, "searches": {},
    }  # fmt: skip
    for strategy in strategies:
        if strategy.startswith("gp") and importlib.util.find_spec("scipy") is None:
            out.setdefault("skipped", {})[strategy] = "Optuna's GPSampler needs scipy"
            continue
        started = time.monotonic()
        runs = [run_study(table, strategy, seed, max(budgets)) for seed in range(seeds)]
        out["strategies"][strategy] = _figures(table, runs, budgets, Mechanisms())
        print(f"{strategy}: {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    for name in SEARCHES if searches is None else searches:
        started = time.monotonic()
        m = SEARCHES[name]
        runs = [run_study(table, "tpe-multivariate+presets", seed, max(budgets), m)
                for seed in range(seeds)]  # fmt: skip
        out["searches"][name] = {**_figures(table, runs, budgets, m),
                                 "spared": _spared(table, runs)}  # fmt: skip
        print(f"{name}: {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    out["warm_start"] = _warm_start(table, seeds, max(budgets))
    return out


def _warm_start(table: Table, seeds: int, budget: int) -> dict[str, Any]:
    """Trials until a config within noise of the optimum is first measured: a cold study
    against one warm-started from an earlier study of the same table (another seed)."""
    cold, warm = [], []
    for seed in range(seeds):
        earlier = run_study(table, "tpe-multivariate+presets", 1000 + seed, budget)
        prior = []
        for t in earlier.trials:
            params = json.loads(table.rows[t.digest]["params"])
            if t.observed and params:  # a preset has no params: measured here anyway
                prior.append((params, t.observed["speedup"]))
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


def _first_hit(table: Table, replayed: Replayed) -> int | None:
    for i, t in enumerate(replayed.trials, start=1):
        if table.true_speedup(t.digest) >= table.noise_floor:
            return i
    return None


def _median_or_none(values: list[int | None]) -> float | None:
    # a study that never reached it counts as one past the budget (an upper bound)
    if not any(v is not None for v in values):
        return None
    worst = max((v for v in values if v is not None), default=0) + 1
    return statistics.median(v if v is not None else worst for v in values)


def _decile(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * 0.1) - 1)]


def _spread(table: Table) -> dict[str, Any]:
    ok = sorted(table.true_speedup(d) for d, r in table.rows.items() if _ok(r))
    failed = sum(not _ok(r) for r in table.rows.values())
    return {"min": ok[0], "median": statistics.median(ok), "max": ok[-1], "failed": failed,
            "distinct_codes": len(table.groups),
            "within_noise_of_optimum": sum(s >= table.noise_floor for s in ok)}  # fmt: skip


def render(result: dict[str, Any]) -> str:
    budgets = result["budgets"]
    lines = [
        f"table {result['table']}: {result['configurations']} configurations of "
        f"{Path(result['model']).name}, each in {result['processes']} process(es); optimum "
        f"{result['optimum']['speedup']:.3f}x (within noise from "
        f"{result['optimum']['noise_floor']:.3f}x): {result['optimum']['brief']}",
        f"spread: {json.dumps(result['spread'])}; {result['seeds']} seeds; "
        f"searches time {result['measure_seconds']} s per trial",
    ]
    header = ["", "| {} | " + " | ".join(f"budget {b}" for b in budgets) + " |",
              "|---|" + "---|" * len(budgets)]  # fmt: skip
    if result["strategies"]:
        lines += [header[0], header[1].format("sampler (main now)"), header[2]]
        for strategy, by_budget in result["strategies"].items():
            lines.append(
                f"| {strategy} | " + " | ".join(_cell(by_budget[str(b)]) for b in budgets) + " |"
            )
        for strategy, why in result.get("skipped", {}).items():
            lines.append(f"| {strategy} | not run: {why} |")
    if result["searches"]:
        lines += [header[0], header[1].format("search (TPE, presets first)"), header[2]]
        for name, by_budget in result["searches"].items():
            lines.append(
                f"| {name} | " + " | ".join(_cell(by_budget[str(b)], True) for b in budgets) + " |"
            )
    lines += [
        "",
        "cells: median fraction of the optimum / worst decile / optimum within noise"
        + (" / configurations per hour (distinct codes per hour)" if result["searches"] else ""),
    ]
    for name, by in result["searches"].items():
        lines.append(f"- spared, {name}: {json.dumps(_rounded(by['spared']))}")
    lines += ["", f"warm start: {json.dumps(result['warm_start'])}"]
    return "\n".join(lines)


def _cell(v: dict[str, Any], rate: bool = False) -> str:
    cell = (f"{v['median_fraction']:.3f} / {v['worst_decile_fraction']:.3f} / "
            f"{v['optimum_within_noise']:.0%}")  # fmt: skip
    if rate and v.get("configs_per_hour"):
        cell += f" / {v['configs_per_hour']:.0f} ({v['codes_per_hour']:.0f})"
    return cell


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", metavar="TABLE.parquet", help="from benchmarks/quality_table.py")
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--budgets", default="10,20,32")
    parser.add_argument("--strategies", default=",".join(STRATEGIES),
                        help="samplers to compare (empty: none)")  # fmt: skip
    parser.add_argument("--searches", default=",".join(SEARCHES),
                        help="searches to compare (empty: none)")  # fmt: skip
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    strategies = [s for s in args.strategies.split(",") if s]
    searches = [s for s in args.searches.split(",") if s]
    result = replay(args.table, args.seeds, budgets, strategies, searches)
    print(render(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
