"""Check a question file against a corpus before any run: every quote located, ambiguous or not found.

``hepwb questions check FILE [--corpus DIR]`` and :func:`check_questions` (the same in a notebook)
validate the file (the JSON Schema of :data:`~hepwb.evaluation.questions.SCHEMA_PATH`: one line naming
file, line and field on the first problem), convert only the documents its evidence names (or read
them from the cache) and locate every quote without chunking, embedding or retrieving anything.

Example:
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "papers").mkdir()
    >>> _ = (root / "papers" / "note-a.md").write_text("# A note\\n\\nThe fitted amplitude is 0.42.\\n")
    >>> _ = (root / "qa.jsonl").write_text('{"qid": "Q1", "question": "Amplitude?", '
    ...     '"evidence": [{"doc": "note-a", "quote": "The fitted amplitude is"}]}\\n')
    >>> check = check_questions(root / "qa.jsonl", root / "papers", layout=Layout(root), progress=False)
    >>> check.summary(), check.rows()[0]["status"]
    ('1 of 1 question can be scored; every quote located', 'located')
"""

from __future__ import annotations

import logging
from pathlib import Path

from hepwb.acquisition.folder import corpus_labels, resolve_corpus
from hepwb.corpus import ingest
from hepwb.corpus.sources import substitution_line
from hepwb.evaluation import load_questions
from hepwb.evaluation.evidence import EvidenceCheck, check_evidence
from hepwb.experiment.stages import questions_path
from hepwb.hepilot.log import ProcessingLog
from hepwb.paths import Layout

__all__ = ["check_questions"]

_log = logging.getLogger("hepwb")


def check_questions(
    questions: str | Path | None = None,
    corpus: str | Path | None = None,
    *,
    prefer_latex: bool = True,
    layout: Layout | None = None,
    progress: bool = True,
) -> EvidenceCheck:
    """Validate a question file and locate each of its quotes in the corpus (see the module docstring).

    Args:
        questions: The ``.jsonl`` or ``.csv`` file (default: ``$HEPWB_QUESTIONS`` or the dev set).
        corpus: The folder of papers (default: ``$HEPWB_CORPUS`` or the shared corpus).
        prefer_latex: Convert a paper from its LaTeX source when it has one, as runs do.
        layout: Artefact folders (the conversion cache; default: this project's).
        progress: Show a progress bar while converting.

    Returns:
        The outcome of every quote; ``.frame()`` is the table, ``.summary()`` one line. Quotes naming a
        document the corpus lacks are rows with status ``no_document``, not an error.

    Raises:
        ConfigError: The file is missing or malformed (file, line and field named).
    """
    qpath = questions_path(questions)
    every = load_questions(qpath)  # malformed files stop here, before any paper is converted
    known = corpus_labels(resolve_corpus(corpus))
    wanted = sorted({ev.doc for q in every for ev in q.evidence} & known)
    docs = (
        ingest(
            corpus,
            layout=layout,
            only=wanted,
            prefer_latex=prefer_latex,
            log=ProcessingLog(),
            progress=progress,
        )
        if wanted
        else []
    )
    swapped = substitution_line(docs)
    if swapped:
        _log.info("%s", swapped)
    return check_evidence(every, docs)
