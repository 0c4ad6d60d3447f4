"""The process that fills a compile cache for export (``autotune cache export``): it compiles
a best-config file's config on the study's inputs and prints the cache's validity keys.

It imports what production imports (torch and autotune's runtime path) and nothing of the
search: the cached graphs must have the keys a production process computes.

    TORCHINDUCTOR_CACHE_DIR=DIR python -m autotune.runtime._cache_child BEST MODEL DEVICE
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

from autotune.runtime.apply import apply
from autotune.runtime.cache import MEGACACHE, validity_keys
from autotune.runtime.config import BestConfig
from autotune.workload import build_calls, build_model, load_model_file


def main(best_path: str, model_path: str, device: str) -> None:
    best = BestConfig.load(best_path)
    module = load_model_file(model_path)
    torch.manual_seed(int(best.workload.get("seed") or 0))
    model = build_model(module, device).eval()
    calls = build_calls(module, device, best.workload.get("batch_size"))
    with torch.no_grad():
        apply(model, best_path, check_environment=False, cache=False,
              warmup=[call.kwargs or call.args for call in calls])  # fmt: skip
    if device.startswith("cuda"):
        artifacts = torch.compiler.save_cache_artifacts()
        if artifacts is not None:
            Path(os.environ["TORCHINDUCTOR_CACHE_DIR"], MEGACACHE).write_bytes(artifacts[0])
    print(json.dumps(validity_keys(device), sort_keys=True))


if __name__ == "__main__":
    main(*sys.argv[1:4])
