"""The IR community's formats: TREC run, qrels and topics files, BEIR folders, ``ir_datasets`` collections.

* :func:`export_runs` writes hepwb runs (one, or a sweep's) with hepwb's judgements as TREC or BEIR files
  (``hepwb export``): paper-level and chunk-level qrels, topics, the runs themselves.
* :func:`score_run_file` scores an outside system's TREC run file on hepwb's questions with hepwb's
  metrics, intervals and tests, and records it in the catalog beside hepwb's runs
  (``hepwb evaluate --run-file``).
* :func:`import_beir` and :func:`import_local` turn a BEIR folder or an ``ir_datasets`` collection of
  local files into a hepwb corpus and question set (``hepwb import-beir``, ``hepwb import-ir-datasets``).
* :func:`experiment_table` is ``pt.Experiment``'s table (improved, degraded, p-values, Holm) from hepwb's
  per-question scores.

The format modules (:mod:`hepwb.interop.trec`, :mod:`hepwb.interop.beir`) read every file through
:mod:`hepwb.files.readers` within the bounds of :mod:`hepwb.limits`.
"""

from __future__ import annotations

from pathlib import Path

from hepwb.interop.beir import iter_corpus, read_beir_qrels, read_queries
from hepwb.interop.collection import ImportedCollection, write_collection
from hepwb.interop.compare import experiment_table
from hepwb.interop.export import Exported, export_runs, resolve_runs
from hepwb.interop.irdatasets import import_dataset, import_local
from hepwb.interop.judgements import Judgements, question_judgements
from hepwb.interop.runfile import score_run_file
from hepwb.interop.trec import read_qrels, read_run, read_topics, write_qrels, write_run, write_topics

__all__ = [
    "Exported",
    "ImportedCollection",
    "Judgements",
    "experiment_table",
    "export_runs",
    "import_beir",
    "import_dataset",
    "import_local",
    "question_judgements",
    "read_qrels",
    "read_run",
    "read_topics",
    "resolve_runs",
    "score_run_file",
    "write_qrels",
    "write_run",
    "write_topics",
]


def import_beir(folder: str | Path, out: str | Path, split: str = "test") -> ImportedCollection:
    """Import the BEIR folder ``folder`` (its ``split`` qrels) into the new folder ``out``.

    ``out/corpus/`` holds the documents as markdown, ``out/questions.jsonl`` the questions
    (:mod:`hepwb.interop.collection` says how qrels become evidence); nothing is downloaded.
    """
    queries = read_queries(folder)
    qrels = read_beir_qrels(folder, split)
    return write_collection(out, iter_corpus(folder), queries, qrels, source=f"BEIR folder {folder}")


def __dir__() -> list[str]:
    return __all__
