"""What ships beside a best-config file, built after the decision: the entry written into the
file (other machines' entries kept), the compile-cache archive of its config, its AOTInductor
package, and the merge of several machines' files into one.

Nothing here imports the search: ``python -m autotune.ship._cache_child`` imports this package
first, and must import what production imports (torch and autotune's runtime path) beside the
standard library.
"""

from __future__ import annotations

from autotune.ship._cache import ship_cache
from autotune.ship._entries import (
    AOT_SUFFIX,
    CACHE_SUFFIX,
    artifact_name,
    delete_replaced,
    existing_file,
    is_artifact_name,
    vouch,
    write_entry,
)
from autotune.ship._merge import merge_files

__all__ = [
    "AOT_SUFFIX", "CACHE_SUFFIX", "artifact_name", "delete_replaced", "existing_file",
    "is_artifact_name", "merge_files", "ship_cache", "vouch", "write_entry",
]  # fmt: skip
