"""The settings of a study: those the settings table declares (:class:`StudyFields`) and what
the study was made with, stored with it so that a resumed run or a worker uses the same; and
the rule a resumed run's settings are settled by. The stored row is read back, each setting
checked, by :func:`autotune.storage.settings_from_row`; a trial's spec is built from these by
:meth:`autotune.trials.TrialSpec.from_settings`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from autotune.errors import UsageError
from autotune.measure import MeasureSettings
from autotune.settings._fields import StudyFields
from autotune.settings._table import CHANGEABLE, LABELS, changeable_options

# The adaptive budget never stops a trial sooner than this: a small model's default compile
# takes seconds, and a max-autotune compile several times that can still win.
ADAPTIVE_FLOOR_S = 60.0


@dataclass(frozen=True, kw_only=True)
class StudySettings(StudyFields):
    """Every setting a trial needs, and how the study chooses its winner, independent of who
    runs it: the settings the table declares (:class:`~autotune.settings.StudyFields`, one
    field per option's setting, with its meaning in the option's help) and what the study
    was made with.

    The adaptive budget (``compile_budget_factor``): a search trial is stopped as
    ``timeout`` after that many times default torch.compile's compile time, plus its run
    time, at least :data:`ADAPTIVE_FLOOR_S`, at most ``compile_budget``; 0 keeps
    ``compile_budget`` alone (see :meth:`trial_time_limit_s`).
    """

    space: dict[str, Any]
    torch_version: str
    # --measure-seconds, as the trials time (stored as an object: each of its settings).
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    scope_plan: dict[str, Any] | None = None  # the probed ScopePlan, settled once per study
    model_sha256: str | None = None  # the model file's content when the study was created
    triton_version: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def trial_time_limit_s(
        self, default_compile_s: float | None, default_wall_s: float | None
    ) -> float:
        """A search trial's budget (OpenTuner's adaptive time limit): once default
        torch.compile's compile time is known, ``compile_budget_factor`` times it plus the
        default trial's run time (measuring, eager included), never below
        :data:`ADAPTIVE_FLOOR_S` nor above ``compile_budget``."""
        if not self.compile_budget_factor or default_compile_s is None:
            return self.compile_budget
        running = max(0.0, (default_wall_s or default_compile_s) - default_compile_s)
        adaptive = self.compile_budget_factor * default_compile_s + running
        return min(self.compile_budget, max(ADAPTIVE_FLOOR_S, adaptive))


def settle(
    study: str,
    stored: StudySettings,
    requested: StudySettings,
    given: frozenset[str] | None = None,
) -> tuple[StudySettings, list[str]]:
    """The settings a resumed study runs under, and notes worth printing.

    A setting the caller did not give (``given``: the names it set explicitly; None: all of
    them) keeps its stored value. A given setting that differs from the stored one is taken
    when it is one of :data:`CHANGEABLE` (and said in a note); any other difference refuses the
    run, naming every one. The device counts by its type (``cuda`` and ``cuda:1`` agree: a
    process's own device is its own); torch and triton are checked when a process joins (see
    autotune.settings._local).
    """
    given = frozenset(LABELS) if given is None else given
    changed = [
        name
        for name in LABELS
        if name in given and _differs(name, getattr(stored, name), getattr(requested, name))
    ]
    refused = [name for name in changed if name not in CHANGEABLE]
    if refused:
        raise UsageError(_refusal(study, stored, requested, refused))
    settings = dataclasses.replace(stored, **{n: getattr(requested, n) for n in changed})
    notes = [
        f"note: {LABELS[name]} of study {study!r} changes from {_show(stored, name)} to "
        f"{_show(requested, name)}"
        for name in changed
    ]
    return settings, notes


def _differs(name: str, stored: Any, requested: Any) -> bool:
    """A device is the study's by its type: a study on ``cuda`` runs on any CUDA device."""
    if name == "device":
        return str(stored).split(":")[0] != str(requested).split(":")[0]
    return bool(stored != requested)


def _refusal(study: str, stored: StudySettings, requested: StudySettings, names: list[str]) -> str:
    seen: set[str] = set()
    diffs = []
    for name in names:
        option = LABELS[name]
        if option in seen:
            continue
        seen.add(option)
        diffs.append(
            f"{option}: the study has {_show(stored, name)}, this run asks for "
            f"{_show(requested, name)}"
        )
    changeable = changeable_options()
    return (
        f"The study {study!r} already exists with other settings ({'; '.join(diffs)}). Its "
        "trials compare only under the settings they were measured with: leave these options "
        f"out to resume it as stored, or pass a new --study name. Only {changeable} may change "
        "when a study is resumed."
    )


def _show(settings: StudySettings, name: str) -> str:
    value = getattr(settings, name)
    if name == "space_hash":
        return f"space {settings.space.get('name')!r} (hash {value[:12]})"
    if name == "measure":
        return f"{value.target_seconds:g} s"
    return repr(value)
