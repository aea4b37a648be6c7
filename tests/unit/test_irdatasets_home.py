"""Probe round 6 (G2): importing an ir_datasets collection writes nothing outside the project.

``import ir_datasets`` creates its home folder (``~/.ir_datasets``, a folder per known collection); hepwb
points it into ``data/interim/ir_datasets`` unless the user set ``IR_DATASETS_HOME``. Run as a user would:
the console script in a fresh process with an empty ``HOME``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.heavy
def test_import_ir_datasets_writes_nothing_in_home(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (tmp_path / "docs.tsv").write_text("d1\tThe Higgs boson mass is 125 GeV.\nd2\tCLAS12 measured DVCS.\n")
    (tmp_path / "q.tsv").write_text("q1\tWhat is the Higgs mass?\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    env = {k: v for k, v in os.environ.items() if k != "IR_DATASETS_HOME"}
    env |= {"HOME": str(home), "HEPWB_HOME": str(project)}
    hepwb = Path(sys.executable).parent / "hepwb"
    args = [str(hepwb), "import-ir-datasets", str(project / "irds"), "--docs", str(tmp_path / "docs.tsv"),
            "--queries", str(tmp_path / "q.tsv"), "--qrels", str(tmp_path / "qrels.txt")]  # fmt: skip
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert not (home / ".ir_datasets").exists()
    assert (project / "data" / "interim" / "ir_datasets").is_dir()
