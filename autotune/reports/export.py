"""A study as a table: one row per trial, flat typed columns (one per knob, per metric, per
input shape), written to Parquet or CSV with pyarrow, so that pandas, DuckDB and Polars load
it without parsing JSON."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from autotune._atomic import replacing
from autotune.records import ENV_KEYS
from autotune.reports._study import CLAIMED, StudyData, TrialRow

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = ("parquet", "csv")
KNOB_PREFIX = "knob."

# The fixed columns, in order: name -> pyarrow type name (see _TYPES).
# A traffic mix's figures a trial records (TrialRecord.traffic), as traffic_* columns.
TRAFFIC_FIGURES = (
    "mean_s", "p50_s", "p95_s", "p99_s", "eager_mean_s", "eager_p50_s", "eager_p95_s",
    "eager_p99_s", "startup_s",
)  # fmt: skip

COLUMNS: dict[str, str] = {
    "study_name": "string",
    "trial_number": "int64",
    "status": "string",  # ok, a failure kind, or Optuna's state of a trial without a record
    "state": "string",  # Optuna's state: complete, running, failed, waiting
    "baseline": "string",  # eager | default | null for search trials
    "failure_kind": "string",
    "error": "string",  # the error's first line
    "config": "string",  # the config as a diff from the space's defaults
    "config_hash": "string",
    "duplicate_of": "int64",  # the trial whose measurement this one reused
    "equivalent_of": "int64",  # the trial that timed the same generated code (not timed again)
    "pruned": "bool",  # timing stopped early: clearly slower than the best so far
    "code_hash": "string",  # the identity of the generated code
    "batch_size": "int64",
    "units": "string",  # what units_per_s counts (the model file's units(inputs)): tokens, ...
    "units_per_s": "float64",
    "compile_time_s": "float64",
    "setup_s": "float64",
    "timing_s": "float64",
    "wall_time_s": "float64",
    "latency_median_s": "float64",
    "latency_iqr_s": "float64",
    "eager_latency_median_s": "float64",
    "speedup_vs_eager": "float64",
    "speedup_vs_eager_q1": "float64",
    "speedup_vs_eager_q3": "float64",
    "speedup_vs_eager_ci_low": "float64",  # the 95% interval of the trial's median
    "speedup_vs_eager_ci_high": "float64",
    "speedup_vs_default": "float64",
    # the decision's rounds (StudyData.round_figures): the finalist round that chose, its
    # processes pooled, and the confirmation round apart from the choice (what a file claims)
    **{f"{r}_{k}": "float64" for r in ("finalist", "confirmed") for k in CLAIMED},
    "score": "float64",  # the study's objective (higher is better)
    "peak_memory_bytes": "int64",
    # the weights as stored, the config's (cast or quantized) and eager's
    "weights_bytes": "int64",
    "eager_weights_bytes": "int64",
    # over a traffic mix (get_traffic, --traffic): per request, weighted; empty otherwise
    **{f"traffic_{k}": "float64" for k in TRAFFIC_FIGURES},
    "graphs": "int64",
    "graph_breaks": "int64",
    "recompiles": "int64",
    "fxgraph_cache_hit": "int64",
    "fxgraph_cache_miss": "int64",
    "cache_bytes_written": "int64",
    "relaxed_numerics": "bool",
    **{column: "string" for column in ENV_KEYS.values()},
    "worker_id": "int64",
    "worker_host": "string",
    "worker_pid": "int64",
    "worker_gpu": "string",
    "started_at": "timestamp",
    "finished_at": "timestamp",
    "config_json": "string",  # the whole config, for what the flat columns leave out
}
_SHAPE_COLUMNS = {
    "inputs": "string",
    "weight": "float64",  # a traffic mix's share of the request; empty for a distribution
    "latency_median_s": "float64",
    "eager_latency_median_s": "float64",
    "speedup_vs_eager": "float64",
}


def export_study(data: StudyData, path: str | os.PathLike[str], fmt: str = "parquet") -> int:
    """Writes every trial of ``data`` to ``path`` as ``fmt`` (``parquet`` or ``csv``);
    returns the number of rows.

    Knob columns are named ``knob.<layer>.<name>`` (``knob.inductor.freezing``) and hold the
    config each trial compiled, whoever chose it (default compile, a preset, the sampler, a
    start-from study; see :func:`config_knobs`), and what else the sampler drew; null for
    eager, and where the config leaves the knob at torch's default and the sampler did not
    draw it (a knob whose condition was false, one a preset does not name). Shape
    distributions get ``shape<i>.latency_median_s`` (and ``.inputs``,
    ``.eager_latency_median_s``, ``.speedup_vs_eager``) per input.

    Example:
        >>> export_study(load_study_data(url, "resnet"), "resnet.parquet")  # doctest: +SKIP
        23
    """

    if fmt not in FORMATS:
        raise ValueError(f"`fmt` must be one of {FORMATS}, but got {fmt!r}.")
    table = study_table(data)
    with replacing(path) as tmp:  # an existing file stays whole until the new one is
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, os.fspath(tmp))
        else:
            import pyarrow.csv as pcsv

            pcsv.write_csv(_inert_cells(table), os.fspath(tmp))
    return int(table.num_rows)


# A spreadsheet reads a cell that starts with one of these as a formula (CSV injection).
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _inert_cells(table: pa.Table) -> pa.Table:
    """``table`` with every text cell a spreadsheet would read as a formula quoted the way
    spreadsheets expect (a leading apostrophe: ``'=cmd|...`` shows as text)."""
    import pyarrow as pa

    columns = []
    for column in table.columns:
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            values = [
                f"'{v}" if isinstance(v, str) and v.startswith(_FORMULA) else v
                for v in column.to_pylist()
            ]
            column = pa.chunked_array([pa.array(values, type=column.type)])
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=table.schema)


def study_table(data: StudyData) -> pa.Table:
    """The study's trials as a pyarrow table (the columns of :func:`export_study`)."""
    import pyarrow as pa

    rounds = data.round_figures()
    rows = [_row(data, row, rounds.get(row.number, {})) for row in data.rows]
    set_knobs = [_knobs(row) for row in data.rows]
    knobs = _knob_names(data, set_knobs)
    shapes = max((len(_per_shape(row)) for row in data.rows), default=0)
    fields = [pa.field(name, _type(pa, kind)) for name, kind in COLUMNS.items()]
    for knob in knobs:
        values = [row_knobs.get(knob) for row_knobs in set_knobs]
        fields.append(pa.field(KNOB_PREFIX + knob, _knob_type(pa, values)))
    for i in range(shapes):
        fields += [pa.field(f"shape{i}.{k}", _type(pa, t)) for k, t in _SHAPE_COLUMNS.items()]
    for flat, row, row_knobs in zip(rows, data.rows, set_knobs, strict=True):
        for knob, f in zip(knobs, fields[len(COLUMNS) :], strict=False):
            value = row_knobs.get(knob)
            flat[f.name] = None if value is None else _cast(f.type, value)
        for i, shape in enumerate(_per_shape(row)):
            for key in _SHAPE_COLUMNS:
                value = shape.get(key)
                flat[f"shape{i}.{key}"] = value if key != "inputs" else str(value)
    return pa.Table.from_pylist(rows, schema=pa.schema(fields))


def _row(data: StudyData, row: TrialRow, rounds: dict[str, float | None]) -> dict[str, Any]:
    import json

    r = row.record
    flat: dict[str, Any] = {
        "study_name": data.name,
        "trial_number": row.number,
        "status": row.status,
        "state": None if row.trial is None else row.trial.state.name.lower(),
        "started_at": row.started,
        "finished_at": row.finished,
    }
    if r is None:
        return flat
    result = r.result
    phases = result.get("phases") or {}
    cache = result.get("cache") or {}
    worker = (r.environment.get("worker") or {}) if isinstance(r.environment, dict) else {}
    error = (r.error or "").strip()
    flat.update(
        baseline=r.baseline,
        failure_kind=r.failure_kind,
        error=error.splitlines()[0] if error else None,
        config=r.brief,
        config_hash=r.config_hash,
        duplicate_of=r.duplicate_of,
        equivalent_of=r.equivalent_of,
        pruned=r.pruned,
        code_hash=result.get("code_hash"),
        batch_size=r.batch_size,
        units=r.units,
        units_per_s=r.units_per_s(),
        compile_time_s=r.compile_time_s,
        setup_s=phases.get("setup_s"),
        timing_s=phases.get("timing_s"),
        wall_time_s=r.wall_time_s,
        latency_median_s=r.latency_median_s,
        latency_iqr_s=r.latency_iqr_s,
        eager_latency_median_s=r.eager_latency_median_s,
        speedup_vs_eager=r.speedup_vs_eager,
        speedup_vs_eager_q1=r.speedup_vs_eager_q1,
        speedup_vs_eager_q3=r.speedup_vs_eager_q3,
        speedup_vs_eager_ci_low=result.get("speedup_vs_eager_ci_low"),
        speedup_vs_eager_ci_high=result.get("speedup_vs_eager_ci_high"),
        speedup_vs_default=r.speedup_vs_default,
        **rounds,
        score=data.objective.score(r),
        peak_memory_bytes=r.peak_memory_bytes,
        weights_bytes=result.get("weights_bytes"),
        eager_weights_bytes=result.get("eager_weights_bytes"),
        **{f"traffic_{k}": (r.traffic or {}).get(k) for k in TRAFFIC_FIGURES},
        graphs=r.graphs,
        graph_breaks=r.graph_breaks,
        recompiles=r.recompiles,
        fxgraph_cache_hit=cache.get("fxgraph_hit"),
        fxgraph_cache_miss=cache.get("fxgraph_miss"),
        cache_bytes_written=result.get("cache_bytes_written"),
        relaxed_numerics=r.relaxed_numerics,
        worker_id=worker.get("id"),
        worker_host=worker.get("host"),
        worker_pid=worker.get("pid"),
        worker_gpu=worker.get("gpu"),
        config_json=json.dumps(r.config, sort_keys=True),
        **{
            column: None if r.environment.get(key) is None else str(r.environment[key])
            for key, column in ENV_KEYS.items()
        },
    )
    return flat


def _per_shape(row: TrialRow) -> list[dict[str, Any]]:
    return row.record.per_shape if row.record is not None else []


def config_knobs(config: dict[str, Any] | None) -> dict[str, Any]:
    """A trial's stored config (:attr:`TrialRecord.config <autotune.records.TrialRecord>`)
    by knob, as a space names them: ``compile.backend``, ``compile.mode``, ``compile.dynamic``
    (``"auto"`` where the config's is None: torch's automatic dynamic shapes, as a space spells
    it), ``compile.fullgraph``, each option under its backend's layer (``inductor.freezing``,
    ``openvino.aot_autograd``: the options a mode turns on included, those at torch's default
    left out, as the config stores them), each Dynamo setting (``dynamo.recompile_limit``) and
    functorch setting (``functorch.activation_memory_budget``),
    ``precision.autocast``/``precision.matmul`` where set, and the scope: ``scope.compile`` and
    ``scope.disable``, module paths joined by commas (``<root>``: the whole model; empty: none
    kept eager). Empty for eager (None)."""
    if not config:
        return {}
    backend = config.get("backend", "inductor")
    dynamic = config.get("dynamic")
    knobs: dict[str, Any] = {
        "compile.backend": backend,
        "compile.mode": config.get("mode", "default"),
        "compile.dynamic": "auto" if dynamic is None else dynamic,
        "compile.fullgraph": config.get("fullgraph", False),
    }
    knobs.update({f"{backend}.{k}": v for k, v in (config.get("options") or {}).items()})
    knobs.update({f"dynamo.{k}": v for k, v in (config.get("dynamo") or {}).items()})
    knobs.update({f"functorch.{k}": v for k, v in (config.get("functorch") or {}).items()})
    knobs.update({f"precision.{k}": v for k, v in (config.get("precision") or {}).items()})
    scope = config.get("scope") or {}
    compiled = scope.get("compile", [""])
    knobs["scope.compile"] = ",".join(path or "<root>" for path in compiled)
    knobs["scope.disable"] = ",".join(scope.get("disable", []))
    return knobs


def _knobs(row: TrialRow) -> dict[str, Any]:
    """What the trial compiled, by knob: its stored config as it ran (whoever chose it), and
    what else the sampler drew (a knob drawn at torch's default, which the config leaves out;
    a scope candidate's name; a batch size)."""
    config = row.record.config if row.record is not None else None
    return {**row.params, **config_knobs(config)}


# The torch.compile arguments every config sets, whether or not the space lists them.
_COMPILE_KNOBS = ("compile.backend", "compile.mode", "compile.dynamic", "compile.fullgraph")


def _knob_names(data: StudyData, set_knobs: list[dict[str, Any]]) -> list[str]:
    """Every knob any trial set, in the order the space lists them (the config's
    ``compile.*`` ones it does not list after its own), then any other by name."""
    drawn: dict[str, None] = {}
    for knobs in set_knobs:
        drawn.update(dict.fromkeys(knobs))
    order = [
        f"{layer}.{name}"
        for layer, table in data.settings.space.items()
        if isinstance(table, dict) and layer != "numerics"
        for name in table
    ]
    numerics = data.settings.space.get("numerics") or {}
    order += [f"{layer}.{name}" for layer, table in numerics.items() for name in table]
    after = max((i + 1 for i, k in enumerate(order) if k.startswith("compile.")), default=0)
    order[after:after] = [k for k in _COMPILE_KNOBS if k not in order]
    known = [k for k in order if k in drawn]
    return known + sorted(k for k in drawn if k not in known)


def _type(pa: Any, kind: str) -> Any:
    if kind == "timestamp":
        return pa.timestamp("us", tz="UTC")
    return {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
            "bool": pa.bool_()}[kind]  # fmt: skip


def _knob_type(pa: Any, values: list[Any]) -> Any:
    """The narrowest column type holding every value of a knob: bool, int, float or text."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pa.bool_()
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pa.int64()
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pa.float64()
    return pa.string()


def _cast(kind: Any, value: Any) -> Any:
    import pyarrow as pa

    if kind == pa.string():
        return value if isinstance(value, str) else _text(value)
    if kind == pa.float64():
        return float(value)
    return value


def _text(value: Any) -> str:
    """A knob value in a text column: a scalar as Python writes it (``True``, ``128``, as
    before), a list or table as JSON."""
    import json

    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, sort_keys=True)
    return str(value)
