"""The package-level import graph of autotune, as a Mermaid diagram (docs/architecture.md holds
its output; a test keeps the two equal).

    python docs/architecture.py
"""

from __future__ import annotations

import grimp  # comes with import-linter (the dev extra)

PACKAGES = [
    "cli", "search", "reports", "verify", "decide", "ship", "storage",
    "scoring", "scope",
    "records", "trials", "settings", "space", "measure", "workload", "runtime",
]  # fmt: skip


def edges() -> list[tuple[str, str]]:
    """(importer, imported) for each pair of packages with a direct import between them."""
    graph = grimp.build_graph("autotune")

    def package(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and parts[1] in PACKAGES else None

    found = set()
    for module in graph.modules:
        a = package(module)
        for imported in graph.find_modules_directly_imported_by(module):
            b = package(imported)
            if a and b and a != b:
                found.add((a, b))
    return sorted(found, key=lambda e: (PACKAGES.index(e[0]), PACKAGES.index(e[1])))


def mermaid() -> str:
    lines = ["```mermaid", "graph TD"]
    lines += [f"  {a} --> {b}" for a, b in edges()]
    lines.append("```")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(mermaid(), end="")
