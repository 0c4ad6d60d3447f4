"""What a model file imports, imported ahead of it: the preloaded trial host imports a study's
model file's installed packages once (``transformers``, its model classes), so that no forked
trial pays seconds of imports again. The file itself is not run here: its imports are read from
its syntax tree."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path


def installed_imports(path: str | Path) -> list[tuple[str, tuple[str, ...]]]:
    """The model file's absolute imports, at its top or inside its functions (``get_model``
    often imports ``transformers`` itself), as ``(module, names)``: ``from a import B, c`` is
    ``("a", ("B", "c"))``, and ``import a`` is ``("a", names)`` with the names the file reads
    off it (``a.B(...)``). Relative imports, and those of a module beside the file (which a
    trial finds first on its path, and which the host must not shadow with an installed
    namesake), are left out; so is everything of a file that cannot be read or parsed."""
    file = Path(path)
    try:
        tree = ast.parse(file.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []
    read_off = _read_off(tree)
    found: list[tuple[str, tuple[str, ...]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, read_off.get(a.asname or a.name, ())) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = tuple(alias.name for alias in node.names if alias.name != "*")
            found.append((node.module, names))
    return [(m, names) for m, names in found if not found_beside(file, m)]


def _read_off(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """The attributes the file reads off each plain name (``transformers.BertModel``), in one
    walk of its tree; a dotted import's name (``import a.b``) is never a key."""
    attributes: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            attributes.setdefault(node.value.id, set()).add(node.attr)
    return {name: tuple(sorted(attrs)) for name, attrs in attributes.items()}


def found_beside(path: str | Path, module: str) -> bool:
    """Whether the model file at ``path`` would import ``module`` (its top-level package) from
    its own folder rather than from the installed packages."""
    folder, top = Path(path).parent, module.partition(".")[0]
    return (folder / f"{top}.py").exists() or (folder / top).is_dir()


def preload(path: str | Path) -> list[str]:
    """Imports :func:`installed_imports` of the model file (a name taken from a module is
    looked up too: ``transformers`` loads its model classes on first access); one that fails
    is skipped (the trial will say why). Returns the modules imported."""
    done = []
    for module, names in installed_imports(path):
        try:
            imported = importlib.import_module(module)
            for name in names:
                if getattr(imported, name, None) is None:  # a submodule not imported yet
                    importlib.import_module(f"{module}.{name}")
        except Exception:  # noqa: S112 - the trial imports it again and reports the error
            continue
        done.append(module)
    return done
