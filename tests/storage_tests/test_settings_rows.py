"""A study's settings read back from its row (``autotune_studies.settings_json``) are checked
with the command line's own rules: a row edited by hand or written by another tool is one
StudyRowError naming the study, every bad setting and its value, never a traceback."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import pytest

from autotune.records import StudyRowError
from autotune.settings import StudySettings
from autotune.storage import settings_from_dict
from autotune.storage._settings import RULES, settings_from_row
from autotune.storage._settings_check import MEASURE_RULES
from autotune.trials import MeasureSettings

STUDY = "resnet-cpu"


def _valid(**changes: Any) -> dict[str, Any]:
    settings = StudySettings(
        model_path="/models/resnet.py",
        device="cuda:1",
        space={"name": "cuda", "knobs": []},
        space_hash="ab" * 16,
        torch_version="2.13.0",
        measure=MeasureSettings(target_seconds=0.5),
        trials=30,
        batch_sizes=[1, 8],
        objective="throughput",
        max_latency_s=0.02,
        model_sha256="cd" * 32,
    )
    return {**settings.to_dict(), **changes}


def _error(text: str) -> StudyRowError:
    with pytest.raises(StudyRowError) as info:
        settings_from_row(STUDY, text)
    message = str(info.value)
    assert "\n" not in message and f"Study {STUDY!r}" in message
    assert "recreate the study" in message  # the remedy
    return info.value


def test_a_row_autotune_wrote_reads_back_as_it_was():
    data = _valid()

    settings = settings_from_row(STUDY, json.dumps(data))

    assert settings.to_dict() == data


def test_every_setting_and_every_measure_setting_has_a_rule():
    assert set(RULES) == {f.name for f in dataclasses.fields(StudySettings)}
    assert set(MEASURE_RULES) == {f.name for f in dataclasses.fields(MeasureSettings)}


def test_a_row_of_an_older_autotune_takes_the_defaults_of_what_it_lacks():
    old = {k: v for k, v in _valid(objective="latency", batch_sizes=None,
                                   max_latency_s=None).items()
           if k not in ("prune", "preset_finalists", "scope_plan", "batch_sizes")}  # fmt: skip
    old["measure"] = {"warmup": 3, "target_seconds": 2.0}

    settings = settings_from_row(STUDY, json.dumps(old))

    assert settings.prune is True and settings.measure.max_rounds == 200


def test_a_setting_of_a_newer_autotune_is_left_alone():
    data = _valid(newer_setting={"x": 1})
    data["measure"]["newer_measure"] = 7

    settings = settings_from_row(STUDY, json.dumps(data))

    assert not hasattr(settings, "newer_setting")


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (json.dumps(_valid())[:-20], ["settings_json", "not valid JSON"]),
        ("", ["settings_json ''", "not valid JSON"]),
        ("[1, 2]", ["settings_json '[1, 2]'", "must be an object"]),
        ("null", ["settings_json 'null'"]),
    ],
)
def test_text_that_is_no_json_object_names_the_column_and_the_text(text, named):
    message = str(_error(text))

    for part in named:
        assert part in message


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"trials": "many"}, "trials must be a whole number, got 'many'"),
        ({"trials": 0}, "trials must be at least 1, got 0"),
        ({"trials": True}, "trials must be a whole number, got True"),
        ({"finalists": -1}, "finalists must be 0 or more, got -1"),
        ({"seed": 2**32}, "seed must be in 0 to 4294967295, got 4294967296"),
        ({"compile_budget": 0}, "compile_budget must be a positive number, got 0"),
        ({"compile_budget": "600"}, "compile_budget must be a number, got '600'"),
        ({"compile_budget_factor": -1.5}, "compile_budget_factor must be a number >= 0"),
        ({"finalist_precision": 1.5}, "finalist_precision must be a fraction in [0, 1)"),
        ({"device": "tpu"}, "device must be cpu, cuda or cuda:N, got 'tpu'"),
        ({"device": 3}, "device must be a non-empty string, got 3"),
        ({"sampler": "grid"}, "sampler must be one of tpe, random, got 'grid'"),
        ({"objective": "fast"}, "objective must be one of latency, throughput, amortized"),
        ({"scope": None}, "scope must be one of search, whole, got None"),
        ({"workload": "serve"}, "workload must be one of infer, train, generate, got 'serve'"),
        ({"preset_finalists": "some"}, "preset_finalists must be one of best, all"),
        ({"prune": "yes"}, "prune must be true or false, got 'yes'"),
        ({"batch_sizes": [8, 8]}, "batch_sizes must be distinct positive integers"),
        ({"batch_sizes": [0, 8]}, "batch_sizes must be at least 1, got 0"),
        ({"batch_sizes": "8"}, "batch_sizes must be a list of batch sizes, got '8'"),
        ({"max_latency_s": -1}, "max_latency_s must be a positive number, got -1"),
        ({"memory_budget_bytes": 1.5}, "memory_budget_bytes must be a whole number"),
        ({"space": "cuda"}, "space must be a JSON object, got 'cuda'"),
        ({"model_path": ""}, "model_path must be a non-empty string, got ''"),
        ({"scope_plan": {"probes": []}}, "scope_plan must be a probed scope plan"),
        ({"measure": "2s"}, "measure must be a JSON object, got '2s'"),
        ({"measure": {"warmup": -1}}, "measure.warmup must be 0 or more, got -1"),
        ({"measure": {"target_seconds": "2"}}, "measure.target_seconds must be a number"),
        ({"measure": {"min_rounds": 50, "max_rounds": 10}},
         "measure: `1 <= min_rounds <= max_rounds` must hold, but got (min_rounds=50, "
         "max_rounds=10)"),
        ({"measure": {"target_seconds": 2.0, "precision": 0.02, "max_seconds": 1.0}},
         "measure: `max_seconds >= target_seconds` must hold"),
        ({"objective": "latency"}, "objective 'latency' with calls None, batch_sizes [1, 8]"),
        ({"objective": "amortized", "batch_sizes": None, "max_latency_s": None},
         "objective 'amortized' with calls None"),
        ({"objective": "latency", "batch_sizes": None, "max_latency_s": None,
          "pareto": ["compile"]}, "pareto must be two or three distinct axes"),
        ({"objective": "latency", "batch_sizes": None, "max_latency_s": None,
          "pareto": ["latency", "compile"], "pick": "bogus"}, "pick must be a rule --pick takes"),
        ({"objective": "latency", "batch_sizes": None, "max_latency_s": None, "pick": "fastest"},
         "pick 'fastest' goes with a Pareto front, which only a pareto study has"),
    ],
)  # fmt: skip
def test_a_setting_that_breaks_the_command_lines_rule_is_named_with_its_value(changes, named):
    data = _valid()
    data.update(changes)

    error = _error(json.dumps(data))

    assert named in str(error)
    assert len(error.problems) == 1


def test_a_missing_setting_is_named():
    data = _valid()
    del data["measure"], data["device"]

    error = _error(json.dumps(data))

    assert error.problems == ["device missing", "measure missing"]


def test_every_problem_is_named_at_once():
    data = {name: [[1]] for name in RULES}

    error = _error(json.dumps(data))

    assert len(error.problems) == len(RULES)
    assert all("[[1]]" in problem or "[1]" in problem for problem in error.problems)


def test_nan_and_infinity_are_refused():
    data = _valid()

    message = str(_error(json.dumps(data).replace('"trials": 30', '"trials": NaN')))
    assert "trials must be a whole number, got nan" in message
    text = json.dumps(data).replace('"compile_budget": 600.0', '"compile_budget": Infinity')
    assert "compile_budget must be a positive number, got inf" in str(_error(text))


def test_from_dict_names_the_study_the_records_read_the_settings_from():
    from autotune.records._studies import settings_dict

    stored = settings_dict(STUDY, json.dumps(_valid(trials="many")))

    with pytest.raises(StudyRowError, match=f"Study {STUDY!r}:.*trials must be a whole number"):
        settings_from_dict(stored)


def test_mangled_rows_raise_only_study_row_error():
    """Bad input of any shape ends in the one documented exception (a small fuzz; the fuzzing
    of this reader is a suite of its own)."""
    rng = random.Random(7)
    text = json.dumps(_valid())
    values = [None, True, -1, 0, 2**70, 1e308, "x", "", [], {}, [1, "a"], {"a": None}]
    for _ in range(400):
        data = json.loads(text)
        for name in rng.sample(sorted(data), rng.randrange(1, 4)):
            data[name] = rng.choice(values)
        measure = data.get("measure")
        if rng.random() < 0.3 and isinstance(measure, dict):
            data["measure"] = {k: rng.choice(values) for k in measure}
        mangled = json.dumps(data)
        if rng.random() < 0.2:
            cut = rng.randrange(len(mangled))
            mangled = mangled[:cut] + mangled[cut + 1 :]
        try:
            settings_from_row(STUDY, mangled)
        except StudyRowError:
            pass
