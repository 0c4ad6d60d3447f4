"""Each setting of `autotune search` is declared once: a row of the settings table
(autotune/settings/_table.py, and the process's own options in autotune/settings/_process.py).
Lists, for every setting, the module that declares it, and fails
on a second declaration anywhere else in autotune/:

- a table row (an `Option(...)` call);
- an argparse `add_argument(...)` naming the setting's flag (the command line adds the table's
  options with `cli._options.add`);
- in a dataclass of settings (two fields or more named like settings), a field named like a
  setting whose default is a value written out (`"infer"`,
  `600.0`; a default read from the table, `DEFAULT["workload"]`, is a use, and None or False,
  "not given", declares nothing);
- a rule entry: a key naming a setting's stored field in a module-level table of rules (a
  name ending in RULES or CHECKS, or annotated with `Check`).

It also lists every field restated by hand, default or not: a field named like a setting in a
dataclass of settings outside autotune/settings/ (a ``workload`` or ``seed`` declared again
where ``autotune.settings.TrialFields`` carries it). Their count may only fall: a new one
fails, and so does a count below :data:`RESTATED` (lower it, so that what was derived stays
derived). It is 0: the classes that carry settings extend the ones written from the table.

    python .ci/settings_once.py [ROOT]
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

TABLE = "autotune/settings/_table.py"
TABLES = (TABLE, "autotune/settings/_process.py")  # the study's settings, then the process's
# The settings fields restated by hand on main (see restated()): a ratchet, only ever lowered.
RESTATED = 0
CARRIES = 4  # a dataclass with this many fields named like settings carries settings


@dataclass(frozen=True)
class Setting:
    name: str  # its option's name: trials, compile_budget
    flag: str  # --trials, or "model" for the positional
    field: str | None  # the StudySettings field it sets, if any


def table(root: Path) -> list[Setting]:
    """The settings the table at ``root`` declares, read from its `Option(...)` rows."""
    found = []
    rows = (
        call
        for name in TABLES
        if (root / name).exists()
        for call in _calls(ast.parse((root / name).read_text()), "Option")
    )
    for call in rows:
        flag = _text(call.args[0]) if call.args else None
        if flag is None:
            continue
        keywords = {k.arg: _text(k.value) for k in call.keywords}
        name = keywords.get("dest") or flag.lstrip("-").replace("-", "_")
        found.append(Setting(name, flag, keywords.get("field")))
    return found


def problems(root: Path, settings: list[Setting]) -> list[str]:
    """Every second declaration of a setting in the package at ``root``."""
    flags = {s.flag for s in settings}
    named = {s.name for s in settings} | {s.field for s in settings if s.field}
    stored = {s.field for s in settings if s.field}
    found = []
    for path in sorted((root / "autotune").rglob("*.py")):
        where = path.relative_to(root).as_posix()
        if where.startswith("autotune/settings/"):
            continue  # the table and what it is made of
        tree = ast.parse(path.read_text())
        for line, what in _second(tree, flags, named, stored):
            found.append(f"{where}:{line}: {what}")
    return found


def restated(root: Path, settings: list[Setting]) -> list[str]:
    """Every field of a dataclass of settings outside autotune/settings/ that is named like a
    setting, whatever its default: a value the table declares, carried by a hand-written
    field instead of one derived from the table."""
    named = {s.name for s in settings} | {s.field for s in settings if s.field}
    found = []
    for path in sorted((root / "autotune").rglob("*.py")):
        where = path.relative_to(root).as_posix()
        if where.startswith("autotune/settings/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                for line, field in _settings_fields(node, named):
                    found.append(f"{where}:{line}: {node.name}.{field}")
    return found


def _settings_fields(node: ast.ClassDef, named: set[str]) -> list[tuple[int, str]]:
    """The fields of ``node``, if it is a dataclass that carries settings (four fields or more
    named like settings: fewer is a coincidence of names, a result's ``accuracy`` and
    ``model``), that are named like a setting."""
    if not any(_is_dataclass(d) for d in node.decorator_list):
        return []
    fields = [
        (item.lineno, item.target.id)
        for item in node.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    ]
    hits = [(line, name) for line, name in fields if name in named]
    return hits if len(hits) >= CARRIES else []


def _second(
    tree: ast.Module, flags: set[str], named: set[str], stored: set[str]
) -> Iterator[tuple[int, str]]:
    for call in _calls(tree, "Option"):
        yield call.lineno, "a settings-table row outside the table"
    for call in _calls(tree, "add_argument"):
        for arg in call.args:
            if _text(arg) in flags:
                yield call.lineno, f"argparse declares {_text(arg)} again (use cli._options.add)"
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(_is_dataclass(d) for d in node.decorator_list):
            fields = [i for i in node.body if isinstance(i, ast.AnnAssign)]
            if sum(isinstance(i.target, ast.Name) and i.target.id in named for i in fields) < 2:
                continue  # not a class of settings: a name it shares with one is a coincidence
            for item in fields:
                if (
                    isinstance(item, ast.AnnAssign)
                    and isinstance(item.target, ast.Name)
                    and item.target.id in named
                    and item.value is not None
                    and _literal(item.value)
                    and not _unset(item.value)
                ):
                    yield (
                        item.lineno,
                        (
                            f"{node.name}.{item.target.id} declares a default of its own "
                            "(take it from the table: DEFAULT[...])"
                        ),
                    )
    for table_name, rules in _rule_tables(tree):
        for key in rules.keys:
            name = _text(key) if key is not None else None
            if name in stored:
                yield key.lineno, f"{table_name} holds a rule for the setting {name!r}"


def _rule_tables(tree: ast.Module) -> Iterator[tuple[str, ast.Dict]]:
    """The module's tables of rules: dicts assigned at its top to a name ending in RULES or
    CHECKS, or annotated with ``Check``."""
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            target, annotation = node.target.id, ast.unparse(node.annotation)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            target, annotation = node.targets[0].id, ""
        else:
            continue
        ruled = target.endswith(("RULES", "CHECKS")) or "Check" in annotation
        if ruled and isinstance(node.value, ast.Dict):
            yield target, node.value


def _calls(tree: ast.AST, name: str) -> Iterable[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called == name:
                yield node


def _is_dataclass(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (getattr(target, "id", None) or getattr(target, "attr", None)) == "dataclass"


def _literal(node: ast.expr) -> bool:
    """A value written out, not read from somewhere: a constant, or a collection of them."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_literal(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    return False


def _unset(node: ast.expr) -> bool:
    """None or False: "not given", which declares no default of the setting's own."""
    return isinstance(node, ast.Constant) and (node.value is None or node.value is False)


def _text(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def main(root: Path = Path("."), ratchet: int = RESTATED) -> int:
    settings = table(root)
    if not settings:
        print(f"settings: no Option rows in {TABLE}", file=sys.stderr)
        return 1
    print(f"settings: {len(settings)}, each declared once, in {' and '.join(TABLES)}:")
    print("  " + ", ".join(s.flag for s in settings))
    found = problems(root, settings)
    for problem in found:
        print(f"settings: {problem}", file=sys.stderr)
    by_hand = restated(root, settings)
    print(f"settings: {len(by_hand)} fields restated by hand, to derive from the table:")
    for field in by_hand:
        print(f"  {field}")
    if len(by_hand) != ratchet:
        more = len(by_hand) > ratchet
        print(
            f"settings: {len(by_hand)} fields restated by hand, RESTATED says {ratchet}: "
            + (
                "derive the new one from the table (DEFAULT[...] is a use, a field is a "
                "restatement)"
                if more
                else "lower RESTATED in .ci/settings_once.py to the new count"
            ),
            file=sys.stderr,
        )
        return 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")))
