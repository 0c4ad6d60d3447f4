"""autotune: search torch.compile configurations and ship the winner as a config file.

Production needs two calls and only torch::

    import autotune

    model = autotune.apply(model, "best_config.json")

``import autotune`` itself imports neither torch nor the search's dependencies. To tune from
Python (a notebook, a training script)::

    result = autotune.tune(model, (x,), device="cuda", trials=20)
    model = result.apply(model)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autotune.runtime.config import (
    BestConfig,
    CompileConfig,
    ConfigError,
    ConfigFile,
    EnvironmentMismatchWarning,
    Part,
    QuantizeError,
    Scope,
    ScopeError,
    UnsafeKnobError,
    When,
    load,
)

if TYPE_CHECKING:
    from autotune.runtime.apply import apply
    from autotune.runtime.optimizer import apply_optimizer
    from autotune.search import TuneResult, tune

from autotune._version import VERSION as __version__

__all__ = [
    "BestConfig",
    "CompileConfig",
    "ConfigError",
    "ConfigFile",
    "EnvironmentMismatchWarning",
    "Part",
    "QuantizeError",
    "Scope",
    "ScopeError",
    "TuneResult",
    "UnsafeKnobError",
    "When",
    "__version__",
    "apply",
    "apply_optimizer",
    "load",
    "tune",
]


def __getattr__(name: str) -> Any:
    # `apply` imports torch: load it on first use so that `import autotune` stays cheap.
    if name == "apply":
        from autotune.runtime.apply import apply

        return apply
    if name == "apply_optimizer":
        from autotune.runtime.optimizer import apply_optimizer

        return apply_optimizer
    if name in ("tune", "TuneResult"):  # the search: Optuna, SQLAlchemy, the trial runners
        import autotune.search

        return getattr(autotune.search, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
