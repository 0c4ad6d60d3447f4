"""A fixed finalist for ``benchmarks/suite.py --fixed A,B``: the space's presets A and B combined
(``bf16-autocast,freezing``: the hand combination issue 45 names), measured after the search
in a round of its own beside the emitted config and default ``torch.compile``.

The round is the product's (:func:`autotune.decide._finalists.remeasure`): each of the three in
two fresh processes with private caches, cold then warm in reverse order (ABBA over processes),
timed to the study's ``--precision``. The search never sees the fixed config: it is no trial
and no candidate, so the emitted config is judged against it, not chosen beside it.
"""

from __future__ import annotations

import dataclasses

from autotune.decide import decide
from autotune.decide._finalists import best_default, finalist_records, remeasure
from autotune.records import RecordStore, TrialRecord
from autotune.scoring import Objective
from autotune.space import space_from_dict
from autotune.storage import settings_from_dict
from autotune.trials import TrialRunner


def fixed_round(
    storage: str, study: str, names: list[str], runner: TrialRunner | None = None
) -> dict[str, object]:
    """The round's figures: ``label``, ``speedup``, ``q1``, ``q3`` and ``cosine`` of the
    emitted config (absent when the decision is do not compile), the fixed one and default
    compile, each pooled over its two processes (``runner``: fresh processes)."""
    with RecordStore(storage) as store:
        settings = settings_from_dict(store.study_settings(study) or {})
        records = store.trials(study)
        best = decide(storage, study, store).best
    space = space_from_dict(settings.space, settings.device, workload=settings.workload)
    merged = space.combine(names)
    if merged is None:
        raise SystemExit(f"suite: --fixed {','.join(names)}: these presets do not combine")
    default = best_default(records, Objective.of(settings))
    if default is None:
        raise SystemExit("suite: --fixed needs default torch.compile measured in the study")
    config = space.preset_config(merged)
    fixed = dataclasses.replace(
        default, trial_number=-1, baseline=None, config=config.to_dict(),
        config_hash=config.config_hash(), brief=config.brief(),
        result={"accuracy": {"relaxed": space.relaxes_numerics(config)}},
    )  # fmt: skip
    emitted = next(
        (r for r in records if r.baseline is None and r.status == "ok"
         and best.decision == "compile" and r.config_hash == best.config_hash),
        None,
    )  # fmt: skip
    chosen = [r for r in (emitted, fixed, default) if r is not None]
    done = remeasure(chosen, settings, on_note=print, runner=runner)
    by_hash = {r.config_hash: r for r in finalist_records(done)}
    labels = {id(fixed): f"fixed {merged.name}", id(default): "default torch.compile"}
    rows = []
    for f in done:
        pooled = by_hash.get(f.searched.config_hash)
        label = labels.get(id(f.searched), f"emitted #{f.searched.trial_number}")
        rows.append(_row(label, f.searched, pooled, (f.cold.accuracy or {}).get("cosine")))
    return {"presets": names, "rows": rows}


def _row(
    label: str, searched: TrialRecord, pooled: TrialRecord | None, cosine: object
) -> dict[str, object]:
    if pooled is None:
        return {"label": label, "brief": searched.brief, "failed": True}
    return {
        "label": label, "brief": searched.brief, "speedup": pooled.speedup_vs_eager,
        "q1": pooled.speedup_vs_eager_q1, "q3": pooled.speedup_vs_eager_q3,
        "cosine": cosine if isinstance(cosine, float) else None,
    }  # fmt: skip


def verdict(round_: dict[str, object]) -> str:
    """``holds`` when the emitted config (eager: 1.0x) is at least the fixed finalist within
    the spread (the fixed one's lower quartile not above the emitted one's upper quartile)."""
    rows = round_["rows"]
    assert isinstance(rows, list)
    fixed = next(r for r in rows if str(r["label"]).startswith("fixed "))
    emitted = next((r for r in rows if str(r["label"]).startswith("emitted ")), None)
    if fixed.get("failed"):
        return f"{fixed['label']} failed in the round"
    if emitted is not None and emitted.get("failed"):
        return f"FAILS: {emitted['label']} failed in the round"
    q3 = float(emitted["q3"]) if emitted else 1.0
    ok = float(fixed["q1"]) <= q3
    return (
        f"{'holds' if ok else 'FAILS'}: {fixed['label']} {float(fixed['speedup']):.2f}x "
        f"(q1 {float(fixed['q1']):.2f}) vs "
        + (f"{emitted['label']} {float(emitted['speedup']):.2f}x" if emitted else "eager")
        + f" (q3 {q3:.2f})"
    )


def section(round_: dict[str, object]) -> list[str]:
    """The round as a table and its verdict, for a model's section of the report."""
    names = " + ".join(map(str, round_["presets"]))  # type: ignore[call-overload]
    lines = [
        f"Fixed finalist ({names}), in a round of its own after the search with the emitted "
        "config and default compile (two fresh processes each, ABBA):",
        "",
        "| config | speedup vs eager (q1-q3) | cosine |",
        "|---|---|---|",
    ]
    for r in round_["rows"]:  # type: ignore[attr-defined]
        if r.get("failed"):
            lines.append(f"| {r['label']} `{r['brief']}` | failed | - |")
            continue
        cosine = f"{r['cosine']:.6f}" if r.get("cosine") is not None else "-"
        lines.append(
            f"| {r['label']} `{r['brief']}` | {r['speedup']:.2f}x "
            f"({r['q1']:.2f}-{r['q3']:.2f}) | {cosine} |"
        )
    return [*lines, "", f"Rule (emitted ≥ fixed finalist within spread): {verdict(round_)}.", ""]
