"""Every notebook: one `parameters` cell of plain literals, no def/class, outputs stripped."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import nbformat
import pytest

from hepwb.experiment import ExperimentConfig

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def test_notebooks_exist():
    assert len(NOTEBOOKS) >= 3


def code_cells(path):
    """A notebook and its code cells, once its literal `parameters` cell and def-free code are checked."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, "exactly one cell tagged 'parameters'"
    tree = ast.parse(params[0].source)
    for node in tree.body:
        assert isinstance(node, ast.Assign), (
            f"parameters cell may only assign literals: {ast.dump(node)[:60]}"
        )
        ast.literal_eval(node.value)  # raises for anything but a plain literal
    for cell in code:
        for node in ast.walk(ast.parse(cell.source)):
            assert not isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef | ast.Lambda)
    return nb, code


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_structure(path):
    _, code = code_cells(path)
    for cell in code:
        assert not cell.get("outputs") and cell.get("execution_count") is None, (
            "strip outputs before committing"
        )


def test_evaluation_parameters_are_experiment_fields():
    nb = nbformat.read(Path(NOTEBOOKS[0]).parent / "20-evaluate.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    names = {t.id for n in ast.parse(cell.source).body for t in n.targets}
    fields = set(inspect.signature(ExperimentConfig).parameters)
    # every field settable by a sweep; beside them the artefact root, the quick look's switch (quick_look) and
    # the background that puts the corpus in a haystack (both decide the corpus the configuration reads)
    extra = {"home", "quick", "background"}
    assert names == fields | extra, names ^ (fields | extra)


TUTORIALS = sorted((Path(__file__).resolve().parents[2] / "notebooks" / "tutorials").glob("*.ipynb"))


def test_tutorials_are_a_numbered_series():
    names = [p.name for p in TUTORIALS]
    assert len(names) >= 6 and [n[:3] for n in names] == [f"{i:02d}-" for i in range(1, len(names) + 1)]


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_keeps_the_outputs_it_is_checked_against(path):
    """Tutorials keep reference outputs (nbval compares cells tagged nbval-check-output); `make tutorials`."""
    nb, code = code_cells(path)
    checked = [c for c in code if "nbval-check-output" in c.metadata.get("tags", [])]
    assert checked, "a tutorial compares at least one cell's output"
    for cell in checked:
        assert cell.get("outputs"), f"checked cell without a reference output: {cell.source[:60]!r}"
        assert all(o.get("name") != "stderr" for o in cell.outputs), "a checked cell writes to stderr"
    assert nb.cells[0].cell_type == "markdown" and "What you learn" in nb.cells[0].source
