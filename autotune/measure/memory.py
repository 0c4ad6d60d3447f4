"""Peak memory of a trial.

| device | what is measured | reset |
| --- | --- | --- |
| cuda | ``torch.cuda.max_memory_allocated``: tensors held by the caching allocator | yes |
| cpu | peak resident set size (RSS) of this process: tensors, code, caches, Python | Linux only |

On CPU the peak can be reset only on Linux, through ``/proc/self/clear_refs``; elsewhere it is the
peak since the process started (one process per trial, so it still covers only that trial).
"""

from __future__ import annotations

import sys

import torch

from autotune.measure._device import resolve


def reset_peak_memory(device: str | torch.device) -> None:
    """Start a new peak for :func:`peak_memory_bytes` (best effort on CPU, see module docs)."""
    resolved = resolve(device)
    if resolved.type == "cuda":
        torch.cuda.reset_peak_memory_stats(resolved)
        return
    try:
        # "5" resets the peak RSS (VmHWM, which ru_maxrss reports) to the current RSS.
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        pass


def peak_memory_bytes(device: str | torch.device) -> int | None:
    """Peak memory in bytes since the last reset, or None where it cannot be read."""
    resolved = resolve(device)
    if resolved.type == "cuda":
        return torch.cuda.max_memory_allocated(resolved)
    try:
        import resource
    except ImportError:  # Windows
        return None
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in kibibytes on Linux, in bytes on macOS.
    return max_rss if sys.platform == "darwin" else max_rss * 1024
