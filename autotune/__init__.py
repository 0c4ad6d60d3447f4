"""autotune: search torch.compile configurations and ship the winner as a config file.

Production needs two calls and only torch::

    import autotune

    model = autotune.apply(model, "best_config.json")

``import autotune`` itself imports neither torch nor the search's dependencies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autotune.runtime.config import (
    BestConfig,
    CompileConfig,
    ConfigError,
    ConfigFile,
    EnvironmentMismatchWarning,
    Scope,
    ScopeError,
    UnsafeKnobError,
    load,
)

if TYPE_CHECKING:
    from autotune.runtime.apply import apply

__version__ = "0.1.0"

__all__ = [
    "BestConfig",
    "CompileConfig",
    "ConfigError",
    "ConfigFile",
    "EnvironmentMismatchWarning",
    "Scope",
    "ScopeError",
    "UnsafeKnobError",
    "__version__",
    "apply",
    "load",
]


def __getattr__(name: str) -> Any:
    # `apply` imports torch: load it on first use so that `import autotune` stays cheap.
    if name == "apply":
        from autotune.runtime.apply import apply

        return apply
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
