"""One knob of a space: its choices or range, its condition, and how Optuna draws it."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from autotune.space import _condition, _types
from autotune.space._file import SpaceError

if TYPE_CHECKING:
    import optuna

TABLE_KEYS = ("choices", "low", "high", "step", "log", "when")
# Every value of a range is checked, counted and offered to presets; past this many, a range
# is a typo (a step too small) rather than a space anyone searches.
MAX_RANGE_VALUES = 1_000_000


@dataclass(frozen=True)
class Range:
    """Every value from ``low`` to ``high`` (both included) by ``step``.

    Integer ranges may set ``log`` (Optuna samples them on a log scale); float ranges need a
    ``step``, so that every space holds a finite number of configurations.
    """

    low: int | float
    high: int | float
    step: int | float = 1
    log: bool = False

    @property
    def is_int(self) -> bool:
        return all(_is_int(v) for v in (self.low, self.high, self.step))

    def count(self) -> int:
        return round((self.high - self.low) / self.step) + 1

    def values(self) -> list[int | float]:
        return [self.normalize(self.low + i * self.step) for i in range(self.count())]

    def normalize(self, value: float) -> int | float:
        """The grid value as written: ints stay ints, floats lose their rounding noise."""
        return int(value) if self.is_int else float(f"{value:.12g}")

    def holds(self, value: Any) -> bool:
        """Whether ``value`` is one of :meth:`values`, of its type (an integer range holds
        integers only, a float range floats only), found without listing them."""
        if not _is_number(value) or isinstance(value, int) != self.is_int:
            return False
        if not self.low <= value <= self.high:
            return False
        nearest = round((value - self.low) / self.step)
        return bool(self.normalize(self.low + nearest * self.step) == value)


class OutOfSpaceError(SpaceError):
    """A trial fixes a knob to a value the space does not offer: a queued or stored trial
    (Optuna takes a fixed value outside a range with a warning only). That trial fails."""


@dataclass(frozen=True)
class Knob:
    """One setting of a space: fixed (one choice), a list of choices, or a range.

    Attributes:
        layer: ``compile``, ``inductor``, ``dynamo``, ``functorch`` or a lever layer
            (``precision``, ``openvino``).
        name: The key within the layer (``freezing``, ``cpp.simdlen``).
        choices: The values to choose from (empty for a range).
        range: The range to draw from, or None.
        when: A condition (see :mod:`autotune.space._condition`); None: always suggested.
        numerics: The knob belongs to the opt-in ``[numerics]`` group.
    """

    layer: str
    name: str
    choices: tuple[Any, ...] = ()
    range: Range | None = None
    when: str | None = None
    numerics: bool = False

    @property
    def param(self) -> str:
        """The Optuna parameter name, e.g. ``inductor.freezing``."""
        return f"{self.layer}.{self.name}"

    @property
    def count(self) -> int:
        return self.range.count() if self.range is not None else len(self.choices)

    def values(self) -> list[Any]:
        return self.range.values() if self.range is not None else list(self.choices)

    def first(self) -> Any:
        return self.range.low if self.range is not None else self.choices[0]

    def offers(self, value: Any) -> bool:
        """Whether ``value`` is one of the knob's values, type included (``True`` is not
        ``1``)."""
        if self.range is not None:
            return self.range.holds(value)
        return any(v == value and type(v) is type(value) for v in self.choices)

    def draw(self, trial: optuna.Trial) -> Any:
        """Suggests the knob's value through ``trial`` (a fixed knob is not an Optuna param).

        Raises:
            OutOfSpaceError: The trial fixes a value the knob does not offer.
        """
        if self.count == 1:
            return self.first()
        try:
            value = self._suggest(trial)
        except (ValueError, OverflowError) as exc:  # Optuna refuses the fixed value
            refused = str(exc).rstrip(".")
            raise OutOfSpaceError(self._outside(f"a value Optuna refuses ({refused})")) from None
        if not self.offers(value):
            raise OutOfSpaceError(self._outside(f"{value!r}"))
        return value

    def _suggest(self, trial: optuna.Trial) -> Any:
        r = self.range
        if r is None:
            return trial.suggest_categorical(self.param, list(self.choices))
        if r.is_int:
            return trial.suggest_int(
                self.param, int(r.low), int(r.high), step=int(r.step), log=r.log
            )
        return r.normalize(trial.suggest_float(self.param, r.low, r.high, step=r.step))

    def _outside(self, what: str) -> str:
        if self.range is not None:
            r = self.range
            offered = f"the range low={r.low}, high={r.high}, step={r.step}"
        else:
            shown = ", ".join(map(repr, self.choices[:8])) + (", ..." if self.count > 8 else "")
            offered = f"the choices {shown}"
        return (
            f"{self.param}: the trial fixes {what}, but this space offers {offered} only; a "
            "trial queued or stored with a value outside the space cannot be measured, so it "
            "fails: queue values the space offers (`autotune spaces --show` lists them)"
        )

    def from_param(self, value: Any) -> Any:
        """A value recorded by Optuna, as :meth:`draw` returned it."""
        return self.range.normalize(value) if self.range is not None else value

    def to_value(self) -> Any:
        """The TOML/JSON form: a list of choices, or a table with a range and/or ``when``."""
        if self.range is None and self.when is None:
            return list(self.choices)
        table: dict[str, Any] = {}
        if self.range is None:
            table["choices"] = list(self.choices)
        else:
            table.update(low=self.range.low, high=self.range.high, step=self.range.step)
            if self.range.log:
                table["log"] = True
        if self.when is not None:
            table["when"] = self.when
        return table


def parse_knob(layer: str, name: str, value: Any, numerics: bool) -> tuple[Knob | None, list[str]]:
    """Reads one ``name = value`` of a layer table; returns the knob or the problems."""
    where = f"{layer}.{name}"
    if isinstance(value, dict):
        return _parse_table(layer, name, value, numerics)
    if isinstance(value, list) or _types.is_scalar(value):
        choices = value if isinstance(value, list) else [value]
        problems = _choice_problems(where, choices)
        knob = Knob(layer, name, tuple(choices), numerics=numerics)
        return (None, problems) if problems else (knob, [])
    return None, [f"{where}: give a list of choices, one value or a table, got {value!r}"]


def _parse_table(
    layer: str, name: str, table: dict[str, Any], numerics: bool
) -> tuple[Knob | None, list[str]]:
    where = f"{layer}.{name}"
    problems = [
        f"{where}: unknown key {key!r}{did_you_mean(key, TABLE_KEYS)}; a knob table takes "
        f"{', '.join(TABLE_KEYS)}"
        for key in table
        if key not in TABLE_KEYS
    ]
    when = table.get("when")
    problems += _when_problems(where, when)
    has_range = "low" in table or "high" in table
    if has_range == ("choices" in table):
        problems.append(
            f"{where}: give either choices = [...] or low = ... and high = ..., not "
            f"{'both' if has_range else 'neither'}"
        )
        return None, problems
    if has_range:
        span, range_problems = _parse_range(where, table)
        problems += range_problems
        knob = Knob(layer, name, range=span, when=when, numerics=numerics)
    else:
        extra = [k for k in ("step", "log") if k in table]
        if extra:
            problems.append(f"{where}: {' and '.join(extra)} apply to ranges (low, high) only")
        raw = table["choices"]
        choices = raw if isinstance(raw, list) else [raw]
        problems += _choice_problems(where, choices)
        knob = Knob(layer, name, tuple(choices), when=when, numerics=numerics)
    return (None, problems) if problems else (knob, [])


def _parse_range(where: str, table: dict[str, Any]) -> tuple[Range | None, list[str]]:
    low, high, step, log = (table.get(k) for k in ("low", "high", "step", "log"))
    if low is None or high is None:
        return None, [f"{where}: a range needs both low and high, got {table!r}"]
    for key, value in (("low", low), ("high", high), ("step", step)):
        if value is not None and not _is_number(value):
            return None, [f"{where}: {key} must be a number, got {value!r}"]
    if log is not None and not isinstance(log, bool):
        return None, [f"{where}: log must be true or false, got {log!r}"]
    is_int = _is_int(low) and _is_int(high) and (step is None or _is_int(step))
    if step is None and not is_int:
        return None, [
            f"{where}: a float range needs a step (e.g. step = {(high - low) / 4:g}), so that the "
            "space holds a finite number of configurations; or list the choices"
        ]
    span = Range(low, high, 1 if step is None else step, bool(log))
    return span, _range_problems(where, span)


def _range_problems(where: str, r: Range) -> list[str]:
    if not r.low <= r.high:
        return [f"{where}: `low <= high` must hold, but got (low={r.low}, high={r.high})"]
    if not r.step > 0:
        return [f"{where}: `step > 0` must hold, but got step={r.step}"]
    try:
        spans = (r.high - r.low) / r.step
    except OverflowError:  # integers past what a float holds
        spans = math.inf
    if not spans < MAX_RANGE_VALUES:
        return [
            f"{where}: a range holds at most {MAX_RANGE_VALUES:,} values, but (low={r.low}, "
            f"high={r.high}, step={r.step}) holds about {spans + 1:.3g}; narrow it or raise step"
        ]
    if not math.isclose(spans, round(spans), abs_tol=1e-9):
        return [
            f"{where}: high - low must be a multiple of step, but got (low={r.low}, "
            f"high={r.high}, step={r.step}); adjust high"
        ]
    if r.log and not (r.is_int and r.step == 1 and r.low >= 1):
        return [
            f"{where}: log = true needs an integer range with low >= 1 and step 1, but got "
            f"(low={r.low}, high={r.high}, step={r.step}); Optuna samples nothing else on a log "
            "scale"
        ]
    return []


def _choice_problems(where: str, choices: list[Any]) -> list[str]:
    if not choices:
        return [f"{where}: the list of choices is empty; give at least one value"]
    bad = [c for c in choices if not _types.is_scalar(c)]
    if bad:
        return [f"{where}: choices must be booleans, numbers or strings, got {bad[0]!r}"]
    if len(set(map(repr, choices))) != len(choices):
        return [f"{where}: the choices {choices!r} repeat a value"]
    return []


def _when_problems(where: str, when: Any) -> list[str]:
    if when is None:
        return []
    if not isinstance(when, str):
        return [f"{where}: when must be a string holding a condition, got {when!r}"]
    try:
        _condition.parse(when)
    except _condition.ConditionError as exc:
        shown = repr(when) if len(when) <= 80 else f"{when[:60]!r}... ({len(when):,} characters)"
        return [f"{where}: when = {shown} cannot be used: {exc}"]
    return []


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)  # a huge int does not fit a float


def did_you_mean(name: str, known: Any, prefix: str = "") -> str:
    """`` (did you mean a, b?)`` with the known names closest to ``name``, or nothing."""
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.8)
    close = close or difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {', '.join(prefix + c for c in close)}?)" if close else ""
