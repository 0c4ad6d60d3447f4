"""Which entry of a best-config file serves the machine a process runs on (standard library).

The entries are tried from the closest to the farthest:

1. ``exact``: the same device name and torch version;
2. ``other-torch``: the same device name, another torch (the same minor version first);
3. ``same-class``: another device of the same kind: on CUDA the same compute capability
   (an H100 PCIe for an H100 SXM), on CPU any CPU;
4. none: an entry tuned on another kind of device (a GPU's entry on a CPU, an sm_80 entry
   on an sm_90 GPU) is not used: its options and measured decision do not carry over.

An entry that does not say where it was tuned (a file written by hand, or a config built in
code) serves any machine. Within a tier, the newest entry wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autotune.runtime.config import BestConfig, entry_key, entry_label

EXACT = "exact"
OTHER_TORCH = "other-torch"
SAME_CLASS = "same-class"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Choice:
    """The entry picked for a machine, and how close it is.

    Attributes:
        entry: The entry; None when no entry may serve this machine.
        match: ``exact``, ``other-torch``, ``same-class``, ``unknown`` (the entry does not
            say where it was tuned), or ``none``.
        why: One line for a warning (empty for an exact match).
    """

    entry: BestConfig | None
    match: str
    why: str

    @property
    def exact(self) -> bool:
        return self.match in (EXACT, UNKNOWN)


def choose(entries: Sequence[BestConfig], here: Mapping[str, Any]) -> Choice:
    """Picks the entry of ``entries`` for the machine ``here`` (an environment fingerprint:
    ``device``, ``device_name``, ``torch``, and ``capability`` on CUDA)."""
    device_name, torch_version = str(here.get("device_name")), str(here.get("torch"))
    machine = f"{device_name} with torch {torch_version}"
    newest = sorted(entries, key=lambda e: e.created_at, reverse=True)
    for entry in newest:
        if entry_key(entry) == (device_name, torch_version):
            return Choice(entry, EXACT, "")
    for entry in newest:
        if not entry.environment.get("device_name"):
            return Choice(entry, UNKNOWN, "")
    same_device = [e for e in newest if entry_key(e)[0] == device_name]
    if same_device:
        minor = _minor(torch_version)
        same_minor = [e for e in same_device if _minor(entry_key(e)[1]) == minor]
        entry = (same_minor or same_device)[0]
        return Choice(
            entry,
            OTHER_TORCH,
            f"no entry for {machine}; using the one for {entry_label(entry)} (same device, "
            "other torch: its measured speedup may not hold, and a knob it sets may behave "
            "differently)",
        )
    kind = _kind(here)
    same_class = [e for e in newest if _same_class(_kind(e.environment), kind)]
    if same_class:
        entry = next((e for e in same_class if entry_key(e)[1] == torch_version), same_class[0])
        return Choice(
            entry,
            SAME_CLASS,
            f"no entry for {machine}; using the closest, {entry_label(entry)} (a {_say(kind)}"
            " like this one, but another model of it: re-run the search here to be sure)",
        )
    tuned = "; ".join(entry_label(e) for e in entries)
    return Choice(
        None,
        "none",
        f"no entry of this file may serve {machine} ({_say(kind)}): it holds entries for "
        f"{tuned}; run `autotune search --out` on this machine to add one",
    )


def _kind(env: Mapping[str, Any]) -> tuple[str, str | None]:
    device = str(env.get("device") or "cpu")
    kind = device.split(":", 1)[0]
    return kind, (str(env["capability"]) if kind == "cuda" and env.get("capability") else None)


def _same_class(a: tuple[str, str | None], b: tuple[str, str | None]) -> bool:
    # A capability is compared only where both sides record one (older files do not).
    return a[0] == b[0] and (a[1] is None or b[1] is None or a[1] == b[1])


def _say(kind: tuple[str, str | None]) -> str:
    device, capability = kind
    if device == "cpu":
        return "CPU"
    of = f" of compute capability {capability}" if capability else ""
    return f"{device.upper()} device{of}"


def _minor(version: str) -> str:
    return ".".join(version.split("+", 1)[0].split(".")[:2])
