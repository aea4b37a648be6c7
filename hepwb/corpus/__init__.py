"""The convert stage for a whole corpus: plan its files, convert each once (cached), read them back.

:func:`~hepwb.corpus.plan.plan_corpus` lists a folder's files with their labels and keys (nothing
converted); :func:`~hepwb.corpus.conversion.ingest` converts what is not cached and returns the documents;
:mod:`hepwb.corpus.sources` picks each file's converter (its LaTeX source when that agrees with the PDF);
:mod:`hepwb.corpus.stored` keeps a converted document on disk and reads its text only when asked.
"""

from __future__ import annotations

from hepwb.corpus.conversion import convert_source, default_questions, failure_marker, ingest
from hepwb.corpus.plan import SourceFile, labelled_files, plain_label, plan_corpus
from hepwb.corpus.stored import StoredDocument

__all__ = [
    "SourceFile",
    "StoredDocument",
    "convert_source",
    "default_questions",
    "failure_marker",
    "ingest",
    "labelled_files",
    "plain_label",
    "plan_corpus",
]


def __dir__() -> list[str]:
    return __all__
