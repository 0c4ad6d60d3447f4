"""Compile scope: which submodules to compile, found by analysis, isolated probes and search.

``plan_scopes`` analyzes a model file (top-level parts, repeated block classes, their share of
eager time), probes each part compiled on its own in a trial process, and returns a
:class:`ScopePlan`: a short list of named candidate scopes drawn by Optuna as one categorical
parameter, which never compile a part the probe found broken.
"""

from __future__ import annotations

from autotune.scope._candidates import (
    SCOPE_PARAM,
    NamedScope,
    ScopePlan,
    build_candidates,
    build_plan,
)
from autotune.scope._child import ScopeAnalysisError, analyze_model_file
from autotune.scope._plan import plan_scopes
from autotune.scope._probe import PROBE_MEASURE, ProbeResult, ProbeTarget, probe_targets
from autotune.scope._tree import BlockClass, ModelTree, ModulePart

__all__ = [
    "PROBE_MEASURE",
    "SCOPE_PARAM",
    "BlockClass",
    "ModelTree",
    "ModulePart",
    "NamedScope",
    "ProbeResult",
    "ProbeTarget",
    "ScopeAnalysisError",
    "ScopePlan",
    "analyze_model_file",
    "build_candidates",
    "build_plan",
    "plan_scopes",
    "probe_targets",
]
