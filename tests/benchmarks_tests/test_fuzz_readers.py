"""benchmarks/fuzz_readers.py's figures: what it reads from libFuzzer's log and the worker's
counts, and the table it writes."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import fuzz_readers  # noqa: E402

LOG = """\
#1024	pulse  cov: 310 ft: 900 corp: 80/2000b lim: 4096 exec/s: 512 rss: 380Mb
#2048	NEW    cov: 321 ft: 950 corp: 85/2100b lim: 4096 exec/s: 512 rss: 381Mb L: 9/40 MS: 1 -
#2100	DONE   cov: 321 ft: 951 corp: 85/2100b lim: 4096 exec/s: 525 rss: 381Mb
Done 2100 runs in 4 second(s)
stat::number_of_executed_units: 2100
stat::average_exec_per_sec:     525
stat::new_units_added:          85
stat::peak_rss_mb:              381
"""


def test_the_figures_of_a_run_come_from_libfuzzers_last_line_and_final_stats():
    figures = fuzz_readers._libfuzzer_figures(LOG)

    assert (figures["cov"], figures["ft"], figures["corpus"]) == (321, 951, 85)
    assert figures["number_of_executed_units"] == 2100 and figures["fuzzing_s"] == 4
    assert figures["ended_by"] == "its time"
    assert fuzz_readers._ended_by("==1== ERROR: libFuzzer: out-of-memory") == "out of memory"


def test_the_summary_adds_up_the_processes_and_the_report_shows_it():
    worker = {"cases": 700, "outcomes": {"space:ok": 300, "space:SpaceError": 500},
              "distinct_rules": {"space:SpaceError": 40}, "failure_kinds": {}}  # fmt: skip
    runs = [
        {**fuzz_readers._libfuzzer_figures(LOG), **worker},
        {**fuzz_readers._libfuzzer_figures(LOG), **worker, "ended_by": "an input past -timeout"},
    ]

    summary = fuzz_readers._summary("space", runs, 600.0, (1.0, 1.5, 2.0), (2.0, 2.0, 2.0))
    text = fuzz_readers.report([summary], _machine(), 10)

    assert summary["executions"] == 4200 and summary["executions_per_s"] == 525.0
    assert summary["cases"] == 1400 and summary["reader_calls"] == 1600
    assert summary["outcomes"] == {"space:ok": 600, "space:SpaceError": 1000}
    assert "| space | 10.0 | 4,200 | 525 | 1,400 | 1,600 | 321 / 951 | 85 | 0 |" in text
    assert "SpaceError 1,000 (40 distinct messages), ok 600" in text
    assert "No input broke a property" in text


def test_a_failing_input_is_listed_by_kind():
    runs = [{**fuzz_readers._libfuzzer_figures(LOG), "failure_kinds": {"OverflowError at x:1": 3}}]

    summary = fuzz_readers._summary("space", runs, 60.0, (0, 0, 0), (0, 0, 0))

    assert summary["failures"] == 3
    assert "- space: OverflowError at x:1 x3" in fuzz_readers.report([summary], _machine(), 1)


def _machine() -> dict[str, object]:
    return {"cpu": "AMD EPYC", "cores": 2, "python": "3.11", "torch": "2.13", "hypothesis": "6",
            "atheris": "3"}  # fmt: skip
