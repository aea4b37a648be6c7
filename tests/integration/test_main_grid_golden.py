"""No silent regressions: the main job's grid on all 32 papers and 124 dev questions, per cell.

Every cell of ``sweeps/default.yaml`` (3 chunk sizes × 7 retrievers) is run as the main job runs it; its
found@5 (``hit_rate@5``) and MRR@10 must stay within one question of the stored values
(``tests/golden/main_grid_32.json``). A change that moves a cell more than that must say why: rerun with
``HEPWB_UPDATE_GOLDEN=1 pytest tests/integration/test_main_grid_golden.py`` and commit the file with the
reason. Marked ``slow``: ``make test`` leaves it out; ``make test-slow`` (run by ``.ci/run``) runs it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hepwb.paths import Layout
from hepwb.sweep import run_sweep

pytestmark = [pytest.mark.shared, pytest.mark.integration, pytest.mark.slow]  # about 5 min: `make test-slow`

GOLDEN = Path(__file__).parent.parent / "golden" / "main_grid_32.json"
METRICS = ("hit_rate@5", "mrr@10")


def _cell(config: dict[str, object]) -> str:
    options = config.get("retriever_options") or {}
    opts = ", ".join(f"{k}={v}" for k, v in sorted(dict(options).items()))  # type: ignore[call-overload]
    return f"{config['chunker']} {config['chunk_size']} {config['retriever']}" + (f"({opts})" if opts else "")


def test_the_main_grid_on_all_32_papers_stays_within_one_question(tmp_path_factory):
    layout = Layout(tmp_path_factory.mktemp("maingrid"))
    result = run_sweep(None, layout=layout, progress=False)
    assert not result.failed, [c.error for c in result.failed]
    now: dict[str, dict[str, float]] = {}
    n_questions = 0
    for path in sorted(layout.runs.glob("*/metrics.json")):
        record = json.loads(path.read_text())
        summary = record["summary"]
        n_questions = int(summary["n_questions_evaluated"])
        now[_cell(record["config"])] = {m: round(float(summary[m]), 6) for m in METRICS}
    assert len(now) == len(result.cells) == 21 and n_questions > 100
    if os.environ.get("HEPWB_UPDATE_GOLDEN"):
        golden = {"n_questions": n_questions, "cells": now}
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
        return
    stored = json.loads(GOLDEN.read_text())
    one = 1.0 / stored["n_questions"] + 1e-9  # one question changing its hit or its first relevant rank
    assert set(now) == set(stored["cells"]), f"cells differ: {sorted(set(now) ^ set(stored['cells']))}"
    moved = {
        f"{cell} {m}": f"{stored['cells'][cell][m]} → {value}"
        for cell, values in now.items()
        for m, value in values.items()
        if abs(value - stored["cells"][cell][m]) > one
    }
    assert not moved, (
        f"main-grid cells moved by more than one question (stored → now): {moved}. If intended, rerun with "
        f"HEPWB_UPDATE_GOLDEN=1 and commit {GOLDEN.name} with the reason"
    )
