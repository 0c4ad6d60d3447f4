"""Writes :mod:`autotune.settings._fields` from the settings table: for each class that carries
settings down the flow (the study's stored settings, a trial's spec, a process's request, how
a search finishes), one typed field per setting it carries, its default the table's, its
option's help above it. Run it after adding or changing a row a carrier reads;
``tests/settings_tests/test_generate.py`` fails while the file and the table disagree.

    python -m autotune.settings._generate
"""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from autotune._atomic import write_text
from autotune.settings._option import Option
from autotune.settings._table import SEARCH_OPTIONS

TARGET = Path(__file__).with_name("_fields.py")
# Settings stored in a form no annotation in this layer can name (--measure-seconds: the
# trial's timing, autotune.measure.MeasureSettings): StudySettings and TrialSpec declare them.
BY_HAND = ("object",)


@dataclass(frozen=True)
class Carrier:
    """A class of settings fields the module holds.

    Attributes:
        name: The class's name.
        doc: Its docstring.
        fields: The settings it carries, by field name (a study setting's, else an option's
            name); None: every study setting an option sets, in the table's order.
        given: Each field is what a caller gave, None (False for a switch) where it gave
            nothing: a later step derives it (a worker's device is the study's).
    """

    name: str
    doc: str
    fields: tuple[str, ...] | None = None
    given: bool = False


CARRIERS = (
    Carrier(
        "StudyFields",
        "Every study setting an option of ``autotune search`` sets, in the table's order; a\n"
        "    study's stored settings (:class:`StudySettings`) are these and what the\n"
        "    study was made with.",
    ),
    Carrier(
        "TrialFields",
        "The settings a trial process runs with (``autotune.trials.TrialSpec`` is these, the\n"
        "    config and how the trial is run).",
        ("model_path", "device", "workload", "seed", "cache_dir", "accuracy", "traffic"),
    ),
    Carrier(
        "RequestFields",
        "What a process was told about where it runs and what it trusts, each None (or False)\n"
        "    where not told (``autotune.search.SearchRequest`` is these and the study's name,\n"
        "    storage and settings).",
        ("model_path", "device", "cache_dir", "trust_model_path", "allow_version_mismatch"),
        given=True,
    ),
    Carrier(
        "FinishFields",
        "How a search ends once its trials are done: the file it writes and what ships\n"
        "    beside it (``autotune.search.Finish`` is these and who runs the finalists).",
        ("out", "remeasure", "for_device", "save_cache", "save_aot"),
    ),
)

_HEAD = '''"""The settings the table declares, as the typed fields of the classes that carry
them down the flow: written by ``python -m autotune.settings._generate`` from
:data:`~autotune.settings.SEARCH_OPTIONS` (each row's name or ``field``, ``annotation`` and
default). Do not edit: change the table's row (or the generator's carriers) and run it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autotune.settings._table import DEFAULT
'''


def rows(carrier: Carrier = CARRIERS[0]) -> list[tuple[str, Option]]:
    """Each field of ``carrier`` and the row that declares it (for a study setting, the first
    row that sets it)."""
    first: dict[str, Option] = {}
    for option in SEARCH_OPTIONS:
        if option.field is not None and option.stored not in BY_HAND:
            first.setdefault(option.field, option)
    if carrier.fields is None:
        return list(first.items())
    named = {option.name: option for option in SEARCH_OPTIONS}
    found = []
    for name in carrier.fields:
        row = first.get(name) or named.get(name)
        if row is None:
            raise ValueError(f"{carrier.name} carries {name!r}, which no table row declares")
        found.append((name, row))
    return found


def field(name: str, option: Option, given: bool) -> str:
    """The field's line: ``name: type = default``."""
    if option.annotation is None:
        raise ValueError(
            f"the settings table's row {option.flag} sets {name!r} and gives no "
            "annotation: give the setting's Python type (annotation='int')"
        )
    annotation = option.annotation
    if given and annotation != "bool" and "None" not in annotation:
        annotation += " | None"
    if option.default is not None and not given:
        default = f' = DEFAULT["{option.name}"]'
    elif annotation == "bool":
        default = " = False"
    elif "None" in annotation:
        default = " = None"
    else:
        default = ""  # every one holds it
    return f"    {name}: {annotation}{default}\n"


def source() -> str:
    """The module's text."""
    parts = [_HEAD]
    for carrier in CARRIERS:
        lines = [
            "\n\n@dataclass(frozen=True, kw_only=True)\n",
            f"class {carrier.name}:\n",
            f'    """{carrier.doc}"""\n\n',
        ]
        for name, option in rows(carrier):
            said = f"{option.flag}: {option.help.replace('%%', '%')}"
            lines += [f"    # {line}\n" for line in textwrap.wrap(said, 99 - len("    # "))]
            lines.append(field(name, option, carrier.given))
        parts.append("".join(lines))
    return "".join(parts)


def main() -> int:
    write_text(TARGET, source())
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
