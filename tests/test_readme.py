"""The README and the documentation pages tell the truth where a test can tell: the sizes of
the built-in spaces they print, the two set-up commands CI runs, and a command-line reference
that lists every option of every subcommand."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from autotune.space import _build, _validate, load_space

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
# The README and every page of the documentation site, by path from the repository's root.
PAGES = {
    str(p.relative_to(ROOT)): p.read_text()
    for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
}


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


PRINTED = [
    (page, *found)
    for page, text in PAGES.items()
    for found in re.findall(r"on (cpu|cuda), space '(\w+)' \(([\d,]+) configurations\)", text)
]


@pytest.mark.parametrize(("page", "device", "space", "printed"), PRINTED)
def test_every_printed_space_size_is_the_spaces_size_today(
    page, device, space, printed, monkeypatch
):
    assert int(printed.replace(",", "")) in _sizes(space, device, monkeypatch), page


def test_the_readme_and_the_quickstart_print_a_space_size_at_all():
    assert {"README.md", "docs/quickstart.md"} <= {page for page, _, s, _ in PRINTED if s == "cpu"}


def test_the_quick_space_row_gives_its_sizes_on_cpu_and_cuda():
    row = re.search(
        r"\| `quick` \|.*\((\d+) configurations on CPU, (\d+) on CUDA\)", PAGES["docs/spaces.md"]
    )
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


def test_the_readme_links_to_every_page_of_the_site():
    pages = {p for p in PAGES if p.startswith("docs/")}
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)[)#]", README))
    assert pages - linked == set()
    assert linked - pages == set()


def _cli_sections() -> dict[str, str]:
    """docs/cli.md cut at its subcommand headings: {command: its section}."""
    parts = re.split(r"^## `autotune (\w+)`$", PAGES["docs/cli.md"], flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_option_of_every_command_is_in_the_cli_reference():
    """Each subcommand has its section in the generated page, and each of its options a row
    there (tests/test_docs.py keeps the committed page equal to the generator's output)."""
    from autotune.cli import build_parser

    _, commands = build_parser()
    sections = _cli_sections()
    assert list(sections) == list(commands)
    for command, parser in commands.items():
        rows = re.findall(r"^\| `([^`]*)` \|", sections[command], re.M)
        shown = {word.rstrip(",") for row in rows for word in row.split()}
        # a former name of an option (read with a note) is left out of --help and the page
        listed = [a for a in parser._actions if a.help is not argparse.SUPPRESS]
        options = [s for a in listed for s in a.option_strings if s != "-h"]
        missing = [o for o in options if o != "--help" and o not in shown]
        assert missing == [], command
