"""An ``ir_datasets`` collection made of local files, imported as a hepwb corpus and question set.

``ir_datasets.create_dataset`` builds a dataset from three local files: documents (``doc_id<TAB>text``),
queries (``query_id<TAB>text``) and TREC qrels (``query_id 0 doc_id relevance``). :func:`import_local`
checks the files (regular files within :mod:`hepwb.limits`), builds that dataset and writes it with
:func:`~hepwb.interop.collection.write_collection`. Files only: nothing is downloaded, no dataset id is looked
up. :func:`import_dataset` takes any dataset object you built the same way (its documents, queries and qrels
are read through its iterators, each bounded). A UTF-8 byte-order mark opening a file (a TSV saved by Excel
or Windows Notepad), which ``ir_datasets`` keeps in the first id, is dropped from it.

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "docs.tsv").write_text("d1\\tJets are calibrated with photon plus jet events.\\n")
    >>> _ = (folder / "queries.tsv").write_text("q1\\thow are jets calibrated\\n")
    >>> _ = (folder / "qrels.txt").write_text("q1 0 d1 1\\n")
    >>> done = import_local(folder / "out", folder / "docs.tsv", folder / "queries.tsv", folder / "qrels.txt")
    >>> done.n_documents, done.n_questions
    (1, 1)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hepwb import limits
from hepwb.exceptions import ConfigError, DependencyError, HepwbError
from hepwb.files.readers import check_file
from hepwb.interop.beir import BeirDoc
from hepwb.interop.collection import ImportedCollection, write_collection
from hepwb.paths import Layout
from hepwb.text.plaintext import not_text

__all__ = ["import_dataset", "import_local", "local_dataset"]


def _ir_datasets() -> Any:
    """The ``ir_datasets`` module, its home inside the project (``data/interim/ir_datasets``).

    Importing ``ir_datasets`` creates its home folder (``~/.ir_datasets`` by default, with a folder per
    known collection): hepwb writes nothing outside ``data/`` and ``reports/``, so the home is the
    project's unless the user set ``IR_DATASETS_HOME``.
    """
    home = Layout.default().data / "interim" / "ir_datasets"
    os.environ.setdefault("IR_DATASETS_HOME", str(home))
    try:
        import ir_datasets
    except ImportError as exc:
        msg = "importing an ir_datasets collection needs ir_datasets: pip install 'hepwb[ir]'"
        raise DependencyError(msg) from exc
    return ir_datasets


def local_dataset(docs_tsv: str | Path, queries_tsv: str | Path, qrels_trec: str | Path) -> Any:
    """``ir_datasets.create_dataset`` over three local files, each checked first (nothing is downloaded).

    Raises:
        ReadError: A file is missing, not a regular file, or larger than hepwb reads.
    """
    files = {
        "documents file": (docs_tsv, limits.MAX_COLLECTION_BYTES),
        "queries file": (queries_tsv, limits.MAX_RUN_FILE_BYTES),
        "qrels file": (qrels_trec, limits.MAX_RUN_FILE_BYTES),
    }
    for what, (path, cap) in files.items():
        check_file(path, what, max_bytes=cap, fix=f"give the {what} of the collection")
    return _ir_datasets().create_dataset(
        docs_tsv=str(docs_tsv), queries_tsv=str(queries_tsv), qrels_trec=str(qrels_trec)
    )


_BOM = "\ufeff"
"""The byte-order mark a file saved as "UTF-8 with BOM" opens with (``ir_datasets`` reads it into an id)."""


def _first_id(value: Any, first: bool) -> str:
    """``value`` as an id; the first record's without the byte-order mark its file may open with.

    Example:
        >>> _first_id("\ufeffq1", True), _first_id("q1", False)
        ('q1', 'q1')
    """
    text = str(value)
    return text.removeprefix(_BOM) if first else text


def _text(record: Any) -> str:
    text = getattr(record, "text", None)
    if text is None and hasattr(record, "default_text"):
        text = record.default_text()
    return str(text or "")


def _docs(dataset: Any, source: str) -> Iterator[BeirDoc]:
    for i, doc in enumerate(dataset.docs_iter()):
        if i >= limits.MAX_COLLECTION_DOCS:
            msg = f"{source}: more than {limits.MAX_COLLECTION_DOCS:,} documents; import a part of it"
            raise ConfigError(msg)
        text = _text(doc)
        if len(text) > limits.MAX_COLLECTION_DOC_CHARS:
            msg = f"{source}: document {doc.doc_id!r} has {len(text):,} characters (at most "
            msg += f"{limits.MAX_COLLECTION_DOC_CHARS:,})"
            raise ConfigError(msg)
        yield BeirDoc(_first_id(doc.doc_id, i == 0), str(getattr(doc, "title", "") or ""), text)


def import_dataset(
    out: str | Path,
    dataset: Any,
    *,
    source: str = "ir_datasets collection",
    files: tuple[str, str] = ("its queries", "its qrels"),
) -> ImportedCollection:
    """Write an ``ir_datasets`` dataset object (documents, queries, qrels) as a corpus and question set.

    ``files`` names the queries and the qrels in messages (a query given twice, a document judged twice
    for one query, a query id with a control character, a relevance of more than 9 digits: each refused).

    Raises:
        ConfigError: The dataset lacks documents, queries or qrels, holds one of the above, or exceeds
            the bounds of :func:`~hepwb.interop.collection.write_collection`.
    """
    for part in ("docs", "queries", "qrels"):
        if not getattr(dataset, f"has_{part}")():
            msg = f"{source} has no {part}; an import needs documents, queries and qrels"
            raise ConfigError(msg)
    try:
        return _import(out, dataset, source, files)
    except (RuntimeError, ValueError, KeyError, TypeError, UnicodeError) as exc:  # ir_datasets' parse errors
        if isinstance(exc, HepwbError):
            raise
        why = " ".join(str(exc).split())[:200]
        msg = (
            f"{source}: ir_datasets cannot read it ({why}); documents and queries are id<TAB>text lines, "
            "qrels are 'query_id 0 doc_id relevance' lines"
        )
        raise ConfigError(msg) from None


def _import(out: str | Path, dataset: Any, source: str, files: tuple[str, str]) -> ImportedCollection:
    qfile, rfile = files
    queries: dict[str, str] = {}
    for n, q in enumerate(dataset.queries_iter(), start=1):
        if n > limits.MAX_RUN_LINES:
            msg = f"{qfile}: more than {limits.MAX_RUN_LINES:,} queries; import a part of it"
            raise ConfigError(msg)
        qid = _first_id(q.query_id, n == 1)
        if problem := not_text(qid):
            msg = f"{qfile} query {n}: the query id {qid[:80]!r} {problem}; write it as plain text"
            raise ConfigError(msg)
        if qid in queries:
            msg = f"{qfile} query {n}: query {qid[:80]!r} is given twice; keep one"
            raise ConfigError(msg)
        queries[qid] = _text(q)
    qrels: dict[str, dict[str, int]] = {}
    for n, r in enumerate(dataset.qrels_iter(), start=1):
        if n > limits.MAX_RUN_LINES:
            msg = f"{rfile}: more than {limits.MAX_RUN_LINES:,} judgements; import a part of it"
            raise ConfigError(msg)
        qid, doc, text = _first_id(r.query_id, n == 1), str(r.doc_id), str(r.relevance).strip()
        if isinstance(r.relevance, bool) or not (text.lstrip("-").isascii() and text.lstrip("-").isdigit()):
            msg = f"{rfile} judgement {n}: relevance {text[:20]!r} is no whole number; give a grade: 0, 1, 2"
            raise ConfigError(msg)
        rel = int(text) if len(text) < 20 else limits.MAX_RELEVANCE_GRADE
        if abs(rel) >= limits.MAX_RELEVANCE_GRADE:
            msg = (
                f"{rfile} judgement {n}: relevance {str(rel)[:20]}… is not a grade; give a small whole number"
            )
            raise ConfigError(msg)
        docs = qrels.setdefault(qid, {})
        if doc in docs:
            msg = f"{rfile} judgement {n}: document {doc[:80]!r} is judged twice for query {qid[:80]!r}"
            msg += "; keep one"
            raise ConfigError(msg)
        docs[doc] = rel
    return write_collection(out, _docs(dataset, source), queries, qrels, source=source)


def import_local(
    out: str | Path, docs_tsv: str | Path, queries_tsv: str | Path, qrels_trec: str | Path
) -> ImportedCollection:
    """Import the collection of three local files (module docstring) into the new folder ``out``."""
    dataset = local_dataset(docs_tsv, queries_tsv, qrels_trec)
    return import_dataset(
        out,
        dataset,
        source=f"ir_datasets collection of {docs_tsv}",
        files=(f"queries file {queries_tsv}", f"qrels file {qrels_trec}"),
    )
