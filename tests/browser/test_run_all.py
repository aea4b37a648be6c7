"""Every notebook as a newcomer meets it: opened in JupyterLab in Chromium, *Run All*, nothing red.

All cells are queued at once (JupyterLab's ``notebook:run-all-cells``), as a person does, not run one
by one as nbval does. A notebook passes when the kernel is idle, every code cell has an execution
count, and no cell shows an error or writes to stderr (unless tagged ``expect-stderr``). The notebooks
run with their own small defaults. Each notebook's last cells are saved as a screenshot under
``reports/screenshots/run-all-<name>.png``, and its Run-All wall time to ``reports/screenshots/run-all.json``.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, SCREENSHOTS, open_notebook, problems, run_all, shutdown_kernels

pytestmark = pytest.mark.browser

NOTEBOOKS = sorted(
    p.relative_to(ROOT / "notebooks").as_posix()
    for p in [*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "notebooks" / "tutorials").glob("*.ipynb")]
)
TIMES = SCREENSHOTS / "run-all.json"
SLOW = {
    "70-adapt-embedder.ipynb",  # trains a model
    "20-evaluate.ipynb",  # make test: papermill executes it for every cell of test_notebooks_are_the_record
    "25-sweep.ipynb",  # make test: tests/integration/test_sweep_dask.py runs sweeps
    "60-compare-retrievers.ipynb",  # make test: tutorial 3 (nbval) and tests/unit/test_compare_api.py
    "75-tiers.ipynb",  # make test: tests/unit/test_tiers*.py and the approval widget in the browser
    "80-ragmd.ipynb",  # make test: tests/unit/test_ragmd*.py
    "55-chunk-size-curve.ipynb",  # make test: the same notebook in the browser (test_widgets_in_browser.py)
}
"""Run All of these in ``make test-slow`` (which ``.ci/run`` also runs), keeping ``make test`` in its budget:
the tutorials (``make test`` runs each through nbval, comparing outputs), the one that trains a model, and
those whose code ``make test`` runs through other tests (the comment beside each says which)."""


def _param(notebook: str) -> object:
    slow = notebook.startswith("tutorials/") or notebook in SLOW
    return pytest.param(notebook, marks=pytest.mark.slow) if slow else notebook


@pytest.fixture(scope="module")
def notebooks(lab):
    """A copy of notebooks/ in the lab's folder (Run All never touches the committed files)."""
    target = lab["root"] / "notebooks"
    if not target.exists():
        shutil.copytree(ROOT / "notebooks", target, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return target


def _record_time(notebook: str, wall_s: float) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    times = json.loads(TIMES.read_text()) if TIMES.is_file() else {}
    times[notebook] = round(wall_s, 1)
    TIMES.write_text(json.dumps(dict(sorted(times.items())), indent=1) + "\n")


def test_every_notebook_is_tested():
    assert len(NOTEBOOKS) >= 17 and sum(n.startswith("tutorials/") for n in NOTEBOOKS) >= 6


@pytest.mark.shared
@pytest.mark.parametrize("notebook", [_param(n) for n in NOTEBOOKS])
def test_run_all_in_jupyterlab(browser, lab, notebooks, notebook):
    path = f"notebooks/{notebook}"
    page = open_notebook(browser, lab, path)
    try:
        start = time.monotonic()
        state = run_all(page, path)
        wall = time.monotonic() - start
        found = problems(state)
        assert not found, f"{notebook} after Run All: {found}"
        assert state["kernel"] == "idle" and all(c["count"] is not None for c in state["cells"])
        _record_time(notebook, wall)
        page.locator(".jp-Notebook .jp-Cell").last.scroll_into_view_if_needed()
        panel = page.locator(".jp-NotebookPanel:visible").first
        panel.screenshot(path=str(SCREENSHOTS / f"run-all-{Path(notebook).stem}.png"))
    finally:
        page.close()
        shutdown_kernels(lab)
