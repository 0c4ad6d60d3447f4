"""The documentation site: its generated page is the generator's output today, and its nav
holds every page (CI builds it with `mkdocs build --strict`, which checks links and anchors)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from docs_scripts import load

ROOT = Path(__file__).resolve().parent.parent


def _cli_reference():
    return load("cli_reference")


def test_the_cli_page_is_the_generators_output(monkeypatch):
    for key in ("AUTOTUNE_MODEL", "AUTOTUNE_STORAGE"):  # what a deployment may have set
        monkeypatch.setenv(key, "/somewhere/else")
    page = (ROOT / "docs" / "cli.md").read_text()
    assert _cli_reference().reference() == page, "run: python docs/cli_reference.py > docs/cli.md"


def test_the_generator_leaves_the_environment_as_it_found_it(monkeypatch):
    monkeypatch.setenv("AUTOTUNE_MODEL", "model.py")
    _cli_reference().reference()
    assert os.environ["AUTOTUNE_MODEL"] == "model.py"


def test_the_nav_lists_every_page_once():
    nav = re.findall(r"^\s+- .*?\b([\w-]+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert sorted(nav) == pages


def _examples():
    return load("examples")


def test_every_example_quoted_is_the_recorded_run():
    """README and pages quote one recorded run (docs/examples/), never another: a page whose
    quote differs is named; `python docs/examples.py` quotes it again."""
    examples = _examples()
    assert examples.check() == [], "run: python docs/examples.py"
    marked = [p for p in examples.pages() if "<!-- example " in p.read_text()]
    assert {p.name for p in marked} >= {
        "README.md", "quickstart.md", "records.md", "best-config.md", "verify.md"
    }  # fmt: skip


def test_the_recorded_run_says_the_same_numbers_everywhere():
    """The file the search wrote, its trial line, `show` and `verify` give one speedup."""
    import json

    folder = ROOT / "docs" / "examples" / "convnet"
    best = json.loads((folder / "best_config.json").read_text())
    search, show, verify = (
        (folder / name).read_text() for name in ("search.txt", "show.txt", "verify.txt")
    )
    speedup = best["metrics"]["speedup_vs_eager"]
    assert f"Best: trial {best['source']['trial']}:" in search
    # Why: ... confirmed apart from the choice ...: 1.947x (95% interval ...) eager
    assert f"{speedup:.3f}x (95% interval" in search
    assert f"Claims: {speedup:.2f}x eager" in show
    assert f"claimed {speedup:.3f}x" in verify
    assert best["source"]["study"] == "convnet-cpu" and "study 'convnet-cpu'" in search


def test_the_options_that_may_change_on_resume_are_the_settings_tables():
    """The page listed five; --help and the refusal, which read the table, eight."""
    from autotune.settings import changeable_options

    page = (Path(__file__).resolve().parent.parent / "docs" / "search.md").read_text()
    listed = page.split("<!-- resume-options -->")[1].split("<!-- /resume-options -->")[0]
    assert listed == changeable_options()
