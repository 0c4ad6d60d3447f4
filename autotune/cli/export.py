"""``autotune export --study NAME --out FILE``: a study's trials as Parquet or CSV, one row
per trial, a column per knob and per metric."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autotune._printable import say
from autotune.cli import _options as options
from autotune.errors import UsageError

INTERRUPTED = "nothing was written."


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    p = options.add_subcommand(
        sub,
        "export",
        help="write a study's trials to Parquet or CSV (a column per knob and metric)",
        description="Write one row per trial with flat typed columns that pandas, DuckDB and "
        "Polars read without parsing JSON: status and failure kind, compile and timing "
        "phases, latency and speedups with their spread, memory, graphs, graph breaks, "
        "recompiles, cache hits, one column per knob of the trial's config, whoever chose it "
        "(knob.LAYER.NAME; null for eager and for a knob left at torch's default), per-shape "
        "latency (shapeI.latency_median_s), the environment, the worker and timestamps.",
    )
    options.add_study(p, "the study to export", only=True)
    options.add_storage(p)
    p.add_argument(
        "--format", choices=("parquet", "csv"),
        help="file format (default: from --out's suffix, else parquet)",
    )  # fmt: skip
    options.add(p, "--out", required=True, default=None, help="the file to write")
    options.add_debug(p)
    return p


def run(args: argparse.Namespace) -> int:
    from autotune.reports import export_study, load_study_data

    fmt = args.format or _format_of(args.out)
    options.require_folder("--out", args.out)
    out = Path(args.out)
    study = options.study(args)
    data = load_study_data(options.storage(args), study, importance=False)
    rows = export_study(data, out, fmt)
    say(f"Wrote {rows} trials of study {study!r} to {args.out} ({fmt}).")
    for note in data.notes:
        say(f"note: {note}", file=sys.stderr)
    return 0


def _format_of(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in ("", ".parquet", ".pq"):
        return "parquet"
    raise UsageError(
        f"--out {path}: cannot tell the format from the suffix {suffix!r}; name the file "
        "*.parquet or *.csv, or pass --format parquet|csv."
    )
