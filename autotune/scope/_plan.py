"""Plans the scope search of a model: analyze it, probe its parts, build the candidates."""

from __future__ import annotations

from collections.abc import Callable

from autotune._deadline import Deadline
from autotune.scope._candidates import ScopePlan, build_plan
from autotune.scope._child import ScopeAnalysisError, analyze_model_file
from autotune.scope._probe import Prober, ProbeResult, probe_targets
from autotune.trials import TrialRunner, TrialSpec


def plan_scopes(
    base: TrialSpec,
    runner: TrialRunner,
    *,
    backend: str = "inductor",
    on_probe: Callable[[ProbeResult], None] = lambda result: None,
    on_target: Callable[[str], None] = lambda name: None,
    deadline: Deadline = Deadline(),  # noqa: B008 - frozen
) -> ScopePlan:
    """Analyzes a model file, probes each of its parts compiled alone, and plans the scopes.

    The analysis runs in a child process (the model is never built here); each probe is a
    trial run by ``runner``, one after the other, each bounded by ``base.time_limit_s``. A part
    that crashes, hangs, fails to compile, runs out of memory or changes the outputs is
    excluded from every candidate and kept eager inside compiled regions; a part that only
    breaks its graph stays compilable, in candidates marked ``fullgraph=False``.

    Args:
        base: The probes' trial, its config aside (timed by ``PROBE_MEASURE`` in a study):
            the model file (``get_model`` / ``get_inputs``), device, seed, workload
            (``train``: each probe runs training steps, so a part whose backward fails to
            compile is caught by its probe too), traffic (``--traffic``: the analysis and the
            probes run its requests), kernel cache, timing (short: compile time dominates a
            probe), and the study's compile budget as the time limit of the analysis and of
            each probe.
        runner: Runs each probe trial (a ``SubprocessRunner`` in a study).
        backend: The ``torch.compile`` backend the probes compile with.
        on_probe: Called with each probe result as it comes (progress lines).
        on_target: Called with each part (``unit head``, ``block Layer``) as its probe starts.
        deadline: The command's timeout: no probe starts after it, and none runs past it.

    Returns:
        The plan: candidates, every probe result, and the module tree.

    Raises:
        ScopeAnalysisError: The model file or its eager run failed in the analysis process.
        DeadlineReached: The deadline passed before every part was probed.
    """
    deadline.check("before the scope analysis")
    try:
        tree = analyze_model_file(
            base.model_path,
            base.device,
            seed=base.seed,
            time_limit_s=deadline.budget(base.time_limit_s),
            traffic=base.traffic,
        )
    except ScopeAnalysisError:
        deadline.check("during the scope analysis")
        raise
    prober = Prober(runner, backend, base)
    probes = []
    for target in probe_targets(tree):
        deadline.check("during the scope probes")
        on_target(f"{target.kind} {target.name}")
        result = prober.probe(target, deadline)
        on_probe(result)
        probes.append(result)
    return build_plan(tree, probes, backend)
