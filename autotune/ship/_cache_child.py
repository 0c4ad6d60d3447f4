"""The process that fills a compile cache for export (``autotune cache export``): it compiles
one entry of a best-config file on the study's inputs, optionally packages it with
AOTInductor, and prints the validity keys (and the package's record) as one JSON line, with
what it compiled: the entry's config hash and the structure hash of the model its model file
built (and, with WEIGHTS 1, the SHA-256 of that model's weights), which the parent checks
against the entry it read before it records (and signs) anything.

BEST is the parent's private copy of the bytes it read, not the user's file: what is compiled
is what the parent checked. It imports what production imports (torch and autotune's runtime
path) and nothing of the search: the cached graphs must have the keys a production process
computes.

    TORCHINDUCTOR_CACHE_DIR=DIR python -m autotune.ship._cache_child \
        BEST INDEX MODEL DEVICE [PT2 [CACHE: 0 or 1 [ALLOWED: KNOB,KNOB or * [WEIGHTS: 0 or 1]]]]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import torch

from autotune._scratch import scratch_dir
from autotune.runtime.apply import apply
from autotune.runtime.cache import MEGACACHE, validity_keys
from autotune.runtime.config import ConfigFile
from autotune.runtime.fingerprint import model_fingerprint, weights_sha256
from autotune.workload import build_calls, build_model, load_model_file


def main(
    best_path: str,
    index: str,
    model_path: str,
    device: str,
    package: str = "",
    cache: str = "1",
    allowed: str = "",
    weights: str = "0",
) -> None:
    best = ConfigFile.load(best_path).entries[int(index)]
    allow_unsafe_knobs = True if allowed == "*" else [k for k in allowed.split(",") if k]
    assert best.config is not None
    module = load_model_file(model_path)
    torch.manual_seed(int(best.workload.get("seed") or 0))
    model = build_model(module, device).eval()
    # what the parent checks against the entry, taken before a regional scope swaps modules
    facts: dict[str, Any] = {
        "config_hash": best.config_hash,
        "model_sha256": model_fingerprint(model)["sha256"],
    }
    _refuse_another_model(best.model, facts["model_sha256"], model_path)
    if weights == "1":
        facts["weights_sha256"] = weights_sha256(model)
    calls = build_calls(
        module, device, best.workload.get("batch_size"), best.workload.get("traffic")
    )
    if cache == "1":
        # The parent verified the entry; production's signature policy is not this process's.
        with torch.no_grad():
            apply(model, best, check_environment=False, cache=False,
                  warmup=[call.kwargs or call.args for call in calls],
                  allow_unsafe_knobs=allow_unsafe_knobs, require_signature=False)  # fmt: skip
    if cache == "1" and device.startswith("cuda"):
        artifacts = torch.compiler.save_cache_artifacts()
        if artifacts is not None:
            Path(os.environ["TORCHINDUCTOR_CACHE_DIR"], MEGACACHE).write_bytes(artifacts[0])
    facts["valid_for"] = validity_keys(device)
    if package:
        from autotune.ship import _aot as aot

        # A fresh model (the compiled one's modules were swapped in place by a regional
        # scope) and its own cache directory: the package's compile must not land in the
        # cache being exported.
        torch.manual_seed(int(best.workload.get("seed") or 0))
        eager = build_model(module, device).eval()
        breaks = best.metrics.get("graph_breaks")
        why = aot.why_not_packaged(best.config, calls, None if breaks is None else int(breaks))
        if why is None:
            with scratch_dir("aot-") as tmp:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(tmp)
                try:
                    facts["aot"] = aot.build_package(
                        eager, calls, best.config, Path(package),
                        relaxed=bool(best.workload.get("relaxed_numerics")),
                        allow_unsafe_knobs=allow_unsafe_knobs,
                    )  # fmt: skip
                except aot.PackageError as e:
                    why = str(e)
        facts["aot_skipped"] = why
    print(json.dumps(facts, sort_keys=True))


def _refuse_another_model(recorded: dict[str, Any], structure: str, model_path: str) -> None:
    """Exits before anything is compiled or written when the model file builds a model of
    another structure than the entry records (the parent checks the report again)."""
    if recorded.get("sha256") and recorded["sha256"] != structure:
        sys.exit(
            f"The model file {model_path} builds a model of structure {structure!r}, but the "
            f"entry was tuned on {recorded['sha256']!r} ({recorded.get('root_class')!r}): "
            "nothing was compiled. Pass --model with the model file the entry was tuned on."
        )


if __name__ == "__main__":
    main(*sys.argv[1:9])
