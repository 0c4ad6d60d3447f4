"""The ``functorch`` layer of a config (``torch._functorch.config``: AOTAutograd and its
partitioner): validated against the installed torch, reviewed for safety, searched in a space,
and set around every call of a compiled region, where it changes what the forward saves for the
backward."""

from __future__ import annotations

from typing import Any

import optuna
import pytest
import torch
import torch._functorch.config as functorch_config

from autotune.cli._options import _knob_param
from autotune.reports.export import config_knobs
from autotune.reports.show import set_knobs
from autotune.runtime import _calls
from autotune.runtime import safety as _safety
from autotune.runtime.apply import compile_module
from autotune.runtime.config import CompileConfig, ConfigError, UnsafeKnobError
from autotune.runtime.knobs import check_config
from autotune.space import SpaceError, load_space, space_from_dict
from autotune.trials._code import code_identity, output_code

BUDGET = "activation_memory_budget"


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    layers = [m for _ in range(3) for m in (torch.nn.Linear(32, 32), torch.nn.GELU())]
    return torch.nn.Sequential(*layers)


def _train_step(config: CompileConfig) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """One forward and backward of the compiled MLP: the tensors saved for the backward, and
    the gradients."""
    torch._dynamo.reset()
    model = compile_module(_mlp(), config)
    x = torch.randn(8, 32, generator=torch.Generator().manual_seed(1))
    saved: list[torch.Tensor] = []

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        saved.append(tensor)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = model(x).sum()
    loss.backward()
    return saved, [p.grad for p in model.parameters() if p.grad is not None]


def _activations(saved: list[torch.Tensor]) -> list[torch.Tensor]:
    """The saved tensors that are not parameters: [8, 32] activations of the batch."""
    return [t for t in saved if t.shape[0] == 8]


def test_a_lower_activation_memory_budget_saves_fewer_activations_for_the_backward():
    """The effect, not the passing: with the budget at 0 the partitioner recomputes in the
    backward what it saved at 1 (aot_eager partitions with the min-cut partitioner too), and
    the gradients are the same."""
    saved = {}
    grads = {}
    for budget in (1.0, 0.5, 0.0):
        functorch = {} if budget == 1.0 else {BUDGET: budget}
        saved[budget], grads[budget] = _train_step(
            CompileConfig(backend="aot_eager", functorch=functorch)
        )
    counts = {budget: len(_activations(tensors)) for budget, tensors in saved.items()}
    elements = {b: sum(t.numel() for t in _activations(ts)) for b, ts in saved.items()}
    # torch 2.13: 6 activations (1536 elements) at 1.0, 4 (1024) at 0.5, only the input (256)
    # at 0.0; the parameters, which the partitioner counts free to save, are saved throughout.
    assert counts[1.0] > counts[0.5] > counts[0.0] >= 1, counts
    assert elements[1.0] > elements[0.5] > elements[0.0], elements
    assert functorch_config.activation_memory_budget == 1.0  # put back after the call
    for budget in (0.5, 0.0):
        torch.testing.assert_close(grads[budget], grads[1.0], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_with_inductor_the_budget_changes_the_generated_code_and_its_identity():
    identities, activations = {}, {}
    for budget in (1.0, 0.0):
        config = CompileConfig(functorch={} if budget == 1.0 else {BUDGET: budget})
        with output_code() as codes:
            saved, _ = _train_step(config)
        assert len(codes) == 2  # the forward and the backward graph
        identities[budget] = code_identity(config, None, codes)
        activations[budget] = len(_activations(saved))
    assert activations[1.0] > activations[0.0]
    assert identities[1.0] != identities[0.0]


def test_around_calls_sets_the_functorch_settings_for_the_call_and_puts_them_back():
    seen: list[float] = []

    class Reads(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen.append(functorch_config.activation_memory_budget)
            return x

    module = Reads()
    settings = _calls.call_settings(CompileConfig(functorch={BUDGET: 0.25}))
    assert settings.functorch == {BUDGET: 0.25}
    forward = _calls.around_calls(module.forward, settings, "cpu")
    forward(torch.ones(1))
    assert seen == [0.25] and functorch_config.activation_memory_budget == 1.0


@pytest.mark.parametrize(
    ("functorch", "message"),
    [
        ({"activation_memory_budgt": 0.5}, "did you mean 'activation_memory_budget'?"),
        ({BUDGET: "half"}, "functorch.activation_memory_budget: expected float, got 'half'"),
        ({"cse": 1}, "functorch.cse: expected bool, got 1"),
    ],
)
def test_a_functorch_key_this_torch_lacks_or_a_wrong_type_is_a_config_error(functorch, message):
    with pytest.raises(ConfigError) as info:
        check_config(CompileConfig(functorch=functorch), False)
    assert message in str(info.value) and not isinstance(info.value, UnsafeKnobError)


@pytest.mark.parametrize(
    ("knob", "value", "reason"),
    [
        ("debug_partitioner", True, _safety.DEBUG),
        ("visualize_memory_budget_pareto", True, _safety.DEBUG),
        ("memory_budget_pareto_dir", None, _safety.PATH),  # torch declares it NoneType
        ("joint_custom_pass", None, _safety.CODE),
        ("enable_remote_autograd_cache", None, _safety.REMOTE),
        ("unsafe_allow_optimization_of_collectives", True, _safety.GUARDS),
        ("force_autograd_cache", True, _safety.CACHE),
    ],
)
def test_a_refused_functorch_knob_is_an_unsafe_knob_error_unless_opted_into(knob, value, reason):
    config = CompileConfig(functorch={knob: value})
    with pytest.raises(UnsafeKnobError) as info:
        check_config(config, False)
    assert f"functorch.{knob}: {reason}" in str(info.value)
    check_config(config, [f"functorch.{knob}"])


def test_every_functorch_option_of_this_torch_is_reviewed_safe_or_refused_with_a_reason():
    options = functorch_config.get_config_copy()
    unreviewed = [
        name
        for name in sorted(options)
        if f"functorch.{name}" not in _safety.reviewed()
        and _safety.rule_reason(f"functorch.{name}") is None
        and _safety.scalar_type(functorch_config.get_type(name))
    ]
    assert not unreviewed, f"review these functorch options of torch {torch.__version__}"
    for param in sorted(p for p in _safety.reviewed() if p.startswith("functorch.")):
        name = param.partition(".")[2]
        if name in options:
            declared = functorch_config.get_type(name)
            assert _safety.refusal(param, options[name], declared) is None, param


def test_a_free_text_partitioner_knob_takes_only_the_reviewed_values():
    solver = "functorch.activation_memory_budget_solver"
    assert _safety.refusal(solver, "greedy", str) is None
    assert "takes one of" in str(_safety.refusal(solver, "/tmp/x", str))


def _budget_space(choices: Any, workload: str = "train", table: str = "functorch") -> Any:
    raw: dict[str, Any] = {"compile": {"backend": ["aot_eager"]}}
    if table == "numerics":
        raw["numerics"] = {"functorch": {BUDGET: choices}}
    else:
        raw["functorch"] = {BUDGET: choices}
    return space_from_dict(raw, "cpu", workload=workload)


def _suggested(space: Any, trials: int = 12) -> list[CompileConfig]:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    return [space.suggest(study.ask()) for _ in range(trials)]


def test_a_space_with_a_functorch_table_suggests_configs_carrying_it():
    space = _budget_space([1.0, 0.5])
    assert space.size == 2
    # torch's default (1.0) is left out of the config, as every layer's is: one hash for it.
    settings = {tuple(c.functorch.items()) for c in _suggested(space)}
    assert settings == {(), ((BUDGET, 0.5),)}
    assert space.to_dict()["functorch"] == {BUDGET: [1.0, 0.5]}


@pytest.mark.parametrize(
    ("choices", "table", "message"),
    [
        ([1.0, 1.5], "functorch", "functorch.activation_memory_budget: 1.5 is outside"),
        ([0.5, "all"], "functorch", "is not a float"),
        ([1.0, 0.5], "numerics", "[numerics] holds the tables"),
    ],
)
def test_a_space_refuses_a_budget_outside_0_to_1_and_a_numerics_functorch_table(
    choices, table, message
):
    with pytest.raises(SpaceError) as info:
        _budget_space(choices, table=table)
    assert message in str(info.value)


@pytest.mark.parametrize("name", ["cpu", "cuda"])
def test_the_built_in_spaces_search_the_budget_for_training_only(name):
    def budgets(workload: str) -> set[float]:
        space = load_space(name, name, workload=workload)
        assert f"functorch.{BUDGET}" in {k.param for k in space.knobs}
        return {c.functorch.get(BUDGET, 1.0) for c in _suggested(space, 30)}

    assert budgets("train") == {1.0, 0.5}
    assert budgets("infer") == {1.0}


def test_a_configs_functorch_settings_are_shown_exported_and_part_of_its_identity():
    config = CompileConfig(functorch={BUDGET: 0.5})
    assert (f"functorch.{BUDGET}", 0.5) in set_knobs(config)
    assert config_knobs(config.to_dict())[f"functorch.{BUDGET}"] == 0.5
    assert _knob_param("functorch.debug_partitioner") == "functorch.debug_partitioner"
    code = ["def call(args):\n    return kernel(*args)\n"]

    def identity(functorch: dict[str, Any]) -> str | None:
        return code_identity(CompileConfig(functorch=functorch), None, code)

    # The partition is in the code: a budget that generates the same code is the same code.
    assert identity({BUDGET: 0.5}) == identity({})
    # AOTAutograd's runtime wrappers are not: another functorch setting is another run.
    assert identity({"donated_buffer": False}) != identity({})
