"""Import cycles among the modules of autotune/: fails, printing each, when modules import each
other, however far round and whether the import is at the top of a module or deferred inside a
function (a deferred import still ties the two modules together). Standard library only.

    python .ci/cycles.py [PACKAGE_ROOT]   (default: autotune)

What counts as an import of a module of the package:

- ``import autotune.x.y`` and ``from autotune.x import y`` where ``y`` is a submodule: the module
  ``autotune.x.y``; ``from autotune.x import name`` of anything else: the module ``autotune.x``
  (a package's ``__init__``, which must have run to hand ``name`` out); relative imports alike;
- the packages an import runs on the way (``autotune.x`` for ``import autotune.x.y``), except
  those that hold the importing module: they have started before it, and a package's
  ``__init__`` importing its own modules, which import each other, is no cycle. A module that
  takes a *name* from its own package's ``__init__`` which imports that module is one;
- not: imports under ``if TYPE_CHECKING:`` (never run), and ``importlib.import_module`` with a
  computed name (a package's lazy ``__getattr__`` map names modules, it imports none).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path


def module_files(root: Path) -> dict[str, Path]:
    """Each module of the package at ``root`` (a folder with ``__init__.py``) by dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node``, at any depth, but those that only type checkers
    see (the body of ``if TYPE_CHECKING:``; its ``else`` runs)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for item in child.orelse:
                if isinstance(item, (ast.Import, ast.ImportFrom)):
                    yield item
                else:
                    yield from _import_nodes(item)
        else:
            yield from _import_nodes(child)


def imports(module: str, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``module`` imports (see the module's docstring)."""
    path = modules[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    top = module.split(".")[0]
    targets: set[str] = set()  # named by the import
    runs: set[str] = set()  # run on the way to them
    for node in _import_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            named = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:  # from . import x, from ..y import x
                parents = package.split(".")
                parents = parents[: len(parents) - node.level + 1]
                base = ".".join(parents + ([base] if base else []))
            named = []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                named.append(sub if sub in modules else base)
        for name in named:
            if name.split(".")[0] != top:
                continue
            if name in modules:  # else a module no longer there: the import fails, no cycle
                targets.add(name)
            parts = name.split(".")
            runs.update(".".join(parts[:i]) for i in range(1, len(parts)))
    own = {module} | {package.rsplit(".", i)[0] for i in range(package.count(".") + 1)}
    runs = {m for m in runs if m not in own and m in modules}
    return (targets | runs) - {module}


def graph(root: Path) -> dict[str, set[str]]:
    modules = module_files(root)
    return {module: imports(module, modules) for module in modules}


def _components(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, rest = work[-1]
            step = next(rest, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(edges.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _shortest_cycle(start: str, edges: dict[str, set[str]], within: set[str]) -> list[str]:
    """The shortest path from ``start`` back to it through ``within`` (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for step in sorted(edges[node] & within):
                if step == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if step not in came_from:
                    came_from[step] = node
                    following.append(step)
        frontier = following
    return [start]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """For each module on a cycle, the shortest cycle through it (each cycle once, starting at
    its first module in sorted order), as ``[a, b, ..., a]``."""
    found = []
    for component in _components(edges):
        within = set(component)
        for module in component:
            cycle = _shortest_cycle(module, edges, within)[:-1]
            first = cycle.index(min(cycle))
            turned = cycle[first:] + cycle[:first]
            if turned + [turned[0]] not in found:
                found.append(turned + [turned[0]])
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0] if args else "autotune")
    found = cycles(graph(root))
    for cycle in found:
        print(" -> ".join(cycle))
    if found:
        print(f"import cycles: {len(found)}", file=sys.stderr)
        return 1
    print("import cycles: none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
