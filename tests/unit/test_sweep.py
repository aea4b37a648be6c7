from __future__ import annotations

import json

import pytest

from hepwb.exceptions import ConfigError, CorpusNotFoundError
from hepwb.io import write_json
from hepwb.paths import Layout
from hepwb.pipeline import Catalog
from hepwb.pipeline.sweep import grid_cells, run_sweep, sweep_id, validate_grid


@pytest.fixture
def tiny(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "A01_note.md").write_text(
        "# Note\n\nThe CLAS12 detector measured the asymmetry.", encoding="utf-8"
    )
    questions = tmp_path / "q.jsonl"
    ev = {"doc": "Z99", "page": 1, "quote": "a quote from a paper that is not in this corpus at all"}
    questions.write_text(json.dumps({"qid": "Z-1", "question": "?", "answer": "!", "evidence": [ev]}) + "\n")
    return corpus, questions


def test_bad_options_fail_before_any_cell(tiny):
    corpus, questions = tiny
    with pytest.raises(ConfigError, match="choose one of"):
        validate_grid([64], ["dense", "nope"], corpus=str(corpus), questions=str(questions))
    with pytest.raises(ConfigError, match="fraction"):
        validate_grid([64], ["bm25"], corpus=str(corpus), questions=str(questions), chunk_overlap=1.5)
    with pytest.raises(CorpusNotFoundError, match="--questions"):
        validate_grid([64], ["bm25"], corpus=str(corpus), questions=str(corpus / "missing.jsonl"))
    with pytest.raises(ConfigError, match="at least one"):
        grid_cells([], ["bm25"])


def test_sweep_id_is_deterministic():
    assert sweep_id([256], ["bm25"], k=5) == sweep_id([256], ["bm25"], k=5) != sweep_id([256], ["bm25"], k=6)


def test_failing_cell_is_reported_and_its_stale_results_removed(tiny, tmp_path):
    corpus, questions = tiny
    layout = Layout(tmp_path / "home")
    kwargs = {"corpus": str(corpus), "questions": str(questions), "tokenizer": "words"}
    # a stale result from an earlier run of the same cell must not survive a failed re-run
    cells = grid_cells([64], ["bm25"], **kwargs)
    assert len(cells) == 1
    results = run_sweep([64], ["bm25"], layout=layout, **kwargs)
    (cell,) = results
    assert not cell.ok and "none of the questions" in (cell.error or "")
    write_json(cell.run_dir / "metrics.json", {"stale": True})
    (again,) = run_sweep([64], ["bm25"], layout=layout, **kwargs)
    assert not again.ok and not (again.run_dir / "metrics.json").exists()
    assert (again.run_dir / "20-evaluate.ipynb").is_file()  # the failed notebook is kept for inspection
    assert Catalog(layout.catalog).metrics_wide().empty
