"""Helpers shared by the tests (one copy, imported everywhere)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hepwb.paths import shared_dir
from hepwb.types import Chunk, Document

SHARED = shared_dir(Path(__file__).resolve().parents[1])
PDF_DIR = SHARED / "corpus" / "papers" / "pdf"
QUESTIONS = SHARED / "eval" / "hepqa-dev.jsonl"
SCHEMAS = SHARED / "hepilot"
HAVE_SHARED_PDFS = PDF_DIR.is_dir() and (SHARED / "eval" / "hepqa-dev.jsonl").is_file()

SAMPLE_MD = """# Deeply virtual Compton scattering

## 1 Introduction

The beam-spin asymmetry A_LU is measured with a 27.6 GeV positron beam. It is sensitive to GPDs.
Fig. 3 shows the result, e.g. for -t < 0.7 GeV^2. The analysis follows Ref. 12.

$$
A_{LU}(\\phi) = \\frac{1}{P_B}\\,\\frac{N^+(\\phi) - N^-(\\phi)}{N^+(\\phi) + N^-(\\phi)}
$$

## 2 Results

| bin | -t (GeV^2) | A_LU |
|-----|-----------|------|
| 1 | 0.10 | -0.23 |
| 2 | 0.30 | -0.18 |

```python
print("code is never split")
```

The CLAS12 detector recorded the data. The asymmetry is negative in all bins.
"""


def assert_chunk_invariants(doc: Document, chunks: list[Chunk], chunk_size: int) -> None:
    """Offsets exact, sizes bounded, atomic blocks whole, indices sequential, IDs unique."""
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    for c in chunks:
        assert doc.markdown[c.start : c.end] == c.text
        a, z = c.context
        assert 0 <= a <= c.start and c.end <= z <= len(doc.markdown), f"context of chunk {c.index} misses it"
        assert c.text.strip(), "empty chunk"
        assert c.token_count <= chunk_size or c.oversized, (c.index, c.token_count)
        for b in doc.blocks:
            if b.atomic and c.start < b.end and c.end > b.start:
                assert c.start <= b.start and c.end >= b.end, f"chunk {c.index} splits a {b.kind} block"
    # every non-blank character of a retrievable block is in some chunk; reference entries in none;
    # a heading that introduces nothing retrievable (a title before front matter) is in no chunk alone
    for c in chunks:
        lines = [ln for ln in c.text.splitlines() if ln.strip()]
        assert c.overlap_tokens or not all(ln.lstrip().startswith("#") for ln in lines), (
            f"{c.index}: headings only"
        )
    covered = [False] * len(doc.markdown)
    for c in chunks:
        covered[c.start : c.end] = [True] * (c.end - c.start)
    wanted = [False] * len(doc.markdown)
    for b in doc.blocks:
        wanted[b.start : b.end] = [b.retrievable and b.kind != "heading"] * (b.end - b.start)
    missing = [i for i, ch in enumerate(doc.markdown) if wanted[i] and not covered[i] and not ch.isspace()]
    assert not missing, f"text not in any chunk at offsets {missing[:5]}"


TINY_DOCS = {
    "A01_dvcs.md": """# Deeply virtual Compton scattering at HERMES

## Introduction

The HERMES experiment measured the beam-spin asymmetry in deeply virtual Compton scattering with the
27.6 GeV positron beam of HERA. The asymmetry is sensitive to generalised parton distributions.

## Results

The amplitude of the sin(phi) modulation is negative in every kinematic bin. Its value integrated over
the acceptance is -0.23 with a statistical uncertainty of 0.04. Radiative corrections are small.

## Systematics

The dominant systematic uncertainty comes from the beam polarisation measurement, which is known to
three percent. Detector misalignment contributes less than one percent to the asymmetry.
""",
    "B02_jets.md": """# Jet energy scale in proton collisions

## Calibration

The jet energy scale is calibrated with photon plus jet events at a centre-of-mass energy of 13 TeV.
The calibration uncertainty is below one percent for jets above 100 GeV of transverse momentum.

## Pile-up

Additional proton collisions in the same bunch crossing add energy to jets; an area-based subtraction
removes it. The residual dependence on the number of primary vertices is negligible after subtraction.
""",
    "C03_neutrinos.md": """# Reactor neutrino oscillations

## Detector

The far detector holds twenty tons of gadolinium-doped liquid scintillator, shielded by mineral oil
and an outer water veto that tags cosmic muons passing nearby.

## Oscillation result

The disappearance of electron antineutrinos gives a mixing angle sin^2(2 theta13) of 0.084 with a
precision of four percent, the most precise measurement at the time of publication.
""",
}

TINY_QUESTIONS = [
    ("q1", "What did HERMES measure in deeply virtual Compton scattering?", "A01",
     "measured the beam-spin asymmetry in deeply virtual Compton scattering"),
    ("q2", "What is the integrated amplitude of the sin(phi) modulation?", "A01",
     "Its value integrated over the acceptance is -0.23"),
    ("q3", "What dominates the systematic uncertainty of the asymmetry?", "A01",
     "The dominant systematic uncertainty comes from the beam polarisation measurement"),
    ("q4", "How is the jet energy scale calibrated?", "B02",
     "The jet energy scale is calibrated with photon plus jet events"),
    ("q5", "How is pile-up energy removed from jets?", "B02", "an area-based subtraction removes it"),
    ("q6", "What does the far detector contain?", "C03",
     "twenty tons of gadolinium-doped liquid scintillator"),
    ("q7", "What value of the mixing angle was found?", "C03", "sin^2(2 theta13) of 0.084"),
    ("q8", "How are cosmic muons tagged?", "C03", "an outer water veto that tags cosmic muons"),
]  # fmt: skip


def tiny_corpus(folder: Path) -> tuple[Path, Path]:
    """Write three short markdown papers and eight questions about them; return (corpus, questions)."""
    import json

    corpus = folder / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for name, text in TINY_DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    questions = folder / "questions.jsonl"
    lines = [
        json.dumps({"qid": q, "question": text, "answer": "-", "kind": "fact", "style": "lexical",
                    "evidence": [{"doc": doc, "page": 1, "quote": quote}]})
        for q, text, doc, quote in TINY_QUESTIONS
    ]  # fmt: skip
    questions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return corpus, questions


def two_notes(folder: Path, quote_a: str = "fitted amplitude is") -> list[str]:
    """Two markdown notes and a question about each under ``folder``; the ``hepwb evaluate`` arguments that
    score them at the paper level (which needs no chunking)."""
    import json

    corpus = folder / "papers"
    corpus.mkdir()
    (corpus / "note-a.md").write_text("# Fit\n\nThe fitted amplitude is 0.42 with a flat background.\n")
    (corpus / "note-b.md").write_text("# Calibration\n\nElectrons from Z decays calibrate the calorimeter.\n")
    rows = [
        {"qid": "N1", "question": "What amplitude?", "evidence": [{"doc": "note-a", "quote": quote_a}]},
        {
            "qid": "N2",
            "question": "What calibrates?",
            "evidence": [{"doc": "note-b", "quote": "the calorimeter"}],
        },
    ]
    qa = folder / "qa.jsonl"
    qa.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return ["evaluate", "--corpus", str(corpus), "--questions", str(qa), "--level", "paper"]


def notebook_warnings(path: Path) -> list[str]:
    """Every output of an executed notebook that reads as a warning (stderr text or a warning line)."""
    import json
    import re

    found = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for out in cell.get("outputs", []):
            text = "".join(out.get("text", "")) if out.get("output_type") == "stream" else ""
            text += "".join(out.get("data", {}).get("text/plain", ""))
            if re.search(r"warning", text, re.IGNORECASE) or (out.get("name") == "stderr" and text.strip()):
                found.append(text[:300])
    return found


def run_main(monkeypatch: Any, capsys: Any, *argv: str) -> tuple[int, str, str]:
    """``hepwb ARGV`` through the CLI's own entry point in this process: ``(exit code, stdout, stderr)``."""
    import pytest

    import hepwb.cli

    monkeypatch.setattr(sys, "argv", ["hepwb", *argv])
    with pytest.raises(SystemExit) as info:
        hepwb.cli.main()
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def notes_project(folder: Path, notes: dict[str, str], questions: list[tuple[str, ...]]) -> tuple[Path, Path]:
    """Write markdown ``notes`` into ``folder/papers`` and ``questions`` into ``folder/qa.jsonl``.

    Each question is ``(qid, question, doc, quote)`` or ``(qid, question, doc, quote, answer)`` (an empty
    answer is left out). Returns (corpus, question file).
    """
    import json

    papers = folder / "papers"
    papers.mkdir(parents=True, exist_ok=True)
    for name, text in notes.items():
        (papers / name).write_text(text, encoding="utf-8")
    lines = []
    for qid, question, doc, quote, *answer in questions:
        row = {"qid": qid, "question": question, "evidence": [{"doc": doc, "quote": quote}]}
        if answer and answer[0]:
            row["answer"] = answer[0]
        lines.append(json.dumps(row) + "\n")
    qa = folder / "qa.jsonl"
    qa.write_text("".join(lines), encoding="utf-8")
    return papers, qa


HEPWB = str(Path(sys.executable).with_name("hepwb"))
"""The installed console script, beside this interpreter."""


def run_hepwb(home: Path, *args: str | bytes) -> Any:
    """The installed console script run as a user runs it, with ``HEPWB_HOME=home``: the finished process
    (``subprocess.CompletedProcess[bytes]``; ``args`` may hold bytes that are no UTF-8)."""
    import os
    import subprocess

    env = {**os.environ, "HEPWB_HOME": str(home)}
    return subprocess.run([HEPWB, *args], capture_output=True, env=env, timeout=300, check=False)


def one_error_line(output: str) -> str:
    """The only line of ``output`` (stderr, or a CliRunner's output), asserted to be ``error: …`` with no
    traceback."""
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in output, output
    return lines[0]


def assert_one_line_exit_2(res: Any, *needles: str) -> None:
    """A CliRunner result that exited 2 with one line, ``error: …``, holding every one of ``needles``."""
    assert res.exit_code == 2, res.output
    assert res.output.startswith("error: ") and res.output.count("\n") == 1, res.output
    for needle in needles:
        assert needle in res.output, res.output


def three_notes(folder: Path) -> Path:
    """Three markdown notes, ``P00`` to ``P02``, in ``folder/c`` and a question quoting each in
    ``folder/q.jsonl``; returns the corpus folder."""
    import json

    corpus = folder / "c"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"P0{i}_doc.md").write_text(
            f"# Measurement {i}\n\n## Results\nThe W boson and Z boson backgrounds are small.\n"
        )
    quote = "The W boson and Z boson backgrounds are small."
    rows = [
        {
            "qid": f"Q{i}",
            "question": "Which backgrounds are small?",
            "evidence": [{"doc": f"P0{i}", "quote": quote}],
        }
        for i in range(3)
    ]
    (folder / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return corpus


def evaluate_bm25(monkeypatch: Any, capsys: Any, home: Path, corpus: Path) -> None:
    """One bm25 run of ``corpus``'s papers on ``home/q.jsonl`` (``hepwb evaluate``), asserted to succeed."""
    code, _, err = run_main(
        monkeypatch, capsys, "evaluate", "--corpus", str(corpus), "--questions", str(home / "q.jsonl"),
        "--chunk-size", "64", "--retriever", "bm25",
    )  # fmt: skip
    assert code == 0, err
