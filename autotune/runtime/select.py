"""Which entry of a best-config file serves the machine a process runs on (standard library).

The entries are tried from the closest to the farthest:

1. ``exact``: the same device name and torch version;
2. ``other-torch``: the same device name, another torch (the same minor version first);
3. ``same-class``: another device of the same kind: on CUDA the same compute capability
   (an H100 PCIe for an H100 SXM), on CPU any CPU;
4. ``unknown``: an entry that does not say where it was tuned (no ``device_name``: a file
   written by hand, or by an older autotune) serves any machine, but only where no entry that
   says where it was tuned comes closer: it carries no evidence of this machine, so it never
   outranks one that does, and in a file that also holds such entries it is applied with a
   warning saying so (in a file of such entries only, as a hand-written config, silently);
5. none: an entry tuned on another kind of device (a GPU's entry on a CPU, an sm_80 entry
   on an sm_90 GPU) is not used: its options and measured decision do not carry over.

Within a tier, the newest entry wins: ``created_at`` compared as a time
(:func:`~autotune.runtime.config.created_time`: offsets and ``Z`` read, a time without an offset
or a date alone taken as UTC), never as text. What the file says of a machine is shown inert
(:func:`autotune._printable.inline`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from autotune._printable import inline
from autotune.runtime.config import BestConfig, created_time, entry_key, entry_label

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
        why: One line for a warning (empty for an exact match, and for the entry of a file
            that says of no entry where it was tuned).
    """

    entry: BestConfig | None
    match: str
    why: str

    @property
    def exact(self) -> bool:
        """Whether the entry serves this machine as its own: nothing to warn about."""
        return self.entry is not None and not self.why


def choose(entries: Sequence[BestConfig], here: Mapping[str, Any]) -> Choice:
    """Picks the entry of ``entries`` for the machine ``here`` (an environment fingerprint:
    ``device``, ``device_name``, ``torch``, and ``capability`` on CUDA)."""
    device_name, torch_version = str(here.get("device_name")), str(here.get("torch"))
    machine = inline(f"{device_name} with torch {torch_version}")
    newest = sorted(entries, key=created_time, reverse=True)
    located = [e for e in newest if e.environment.get("device_name")]
    exact = next((e for e in located if entry_key(e) == (device_name, torch_version)), None)
    if exact is not None:
        return Choice(exact, EXACT, "")
    closest = _closest(located, here, machine)
    if closest is not None:
        return closest
    unknown = next((e for e in newest if not e.environment.get("device_name")), None)
    if unknown is not None:
        return _unknown(unknown, located, machine)
    tuned = "; ".join(entry_label(e) for e in entries)
    return Choice(
        None,
        "none",
        f"no entry of this file may serve {machine} ({_say(_kind(here))}): it holds entries "
        f"for {tuned}; run `autotune search --out` on this machine to add one",
    )


def _closest(located: list[BestConfig], here: Mapping[str, Any], machine: str) -> Choice | None:
    """The entry of the same device with another torch, else of the same kind of device."""
    device_name, torch_version = str(here.get("device_name")), str(here.get("torch"))
    same_device = [e for e in located if entry_key(e)[0] == device_name]
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
    same_class = [e for e in located if _same_class(_kind(e.environment), kind)]
    if not same_class:
        return None
    entry = next((e for e in same_class if entry_key(e)[1] == torch_version), same_class[0])
    return Choice(
        entry,
        SAME_CLASS,
        f"no entry for {machine}; using the closest, {entry_label(entry)} (a {_say(kind)}"
        " like this one, but another model of it: re-run the search here to be sure)",
    )


def _unknown(entry: BestConfig, located: list[BestConfig], machine: str) -> Choice:
    """An entry that does not say where it was tuned: silent in a file of such entries only (a
    config written by hand), said in one that also holds entries of other machines."""
    if not located:
        return Choice(entry, UNKNOWN, "")
    tuned = "; ".join(entry_label(e) for e in located)
    return Choice(
        entry,
        UNKNOWN,
        f"no entry for {machine} or a machine like it (the file holds entries for {tuned}); "
        "using its entry that does not say where it was tuned (no device_name): its measured "
        "speedup and decision may not hold here; run `autotune search --out` on this machine "
        "to add one",
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
