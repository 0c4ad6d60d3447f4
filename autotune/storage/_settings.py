"""The settings of a study: stored with it, so that a resumed run or a worker uses the same."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from autotune.errors import UsageError
from autotune.records import SETTINGS_REMEDY, SETTINGS_ROW, StudyRowError, settings_dict
from autotune.settings import CHANGEABLE, LABELS, StudyFields, changeable_options
from autotune.storage._settings_check import field_rules, measure_settings, setting_problems
from autotune.trials import MeasureSettings, TrialSpec

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

    def trial_spec(
        self,
        config: dict[str, Any] | None,
        *,
        cache_dir: str | None,
        relaxed_numerics: bool,
        batch_size: int | None = None,
        measure: MeasureSettings | None = None,
        time_limit_s: float | None = None,
    ) -> TrialSpec:
        """One trial of this study: ``config`` (None: eager) in ``cache_dir``, held to the
        looser gate when ``relaxed_numerics``, timed by ``measure`` (default: the study's),
        killed after ``time_limit_s`` (default: the study's compile budget)."""
        return TrialSpec(
            model_path=self.model_path,
            device=self.device,
            config=config,
            workload=self.workload,
            seed=self.seed,
            time_limit_s=self.compile_budget if time_limit_s is None else time_limit_s,
            measure=measure or self.measure,
            cache_dir=cache_dir,
            relaxed_numerics=relaxed_numerics,
            batch_size=batch_size,
            accuracy=self.accuracy,
            traffic=self.traffic,
        )

    @classmethod
    def from_dict(cls, data: Any, study: str | None = None) -> StudySettings:
        """The settings ``data`` (:meth:`to_dict`'s, as stored with study ``study``; default:
        the study the records read them from) hold, each checked by the command line's rules
        for its option; settings that a newer autotune added are left out.

        Raises:
            StudyRowError: Settings are missing, of the wrong type or break their rule (all
                of them named, with their values).
        """
        problems = setting_problems(data, RULES)
        if problems:
            study = study or getattr(data, "study", None)
            raise StudyRowError(study, SETTINGS_ROW, problems, SETTINGS_REMEDY)
        names = {f.name for f in dataclasses.fields(cls)}
        known = {k: v for k, v in data.items() if k in names}
        return cls(**{**known, "measure": measure_settings(data["measure"])})


# One rule per setting (tests/storage_tests/test_settings_rows.py holds them to the fields):
# those whose type takes None may be null in a row.
RULES = field_rules([f.name for f in dataclasses.fields(StudySettings) if "None" in str(f.type)])


def settings_from_row(study: str, text: Any) -> StudySettings:
    """The settings of study ``study`` from the JSON text of its row
    (``autotune_studies.settings_json``), checked as :meth:`StudySettings.from_dict` checks
    them: what every read of a study's settings (studies, report, export, a worker joining,
    finalize) goes through.

    Raises:
        StudyRowError: The only exception for bad input: the text is not a JSON object, or
            its settings break their rules; the message names the study, every bad setting
            and its value, and the remedy.
    """
    return StudySettings.from_dict(settings_dict(study, text), study)


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
    autotune.study._identity).
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


__all__ = [
    "CHANGEABLE",
    "StudyRowError",
    "StudySettings",
    "settings_from_row",
    "settle",
]
