"""Module and class sizes in autotune/: prints the largest, and fails when a module passes 500
lines or a class 200 (KNOWN may list one, at no more than its size, while it is being split;
the list only shrinks).

    python .ci/sizes.py
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MODULE_LIMIT = 500
CLASS_LIMIT = 200
# Over the limit, at most this long until split (none today).
KNOWN: dict[str, int] = {}


def sizes(root: Path) -> dict[str, int]:
    found = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        name = path.as_posix()
        found[name] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                found[f"{name}:{node.name}"] = node.end_lineno - node.lineno + 1
    return found


def main() -> int:
    found = sizes(Path("autotune"))
    modules = sorted(((n, k) for k, n in found.items() if ":" not in k), reverse=True)
    classes = sorted(((n, k) for k, n in found.items() if ":" in k), reverse=True)
    print("largest modules:", ", ".join(f"{k} {n}" for n, k in modules[:5]))
    print("largest classes:", ", ".join(f"{k} {n}" for n, k in classes[:5]))
    problems = []
    for key, lines in found.items():
        limit = KNOWN.get(key, CLASS_LIMIT if ":" in key else MODULE_LIMIT)
        if lines > limit:
            problems.append(f"{key}: {lines} lines, over {limit}")
    for key in KNOWN:
        limit = CLASS_LIMIT if ":" in key else MODULE_LIMIT
        if found.get(key, 0) <= limit:
            problems.append(f"{key}: listed in KNOWN but within {limit} lines now: remove it")
    for problem in problems:
        print(f"sizes: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
