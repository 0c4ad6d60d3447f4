"""The examples run as a user runs them: the script whose model class lives in ``__main__``,
and the notebook whose model class is defined in a cell, each tuning and applying."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[1] / "examples"
pytestmark = pytest.mark.slow  # each compiles with Inductor for real, about a minute


def test_the_script_tunes_its_main_class_and_applies_the_result(tmp_path):
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "tune_script.py")], cwd=tmp_path,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "TuneResult(study='Classifier-" in run.stdout
    assert "applied best_config.json: " in run.stdout
    assert (tmp_path / "best_config.json").is_file()


def test_the_notebook_tunes_a_class_defined_in_a_cell(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(EXAMPLES / "tune_notebook.ipynb", as_version=4)
    where = {"metadata": {"path": str(tmp_path)}}  # the study's files go there
    NotebookClient(notebook, timeout=600, resources=where).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    shown = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("TinyConvNet-" in html and "<table>" in html for html in shown), outputs
    text = "".join(o.get("text", "") for o in outputs)
    assert "Decision (as `autotune finalize` would make it now" in text
    assert (tmp_path / "best_config.json").is_file()
