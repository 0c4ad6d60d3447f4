"""The examples the docs quote, from one recorded run, so that they cannot disagree.

    python docs/examples.py --record   # run the README's search and what reads its result
    python docs/examples.py            # quote the recorded outputs in README.md and docs/*.md
    python docs/examples.py --check    # say every quote that differs (tests/test_docs.py)

``--record`` runs, in a scratch folder per model (``studies/``, ``benchmarks/`` and ``tests/``
linked in, so the commands read as the docs' do), the first set-up command's search of the
convnet, then ``autotune report``, ``autotune show`` and ``autotune verify`` on what it wrote,
the MLP's search (run again, and with another seed), the scope probes of a model with broken
parts and a ``--pareto`` search of the encoder, and keeps
each output (the command first, as ``$ autotune ...``) in ``docs/examples/`` with the convnet's
best-config file: minutes, on an idle machine. A page quotes one with a marker line before a
fenced block::

    <!-- example convnet/search.txt -->
    <!-- example convnet/search.txt keep=^(study |Best:) -->
    <!-- example convnet/report.txt section=Trials -->

``keep`` quotes the command and the lines matching a regular expression, each run of lines left
out shown as ``...``; ``section`` the command and the lines from the one that starts with it to
the next empty line.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
RUNS = [  # (file, the autotune command's arguments), in the order they run
    ("convnet/search.txt", ["search", "studies/convnet.py", "--device", "cpu", "--trials", "4"]),
    ("convnet/report.txt", ["report", "--width", "150"]),
    ("convnet/show.txt", ["show", "best_config.json"]),
    ("convnet/verify.txt", ["verify", "best_config.json", "studies/convnet.py"]),
    ("mlp/search.txt", ["search", "studies/mlp.py", "--device", "cpu", "--trials", "4"]),
    ("mlp/again.txt", ["search", "studies/mlp.py", "--device", "cpu", "--trials", "4"]),
    ("mlp/seed.txt", ["search", "studies/mlp.py", "--device", "cpu", "--trials", "4",
                      "--seed", "1"]),
    ("mixed/search.txt", ["search", "tests/fixtures/models/scope_mixed.py", "--device", "cpu",
                          "--space", "tests/fixtures/spaces/aot_eager.toml", "--trials", "2",
                          "--finalists", "0", "--compile-budget", "20"]),
    ("encoder/pareto.txt", ["search", "benchmarks/models/encoder.py", "--device", "cpu",
                            "--pareto", "--pick", "fastest,compile<=30", "--trials", "6",
                            "--scope", "whole", "--finalists", "2"]),
]  # fmt: skip
MARKER = re.compile(r"^<!-- example (\S+)(?: (keep|section)=(.*?))? -->$")


def record(only: list[str] | None = None) -> None:
    """Runs the commands of :data:`RUNS` (``only`` those named) in a scratch folder and keeps
    their outputs."""
    autotune = Path(sys.executable).with_name("autotune")
    with tempfile.TemporaryDirectory(prefix="autotune-examples-") as scratch:
        env = {**os.environ, "COLUMNS": "100"}
        env.pop("AUTOTUNE_STORAGE", None)
        for name, args in RUNS:
            if only and name not in only:
                continue
            folder = Path(scratch) / name.split("/")[0]  # one folder per model's study
            if not folder.exists():
                folder.mkdir()
                for linked in ("studies", "benchmarks", "tests"):  # the models, by their paths
                    (folder / linked).symlink_to(ROOT / linked)
            env["AUTOTUNE_CACHE_DIR"] = str(folder / "kernels")  # empty for each model
            run = subprocess.run([str(autotune), *args], cwd=folder, env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
            # verify exits 1 for a claim that no longer holds, 3 on a machine too noisy to judge,
            # a refused option 2 (one example)
            if run.returncode not in (0, 1, 2, 3):
                raise SystemExit(f"autotune {' '.join(args)} failed:\n{run.stdout[-3000:]}")
            path = EXAMPLES / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"$ autotune {shlex.join(args)}\n{run.stdout.rstrip()}\n")
            print(f"recorded {path.relative_to(ROOT)}", flush=True)
        written = Path(scratch) / "convnet" / "best_config.json"
        if written.exists():  # the convnet's search ran
            shutil.copy(written, EXAMPLES / "convnet" / "best_config.json")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def quoted(text: str) -> str:
    """``text`` with every marked block replaced by what its marker quotes."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        out.append(lines[i])
        found = MARKER.match(lines[i])
        i += 1
        if not found:
            continue
        if i >= len(lines) or not lines[i].startswith("```"):
            raise SystemExit(f"the marker {lines[i - 1]!r} is not followed by a fenced block")
        out.append(lines[i])
        end = lines.index("```", i + 1)
        out += _quote((EXAMPLES / found.group(1)).read_text(), found.group(2), found.group(3))
        out.append("```")
        i = end + 1
    return "\n".join(out)


def _quote(recorded: str, how: str | None, what: str | None) -> list[str]:
    lines = recorded.rstrip("\n").split("\n")
    if how is None or what is None:
        return lines
    if how == "section":  # from the line that starts with it to the next empty line
        start = next(i for i, line in enumerate(lines) if line.startswith(what))
        end = lines.index("", start) if "" in lines[start:] else len(lines)
        return [lines[0], "...", *lines[start:end], "..."]
    pattern = re.compile(what)
    kept: list[str] = [lines[0]]
    for line in lines[1:]:
        if pattern.search(line):
            kept.append(line)
        elif kept[-1] != "...":
            kept.append("...")
    return kept


def check() -> list[str]:
    """The pages whose quotes differ from the recorded outputs."""
    return [str(p.relative_to(ROOT)) for p in pages() if quoted(p.read_text()) != p.read_text()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--record", nargs="*", metavar="NAME",
        help="run the commands first (only the outputs NAME..., e.g. mlp/search.txt)",
    )  # fmt: skip
    parser.add_argument("--check", action="store_true", help="only say which pages differ")
    args = parser.parse_args()
    if args.check:
        stale = check()
        print("\n".join(f"{p}: quotes differ from docs/examples" for p in stale) or "ok")
        raise SystemExit(1 if stale else 0)
    if args.record is not None:
        record(args.record)
    for page in pages():
        text = page.read_text()
        if quoted(text) != text:
            page.write_text(quoted(text))
            print(f"quoted the recorded run in {page.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
