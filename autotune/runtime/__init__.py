"""What production ships: the best-config schema and applying it to a model (torch + stdlib).

Importing this package imports no torch; the torch-facing functions load on first use.
The ``apply`` function lives in :mod:`autotune.runtime.apply` (and is ``autotune.apply``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from autotune.runtime.config import (
    SCHEMA_VERSION,
    BestConfig,
    CompileConfig,
    ConfigError,
    ConfigFile,
    EnvironmentMismatchWarning,
    QuantizeError,
    Scope,
    ScopeError,
    UnsafeKnobError,
    load,
)

if TYPE_CHECKING:
    from autotune.runtime.apply import compile_module
    from autotune.runtime.fingerprint import (
        environment_fingerprint,
        environment_mismatches,
        model_fingerprint,
    )

_LAZY = {
    "compile_module": "autotune.runtime.apply",
    "environment_fingerprint": "autotune.runtime.fingerprint",
    "environment_mismatches": "autotune.runtime.fingerprint",
    "model_fingerprint": "autotune.runtime.fingerprint",
}

__all__ = [
    "SCHEMA_VERSION",
    "BestConfig",
    "CompileConfig",
    "ConfigError",
    "ConfigFile",
    "EnvironmentMismatchWarning",
    "QuantizeError",
    "Scope",
    "ScopeError",
    "UnsafeKnobError",
    "compile_module",
    "environment_fingerprint",
    "environment_mismatches",
    "load",
    "model_fingerprint",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
