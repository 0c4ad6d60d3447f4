"""What ships beside a best-config file, built after the decision: the entry written into the
file (other machines' entries kept), the compile-cache archive of its config, its AOTInductor
package, and the merge of several machines' files into one.

Names load lazily: ``python -m autotune.ship._cache_child`` must import what production
imports (torch and autotune's runtime path) and nothing else.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "ship_cache": "autotune.ship._cache",
    "merge_files": "autotune.ship._merge",
    "write_entry": "autotune.ship._entries",
    "vouch": "autotune.ship._entries",
    "existing_file": "autotune.ship._entries",
    "artifact_name": "autotune.ship._entries",
    "delete_replaced": "autotune.ship._entries",
    "is_artifact_name": "autotune.ship._entries",
    "CACHE_SUFFIX": "autotune.ship._entries",
    "AOT_SUFFIX": "autotune.ship._entries",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'autotune.ship' has no attribute {name!r}")
    return getattr(importlib.import_module(_NAMES[name]), name)
