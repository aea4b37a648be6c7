"""What several benches share: where things are, the shared material, child processes, Chroma's set.

* :data:`ROOT` (the repository) and :data:`REPORTS` (``reports/bench``, where benches write their JSON);
* :func:`shared_material`: a path of the shared test material, or ``None`` after one line saying that
  nothing is measured (every bench exits 0 then);
* :func:`child` and :func:`timed_child`: a fresh Python process started from the repository root (so
  ``-m bench.NAME`` and ``tests.`` resolve), the latter with its wall time and peak RSS (``wait4``);
* Chroma's question set as a hepwb corpus and question file (:func:`chroma_inputs`, :func:`scratch_sets`);
* :func:`versus`: two runs' per-question results compared on the questions both could score.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hepwb.evaluation.stats import PairedResult, paired_test
from hepwb.paths import Layout, shared_dir

ROOT = Path(__file__).resolve().parents[1]
"""The repository (benches run from here: ``python -m bench.NAME``)."""
REPORTS = ROOT / "reports" / "bench"
"""Where benches write their JSON (git-ignored, like all of ``reports/``)."""

CHROMA = {
    "chatlogs": "chatlogs",
    "finance": "finance",
    "pubmed": "pubmed",
    "state_of_the_union": "sotu",
    "wikitexts": "wikitexts",
}
"""Chroma's corpora (file stem under ``<shared>/eval/chroma/corpora``) and their hepwb labels."""


def shared_material(*parts: str) -> Path | None:
    """``<shared>/parts...`` when it exists; else ``None``, after saying so (the bench measures nothing).

    Example:
        >>> shared_material("no-such-folder-here") is None  # doctest: +ELLIPSIS
        /.../no-such-folder-here not found (set HEPWB_SHARED to the shared test material): nothing measured
        True
    """
    path = shared_dir(ROOT).joinpath(*parts)
    if path.exists():
        return path
    print(f"{path} not found (set HEPWB_SHARED to the shared test material): nothing measured")
    return None


def child(args: Sequence[str], *, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in a fresh process from the repository root, output captured (never raises on exit).

    Example:
        >>> child(["-c", "import bench.common; print('ok')"]).stdout
        'ok\\n'
    """
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=dict(env) if env is not None else None,
        capture_output=True, text=True, check=False,
    )  # fmt: skip


@dataclass(frozen=True)
class Timed:
    """A finished child process: wall seconds, peak resident memory (MiB), exit status, its output."""

    wall_s: float
    peak_mib: float
    returncode: int
    output: str


def timed_child(args: Sequence[str], *, env: Mapping[str, str] | None = None, capture: bool = True) -> Timed:
    """:func:`child` timed: wall time and the process's own peak RSS (``os.wait4``).

    With ``capture=False`` the child writes to this process's terminal (its progress shows) and
    ``output`` is empty.

    Example:
        >>> t = timed_child(["-c", "print('hi')"])
        >>> t.returncode, t.output.strip(), t.peak_mib > 0
        (0, 'hi', True)
    """
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        sink = out if capture else None
        proc = subprocess.Popen(
            [sys.executable, *args], cwd=ROOT, env=dict(env) if env is not None else None,
            stdout=sink, stderr=subprocess.STDOUT if capture else None,
        )  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        text = out.read().decode(errors="replace")
    return Timed(wall, usage.ru_maxrss / 1024, proc.returncode, text)


def chroma_inputs(folder: Path) -> tuple[Path, Path]:
    """Chroma's corpora and questions as a hepwb corpus folder and a hepqa-style question file.

    Each corpus is one markdown paper (labelled as in :data:`CHROMA`); each question's reference spans are
    its evidence quotes, verbatim.
    """
    root = shared_dir(ROOT) / "eval" / "chroma"
    corpus = folder / "chroma-corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for name, label in CHROMA.items():
        text = (root / "corpora" / f"{name}.md").read_text(encoding="utf-8")
        (corpus / f"{label}_chroma.md").write_text(text, encoding="utf-8")
    lines = []
    with open(root / "questions_df.csv", encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            refs = json.loads(row["references"])
            evidence = [{"doc": CHROMA[row["corpus_id"]], "quote": r["content"]} for r in refs]
            lines.append(json.dumps({"qid": f"CH{i:04d}", "question": row["question"], "answer": "-",
                                     "kind": "fact", "style": "chroma", "evidence": evidence}))  # fmt: skip
    questions = folder / "chroma-questions.jsonl"
    questions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return corpus, questions


def have_chroma() -> bool:
    """Whether Chroma's questions are in the shared material (else says so: nothing is measured)."""
    return shared_material("eval", "chroma", "questions_df.csv") is not None


QuestionSets = dict[str, tuple[str | None, str | None]]
"""Question-set name → (corpus, questions) as :class:`~hepwb.experiment.ExperimentConfig` takes them."""


def scratch_sets(home: Path | None, prefix: str) -> tuple[Layout, QuestionSets]:
    """A scratch project (``home``, else a temporary folder) and the two question sets as (corpus, questions).

    The project starts from a copy of this project's embedding cache, so vectors already made are not
    embedded again; hepqa-dev is ``(None, None)`` (the defaults), Chroma's set is written into the project.
    """
    home = home or Path(tempfile.mkdtemp(prefix=prefix))
    layout = Layout(home)
    if not layout.lancedb.exists():
        for cache in Layout.default().lancedb.glob("embcache__*.lance"):
            shutil.copytree(cache, layout.lancedb / cache.name)
    chroma_corpus, chroma_questions = chroma_inputs(home)
    return layout, {"hepqa-dev": (None, None), "chroma": (str(chroma_corpus), str(chroma_questions))}


def versus(per_question: Any, baseline: Any, metric: str) -> PairedResult:
    """``metric`` of one run against a baseline on the same questions: the paired test of hepwb's stats.

    Both are per-question frames indexed by ``qid``; only the questions the baseline could score (evidence
    located, ``n_located > 0``) count, as in every summary metric.
    """
    evaluated = baseline.index[baseline["n_located"] > 0]
    return paired_test(per_question.loc[evaluated, metric], baseline.loc[evaluated, metric])


def rounded(value: Any, digits: int = 4) -> float:
    """``value`` as a float rounded to ``digits`` (how benches store metrics in JSON and results files).

    Example:
        >>> rounded(0.123456), rounded(1)
        (0.1235, 1.0)
    """
    return round(float(value), digits)
