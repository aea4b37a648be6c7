"""ragas scoring writes no file outside data/ and reports/: no ~/.local/share/ragas/uuid.json (issue 38)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("ragas")

SCORE = """
from hepwb.evaluation.ragas_eval import offline_scores
sample = {
    "user_input": "What is the top-quark mass?",
    "retrieved_contexts": ["the top-quark mass is 172.5 GeV"],
    "retrieved_context_ids": ["c1"],
    "reference_context_ids": ["c1"],
    "reference_contexts": ["top-quark mass is 172.5 GeV"],
    "reference": "172.5 GeV",
}
frame = offline_scores({"q1": sample})
assert frame.loc["q1", "id_context_recall"] == 1.0, frame

import ragas._analytics as analytics
assert analytics.get_userid().startswith("anonymous-")  # the throwaway id: nothing read or written
print("scored")
"""


@pytest.mark.heavy
def test_offline_ragas_scoring_writes_nothing_in_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(HOME=str(home), RAGAS_DO_NOT_TRACK="true")
    out = subprocess.run(
        [sys.executable, "-c", SCORE], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "scored" in out.stdout
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []
    assert not (tmp_path / "ragas").exists()
