"""Writes :mod:`autotune.settings._study_fields` from the settings table: one typed field per
study setting an option sets, its default the table's, its option's help above it. Run it after
adding or changing a row that sets a study setting; ``tests/settings_tests/test_study_fields.py``
fails while the file and the table disagree.

    python -m autotune.settings._generate
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from autotune._atomic import write_text
from autotune.settings._option import Option
from autotune.settings._table import SEARCH_OPTIONS

TARGET = Path(__file__).with_name("_study_fields.py")
# Settings stored in a form no annotation in this layer can name (--measure-seconds: the
# trial's timing, autotune.trials.MeasureSettings): StudySettings declares them.
BY_HAND = ("object",)

_HEAD = '''"""The study settings the settings table declares, as typed fields: written by
``python -m autotune.settings._generate`` from :data:`~autotune.settings.SEARCH_OPTIONS` (each
row's ``field``, ``annotation`` and default). Do not edit: change the table's row and run it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autotune.settings._table import DEFAULT


@dataclass(frozen=True, kw_only=True)
class StudyFields:
    """Every study setting an option of ``autotune search`` sets, in the table's order; a
    study's stored settings (``autotune.storage.StudySettings``) are these and what the
    study was made with."""

'''


def rows() -> list[Option]:
    """The first row that sets each study setting, in the table's order."""
    first: dict[str, Option] = {}
    for option in SEARCH_OPTIONS:
        if option.field is not None and option.stored not in BY_HAND:
            first.setdefault(option.field, option)
    return list(first.values())


def source() -> str:
    """The module's text."""
    lines = []
    for option in rows():
        if option.annotation is None:
            raise ValueError(
                f"the settings table's row {option.flag} sets {option.field!r} and gives no "
                "annotation: give the setting's Python type (annotation='int')"
            )
        if option.default is not None:
            default = f' = DEFAULT["{option.name}"]'
        elif "None" in option.annotation:
            default = " = None"
        else:
            default = ""  # every study's settings hold it
        said = f"{option.flag}: {option.help.replace('%%', '%')}"
        lines += [f"    # {line}\n" for line in textwrap.wrap(said, 99 - len("    # "))]
        lines.append(f"    {option.field}: {option.annotation}{default}\n")
    return _HEAD + "".join(lines)


def main() -> int:
    write_text(TARGET, source())
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
