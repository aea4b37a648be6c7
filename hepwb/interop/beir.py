"""BEIR folders: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``, written and read with bounds.

The layout of BEIR (Thakur et al. 2021) that its ``GenericDataLoader``, MTEB, PyTerrier and ranx read:

* ``corpus.jsonl``: one ``{"_id", "title", "text"}`` object per line (hepwb adds a ``metadata`` object);
* ``queries.jsonl``: one ``{"_id", "text"}`` object per line;
* ``qrels/<split>.tsv``: a header ``query-id<TAB>corpus-id<TAB>score``, then one judgement per line.

Writing streams the corpus to disk a line at a time (a chunk set of 10^5 chunks is never one string);
reading does too (:func:`hepwb.files.readers.iter_lines`), each file within the bounds of :mod:`hepwb.limits`.

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = write_beir(folder, [{"_id": "d1", "title": "T", "text": "Jets are calibrated."}],
    ...                [{"_id": "q1", "text": "How are jets calibrated?"}], {"q1": {"d1": 1}})
    >>> [d.doc_id for d in iter_corpus(folder)], read_queries(folder), read_beir_qrels(folder)
    (['d1'], {'q1': 'How are jets calibrated?'}, {'q1': {'d1': 1}})
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hepwb import limits
from hepwb.exceptions import ConfigError
from hepwb.files.parsers import parse_json
from hepwb.files.readers import ReadError, iter_lines
from hepwb.text.names import check_name
from hepwb.text.plaintext import not_text
from hepwb.types import JSONObject

__all__ = ["BeirDoc", "iter_corpus", "read_beir_qrels", "read_queries", "write_beir", "write_jsonl"]

_CORPUS_FIX = 'each line of corpus.jsonl must be one {"_id": …, "title": …, "text": …} object'
_QUERIES_FIX = 'each line of queries.jsonl must be one {"_id": …, "text": …} object'
_QRELS_FIX = "write a header query-id<TAB>corpus-id<TAB>score, then one judgement per line"


@dataclass(frozen=True, slots=True)
class BeirDoc:
    """One document of a collection: its id, title (may be empty) and text."""

    doc_id: str
    title: str
    text: str


def write_jsonl(path: str | Path, rows: Iterable[JSONObject]) -> int:
    """Write ``rows`` as JSON lines, streamed to a temporary file then moved into place; returns how many."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    n = 0
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return n


def write_beir(
    folder: str | Path,
    corpus: Iterable[JSONObject],
    queries: Iterable[JSONObject],
    qrels: Mapping[str, Mapping[str, int]],
    split: str = "test",
) -> dict[str, int]:
    """Write a BEIR folder; returns how many documents, queries and judgements it holds."""
    folder = Path(folder)
    check_name(split, "qrels split", example="test")
    n_docs = write_jsonl(folder / "corpus.jsonl", corpus)
    n_queries = write_jsonl(folder / "queries.jsonl", queries)
    lines = ["query-id\tcorpus-id\tscore\n"]
    lines += [f"{q}\t{d}\t{int(rel)}\n" for q, docs in qrels.items() for d, rel in docs.items()]
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    tmp = folder / "qrels" / f".{split}.tsv.tmp-{os.getpid()}"
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(folder / "qrels" / f"{split}.tsv")
    return {"documents": n_docs, "queries": n_queries, "judgements": len(lines) - 1}


def _object(line: str, where: str, fix: str) -> JSONObject:
    value = parse_json(line, where, fix=fix)
    if not isinstance(value, dict):
        msg = f"{where}: expected a JSON object, got {type(value).__name__}; {fix}"
        raise ReadError(msg)
    return value


def _text(obj: Mapping[str, Any], key: str, where: str, fix: str, *, required: bool = True) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if isinstance(value, int) and not isinstance(value, bool) and key == "_id":
        return str(value)
    if not isinstance(value, str) or (key == "_id" and not value.strip()):
        msg = f"{where}: field {key!r} must be a string, got {type(value).__name__}; {fix}"
        raise ReadError(msg)
    return value


def _plain(value: str, key: str, where: str) -> None:
    """Refuse a text or title holding a lone surrogate or NUL (no file or database takes it) at ``where``.

    Example:
        >>> _plain("a\\ud800b", "text", "corpus.jsonl line 1")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.files.readers.ReadError: corpus.jsonl line 1: field 'text' holds a lone surrogate (U+D800)...
    """
    problem = not_text(value, control=False)
    if problem.startswith("holds a lone surrogate"):
        msg = f"{where}: field {key!r} {problem}: not UTF-8 text; write the character it stands for"
        raise ReadError(msg)
    if problem:
        msg = f"{where}: field {key!r} {problem}; remove it (a document is plain text)"
        raise ReadError(msg)


def iter_corpus(folder: str | Path) -> Iterator[BeirDoc]:
    """Every document of ``folder/corpus.jsonl``, read one line at a time (bounds: :mod:`hepwb.limits`).

    Raises:
        ReadError: Naming the file and line: not a JSON object, ``_id`` or ``text`` missing or not text (a
            lone surrogate, NUL; a control character in ``_id``), a document longer than
            :data:`~hepwb.limits.MAX_COLLECTION_DOC_CHARS` characters, more than
            :data:`~hepwb.limits.MAX_COLLECTION_DOCS` documents.
    """
    path = Path(folder) / "corpus.jsonl"
    lines = iter_lines(
        path,
        "BEIR corpus",
        max_lines=limits.MAX_COLLECTION_DOCS,
        max_line_chars=2 * limits.MAX_COLLECTION_DOC_CHARS,
        max_bytes=limits.MAX_COLLECTION_BYTES,
        fix=_CORPUS_FIX,
    )
    for lineno, line in lines:
        if not line.strip():
            continue
        where = f"{path} line {lineno}"
        obj = _object(line, where, _CORPUS_FIX)
        doc_id = _text(obj, "_id", where, _CORPUS_FIX)
        if problem := not_text(doc_id):
            msg = f"{where}: the document id {doc_id[:80]!r} {problem}; write it as plain text"
            raise ReadError(msg)
        where = f"{where} (document {doc_id[:80]!r})"
        text = _text(obj, "text", where, _CORPUS_FIX)
        if len(text) > limits.MAX_COLLECTION_DOC_CHARS:
            msg = f"{where}: a text of {len(text):,} characters (at most {limits.MAX_COLLECTION_DOC_CHARS:,})"
            raise ReadError(msg)
        title = _text(obj, "title", where, _CORPUS_FIX, required=False)
        _plain(text, "text", where)
        _plain(title, "title", where)
        yield BeirDoc(doc_id, title, text)


def read_queries(folder: str | Path) -> dict[str, str]:
    """``{query id: text}`` of ``folder/queries.jsonl`` in file order.

    Raises:
        ReadError: Naming the file and line (not an object, ``_id``/``text`` missing, an id given twice, an
            empty text, a lone surrogate or NUL in it).
    """
    path = Path(folder) / "queries.jsonl"
    out: dict[str, str] = {}
    lines = iter_lines(
        path,
        "BEIR queries file",
        max_lines=limits.MAX_RUN_LINES,
        max_line_chars=limits.MAX_COLLECTION_DOC_CHARS,
        max_bytes=limits.MAX_RUN_FILE_BYTES,
        fix=_QUERIES_FIX,
    )
    for lineno, line in lines:
        if not line.strip():
            continue
        where = f"{path} line {lineno}"
        obj = _object(line, where, _QUERIES_FIX)
        qid = _text(obj, "_id", where, _QUERIES_FIX)
        if problem := not_text(qid):
            msg = f"{where}: the query id {qid[:80]!r} {problem}; write it as plain text"
            raise ReadError(msg)
        if qid in out:
            msg = f"{where}: query {qid!r} is given twice; keep one"
            raise ReadError(msg)
        text = _text(obj, "text", where, _QUERIES_FIX)
        if not text.strip():
            msg = f"{where}: query {qid[:80]!r} has an empty text; give its words, or remove the line"
            raise ReadError(msg)
        _plain(text, "text", where)
        out[qid] = text
    return out


def read_beir_qrels(folder: str | Path, split: str = "test") -> dict[str, dict[str, int]]:
    """``{query id: {corpus id: score}}`` of ``folder/qrels/<split>.tsv`` (the header line skipped).

    ``split`` is a name (:func:`hepwb.text.names.check_name`), never a path: no ``/``, no ``..``.

    Raises:
        ReadError: Naming the file and line: not three tab-separated columns, a score that is not a whole
            number, a document judged twice for one query; or a split that is no plain name, or no such
            split (either: the splits there are named).

    Example:
        >>> read_beir_qrels("/no/such/folder", "../../x")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hepwb.files.readers.ReadError: qrels split name '../../x' is not a plain name: ...; the splits of ...
    """
    qrels = Path(folder) / "qrels"
    have = sorted(p.stem for p in qrels.glob("*.tsv")) if qrels.is_dir() else []
    try:
        check_name(split, "qrels split", example="test")
    except ConfigError as exc:
        msg = f"{exc}; the splits of BEIR folder {folder} (qrels/*.tsv) are {have}: choose one (--split)"
        raise ReadError(msg) from None
    path = qrels / f"{split}.tsv"
    if not path.exists() and not path.is_symlink():
        msg = f"BEIR folder {folder} has no qrels/{split}.tsv; its splits are {have}: choose one (--split)"
        raise ReadError(msg)
    out: dict[str, dict[str, int]] = {}
    lines = iter_lines(
        path,
        "BEIR qrels file",
        max_lines=limits.MAX_RUN_LINES,
        max_line_chars=limits.MAX_RUN_LINE_CHARS,
        max_bytes=limits.MAX_RUN_FILE_BYTES,
        fix=_QRELS_FIX,
    )
    for lineno, line in lines:
        cols = line.split("\t")
        if not line.strip() or (lineno == 1 and cols[0].strip() == "query-id"):
            continue
        where = f"BEIR qrels file {path} line {lineno}"
        if len(cols) != 3:
            msg = f"{where}: {len(cols)} tab-separated columns, not 3; {_QRELS_FIX}"
            raise ReadError(msg)
        qid, doc, score = (c.strip() for c in cols)
        digits = score[1:] if score[:1] in "+-" else score
        if not (digits.isascii() and digits.isdigit()) or len(score) > 9:
            msg = f"{where}: score {score[:40]!r} is not a whole number; {_QRELS_FIX}"
            raise ReadError(msg)
        docs = out.setdefault(qid, {})
        if doc in docs:
            msg = f"{where}: document {doc!r} is judged twice for query {qid!r}; keep one"
            raise ReadError(msg)
        docs[doc] = int(score)
    return out
