"""A trial's code identity: configs that generate the same code share it, and a trial whose
code the study already timed is compiled and checked but not timed again."""

from __future__ import annotations

import dataclasses

import pytest

from autotune.runtime.config import CompileConfig
from autotune.trials import MeasureSettings, PreloadedHostRunner, TrialSpec
from autotune.trials._code import code_identity

FAST = MeasureSettings(warmup=1, min_rounds=5, max_rounds=20, target_seconds=0.2)
CODE = ["def call(args):\n    return kernel(*args)\n"]


def test_knobs_that_change_no_code_share_an_identity():
    plain = code_identity(CompileConfig(), None, CODE)
    knobbed = code_identity(CompileConfig(options={"cpp.min_chunk_size": 512}), None, CODE)
    assert plain is not None and len(plain) == 32
    assert plain == knobbed


@pytest.mark.parametrize(
    "other",
    [
        CompileConfig(options={"triton.cudagraphs": True}),  # runs the same code in a graph
        # The same C++ source built with other compiler flags is another kernel.
        CompileConfig(options={"cpp.enable_unsafe_math_opt_flag": True}),
        CompileConfig(options={"cpp.enable_floating_point_contract_flag": "fast"}),
        CompileConfig(dynamic=True),
        CompileConfig(fullgraph=True),
        CompileConfig(dynamo={"recompile_limit": 16}),
        CompileConfig(scope={"compile": ["a"], "disable": []}),
        # bf16 matmuls through the same extern GEMM call: the code does not show it.
        CompileConfig(precision={"matmul": "medium"}),
    ],
)
def test_what_runs_the_code_differently_is_part_of_the_identity(other):
    assert code_identity(other, None, CODE) != code_identity(CompileConfig(), None, CODE)


def test_the_graph_count_of_the_process_is_not_part_of_the_code():
    first = code_identity(CompileConfig(), None, ["# AOT ID: ['0_inference']\n" + CODE[0]])
    later = code_identity(CompileConfig(), None, ["# AOT ID: ['3_inference']\n" + CODE[0]])
    assert first == later


def test_where_a_frozen_weight_lives_in_the_process_is_not_part_of_the_code():
    declared = "_frozen_param2 = None  # device(type='cpu') torch.float32 {} (32, 1) {}\n"

    def identity(shape: str, address: str) -> str | None:
        return code_identity(CompileConfig(), None, [declared.format(shape, address) + CODE[0]])

    first = identity("(32, 32)", "7fcf7dc468f0")
    assert first == identity("(32, 32)", "7fcf7ce8a080")
    assert first != identity("(64, 32)", "7fcf7ce8a080")


def test_other_code_or_batch_size_or_no_code_at_all():
    base = code_identity(CompileConfig(), None, CODE)
    assert code_identity(CompileConfig(), None, [CODE[0] + "# x\n"]) != base
    assert code_identity(CompileConfig(), 8, CODE) != base
    assert code_identity(CompileConfig(), None, []) is None


@pytest.mark.slow
def test_a_trial_whose_code_was_timed_is_compiled_and_checked_but_not_timed(
    model_file, tmp_path, request
):
    host = PreloadedHostRunner(log_dir=str(tmp_path))  # forks, as a study's trials are
    request.addfinalizer(host.close)

    def run(options: dict, known: dict[str, int]):
        spec = TrialSpec(
            model_path=model_file("tiny"), device="cpu", time_limit_s=300.0, measure=FAST,
            config=CompileConfig(options=options).to_dict(), cache_dir=str(tmp_path / "c"),
            known_code=known,
        )  # fmt: skip
        result = host.run(spec)
        assert result.status == "ok", result.error_tail
        return result

    timed = run({}, {})
    assert timed.code_hash and timed.rounds and timed.equivalent_of is None

    # cpp.min_chunk_size only matters for loops larger than this model's: the same code
    same = run({"cpp.min_chunk_size": 512}, {timed.code_hash: 7})
    assert same.code_hash == timed.code_hash and same.equivalent_of == 7
    assert same.rounds is None and same.speedup_vs_eager is None
    assert same.phases["timing_s"] == 0.0
    assert same.compile_time_s > 0 and same.accuracy["max_abs_diff"] is not None
    assert same.graphs == 1

    # frozen weights are constants of the code: the search sees freezing, not default compile
    frozen = run({"freezing": True}, {timed.code_hash: 7})
    assert frozen.code_hash != timed.code_hash and frozen.equivalent_of is None

    # a vector width the CPU lacks makes Inductor emit scalar loops: other code, timed
    other = run({"cpp.simdlen": 1}, {timed.code_hash: 7})
    assert other.code_hash != timed.code_hash and other.equivalent_of is None
    assert other.rounds and other.speedup_vs_eager


def test_the_spec_carries_known_code_through_json():
    spec = TrialSpec(model_path="m.py", device="cpu", config=None, known_code={"ab" * 16: 3})
    again = TrialSpec.from_dict(dataclasses.asdict(spec))
    assert again.known_code == {"ab" * 16: 3}
