"""How a study scores its trials: the objectives (latency, throughput, amortized compile), the
``--pareto`` front and its pick rules, and when a configuration ran clearly slower than eager.
The search loop (:mod:`autotune.search`) and the decision (:mod:`autotune.decide`) both score
with these, so that they agree."""

from autotune.scoring._objective import (
    CLEARLY_SLOWER_Q3,
    OBJECTIVES,
    Objective,
    break_even_calls,
    clearly_slower,
    scored_trial,
)
from autotune.scoring._pareto import (
    DIRECTIONS,
    PickRule,
    axis_value,
    front,
    optuna_values,
    parse_axes,
)

__all__ = [
    "CLEARLY_SLOWER_Q3", "DIRECTIONS", "OBJECTIVES", "Objective", "PickRule", "axis_value",
    "break_even_calls", "clearly_slower", "front", "optuna_values", "parse_axes", "scored_trial",
]  # fmt: skip
