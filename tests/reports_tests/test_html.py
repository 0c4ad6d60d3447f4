from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from autotune.reports import load_study_data, write_html

from .conftest import STUDY


class _Page(HTMLParser):
    """What a page loads from elsewhere, its plots and its table rows."""

    def __init__(self) -> None:
        super().__init__()
        self.external: list[str] = []
        self.plots: list[str] = []
        self.rows = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for key in ("src", "href"):
            if found.get(key) and re.match(r"(https?:)?//", found[key] or ""):
                self.external.append(f"{tag} {key}={found[key]}")
        if tag == "div" and (found.get("id") or "").startswith("plot"):
            self.plots.append(found["id"] or "")
        if tag == "tr":
            self.rows += 1


@pytest.fixture
def page(study_storage, tmp_path):
    path = tmp_path / "report.html"
    size = write_html(load_study_data(study_storage, STUDY), path)
    return path, size


def test_the_page_is_self_contained_with_every_plot_and_the_table(page):
    path, size = page
    text = path.read_text()
    parsed = _Page()
    parsed.feed(text)

    assert size > 20_000 and size == len(text.encode())
    assert parsed.external == []  # no CDN: plotly.js is inline
    assert "Plotly.newPlot" in text and len(parsed.plots) == 6
    for title in ("Optimization history", "Speedup against compile time", "Knob importance",
                  "Per-knob slices", "Latency per input shape", "Failures by kind"):  # fmt: skip
        assert f"<h2>{title}</h2>" in text
    assert "cold compile time (s)" in text and "default torch.compile" in text
    assert parsed.rows >= 1 + 10  # the head, baselines and every trial


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
def test_headless_chromium_draws_every_plot_offline(page):
    path, _ = page
    done = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=10000", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr[-2000:]
    # plotly draws each plot as an <svg class="main-svg">, only when its script ran.
    drawn = re.findall(r'<div[^>]*id="(plot\d)"[^>]*class="[^"]*js-plotly-plot', done.stdout)
    assert len(set(drawn)) == 6, done.stdout[:2000]
    assert done.stdout.count('class="main-svg"') >= 6


def test_the_history_leaves_out_the_priors_a_start_from_told_and_keeps_trial_numbers():
    import optuna

    from autotune.reports.html import _own_trials
    from autotune.storage._attrs import PRIOR_ATTR

    study = optuna.create_study(direction="maximize")
    dist = {"x": optuna.distributions.FloatDistribution(0, 1)}
    for value, prior in [(3.0, True), (2.0, True), (1.1, False), (1.4, False)]:
        attrs = {PRIOR_ATTR: True} if prior else {}
        study.add_trial(optuna.trial.create_trial(params={"x": 0.5}, distributions=dist,
                                                  value=value, user_attrs=attrs))  # fmt: skip
    own, numbers = _own_trials(study)
    assert [t.value for t in own.trials] == [1.1, 1.4]
    assert numbers == [2, 3]


def test_a_page_that_fails_to_write_leaves_the_existing_page_whole(
    study_storage, tmp_path, monkeypatch
):
    (tmp_path / "out").mkdir()
    path = tmp_path / "out" / "report.html"
    path.write_text("<html>the report of yesterday</html>")
    # A lone surrogate cannot be encoded: the write fails after the page was begun.
    monkeypatch.setattr(
        "autotune.reports.html.render_html", lambda data: "<html>" + "x" * 100_000 + "\ud800"
    )

    with pytest.raises(UnicodeEncodeError):
        write_html(load_study_data(study_storage, STUDY, importance=False), path)

    assert path.read_text() == "<html>the report of yesterday</html>"
    assert [p.name for p in path.parent.iterdir()] == ["report.html"]


def test_the_slices_say_most_important_only_when_importance_ranked_them(study_storage, tmp_path):
    """With importance not computed (fewer than 3 search trials, or not asked for), the page
    said "the 8 most important knobs" over knobs sorted by name."""
    ranked = load_study_data(study_storage, STUDY)
    unranked = load_study_data(study_storage, STUDY, importance=False)
    assert ranked.importance and not unranked.importance
    for data, says in ((ranked, True), (unranked, False)):
        path = tmp_path / f"{says}.html"
        write_html(data, path)
        text = path.read_text()
        assert ("the 8 most important knobs" in text) is says
        assert ("the first 8 knobs by name: no importance to rank them by" in text) is not says
