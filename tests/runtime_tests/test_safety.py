"""The registry of knobs refused from data: every option of the installed torch is reviewed as
safe or refused with its reason, and a best-config file cannot run a program or write files."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
import torch
import torch._dynamo.config as dynamo_config
import torch._functorch.config as functorch_config
import torch._inductor.config as inductor_config

import autotune
from autotune.runtime import safety as _safety
from autotune.space import _file, builtin_names

CONFIGS = {"inductor": inductor_config, "dynamo": dynamo_config, "functorch": functorch_config}


def _options() -> list[tuple[str, object, object]]:
    """(``layer.name``, default value, declared type) of every option of this torch."""
    found = []
    for layer, config in CONFIGS.items():
        for name, value in sorted(config.get_config_copy().items()):
            found.append((f"{layer}.{name}", value, config.get_type(name)))
    return found


def test_every_option_of_this_torch_is_reviewed_safe_or_refused_with_a_reason():
    """A new torch cannot slip an option in: one that is neither in reviewed_knobs.txt nor
    refused by a rule fails here, naming it, until someone reviews it."""
    unreviewed = [p for p, _, _ in _options() if p not in _safety.reviewed()
                  and _safety.rule_reason(p) is None and _review_needed(p)]  # fmt: skip
    assert not unreviewed, f"review these options of torch {torch.__version__}: {unreviewed}"


def _review_needed(param: str) -> bool:
    """A scalar option that no rule refuses is a candidate for the safe list: only a person
    may put it there. Options whose type is free text, a list or a structure are refused as
    unreviewed (they can name anything), which is a reason of its own."""
    layer, _, name = param.partition(".")
    return _safety.scalar_type(CONFIGS[layer].get_type(name))


def test_a_reviewed_option_is_a_plain_setting_that_no_rule_refuses():
    installed = {p: (v, t) for p, v, t in _options()}
    for param in sorted(_safety.reviewed()):
        if param not in installed:
            continue  # reviewed for another torch
        default, declared = installed[param]
        assert _safety.rule_reason(param) is None, param
        assert _safety.refusal(param, default, declared) is None, param
    if torch.__version__.startswith("2.13."):  # the torch the list was reviewed against
        assert _safety.reviewed() <= set(installed)


def test_an_option_torch_adds_later_is_refused_until_reviewed():
    why = _safety.refusal("inductor.a_knob_from_the_future", True, bool)
    assert why is not None and "not among the knobs autotune has reviewed" in why


@pytest.mark.parametrize(
    ("param", "value", "reason"),
    [
        ("inductor.cpp.cxx", [None, "/path/prog"], _safety.PROGRAM),
        ("inductor.cuda.cuda_cxx", "/path/nvcc", _safety.PROGRAM),
        ("inductor.cuda.cutlass_dir", "/elsewhere", _safety.PATH),
        ("inductor.trace.debug_dir", "/elsewhere", _safety.PATH),
        ("inductor.trace.enabled", True, _safety.DEBUG),
        ("inductor.debug", True, _safety.DEBUG),
        ("inductor.cpp.march", "native", _safety.FLAGS),
        ("inductor.fx_graph_remote_cache", True, _safety.REMOTE),
        ("inductor.post_grad_custom_post_pass", None, _safety.CODE),
        ("inductor.aot_inductor.output_path", "/x", _safety.PATH),
        ("dynamo.repro_after", "dynamo", _safety.DEBUG),
        ("dynamo.debug_dir_root", "/x", _safety.PATH),
        ("dynamo.log_file_name", "/x", _safety.PATH),
    ],
)
def test_knobs_that_name_programs_files_or_debug_output_are_refused(param, value, reason):
    layer, _, name = param.partition(".")
    declared = CONFIGS[layer].get_type(name)
    assert _safety.refusal(param, value, declared) == reason


def test_free_text_knobs_take_only_the_reviewed_values():
    assert _safety.refusal("inductor.max_autotune_gemm_backends", "ATEN,CPP", str) is None
    assert "comma-separated" in str(
        _safety.refusal("inductor.max_autotune_gemm_backends", "ATEN;rm -rf /", str)
    )
    assert _safety.refusal("inductor.cpp.enable_floating_point_contract_flag", "on", str) is None
    assert _safety.refusal("inductor.cpp.enable_floating_point_contract_flag", "-O0", str)


@pytest.mark.parametrize("name", builtin_names())
def test_every_knob_of_the_built_in_spaces_is_reviewed(name):
    raw = _file.read(_file.resolve(name))
    tables = [(layer, raw.get(layer, {})) for layer in ("inductor", "dynamo", "functorch")]
    tables += list(raw.get("numerics", {}).items())
    params = [f"{layer}.{knob}" for layer, table in tables for knob in table]
    assert params and [p for p in params if p not in _safety.reviewed()] == []


def _best_config(tmp_path: Path, options: dict[str, object], backend: str = "inductor") -> Path:
    """A best-config file as an attacker writes it: its config_hash computed, so it validates."""
    config = {"backend": backend, "options": options}
    path = tmp_path / "best_config.json"
    path.write_text(json.dumps({
        "schema_version": 1, "autotune_version": "0.1.0", "decision": "compile",
        "reason": "fast", "config_hash": autotune.CompileConfig.from_dict(config).config_hash(),
        "config": config,
    }))  # fmt: skip
    return path


def _fake_compiler(tmp_path: Path) -> Path:
    """A C++ compiler that records that it ran, then runs g++."""
    prog = tmp_path / "prog"
    prog.write_text(f'#!/bin/sh\ntouch {tmp_path / "ran"}\nexec g++ "$@"\n')
    prog.chmod(prog.stat().st_mode | stat.S_IEXEC)
    return prog


def test_a_best_config_file_naming_a_compiler_is_refused_before_anything_runs(tmp_path):
    prog = _fake_compiler(tmp_path)
    best = _best_config(tmp_path, {"cpp.cxx": [None, str(prog)]})
    assert autotune.load(best).config is not None  # the schema alone lets it through

    with pytest.raises(autotune.UnsafeKnobError) as info:
        autotune.apply(torch.nn.Linear(4, 4), best, check_environment=False)

    message = str(info.value)
    assert "options.cpp.cxx: names a program or compiler that torch runs" in message
    assert "allow_unsafe_knobs=[...]" in message and not (tmp_path / "ran").exists()


def test_a_best_config_file_turning_on_traces_elsewhere_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    best = _best_config(tmp_path, {"trace.enabled": True, "trace.debug_dir": str(elsewhere)})
    with pytest.raises(autotune.UnsafeKnobError) as info:
        autotune.apply(torch.nn.Linear(4, 4), best, check_environment=False)
    assert "options.trace.debug_dir: names a file or folder" in str(info.value)
    assert "options.trace.enabled: turns on debug" in str(info.value)
    assert not elsewhere.exists()


TESTING_BACKEND = "relu_accuracy_error_TESTING_ONLY"  # torch's: it corrupts torch.relu's output


def test_a_file_naming_a_backend_torch_keeps_for_its_tests_is_refused(tmp_path):
    """Issue 41, item 3: only "is it registered" was checked, so show listed nothing wrong and
    apply ran a backend that shifts every relu's output by 1.0."""
    best = _best_config(tmp_path, {}, backend=TESTING_BACKEND)
    model = _Relu()
    with pytest.raises(autotune.UnsafeKnobError) as info:
        autotune.apply(model, best, check_environment=False)
    message = str(info.value)
    assert f"backend {TESTING_BACKEND!r}: exists for torch's own tests" in message
    assert f"opt in by name: backend.{TESTING_BACKEND}" in message
    from autotune.reports.show import explain

    facts = explain(autotune.load(best), str(best))
    assert len(facts["unsafe_knobs"]) == 1 and TESTING_BACKEND in facts["unsafe_knobs"][0]
    # Why: opted in by name, it runs, and relu(x) comes out as x + 1.
    applied = autotune.apply(
        _Relu(), best, check_environment=False, allow_unsafe_knobs=[f"backend.{TESTING_BACKEND}"]
    )
    x = torch.randn(2, 4)
    with torch.no_grad():
        assert torch.equal(applied(x), x + 1) and not torch.equal(model(x), x + 1)


class _Relu(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)  # the *_TESTING_ONLY backends act on torch.relu calls


@pytest.mark.parametrize("backend", _safety.BACKENDS)
def test_the_backends_autotune_uses_are_taken_from_data(backend):
    assert _safety.backend_refusal(backend) is None
    assert _safety.problems({}, {}, backend=backend) == []


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="a shell script as the compiler")
def test_opted_in_the_same_knobs_do_run_the_program_and_write_the_traces(tmp_path):
    """Why they are refused: applied on purpose, Inductor runs the named compiler and writes
    its trace files into the named folder."""
    prog, elsewhere = _fake_compiler(tmp_path), tmp_path / "elsewhere"
    options = {"cpp.cxx": [None, str(prog)], "trace.enabled": True,
               "trace.debug_dir": str(elsewhere)}  # fmt: skip
    best = _best_config(tmp_path, options)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "cache")  # a cold compile
    try:
        model = autotune.apply(
            torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()), best,
            check_environment=False, allow_unsafe_knobs=[f"inductor.{k}" for k in options],
        )  # fmt: skip
        model(torch.randn(2, 4))
    finally:
        del os.environ["TORCHINDUCTOR_CACHE_DIR"]

    assert (tmp_path / "ran").exists()
    assert any(elsewhere.rglob("*")), "no trace written"
