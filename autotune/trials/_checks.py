"""Checks and facts of a trial's compile that every workload shares: a scope that compiled no
graph, a recompile storm, the Dynamo counters a result records."""

from __future__ import annotations

from typing import Any

from autotune.runtime.config import CompileConfig
from autotune.trials._classify import TrialFailure


def raise_on_no_graph(config: CompileConfig | None) -> None:
    """A config whose compiled scope ran no graph would time eager against eager: a failure
    here, before any timing (e.g. a scope whose compiled region Dynamo ran eagerly, whole)."""
    from torch._dynamo import utils

    if config is None or utils.counters["stats"]["unique_graphs"]:
        return
    scope = config.scope
    where = "compiled: " + ", ".join(p or "<root>" for p in scope.compile[:4])
    where += f"; kept eager: {', '.join(scope.disable[:4])}" if scope.disable else ""
    breaks = list(utils.counters["graph_break"])
    why = f"; first graph break: {breaks[0].splitlines()[0][:200]}" if breaks else ""
    raise TrialFailure(
        "no_graph",
        f"torch.compile compiled no graph in this config's scope ({where}), so the model ran "
        f"eagerly: the trial would measure eager under another name{why}",
    )


def raise_on_recompile_storm() -> None:
    """Past Dynamo's recompile limit, new shapes run eager without a word: a failure here."""
    from torch._dynamo import utils

    metrics = list(getattr(utils, "get_compilation_metrics", lambda: [])())
    reasons = [str(getattr(m, "fail_reason", "") or "") for m in metrics]
    reasons += [str(key) for key in utils.counters["unimplemented"]]
    hit = next((r for r in reasons if _is_limit(r)), None)
    if hit is not None:
        raise TrialFailure(
            "recompile_storm",
            f"hit Dynamo's recompile limit after {len(metrics)} compiles ("
            f"{hit.strip().splitlines()[0][:200]}); later shapes would run eager. Search "
            "dynamic=true, or raise dynamo.recompile_limit in the space",
        )


def _is_limit(reason: str) -> bool:
    text = reason.lower().replace("_", " ")
    return "recompile limit" in text or "cache size limit" in text


def reset_counters() -> None:
    """A trial forked from the preloaded host starts with the host's Dynamo state: clear it."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()


def dynamo_facts() -> dict[str, Any]:
    from torch._dynamo import utils

    breaks = utils.counters["graph_break"]
    metrics = list(getattr(utils, "get_compilation_metrics", lambda: [])())
    recompiles = sum(1 for m in metrics if getattr(m, "recompile_reason", None))
    inductor = utils.counters["inductor"]
    return {
        "graphs": int(utils.counters["stats"]["unique_graphs"]),
        "graph_breaks": int(sum(breaks.values())),
        "graph_break_reasons": [reason[:300] for reason in list(breaks)[:5]],
        "recompiles": recompiles,
        "cache": {
            "fxgraph_hit": int(inductor["fxgraph_cache_hit"]),
            "fxgraph_miss": int(inductor["fxgraph_cache_miss"]),
        },
    }
