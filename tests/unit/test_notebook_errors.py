"""In a notebook, a HepwbError shows its one-line message, not a long traceback (issue 37 item 2)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.notebook


def test_a_hepwb_error_in_a_kernel_is_its_one_line_message(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import hepwb\nfrom hepwb.evaluation import load_questions"),
        nbformat.v4.new_code_cell(f"load_questions({str(tmp_path / 'missing.jsonl')!r})"),
        nbformat.v4.new_code_cell("1 / 0"),
    ]
    NotebookClient(nb, kernel_name="python3", allow_errors=True, timeout=120).execute()
    (ours,) = nb.cells[1].outputs
    assert ours["output_type"] == "error" and ours["ename"] == "ConfigError"
    assert ours["traceback"] == [f"ConfigError: {ours['evalue']}"] and "does not exist" in ours["evalue"]
    (bug,) = nb.cells[2].outputs  # anything else keeps its full traceback: it is a bug to report
    assert bug["ename"] == "ZeroDivisionError" and len(bug["traceback"]) > 1
