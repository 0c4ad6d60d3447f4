"""The README tells the truth where a test can tell: the sizes of the built-in spaces it
prints, and the two set-up commands CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autotune.space import _build, _validate, load_space

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()


def _size(space: str, device: str) -> int:
    return load_space(space, device).size


def _sizes(space: str, device: str, monkeypatch: pytest.MonkeyPatch) -> set[int]:
    """The space's size here, and on a CPU with AVX-512 (the `cpu` space searches
    `cpp.simdlen` only where both vector widths exist): the README's transcripts come from
    one build machine, and the next may have the other CPU."""
    sizes = {_size(space, device)}
    for module in (_build, _validate):
        monkeypatch.setattr(module, "vector_widths", lambda: [256, 512])
    return sizes | {_size(space, device)}


@pytest.mark.parametrize(
    ("device", "space", "printed"),
    re.findall(r"on (cpu|cuda), space '(\w+)' \(([\d,]+) configurations\)", README),
)
def test_every_printed_space_size_is_the_spaces_size_today(device, space, printed, monkeypatch):
    assert int(printed.replace(",", "")) in _sizes(space, device, monkeypatch)


def test_the_readme_prints_a_space_size_at_all():
    assert re.search(r"space 'cpu' \([\d,]+ configurations\)", README)


def test_the_quick_space_row_gives_its_sizes_on_cpu_and_cuda():
    row = re.search(r"\| `quick` \|.*\((\d+) configurations on CPU, (\d+) on CUDA\)", README)
    assert row is not None
    assert (int(row[1]), int(row[2])) == (_size("quick", "cpu"), _size("quick", "cuda"))


def test_ci_runs_the_readmes_set_up_and_test_commands():
    ci = (ROOT / ".ci" / "run").read_text()
    setup = re.search(r"^python3 -m venv \.venv && (.*)$", README, re.MULTILINE)
    assert setup is not None
    install, search = setup[1].split(" && ")
    assert install.replace("pip install", "pip install -q") in ci
    model, flags = search.removeprefix(".venv/bin/autotune search ").split(" ", 1)
    assert f'search "$root/{model}" {flags}' in ci
    assert ".venv/bin/python -m pytest" in README and ".venv/bin/python -m pytest" in ci


@pytest.mark.parametrize(
    "command",
    ["search", "worker", "finalize", "verify", "report", "export", "studies", "show"],
)
def test_every_option_of_a_command_is_in_the_readme(command):
    from autotune.cli import build_parser

    _, commands = build_parser()
    options = [
        s for a in commands[command]._actions for s in a.option_strings if s.startswith("--")
    ]
    missing = [o for o in options if o != "--help" and f"`{o}" not in README]
    assert missing == []
